"""``level_falls_along``: the level a method reaches falls as an experiment setting grows
(Zhang, Hu, So & Johansson: the neighbourhood term sigma^2 / (n tau b) of their theorem, and
the "impacts of batch size" row of their figure: a larger mini-batch b, a lower level).

The claim's experiments differ in the setting ``by`` (a key of the experiment, e.g.
``batch_size``); they are sorted by it. Statistic, per consecutive pair: per seed, the level of
the method at its smallest K (median metric over the last 10% of rounds; below ``floor`` as
floor) in the experiment with the larger setting over that in the smaller, paired by seed (the
same seed: the same data and starting point); interval across seeds on the log scale. Each
pair holds when its interval lies below 1, fails when wholly above.
"""

from __future__ import annotations

from .. import stats as S
from ..rule import Evidence, Judgement, Rule
from ._shared import ALGORITHM, FLOOR, METRIC, PARTICIPATION, floored_level, judgement


class LevelFallsAlong(Rule):
    name = "level_falls_along"
    across_seeds = True
    summary = "the level falls between experiments as a setting grows, paired over seeds"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "by": {"type": "string", "default": "batch_size",
               "description": "the experiment key the experiments differ in"},
        "algorithm": ALGORITHM, "metric": METRIC, "floor": FLOOR, "participation": PARTICIPATION}}

    def describe(self, p: dict) -> str:
        return (f"experiments sorted by `{p['by']}`; for each consecutive pair, per seed, {p['algorithm']}'s "
                f"level (median {p['metric']} over the last 10% of rounds, at least {p['floor']:g}, at "
                f"its smallest K) at the larger `{p['by']}` over that at the smaller, paired by seed: "
                f"holds when its interval across seeds lies below 1, fails when wholly above "
                f"(fewer than {S.MIN_SEEDS} seeds: undecided)")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, tests, missing = [], [], []
        level = floored_level(p["metric"], p["floor"])
        items = []
        for e in ev.names():
            runs = ev.by_k(e, p["algorithm"], p["participation"])
            if runs:
                items.append((ev.experiment(e).get(p["by"]), e, runs[min(runs)]))
            else:
                missing.append(f"`{e}`: runs of {p['algorithm']}")
        items.sort(key=lambda x: x[0])
        for (va, ea, ra), (vb, eb, rb) in zip(items, items[1:]):
            t = S.judged(S.paired(rb, ra, S.log_ratio_of(level)),
                         S.Claim(f"level ratio {p['by']} {vb} / {va}", high=1.0), log=True)
            tests.append(t)
            rows.append({p["by"]: f"{va} -> {vb}", "experiments": f"{ea} -> {eb}",
                         "ratio [interval]": t.interval.text(), "outcome": t.outcome})
        if len(items) < 2:
            missing.append(f"two experiments of {p['algorithm']} that differ in `{p['by']}`")
        return judgement(rows, tests, missing)

"""``cost_falls_with_k``: the communication needed to reach a level falls as K grows, in a
range (RFedAGS paper Section 5.1: "the communication cost between the server and agents is also
reduced as the growth of K in a reasonable range").

Levels, per seed and pair of K (the two runs share their starting point): ``levels`` points
spread evenly on the log scale between the start and the higher of the two runs' plateaus, so
both runs reach every one (``curves.race_levels``). Cost of a run at a level: the ``cost``
column (floats communicated, cumulative) at the first round with the metric at or below it
(``curves.rounds_to_levels``; a level never reached counts the cost of the whole run, a lower
bound). Statistic, per seed and per pair of
consecutive K: the mean over the levels of log(cost at the larger K / cost at the smaller),
paired by seed; interval across seeds. The claim is judged on the first step (the smallest K
to the next): holds when the interval lies below 1; the steps after it are shown, so the range
where the cost falls can be read.
"""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..curves import race_levels, rounds_to_levels
from ..rule import Evidence, Judgement, Rule
from ._shared import ALGORITHM, METRIC, PARTICIPATION, judgement


def cost_at(table, rounds, cost: str) -> np.ndarray:
    """The cumulative ``cost`` column at each of ``rounds`` (beyond the last round: its value
    there, a lower bound)."""
    col = table.set_index("round")[cost].astype(float)
    return np.array([float(col.loc[min(r, col.index[-1])]) for r in rounds])


def mean_log_cost_ratio(metric: str, cost: str, n: int):
    """The paired statistic: over the two runs' ``curves.race_levels``, the mean of log(cost of
    a / cost of b) at the first round each reaches the level (NaN without a level)."""
    def f(a, b):
        ca, cb = S.curve_of(a, metric), S.curve_of(b, metric)
        levels = race_levels(ca, cb, n)
        if not len(levels):
            return np.nan
        xa = cost_at(a, rounds_to_levels(ca, levels)[0], cost)
        xb = cost_at(b, rounds_to_levels(cb, levels)[0], cost)
        ok = (xa > 0) & (xb > 0)
        return float(np.mean(np.log(xa[ok]) - np.log(xb[ok]))) if ok.any() else np.nan
    return f


class CostFallsWithK(Rule):
    name = "cost_falls_with_k"
    across_seeds = True
    summary = "the communication to reach common levels falls from the smallest K to the next, paired over seeds"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": ALGORITHM, "metric": METRIC, "participation": PARTICIPATION,
        "cost": {"type": "string", "default": "floats",
                 "description": "the cumulative run-table column counted (floats communicated)"},
        "levels": {"type": "integer", "minimum": 1, "default": 3}}}

    def describe(self, p: dict) -> str:
        return (f"per experiment ({p['algorithm']}), for the smallest K and the next: per seed, "
                f"{p['levels']} levels evenly spaced in log between the {p['metric']} at round 0 and the "
                f"higher of the two runs' plateaus (median over the last 10% of rounds), the "
                f"{p['cost']} spent until each run first reaches each level, and the mean over the "
                f"levels of log(cost ratio), paired by seed: holds "
                f"when its interval across seeds lies below 1 (the cost falls), fails when wholly "
                f"above; the later steps are shown (fewer than {S.MIN_SEEDS} seeds: undecided)")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, tests, missing = [], [], []
        multi = len(ev.names()) > 1
        for e in ev.names():
            runs = ev.by_k(e, p["algorithm"], p["participation"])
            if len(runs) < 2:
                missing.append(f"`{e}`: runs at two K at least")
                continue
            ks = sorted(runs)
            stat = mean_log_cost_ratio(p["metric"], p["cost"], p["levels"])
            for i, (ka, kb) in enumerate(zip(ks, ks[1:])):
                t = S.judged(S.paired(runs[kb], runs[ka], stat),
                             S.Claim(f"{p['cost']} ratio K = {kb} / K = {ka}", high=1.0),
                             label=(f"`{e}`" if multi else ""), log=True)
                if i == 0:
                    tests.append(t)
                rows.append({**({"experiment": e} if multi else {}), "step": f"K = {ka} -> {kb}",
                             "cost ratio [interval]": t.interval.text(), "outcome": t.outcome,
                             "judged": i == 0})
        return judgement(rows, tests, missing)

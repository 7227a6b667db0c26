"""``cost_falls_with_k``: the communication needed to reach a level falls as K grows, in a
range (RFedAGS paper Section 5.1: "the communication cost between the server and agents is also
reduced as the growth of K in a reasonable range").

Levels, per seed and pair of K (the two runs share their starting point): ``levels`` points
spread evenly on the log scale strictly between the metric at round 0 and the higher of the two
runs' levels reached (median over the last 10% of rounds), so both runs reach every one. Cost of a run at
a level: the floats communicated (run-table column ``cost``, cumulative) until the first round
with the metric at or below the level (never: +inf). Statistic, per seed and per pair of
consecutive K: the mean over the levels of log(cost at the larger K / cost at the smaller),
paired by seed; interval across seeds. The claim is judged on the first step (the smallest K
to the next): holds when the interval lies below 1; the steps after it are shown, so the range
where the cost falls can be read.
"""

from __future__ import annotations

import math

import numpy as np

from .. import stats as S
from ..rule import Evidence, Judgement, Rule
from ._shared import ALGORITHM, METRIC, PARTICIPATION, judgement


def seed_levels(a, b, metric: str, n: int) -> list[float]:
    """``n`` levels evenly spaced in log strictly between the round-0 value of run ``a`` and
    the higher of the two runs' levels reached (``stats.tail_level``); empty if that start is
    not above that level."""
    top = float(S.curve_of(a, metric).dropna().iloc[0])
    low = max(S.tail_level(a, metric), S.tail_level(b, metric))
    if not (np.isfinite(top) and np.isfinite(low) and top > low > 0):
        return []
    return list(np.exp(np.linspace(math.log(top), math.log(low), n + 2)[1:-1]))


def cost_to(table, level: float, metric: str, cost: str) -> float:
    """The run's ``cost`` column at the first round with ``metric`` at or below ``level``
    (+inf if none)."""
    c = S.curve_of(table, metric)
    hit = np.nonzero(c.values <= level)[0]
    if not len(hit):
        return np.inf
    return float(table.set_index("round")[cost].loc[c.index[hit[0]]])


def mean_log_cost_ratio(metric: str, cost: str, n: int):
    """The paired statistic: over the seed's ``seed_levels``, the mean of log(cost of a / cost
    of b) (NaN without a level: a start already at the level reached)."""
    def f(a, b):
        r = [math.log(cost_to(a, lv, metric, cost)) - math.log(cost_to(b, lv, metric, cost))
             for lv in seed_levels(a, b, metric, n)]
        return float(np.mean(r)) if r else np.nan
    return f


class CostFallsWithK(Rule):
    name = "cost_falls_with_k"
    summary = "the communication to reach common levels falls from the smallest K to the next, paired over seeds"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": ALGORITHM, "metric": METRIC, "participation": PARTICIPATION,
        "cost": {"type": "string", "default": "floats",
                 "description": "the cumulative run-table column counted (floats communicated)"},
        "levels": {"type": "integer", "minimum": 1, "default": 3}}}

    def describe(self, p: dict) -> str:
        return (f"per experiment ({p['algorithm']}), for the smallest K and the next: per seed, "
                f"{p['levels']} levels evenly spaced in log between the {p['metric']} at round 0 and the "
                f"higher of the two runs' levels reached (median over the last 10% of rounds), the "
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

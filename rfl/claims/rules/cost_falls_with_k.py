"""``cost_falls_with_k``: the communication needed to reach a level falls as K grows, in a
range (RFedAGS paper Section 5.1: "the communication cost between the server and agents is also
reduced as the growth of K in a reasonable range").

Levels: ``levels`` points spread evenly on the log scale strictly between the lowest median
start over K and the highest median plateau over K (levels below every K's start that every K
reaches). Cost of a run at
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
from ..curves import median_curve, plateau
from ..rule import Evidence, Judgement, Rule
from ._shared import ALGORITHM, METRIC, PARTICIPATION, judgement


def common_levels(runs_by_k: dict, metric: str, n: int) -> list[float]:
    """``n`` levels evenly spaced in log strictly between the lowest median start and the
    highest median plateau over K (empty if that start is not above that plateau)."""
    curves = [median_curve(r, metric).dropna() for r in runs_by_k.values()]
    top = min(float(c.iloc[0]) for c in curves)
    low = max(plateau(c) for c in curves)
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


def mean_log_cost_ratio(levels, metric, cost):
    """The paired statistic: mean over ``levels`` of log(cost of a / cost of b)."""
    def f(a, b):
        ca, cb = ([cost_to(t, lv, metric, cost) for lv in levels] for t in (a, b))
        r = [math.log(x) - math.log(y) for x, y in zip(ca, cb) if x > 0 and y > 0]
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
        return (f"per experiment ({p['algorithm']}): {p['levels']} levels evenly spaced in log between "
                f"the lowest median start and the highest median plateau over K; per seed, the "
                f"{p['cost']} spent until the {p['metric']} first reaches each level, and for the smallest "
                f"K and the next the mean over the levels of log(cost ratio), paired by seed: holds "
                f"when its interval across seeds lies below 1 (the cost falls), fails when wholly "
                f"above; the later steps are shown (fewer than {S.MIN_SEEDS} seeds: undecided)")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, tests, missing = [], [], []
        multi = len(ev.names()) > 1
        for e in ev.names():
            runs = ev.by_k(e, p["algorithm"], p["participation"])
            levels = common_levels(runs, p["metric"], p["levels"]) if len(runs) > 1 else []
            if not levels:
                missing.append(f"`{e}`: two K or more whose curves fall below their start")
                continue
            ks = sorted(runs)
            stat = mean_log_cost_ratio(levels, p["metric"], p["cost"])
            for i, (ka, kb) in enumerate(zip(ks, ks[1:])):
                t = S.judged(S.paired(runs[kb], runs[ka], stat),
                             S.Claim(f"{p['cost']} ratio K = {kb} / K = {ka}", high=1.0),
                             label=(f"`{e}`" if multi else ""), log=True)
                if i == 0:
                    tests.append(t)
                rows.append({**({"experiment": e} if multi else {}), "step": f"K = {ka} -> {kb}",
                             "cost ratio [interval]": t.interval.text(), "outcome": t.outcome,
                             "judged": i == 0,
                             "levels": ", ".join(f"{v:.3g}" for v in levels)})
        return judgement(rows, tests, missing)

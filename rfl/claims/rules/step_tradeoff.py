"""``step_tradeoff``: a larger step reaches a higher steady state sooner (the diffusion paper's
Figure 8, ``main_pca_stepsize.py``: mu = 0.05, 0.07, 0.09; the MSD settles higher and earlier
as mu grows).

One method along the claim's experiments, listed in increasing step. Per seed: the steady
level L, 10 log10 of the mean of ``metric`` over the last ``window`` share of rounds, and the
settling round, the first round from which the curve in dB (a centred moving average over
``smooth`` rounds) stays within ``within_db`` of L. For each consecutive pair, paired by seed,
two cases: the level rises (next - previous, Student-t interval across seeds, at or above 0 dB)
and the settling round falls (previous - next at or above 0 rounds); in order when the
interval lies at or above 0, out of order when wholly below (``rfl.claims.stats.decide``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import stats as S
from ..rule import Evidence, Judgement, Rule
from ._shared import judgement
from .level_order import WINDOW, db, level


def settling_round(table: pd.DataFrame, metric: str, window: float, within_db: float, smooth: int) -> float:
    """The first round from which the moving average (``smooth`` rounds, centred) of the
    metric in dB stays within ``within_db`` of the run's steady level; NaN for a diverged run."""
    if (table["status"] == "diverged").any():
        return np.nan
    c = S.curve_of(table, metric).dropna()
    c = c[c.index > 0]
    steady = db(level(table, metric, "tail", window))
    curve = 10.0 * np.log10(c.clip(lower=1e-300))
    smoothed = curve.rolling(max(1, smooth), center=True, min_periods=1).mean()
    outside = np.abs(smoothed.to_numpy() - steady) > within_db
    if not outside.any():
        return float(c.index[0])
    last = int(np.flatnonzero(outside)[-1])
    return float(c.index[min(last + 1, len(c) - 1)])


class StepTradeoff(Rule):
    name = "step_tradeoff"
    across_seeds = True
    summary = ("along experiments of growing step, the steady level rises and the round it is "
               "reached falls, each paired by seed")
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": {"type": "string", "default": "diffusion"},
        "metric": {"type": "string", "default": "msd"}, "window": WINDOW,
        "within_db": {"type": "number", "exclusiveMinimum": 0, "default": 1.0},
        "smooth": {"type": "integer", "minimum": 1, "default": 25}}}

    def describe(self, p: dict) -> str:
        return (f"{p['algorithm']} along the experiments in increasing step; per seed the steady level "
                f"(10 log10 of the mean {p['metric']} over the last {p['window']:.0%} of rounds) and the "
                f"settling round (from which the {p['smooth']}-round moving average in dB stays within "
                f"{p['within_db']:g} dB of it); for each consecutive pair, paired by seed, the level's "
                f"rise and the settling round's fall each have a 95% Student-t interval across seeds "
                f"(at least {S.MIN_SEEDS}) at or above 0: in order; wholly below: out of order")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        items, missing = [], []
        for e in ev.names():
            runs = [t for k, ts in ev.runs(e).items() if k[0] == p["algorithm"] for t in ts]
            if not runs:
                missing.append(f"`{e}`: runs of {p['algorithm']}")
            items.append((e, runs))

        def lv(t):
            return db(level(t, p["metric"], "tail", p["window"]))

        def st(t):
            return settling_round(t, p["metric"], p["window"], p["within_db"], p["smooth"])

        rows, tests = [], []
        for e, runs in items:
            if runs:
                rows.append({"experiment": e, "steady level (dB)": float(S.per_seed(runs, lv).mean()),
                             "settling round": float(S.per_seed(runs, st).mean()), "seeds": str(len(runs))})
        for (ea, ra), (eb, rb) in zip(items, items[1:]):
            if not (ra and rb):
                continue
            rise = S.judged(S.paired(ra, rb, lambda a, b: lv(b) - lv(a)),
                            S.Claim("level rise (dB)", low=0.0), label=f"`{eb}` over `{ea}`")
            sooner = S.judged(S.paired(ra, rb, lambda a, b: st(a) - st(b)),
                              S.Claim("rounds sooner", low=0.0), label=f"`{eb}` before `{ea}`")
            tests += [rise, sooner]
            rows.append({"experiment": f"`{ea}` -> `{eb}`", "level rise (dB) [interval]": rise.interval.text(),
                         "rounds sooner [interval]": sooner.interval.text(),
                         "outcome": f"{rise.outcome} / {sooner.outcome}"})
        return judgement(rows, tests, missing)

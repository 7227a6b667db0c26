"""``rounds_fraction``: larger K reaches its best score in a fraction of K = 1's rounds (RFedAGS
paper Section 5.2, Table 2: "cases K = 4, K = 8, and K = 10 reduced at least one half the number
of iterations compared to the case K = 1 when r = 4, 5"; the iterations are the x-coordinates of
the best test NMSE, Table 2's numbers in parentheses).

Statistic, per K in ``ks``: per seed (one data split), the first round at which the metric
equals its lowest value over the run to ``digits`` significant digits (Table 2 prints 3: within
half a unit of the last digit of the minimum; at least round 1) at that K over the same at
``baseline`` K, paired by seed; interval across seeds on the log scale. Holds when it lies below
``fraction``, fails when wholly above. (The exact argmin would count the last of many rounds
that differ only beyond the printed digits: a curve still creeping down has its best at the
last round whatever K.)
"""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..rule import Evidence, Judgement, Rule
from ._shared import ALGORITHM, PARTICIPATION, judgement


def best_round(metric: str, digits: int):
    """The first round at which ``metric`` is within half a unit of the ``digits``-th
    significant digit of its minimum over the run (at least 1: round 0 is x_1)."""
    def f(t):
        c = S.curve_of(t, metric).dropna()
        low = float(c.min())
        tol = 0.5 * 10.0 ** (np.floor(np.log10(abs(low))) - digits + 1) if low else 0.0
        return max(float(c.index[int(np.nonzero(c.values <= low + tol)[0][0])]), 1.0)
    return f


class RoundsFraction(Rule):
    name = "rounds_fraction"
    across_seeds = True
    summary = "per K, the round of the best score over the baseline K's is at most a fraction, paired over seeds"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": ALGORITHM, "participation": PARTICIPATION,
        "metric": {"type": "string", "default": "test_nmse"},
        "ks": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1}, "default": [4, 8, 10]},
        "baseline": {"type": "integer", "minimum": 1, "default": 1},
        "fraction": {"type": "number", "exclusiveMinimum": 0, "default": 0.5},
        "digits": {"type": "integer", "minimum": 1, "default": 3,
                   "description": "significant digits to which a round's score equals the best"}}}

    def describe(self, p: dict) -> str:
        return (f"per experiment and K in {p['ks']} ({p['algorithm']}): per seed, the first round at which "
                f"{p['metric']} equals its lowest value over the run to {p['digits']} significant digits "
                f"(at least round 1) over that of K = {p['baseline']}, paired "
                f"by seed; holds when its interval across seeds lies below {p['fraction']:g}, fails when "
                f"wholly above (fewer than {S.MIN_SEEDS} seeds: undecided)")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, tests, missing = [], [], []
        at = best_round(p["metric"], p["digits"])
        multi = len(ev.names()) > 1
        for e in ev.names():
            runs = ev.by_k(e, p["algorithm"], p["participation"])
            if p["baseline"] not in runs:
                missing.append(f"`{e}`: runs at K = {p['baseline']}")
                continue
            base = S.per_seed(runs[p["baseline"]], at)
            for K in p["ks"]:
                if K not in runs:
                    missing.append(f"`{e}`: runs at K = {K}")
                    continue
                t = S.judged(S.paired(runs[K], runs[p["baseline"]], S.log_ratio_of(at)),
                             S.Claim(f"rounds ratio K = {K} / K = {p['baseline']}", high=p["fraction"]),
                             label=(f"`{e}`" if multi else f"K = {K}"), log=True)
                tests.append(t)
                rows.append({**({"experiment": e} if multi else {}), "K": str(K),
                             "best round (mean)": float(np.mean(S.per_seed(runs[K], at))),
                             f"K = {p['baseline']} best round (mean)": float(np.mean(base)),
                             "ratio [interval]": t.interval.text(), "outcome": t.outcome})
        return judgement(rows, tests, missing)

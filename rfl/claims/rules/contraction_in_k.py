"""``contraction_in_k``: the number of local steps K speeds up linear convergence (RFedAGS paper,
Figure 2): the contraction factor per round is non-increasing in K.

Per seed, each K's rate is the slope of its log-linear phase (``rfl.claims.curves.seed_rate``:
the log-contraction per round, from the escape from the initial plateau to before the floor;
+inf for a run that diverged, the slowest); consecutive K are paired by seed (the values of a
sweep share their draws per seed), and the difference of their log-contractions (larger K
minus smaller) gets a Student-t interval across seeds (``rfl.claims.stats``): in order when it
lies at or below 0, out of order when it lies wholly above. A K without a fit in any seed
(too few rounds) is left out."""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..curves import seed_rate
from ..rule import Evidence, Judgement, Rule
from ..verdicts import OPEN, UNDECIDED
from .ordered_levels import order_verdict


def log_contraction(table) -> float:
    """One run's log-contraction per round (``seed_rate``'s slope; +inf if it diverged, NaN
    without a fit)."""
    f = seed_rate(S.curve_of(table))
    return np.inf if f["status"] == "diverged" else f["slope"] if f["status"] in ("ok", "flat") else np.nan


def difference(a, b) -> float:
    """log-contraction of run ``a`` minus that of run ``b`` (NaN when both diverged or either has no fit)."""
    x, y = log_contraction(a), log_contraction(b)
    if np.isinf(x) and np.isinf(y):
        return np.nan
    return float(x - y)


class ContractionInK(Rule):
    name = "contraction_in_k"
    across_seeds = True
    summary = ("the contraction factor per round is non-increasing in K (consecutive K paired by "
               "seed, interval across seeds)")
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": {"type": "string", "default": "rfedags"}}}

    def describe(self, p: dict) -> str:
        return ("per seed, the log-contraction per round of each K's linear phase (see linear_rate; "
                "a run that diverged is the slowest); for consecutive K, paired by seed, the larger "
                f"K's minus the smaller's has a 95% Student-t interval across seeds (at least "
                f"{S.MIN_SEEDS}) at or below 0: in order; wholly above 0: out of order. Reproduced if "
                "every pair is in order, partly if a pair is out of order but the largest K still "
                "beats the smallest, undecided while a pair is open or fewer than two K have a fit")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, notes, decide, tests, outcomes = [], [], [], [], []
        ends = OPEN
        for e in ev.names():
            by_k = ev.by_k(e, p["algorithm"])
            fitted = {}
            for K, runs in by_k.items():
                rates = S.per_seed(runs, log_contraction)
                rows.append({"K": str(K), "seeds": str(len(runs)),
                             "contraction/round": float(np.exp(rates.mean())) if rates.notna().any() else np.nan})
                if rates.notna().any():
                    fitted[K] = runs
            Ks = list(fitted)
            for k0, k1 in zip(Ks, Ks[1:]):
                test = S.judged(S.paired(fitted[k1], fitted[k0], difference),
                                S.Claim("log-contraction difference", high=0.0), f"K = {k1} vs {k0}")
                outcomes.append(test.outcome)
                tests.append(test)
                if test.outcome == OPEN and test.why:
                    decide.append(test.why)
            if len(Ks) >= 2:
                ends = S.judged(S.paired(fitted[Ks[-1]], fitted[Ks[0]], difference),
                                S.Claim("d", high=0.0)).outcome
        verdict = order_verdict(outcomes, ends) if outcomes else UNDECIDED
        if not outcomes:
            decide.append("runs with at least two K")
        return Judgement(verdict, rows, notes, "; ".join(decide) if verdict == UNDECIDED else None,
                         S.margin_line(tests))




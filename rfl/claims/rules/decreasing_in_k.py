"""``decreasing_in_k``: more local steps K give a smaller final value of a metric (the authors'
``LRMCGrass_Syn``: a larger K, a smaller relative error of the completion).

Per seed, the metric at the run's last round; consecutive K are paired by seed (a sweep's
values share their draws per seed) and the larger K's value over the smaller's gets a
Student-t interval of its log across seeds (``rfl.claims.stats``): in order when it lies at or
below ``tolerance``, out of order when it lies wholly above."""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..curves import last, median_curve
from ..rule import Evidence, Judgement, Rule
from ..verdicts import OPEN, UNDECIDED
from .ordered_levels import order_verdict


def final(metric: str):
    """One run's ``metric`` at its last round with a value (NaN without the column or a value)."""
    def f(t):
        if metric not in t:
            return np.nan
        c = t[metric].dropna()
        return float(c.iloc[-1]) if len(c) else np.nan
    return f


class DecreasingInK(Rule):
    name = "decreasing_in_k"
    across_seeds = True
    summary = ("a metric's final value is non-increasing in K (consecutive K paired by seed, up to a "
               "tolerance, interval across seeds)")
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "metric": {"type": "string", "default": "rel_error"},
        "algorithm": {"type": "string", "default": "rfedags"},
        "tolerance": {"type": "number", "minimum": 1, "default": 1.05}}}

    def describe(self, p: dict) -> str:
        return (f"per seed, {p['metric']} at the last round ({p['algorithm']}, every agent); for "
                f"consecutive K, paired by seed, the larger K's over the smaller's has a 95% Student-t "
                f"interval across seeds (geometric mean, at least {S.MIN_SEEDS} seeds) at most "
                f"{p['tolerance']:g}: in order; wholly above: out of order. Reproduced if every pair "
                f"is in order, partly if one is not but the largest K is still below the smallest; "
                f"undecided with fewer than two K with a value, or while a pair is open")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, tests, outcomes, decide = [], [], [], []
        ends = OPEN
        stat = S.log_ratio_of(final(p["metric"]))
        claim = S.Claim(f"{p['metric']} ratio", high=p["tolerance"])
        for e in ev.names():
            by_k = ev.by_k(e, p["algorithm"])
            valued = {}
            for K, runs in by_k.items():
                v = last(median_curve(runs, p["metric"])) if all(p["metric"] in t for t in runs) else np.nan
                rows.append({"K": str(K), "seeds": str(len(runs)), f"{p['metric']}, last": v})
                if np.isfinite(v):
                    valued[K] = runs
            Ks = list(valued)
            for k0, k1 in zip(Ks, Ks[1:]):
                t = S.judged(S.paired(valued[k1], valued[k0], stat), claim, f"K = {k1} vs {k0}", log=True)
                outcomes.append(t.outcome)
                tests.append(t)
                if t.outcome == OPEN and t.why:
                    decide.append(t.why)
            if len(Ks) >= 2:
                ends = S.judged(S.paired(valued[Ks[-1]], valued[Ks[0]], stat), claim, log=True).outcome
        verdict = order_verdict(outcomes, ends) if outcomes else UNDECIDED
        if not outcomes:
            decide.append(f"runs of at least two K with a value of {p['metric']}")
        return Judgement(verdict, rows, decide="; ".join(decide) if verdict == UNDECIDED else None,
                         margin=S.margin_line(tests))

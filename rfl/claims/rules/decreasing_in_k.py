"""``decreasing_in_k``: more local steps K give a smaller final value of a metric (the authors'
``LRMCGrass_Syn``: a larger K, a smaller relative error of the completion): the median of the
metric at the last round is non-increasing in K, up to a tolerance."""

from __future__ import annotations

import numpy as np

from ..curves import last, median_curve
from ..rule import Evidence, Judgement, Rule
from ..verdicts import UNDECIDED, non_increasing


def order(values: list[float], tol: float) -> str:
    """Final values in increasing K: reproduced if each is at most ``tol`` times the one before,
    partly if only the last is below the first, not reproduced otherwise; undecided with fewer
    than two values or one that is not finite."""
    if len(values) < 2 or not all(np.isfinite(values)):
        return UNDECIDED
    return non_increasing(values, tol)


class DecreasingInK(Rule):
    name = "decreasing_in_k"
    summary = "the median of a metric at the last round is non-increasing in K (up to a tolerance)"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "metric": {"type": "string", "default": "rel_error"},
        "algorithm": {"type": "string", "default": "rfedags"},
        "tolerance": {"type": "number", "minimum": 1, "default": 1.05}}}

    def describe(self, p: dict) -> str:
        return (f"the median {p['metric']} at the last round ({p['algorithm']}, every agent) is "
                f"non-increasing in K up to a factor {p['tolerance']:g} (partly: only the largest K "
                f"below the smallest; undecided with fewer than two K with a value)")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, values = [], []
        for e in ev.names():
            for K, runs in ev.by_k(e, p["algorithm"]).items():
                v = last(median_curve(runs, p["metric"])) if all(p["metric"] in t for t in runs) else np.nan
                values.append(v)
                rows.append({"K": str(K), f"{p['metric']}, last": v})
        verdict = order(values, p["tolerance"])
        return Judgement(verdict, rows, decide=(f"runs of at least two K with a value of {p['metric']}"
                                                 if verdict == UNDECIDED else None))

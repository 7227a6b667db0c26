"""``contraction_in_k``: the number of local steps K speeds up linear convergence (RFedAGS paper,
Figure 2): the fitted contraction factor per round is non-increasing in K."""

from __future__ import annotations

import numpy as np

from ..curves import linear_phase, median_curve
from ..rule import Evidence, Judgement, Rule
from ..verdicts import UNDECIDED, non_increasing


def order(rates: list[float]) -> str:
    """Contraction factors in increasing K: reproduced if non-increasing, partly if only the last
    is below the first, not reproduced otherwise; undecided with fewer than two."""
    if len(rates) < 2:
        return UNDECIDED
    return non_increasing(rates)


class ContractionInK(Rule):
    name = "contraction_in_k"
    summary = "the fitted contraction factor per round is non-increasing in K"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": {"type": "string", "default": "rfedags"}}}

    def describe(self, p: dict) -> str:
        return ("the fitted contraction factor (see linear_rate) is non-increasing in K (partly: only "
                "the largest K beats the smallest; a K that diverged counts as the slowest, one "
                "without a fit is left out; undecided if fewer than two K are left)")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rates, rows = [], []
        for e in ev.names():
            for K, runs in ev.by_k(e, p["algorithm"]).items():
                fit = linear_phase(median_curve(runs))
                if fit["status"] != "insufficient":
                    rates.append(np.inf if fit["status"] == "diverged" else fit["rate"])
                rows.append({"K": str(K), "contraction/round": fit["rate"]})
        v = order(rates)
        return Judgement(v, rows, decide="runs with at least two K" if v == UNDECIDED else None)

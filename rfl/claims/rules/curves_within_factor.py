"""``curves_within_factor``: two methods behave alike: at each common K, their median
excess-risk curves stay within a factor of each other at every round. rfl's own comparison
of RFedAGS and RFedAvg at K > 1 (the paper claims no likeness there; its Section 3.3 identity
at K = 1, with Exp and parallel transport, is ``identical_runs``)."""

from __future__ import annotations

import numpy as np

from rfl.reporting import partial

from ..curves import diverged_at, max_log_ratio, median_curve
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, combine


class CurvesWithinFactor(Rule):
    name = "curves_within_factor"
    summary = "two methods' median curves within a factor of each other at every round, per K"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "first": {"type": "string", "default": "rfedags"},
        "second": {"type": "string", "default": "rfedavg"},
        "factor": {"type": "number", "exclusiveMinimum": 1, "default": 2.0},
        "participation": {"enum": ["every", "any"], "default": "every",
                          "description": "the runs compared: with every agent, or under "
                                         "whichever participation the experiment runs"}}}

    def describe(self, p: dict) -> str:
        who = "" if p["participation"] == "every" else " (under the experiment's participation)"
        return (f"at every K both run{who}, the median curves of {p['first']} and {p['second']} "
                f"stay within a factor {p['factor']:g} of each other at every round")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, cases, notes, explain = [], [], [], []
        for e in ev.names():
            a_runs = ev.by_k(e, p["first"], p["participation"])
            b_runs = ev.by_k(e, p["second"], p["participation"])
            for K in sorted(set(a_runs) & set(b_runs)):
                a, b = median_curve(a_runs[K]), median_curve(b_runs[K])
                rel = max_log_ratio(b, a)
                cases.append(OPEN if np.isnan(rel) else OK if rel < np.log(p["factor"]) else FAIL)
                for name, c in ((p["second"], b), (p["first"], a)):
                    if diverged_at(c) is not None:
                        notes.append(f"- K = {K}: {name} diverged at round {diverged_at(c)}.")
                rows.append({"K": str(K), f"{p['first']} last": float(a.iloc[-1]),
                             f"{p['second']} last": float(b.iloc[-1]),
                             "max abs(log ratio) over rounds": rel})
                if (p["first"], p["second"]) == ("rfedags", "rfedavg"):
                    explain += partial.avg_vs_ags(K, b, a, p["factor"])
        return Judgement(combine(cases), rows, notes + explain)

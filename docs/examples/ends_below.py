"""A claim rule: per K, the median excess risk over seeds ends below a level.

A claim such as "RFedAGS reaches an excess risk of 1e-6 within the rounds run" is judged by
this rule when the config declares it (``claims.<id>.rule: ends_below``). Each K is a case:
it holds if the median curve's last value is below ``level``, fails if it is not and the curve
has levelled off (or diverged), and is undecided if it is still going down (more rounds could
still take it below).
"""

from __future__ import annotations

from rfl.claims.curves import diverged_at, last, levelled, median_curve
from rfl.claims.rule import Evidence, Judgement, Rule
from rfl.claims.verdicts import FAIL, OK, OPEN, UNDECIDED, combine


class EndsBelow(Rule):
    name = "ends_below"
    summary = "per K, the median excess risk at the last round is below a level"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "level": {"type": "number", "exclusiveMinimum": 0, "default": 1e-6},
        "algorithm": {"type": "string", "default": "rfedags"}}}

    def describe(self, p: dict) -> str:
        return (f"per K ({p['algorithm']}, every agent), the median excess risk over seeds at the "
                f"last round is below {p['level']:g}; undecided for a K still decreasing above it")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, cases, pending = [], [], []
        for e in ev.names():
            for K, runs in ev.by_k(e, p["algorithm"]).items():
                curve = median_curve(runs)
                end = last(curve)
                if end < p["level"]:
                    cases.append(OK)
                elif diverged_at(curve) is None and not levelled(curve):
                    cases.append(OPEN)
                    pending.append(f"K = {K}")
                else:
                    cases.append(FAIL)
                rows.append({"K": str(K), "last": end, "rounds": str(int(curve.index[-1]))})
        verdict = combine(cases)
        decide = f"more rounds for {', '.join(pending)}" if pending and verdict == UNDECIDED else None
        return Judgement(verdict, rows, decide=decide)

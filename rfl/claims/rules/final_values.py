"""``final_values``: a measurement: per method, the median over seeds of chosen metrics at
round 0 and after the last round (and, if asked, the fitted contraction of the excess risk),
for results the paper states no claim about (federated kPCA, the communication it costs) or
that a claim's table leaves out (the test errors of a completion, the estimator's error)."""

from __future__ import annotations

import numpy as np

from rfl.reporting.figures import method_label

from ..curves import last, linear_phase, median_curve
from ..rule import Evidence, Judgement, Rule

METRICS = {"type": "array", "items": {"type": "string"}}


class FinalValues(Rule):
    name = "final_values"
    summary = "a measurement: per method, the median of chosen metrics at round 0 and after the last round"
    judges = False
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "first": {**METRICS, "default": []},
        "last": {**METRICS, "default": ["excess_risk"]},
        "fit": {"type": "boolean", "default": False}}}

    def describe(self, p: dict) -> str:
        return "per method, medians over seeds of " + ", ".join(
            [f"{m} at round 0" for m in p["first"]] + [f"{m} after the last round" for m in p["last"]])

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows = []
        names = ev.names()
        for e in names:
            for key, runs in ev.runs(e).items():
                row = {**({"experiment": e} if len(names) > 1 else {}), "method": method_label(key)}
                if p["fit"]:
                    fit = linear_phase(median_curve(runs))
                    row.update({"contraction/round": fit["rate"], "R^2": fit["r2"]})
                for m in p["first"]:
                    c = median_curve(runs, m).dropna() if all(m in t for t in runs) else None
                    row[f"{m}, round 0"] = float(c.iloc[0]) if c is not None and len(c) else np.nan
                for m in p["last"]:
                    row[f"{m}, last"] = last(median_curve(runs, m)) if all(m in t for t in runs) else np.nan
                row["rounds"] = str(max(int(t["round"].max()) for t in runs))
                rows.append(row)
        return Judgement(None, rows)

"""``closest_cells``: a measurement, no verdict: per group of a table's cells (Table 2: per
evaluation protocol and normalisation), how close its cells are to the paper's values,
closest group first (which protocol the paper's Table 2 most likely used)."""

from __future__ import annotations

import numpy as np

from ..cells import cells
from ..rule import Evidence, Judgement, Rule


class ClosestCells(Rule):
    name = "closest_cells"
    summary = "a measurement: per group of cells, how many lie within a tolerance of the paper's, closest first"
    judges = False
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "table": {"type": "string", "default": "table2"},
        "by": {"type": "string", "default": "r"},
        "group_by": {"type": "array", "minItems": 1, "items": {"type": "string"},
                     "default": ["protocol", "normalisation"]},
        "value": {"type": "string", "default": "nmse_mean"},
        "paper": {"type": "string", "default": "paper_nmse"},
        "tolerance": {"type": "number", "minimum": 0, "default": 0.02}}}

    def describe(self, p: dict) -> str:
        return (f"per {', '.join(p['group_by'])} of `{p['table']}`: the cells with a paper value within "
                f"{p['tolerance']:g} of it, the mean signed and the largest absolute difference; "
                f"ordered by the absolute mean difference, a group without a measured value last")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        t = cells(ev, p["table"], {}, p["by"])
        gone = [] if t is None else [c for c in p["group_by"] if c not in t]
        if t is None or gone:
            return Judgement(None, notes=[f"Table `{p['table']}` is absent." if t is None else
                                          f"Table `{p['table']}` has no column {', '.join(gone)}."])
        known = t[np.isfinite(t[p["paper"]].astype(float))]
        if known.empty:
            return Judgement(None, notes=["The paper reports no value for the cells run here."])
        rows = []
        for g, sub in known.groupby(p["group_by"]):
            d = sub[p["value"]].astype(float) - sub[p["paper"]].astype(float)
            rows.append({**dict(zip(p["group_by"], map(str, np.atleast_1d(g)))),
                         f"cells within {p['tolerance']:g}": int((d.abs() <= p["tolerance"]).sum()),
                         "cells": len(sub), "mean difference (ours - paper)": float(d.mean()),
                         "largest abs(difference)": float(d.abs().max())})
        key = "mean difference (ours - paper)"
        rows.sort(key=lambda r: (np.nan_to_num(abs(r[key]), nan=np.inf),
                                 tuple(r[c] for c in p["group_by"])))
        return Judgement(None, rows)

"""``cells_within``: every cell of a table that the paper reports lies within a tolerance
(absolute) of the paper's value (RFedAGS paper, Table 2: the best test NMSE per method and r)."""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..cells import WHERE, cells, selection
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine


def paper_keys(ev: Evidence, table: str) -> list[str]:
    """The keys (Table 2: r) the paper reports values for (``config/paper_values.yaml``)."""
    return [k for k in ev.paper.get(table, {}) if k != "methods"]


class CellsWithin(Rule):
    name = "cells_within"
    summary = "every cell the paper reports within a tolerance (absolute) of the paper's value"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "table": {"type": "string", "default": "table2"},
        "where": WHERE,
        "by": {"type": "string", "default": "r"},
        "value": {"type": "string", "default": "nmse_mean"},
        "paper": {"type": "string", "default": "paper_nmse"},
        "tolerance": {"type": "number", "minimum": 0, "default": 0.02}}}

    def describe(self, p: dict) -> str:
        return (f"every cell of {selection(p['table'], p['where'])} with a paper value has its "
                f"{p['value']} within {p['tolerance']:g} (absolute) of the paper's; a cell without a "
                f"measured value is undecided")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        t = cells(ev, p["table"], p["where"], p["by"])
        known = None if t is None else t[np.isfinite(t[p["paper"]].astype(float))]
        if known is None or known.empty:
            keys = paper_keys(ev, p["table"])
            note = (f"Table {selection(p['table'], p['where'])} is absent." if t is None else
                    "The paper reports no value for the cells run here; no comparison.")
            return Judgement(UNDECIDED, notes=[note], decide=(
                f"runs at {p['by']} = {', '.join(keys)}, where the paper reports values" if keys
                else "cells the paper reports a value for"),
                margin=f"no cell with a paper value, claim |ours - paper| <= {p['tolerance']:g}")
        diff = known[p["value"]].astype(float) - known[p["paper"]].astype(float)
        cases = [OPEN if np.isnan(d) else OK if abs(d) <= p["tolerance"] else FAIL for d in diff]
        notes = []
        within, missing = cases.count(OK), cases.count(OPEN)
        if missing < len(cases):
            worst = diff.abs().idxmax()
            notes.append(f"{within} of {len(cases)} cells are within {p['tolerance']:g} of the paper's "
                         f"value; the largest difference is {abs(diff[worst]):.3f} "
                         f"({known.loc[worst, 'method']}, {p['by']} = {known.loc[worst, p['by']]}); "
                         f"mean signed difference (ours - paper) {diff.mean():+.3f}.")
        open_cells = [f"{m}, {p['by']} = {k}" for m, k, c in zip(known["method"], known[p["by"]], cases) if c == OPEN]
        if open_cells:
            notes.append(f"{missing} of {len(cases)} cells have no measured value: {'; '.join(open_cells)}.")
        verdict = combine(cases)
        where = (f" ({known.loc[worst, 'method']}, {p['by']} = {known.loc[worst, p['by']]})"
                 if missing < len(cases) else "")
        margin = (f"cells within {p['tolerance']:g}: {within} of {len(cases)}"
                  + (f" ({missing} without a value)" if missing else "") + "; "
                  + S.value_margin(f"largest |ours - paper|{where}", diff.abs().max(),
                                   S.Claim("|ours - paper|", high=p["tolerance"])))
        decide = (f"a measured value for {'; '.join(open_cells)}"
                  if open_cells and verdict in (UNDECIDED, PARTLY) else None)
        return Judgement(verdict, notes=notes, decide=decide, margin=margin)

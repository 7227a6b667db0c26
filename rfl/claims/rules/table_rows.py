"""``table_rows``: a measurement, no verdict: the rows of a workflow table as they are
(RFedAGS paper, Table 2: the best test NMSE per r, method, protocol and normalisation beside
the paper's)."""

from __future__ import annotations

from ..cells import WHERE, cells, selection
from ..rule import Evidence, Judgement, Rule


class TableRows(Rule):
    name = "table_rows"
    summary = "a measurement: the rows of a workflow table (the chosen columns)"
    judges = False
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "table": {"type": "string", "default": "table2"},
        "where": WHERE,
        "by": {"type": "string", "default": "r"},
        "columns": {"type": "array", "items": {"type": "string"}, "default": []}}}

    def describe(self, p: dict) -> str:
        return f"the rows of {selection(p['table'], p['where'])}" + (
            f", columns {', '.join(p['columns'])}" if p["columns"] else "")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        t = cells(ev, p["table"], p["where"], p["by"])
        if t is None or t.empty:
            return Judgement(None, notes=[f"Table {selection(p['table'], p['where'])} is "
                                          f"{'absent' if t is None else 'empty'}."])
        missing = [c for c in p["columns"] if c not in t]
        t = t[[c for c in p["columns"] if c in t] or list(t.columns)]
        if p["by"] in t:
            t = t.assign(**{p["by"]: t[p["by"]].astype(str)})
        notes = [f"Columns not in the table: {', '.join(missing)}."] if missing else []
        return Judgement(None, t.to_dict("records"), notes)

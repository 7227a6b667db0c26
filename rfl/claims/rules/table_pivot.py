"""``table_pivot``: a measurement: a table the workflow wrote, pivoted for reading (e.g. the
stationary excess risk of ``rfl heterogeneity`` per problem and K against method and
participation). The paper names these settings as open directions: no claim to judge."""

from __future__ import annotations

import numpy as np

from ..rule import Evidence, Judgement, Rule

NAMES = {"type": "array", "minItems": 1, "items": {"type": "string"}}


def _label(columns: list[str], value) -> str:
    """A column heading from the pivot's column values: the first as it is, the others as
    ``name=value``."""
    value = value if isinstance(value, tuple) else (value,)
    parts = [str(value[0])] + [f"{c}={v:g}" if isinstance(v, float) else f"{c}={v}"
                               for c, v in zip(columns[1:], value[1:])]
    return ", ".join(parts)


class TablePivot(Rule):
    name = "table_pivot"
    summary = "a measurement: a workflow table pivoted (index rows, column headings, one value)"
    judges = False
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "table": {"type": "string", "default": "heterogeneity"},
        "index": {**NAMES, "default": ["problem", "K"]},
        "columns": {**NAMES, "default": ["method", "participation"]},
        "values": {"type": "string", "default": "mean"}}}

    def describe(self, p: dict) -> str:
        return (f"`{p['values']}` of the workflow table `{p['table']}` per ({', '.join(p['index'])}) "
                f"against ({', '.join(p['columns'])})")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        t = ev.table(p["table"])
        if t is None or t.empty:
            return Judgement(None, notes=[f"No table `{p['table']}` was written."])
        missing = [c for c in (*p["index"], *p["columns"], p["values"]) if c not in t.columns]
        if missing:
            return Judgement(None, notes=[f"The table `{p['table']}` has no column {', '.join(missing)}."])
        piv = t.pivot_table(index=p["index"], columns=p["columns"], values=p["values"], aggfunc="first")
        rows = []
        for idx, r in piv.iterrows():
            idx = idx if isinstance(idx, tuple) else (idx,)
            row = {c: (str(v) if not isinstance(v, float) else f"{v:g}") for c, v in zip(p["index"], idx)}
            row.update({_label(p["columns"], col): (float(v) if np.isfinite(v) else np.nan)
                        for col, v in r.items()})
            rows.append(row)
        return Judgement(None, rows)

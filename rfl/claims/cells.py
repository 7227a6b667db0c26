"""The cells of a workflow table a claim reads (Table 2 of the RFedAGS paper and the tables
beside it): the rows whose columns hold given values (``where``), and, where the config maps
the table's keys to experiments (``tables.<name>.experiments``: {key: experiment}, e.g.
Table 2's {r: experiment}), only the rows of the claim's experiments."""

from __future__ import annotations

import fnmatch

import pandas as pd

from .rule import Evidence

#: params schema of a row selection: column -> value
WHERE = {"type": "object", "additionalProperties": {"type": ["string", "number"]}, "default": {}}


def cells(ev: Evidence, table: str, where: dict, key: str = "r") -> pd.DataFrame | None:
    """The rows of workflow table ``table`` with ``column == value`` for each item of ``where``
    (compared as text; no row if the table lacks the column) that belong to the claim's
    experiments through the config's {``key`` value: experiment} map; None if the table is absent."""
    t = ev.table(table)
    if t is None:
        return None
    for col, v in where.items():
        t = t[t[col].astype(str) == str(v)] if col in t else t.iloc[:0]
    mapping = ev.config.get("tables", {}).get(table, {}).get("experiments")
    if isinstance(mapping, dict) and key in t:
        names = set(ev.names())
        t = t[t[key].map(lambda k: mapping.get(str(k)) in names).astype(bool)]
    return t.reset_index(drop=True)


def matching(names, patterns: list[str]) -> list[bool]:
    """Whether each name matches one of the shell-style ``patterns`` (``RFedAGS-K=*``)."""
    return [any(fnmatch.fnmatchcase(str(n), p) for p in patterns) for n in names]


def selection(table: str, where: dict) -> str:
    """``table2`` (protocol = heldout, normalisation = pooled): the selection in words."""
    return f"`{table}`" + (" (" + ", ".join(f"{k} = {v}" for k, v in where.items()) + ")" if where else "")

"""``same_direction``: per method, the measured value moves in the same direction as the paper's
between consecutive values of a key (RFedAGS paper, Table 2: the best test NMSE of every method
falls as the subspace dimension r grows from 3 to 5)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..cells import WHERE, cells, selection
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine


def agree(ours: pd.Series, paper: pd.Series) -> np.ndarray:
    """Per step between consecutive keys, whether ours has the sign of the paper's step (up,
    down or flat); shape (len(ours) - 1,)."""
    return np.sign(np.diff(ours.to_numpy(float))) == np.sign(np.diff(paper.to_numpy(float)))


def margin(steps: dict, pending: list[str]) -> str:
    """``"steps in the paper's direction 5 of 6 (RFedAvg 1 of 2), claim all"``: ``steps``:
    method -> its ``agree`` array; the methods without a value (``pending``) are counted apart."""
    n = sum(len(a) for a in steps.values())
    off = [f"{m} {int(a.sum())} of {len(a)}" for m, a in steps.items() if not a.all()]
    return (f"steps in the paper's direction {sum(int(a.sum()) for a in steps.values())} of {n}"
            + (f" ({', '.join(off)})" if off else "") + ", claim all"
            + (f"; {len(pending)} method{'s' if len(pending) != 1 else ''} without a value" if pending else ""))


class SameDirection(Rule):
    name = "same_direction"
    summary = "per method, the value moves with the key (e.g. r) in the same direction as the paper's"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "table": {"type": "string", "default": "table2"},
        "where": WHERE,
        "along": {"type": "string", "default": "r"},
        "value": {"type": "string", "default": "nmse_mean"},
        "paper": {"type": "string", "default": "paper_nmse"}}}

    def describe(self, p: dict) -> str:
        return (f"per method of {selection(p['table'], p['where'])} with a paper value at every "
                f"{p['along']} run, its {p['value']} moves in the same direction as the paper's between "
                f"each pair of consecutive {p['along']}; reproduced if for every such method (one "
                f"without a measured value at some {p['along']} is undecided)")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        t = cells(ev, p["table"], p["where"], p["along"])
        a = p["along"]
        keys = sorted(set(t[a])) if t is not None else []
        known = t.dropna(subset=[p["paper"]]) if t is not None else None
        if len(keys) < 2 or known.empty:
            why = (f"Table {selection(p['table'], p['where'])} is absent." if t is None else
                   f"Fewer than two {a} with a paper value: no order to compare.")
            return Judgement(UNDECIDED, notes=[why],
                             decide=f"runs at two or more {a} the paper reports",
                             margin=f"no two {a} to compare, claim all steps in the paper's direction")
        rows, cases, notes, pending, steps = [], [], [], [], {}
        for method, sub in t.groupby("method", sort=False):
            by = sub.set_index(a)
            if not set(keys) <= set(by.index) or by.loc[keys, p["paper"]].isna().any():
                continue
            ours, paper = by.loc[keys, p["value"]].astype(float), by.loc[keys, p["paper"]].astype(float)
            if ours.isna().any():
                cases.append(OPEN)
                pending.append(f"{method} at {a} = {', '.join(str(k) for k in ours.index[ours.isna()])}")
                continue
            steps[method] = agree(ours, paper)
            cases.append(OK if steps[method].all() else FAIL)
            rows.append({"method": method, f"best {a} (ours)": str(ours.idxmin()),
                         f"best {a} (paper)": str(paper.idxmin()),
                         **{f"{a} = {k}": float(ours.loc[k]) for k in keys}})
        if pending:
            notes.append(f"No measured value: {'; '.join(pending)}.")
        if not cases:
            notes.append(f"No method has a paper value at every {a} run.")
        verdict = combine(cases)
        decide = (f"a measured value for {'; '.join(pending)}" if pending and verdict in (UNDECIDED, PARTLY)
                  else f"a method with a paper value at every {a} run" if not cases else None)
        return Judgement(verdict, rows, notes, decide, margin(steps, pending))

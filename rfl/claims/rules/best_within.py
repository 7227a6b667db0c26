"""``best_within``: per key of a table (Table 2: per subspace dimension r), the lowest value of
some methods is within a tolerance of the lowest value of reference methods (RFedAGS paper,
Section 5.2 and Table 2: "RFedAGS is comparable to the centralised RSD, RCG and RLBFGS";
"RFedAvg performs very close to RFedAGS with K = 1")."""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..cells import WHERE, cells, matching, selection
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine

PATTERNS = {"type": "array", "minItems": 1, "items": {"type": "string"}}


def gap(best: float, ref: float, scale: str) -> float:
    """best - ref (``absolute``) or (best - ref) / ref (``relative``: how much worse, > 0, the
    best of the methods is than the best reference); NaN if either is not finite, or a
    relative gap to a reference that is not positive."""
    if not (np.isfinite(best) and np.isfinite(ref)) or scale == "relative" and ref <= 0:
        return np.nan
    return best - ref if scale == "absolute" else (best - ref) / ref


def case(g: float, tolerance: float, sided: str) -> str:
    """Holds if the gap is at most ``tolerance`` (``above``: only being worse counts; ``both``:
    its absolute value); undecided without a gap."""
    if np.isnan(g):
        return OPEN
    return OK if (g if sided == "above" else abs(g)) <= tolerance else FAIL


def label(patterns: list[str]) -> str:
    one = len(patterns) == 1 and not any(c in patterns[0] for c in "*?[")
    return patterns[0] if one else "best of " + ", ".join(patterns)


class BestWithin(Rule):
    name = "best_within"
    summary = "per key (e.g. r), the best of some methods within a tolerance of the best of reference methods"
    params_schema = {"type": "object", "additionalProperties": False,
                     "required": ["methods", "reference"], "properties": {
                         "table": {"type": "string", "default": "table2"},
                         "where": WHERE,
                         "by": {"type": "string", "default": "r"},
                         "value": {"type": "string", "default": "nmse_mean"},
                         "methods": PATTERNS,
                         "reference": PATTERNS,
                         "tolerance": {"type": "number", "minimum": 0, "default": 0.05},
                         "scale": {"enum": ["relative", "absolute"], "default": "relative"},
                         "sided": {"enum": ["above", "both"], "default": "above"}}}

    def describe(self, p: dict) -> str:
        tol = f"{p['tolerance']:.0%} (relative)" if p["scale"] == "relative" else f"{p['tolerance']:g}"
        how = "is at most" if p["sided"] == "above" else "differs by at most"
        return (f"per {p['by']} of {selection(p['table'], p['where'])}, the lowest {p['value']} of "
                f"{', '.join(p['methods'])} {how} {tol} {'above ' if p['sided'] == 'above' else 'from '}"
                f"the lowest of {', '.join(p['reference'])}; reproduced if for every {p['by']} (one "
                f"without a finite value on both sides is undecided)")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        t = cells(ev, p["table"], p["where"], p["by"])
        if t is None or t.empty:
            what = "absent" if t is None else "without a row of this selection"
            return Judgement(UNDECIDED, notes=[f"Table {selection(p['table'], p['where'])} is {what}."],
                             decide=f"the workflow's table `{p['table']}` with these rows",
                             margin=f"no row to compare, claim gap <= {p['tolerance']:g}")
        a_name, b_name = label(p["methods"]), label(p["reference"])
        g_name = "relative gap" if p["scale"] == "relative" else "difference"
        claim = S.Claim(g_name if p["sided"] == "above" else f"|{g_name}|", high=p["tolerance"])
        rows, cases, open_keys, margins = [], [], [], []
        for k, sub in t.groupby(p["by"], sort=True):
            best = sub.loc[matching(sub["method"], p["methods"]), p["value"]].min()
            ref = sub.loc[matching(sub["method"], p["reference"]), p["value"]].min()
            g = gap(best, ref, p["scale"])
            cases.append(case(g, p["tolerance"], p["sided"]))
            if cases[-1] == OPEN:
                open_keys.append(str(k))
            rows.append({p["by"]: str(k), a_name: best, b_name: ref, g_name: g})
            margins.append(S.value_margin(claim.what, g if p["sided"] == "above" else abs(g), claim,
                                          label=f"{p['by']} = {k}"))
        verdict = combine(cases)
        decide = (f"a finite {p['value']} of both sides at {p['by']} = {', '.join(open_keys)}"
                  if open_keys and verdict in (UNDECIDED, PARTLY) else None)
        return Judgement(verdict, rows, decide=decide, margin=S.margin_line(margins))

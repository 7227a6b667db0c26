"""``comparable_value``: a federated method ends at a cost comparable to centralised solvers'
(RFedAGS paper Section 5.2, Figure 3 first row: "RFedAGS is comparable to some centralized
methods (RSD, RCG, and RLBFGS) in terms of function value").

Statistic, per reference method: per seed, (v - v_ref) / |v_ref|, v the method's ``metric`` at
its last round at its best K (the K with the lowest mean final value across seeds), v_ref the
reference's at its last round, paired by seed (the same data split per seed); interval across
seeds. Holds when it lies below ``tolerance`` (no more than that fraction above), fails when
wholly above.
"""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..rule import Evidence, Judgement, Rule
from ._shared import judgement


def final(metric: str):
    """A run's ``metric`` at its last recorded round (a solver that stopped keeps its value)."""
    return lambda t: float(S.curve_of(t, metric).dropna().iloc[-1])


class ComparableValue(Rule):
    name = "comparable_value"
    across_seeds = True
    summary = "the method's final value at its best K is within a relative tolerance above each reference's, paired over seeds"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "method": {"type": "string", "default": "rfedags"},
        "references": {"type": "array", "minItems": 1, "items": {"type": "string"},
                       "default": ["rsd", "rcg", "rlbfgs"]},
        "metric": {"type": "string", "default": "cost"},
        "tolerance": {"type": "number", "exclusiveMinimum": 0, "default": 0.05}}}

    def describe(self, p: dict) -> str:
        return (f"per experiment and reference among {', '.join(p['references'])}: per seed, "
                f"{p['method']}'s {p['metric']} after its last round at its best K (lowest mean) minus "
                f"the reference's, over |the reference's|, paired by seed; holds when its interval "
                f"across seeds lies below {p['tolerance']:g}, fails when wholly above (fewer than "
                f"{S.MIN_SEEDS} seeds: undecided)")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, tests, missing = [], [], []
        value = final(p["metric"])
        multi = len(ev.names()) > 1
        for e in ev.names():
            mine = ev.by_k(e, p["method"], "any")
            runs = ev.runs(e)
            if not mine:
                missing.append(f"`{e}`: runs of {p['method']}")
                continue
            K = min(mine, key=lambda k: float(np.mean(S.per_seed(mine[k], value))))
            for ref in p["references"]:
                theirs = next((v for k, v in runs.items() if k[0] == ref), None)
                if theirs is None:
                    missing.append(f"`{e}`: runs of {ref}")
                    continue
                gap = S.paired(mine[K], theirs, lambda a, b: (value(a) - value(b)) / abs(value(b)))
                t = S.judged(gap, S.Claim(f"relative gap {p['method']} K = {K} - {ref}", high=p["tolerance"]),
                             label=(f"`{e}`" if multi else ""))
                tests.append(t)
                rows.append({**({"experiment": e} if multi else {}), "reference": ref, "K": str(K),
                             f"{p['method']} final": float(np.mean(S.per_seed(mine[K], value))),
                             f"{ref} final": float(np.mean(S.per_seed(theirs, value))),
                             "relative gap [interval]": t.interval.text(), "outcome": t.outcome})
        return judgement(rows, tests, missing)

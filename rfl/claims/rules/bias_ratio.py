"""``bias_ratio``: a method's stationary bias against a reference method's, experiment by
experiment: it ``removes`` it (ratio at most ``factor``) or ``keeps`` it (ratio within
[1/factor, factor]). Mangold et al. 2024 (arXiv 2412.01389; SCAFFLSA slides): Scaffold removes
the heterogeneity part of FedAvg's bias but keeps the part due to the gradient noise ("it seems
Scaffold cannot correct bias due to stochasticity"); Federated Richardson-Romberg removes both
first-order parts.

Biases from ``rfl.claims.bias.estimate``, ratio r = ||b_method|| / ||b_reference|| with the
uncertainty u_r = r sqrt((u_m / b_m)^2 + (u_ref / b_ref)^2) (u_m / b_ref when b_m = 0). A case
holds when [r - z u_r, r + z u_r] lies inside the claimed range, fails when it lies outside,
and is undecided otherwise, or when the reference's own bias is not resolved."""

from __future__ import annotations

import numpy as np

from rfl.reporting.figures import method_label

from .. import stats as S
from ..bias import estimate, more_for, step_of
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, combine


def ratio(b, ref) -> tuple[float, float]:
    """(r, u_r) of two ``Bias`` (module docstring)."""
    r = b.value / ref.value
    if b.value == 0:
        return r, b.uncertainty / ref.value
    return r, r * float(np.hypot(b.uncertainty / b.value, ref.uncertainty / ref.value))


def outcome(r: float, u: float, relation: str, factor: float, z: float) -> str:
    lo, hi = r - z * u, r + z * u
    if relation == "removes":
        return OK if hi <= factor else FAIL if lo > factor else OPEN
    if 1 / factor <= lo and hi <= factor:
        return OK
    return FAIL if hi < 1 / factor or lo > factor else OPEN


def claim_of(relation: str, factor: float) -> S.Claim:
    """The region of the ratio: ``removes`` <= factor, ``keeps`` within [1/factor, factor]."""
    if relation == "removes":
        return S.Claim("ratio", high=factor)
    return S.Claim("ratio", low=1 / factor, high=factor)


class BiasRatio(Rule):
    name = "bias_ratio"
    summary = "a method's stationary bias over a reference method's: removed (small ratio) or kept (ratio near 1)"
    params_schema = {"type": "object", "additionalProperties": False, "required": ["method"], "properties": {
        "method": {"type": "string", "description": "the algorithm judged"},
        "reference": {"type": "string", "default": "fedavg"},
        "relation": {"enum": ["removes", "keeps"], "default": "removes"},
        "factor": {"type": "number", "exclusiveMinimum": 0, "default": 0.05,
                   "description": "removes: ratio <= factor; keeps: 1/factor <= ratio <= factor (> 1)"},
        "z": {"type": "number", "minimum": 0, "default": 3.0},
        "window": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.5}}}

    def describe(self, p: dict) -> str:
        what = (f"at most {p['factor']:g} times" if p["relation"] == "removes"
                else f"between {1 / p['factor']:.3g} and {p['factor']:g} times")
        return (f"in every experiment, {p['method']}'s ||bias|| (mean of theta - theta* over the last "
                f"{p['window']:g} of the rounds and the seeds) is {what} {p['reference']}'s, "
                f"{p['z']:g} uncertainties included")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        if p["relation"] == "keeps" and p["factor"] <= 1:
            raise ValueError(f"bias_ratio: keeps needs factor > 1, got {p['factor']}")
        rows, notes, cases, decide, margins = [], [], [], [], []
        claim = claim_of(p["relation"], p["factor"])
        for e in ev.names():
            runs = ev.runs(e)
            mine = {k: v for k, v in runs.items() if k[0] == p["method"]}
            ref = next((v for k, v in runs.items() if k[0] == p["reference"] and k[2] is None), None)
            if not mine or ref is None:
                cases.append(OPEN)
                notes.append(f"- `{e}`: no runs of {p['method'] if not mine else p['reference']}.")
                decide.append(f"`{e}`: runs of {p['method']} and {p['reference']}")
                margins.append(f"`{e}`: no runs of {p['method'] if not mine else p['reference']}, {claim.text()}")
                continue
            b_ref = estimate(ref, p["window"])
            for key, tables in mine.items():
                b = estimate(tables, p["window"])
                row = {"experiment": e, "eta": step_of(ev, e), "method": method_label(key),
                       "bias": b.value, "reference bias": b_ref.value}
                if not b_ref.resolved(p["z"]):
                    cases.append(OPEN)
                    row.update(ratio=np.nan, uncertainty=np.nan)
                    notes.append(f"- `{e}`: {p['reference']}'s bias {b_ref.value:.3g} is within "
                                 f"{p['z']:g} x {b_ref.uncertainty:.2g} of 0.")
                    decide.append(f"`{e}`: {more_for(b_ref, b_ref.value / (2 * p['z']))}")
                    margins.append(S.value_margin(f"{p['reference']} ||bias||", b_ref.value,
                                                  S.Claim("", low=0, strict=True), b_ref.uncertainty,
                                                  p["z"], label=f"`{e}`"))
                    rows.append(row)
                    continue
                r, u = ratio(b, b_ref)
                case = outcome(r, u, p["relation"], p["factor"], p["z"])
                cases.append(case)
                margins.append(S.value_margin("ratio", r, claim, u, p["z"],
                                              label=f"`{e}` {method_label(key)}"))
                row.update(ratio=r, uncertainty=u)
                rows.append(row)
                notes.append(f"- `{e}` (eta = {row['eta']:g}): {method_label(key)}'s bias is "
                             f"{r:.3g} +- {u:.2g} times {p['reference']}'s.")
                if case == OPEN:
                    margin = abs(r - (p["factor"] if p["relation"] == "removes" or r > 1 else 1 / p["factor"]))
                    decide.append(f"`{e}`: the ratio's uncertainty below {margin / p['z']:.2g} "
                                  f"(now {u:.2g}): {more_for(b, b.uncertainty * margin / (p['z'] * u) if u else 0)}")
        verdict = combine(cases)
        return Judgement(verdict, rows, notes, "; ".join(decide) if decide and OPEN in cases else None,
                         S.margin_line(margins))

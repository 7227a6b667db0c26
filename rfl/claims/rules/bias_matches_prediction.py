"""``bias_matches_prediction``: with a fixed step and H local steps, FedLSA's iterate converges
to theta* + theta_inf^bias (Mangold et al., SCAFFLSA, the bias of FedLSA): with the exact
oracle (no mini-batch noise), FedLSA's plateau of E||theta_t - theta*||^2 equals the
predicted ||theta_inf^bias||^2,

    theta_inf^bias = [mean_c (I - Gamma_c)]^-1 mean_c (I - Gamma_c)(theta*_c - theta*),
    Gamma_c = (I - eta A_bar_c)^H,

per cell (setting, N, eta, H > 1) of the study's table (``rfl.reporting.lsa``). With H = 1
the bias is exactly 0 and no relative error is formed: those cells are shown, not judged.
"""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..lsa_cells import cells, no_table, where
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine


def case(r, rel_tol: float) -> tuple[str, str | None]:
    """(outcome, why) of one cell with H > 1: it holds when the plateau is within ``rel_tol``
    (relative) of the prediction and the curve has levelled off (start of the plateau window /
    last round within 1 +- ``rel_tol``); a diverged FedLSA (infinite plateau) fails; a cell
    without a prediction or a FedLSA curve, or one whose curve is still falling over the
    window, is undecided (more rounds: see ``rounds_needed``)."""
    plateau, rel, ratio = r["fedlsa_plateau"], r["rel_error"], r["fedlsa_window_ratio"]
    if plateau == np.inf:
        return FAIL, "FedLSA diverged (infinite plateau)"
    if not (np.isfinite(rel) and np.isfinite(ratio)):
        return OPEN, "no prediction or no FedLSA curve"
    if ratio > 1 + rel_tol:
        return OPEN, f"FedLSA still falls by a factor {ratio:.4g} over its plateau window"
    if rel <= rel_tol and abs(ratio - 1) <= rel_tol:
        return OK, None
    return FAIL, None


def margin(biased, rel_tol: float) -> str:
    """The deciding statistics of the cells with H > 1 on one line: the largest relative error
    and the largest |window start / last - 1| (the cell named), each against ``rel_tol``."""
    claim = S.Claim("", high=rel_tol)
    if biased.empty:
        return S.value_margin("cells with the exact oracle and H > 1", 0, S.Claim("", low=1))
    parts = []
    for what, dev in (("relative error", biased["rel_error"].astype(float)),
                      ("|window start / last - 1|", (biased["fedlsa_window_ratio"].astype(float) - 1).abs())):
        if dev.notna().any():
            w = biased.loc[dev.idxmax()]
            parts.append(S.value_margin(f"largest {what}", float(dev.max()), claim, label=where(w)))
        else:
            parts.append(f"{what}: no cell with a prediction and a FedLSA curve, {claim.text()}")
    return S.margin_line(parts)


def rounds_needed(r, rel_tol: float) -> float:
    """Rounds after which the predicted transient initial x rho^t (rho: the contraction of
    FedLSA's expected iterate per round, recorded by the run) is below ``rel_tol`` x the
    predicted bias: the least t with initial rho^t <= rel_tol bias; NaN without a contraction
    < 1 or a positive prediction."""
    rho, init, pred = r.get("contraction", np.nan), r["initial"], r["predicted_bias_sq"]
    if not (0 < rho < 1 and pred > 0 and init > 0):
        return np.nan
    return float(max(0.0, np.ceil(np.log(rel_tol * pred / init) / np.log(rho))))


class BiasMatchesPrediction(Rule):
    name = "bias_matches_prediction"
    summary = "FedLSA's plateau within rel_tol of the predicted bias, levelled off (exact oracle, H > 1)"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "rel_tol": {"type": "number", "exclusiveMinimum": 0, "default": 0.01}}}

    def describe(self, p: dict) -> str:
        return (f"for every (setting, N, eta, H > 1) with the exact oracle, FedLSA's plateau is within "
                f"{p['rel_tol']:.0%} (relative) of the predicted norm(bias)^2 and its curve has levelled "
                f"off (start of the plateau window / last round within 1 +- {p['rel_tol']:g}); a FedLSA "
                f"that diverged fails; a cell without a prediction, or whose curve still falls over "
                f"the window, is undecided")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        t = cells(ev)
        if t is None or t.empty:
            return no_table(UNDECIDED)
        tol = p["rel_tol"]
        rows, cases, notes, decide = [], [], [], []
        exact = t[t["oracle"] == "exact"]
        if len(exact) < len(t):
            notes += (f"{len(t) - len(exact)} cell(s) of the pool oracle are not judged here: their "
                         "plateau carries the mini-batch noise (bias^2 + variance).", "")
        biased = exact[exact["H"] > 1]
        for _, r in biased.iterrows():
            outcome, why = case(r, tol)
            cases.append(outcome)
            if outcome == OPEN:
                need = rounds_needed(r, tol)
                est = (f"; the transient falls below {tol:g} x the prediction after about {need:.0f} "
                       f"rounds ({int(r['rounds'])} run)" if np.isfinite(need) else "")
                decide.append(f"{where(r)}: {why}" + (est or "; more rounds"))
            elif why:
                notes.append(f"- {where(r)}: fails: {why}.")
            rows.append({"setting": r["setting"], "N": str(int(r["N"])), "eta": f"{r['eta']:g}",
                         "H": str(int(r["H"])), "predicted norm(bias)^2": r["predicted_bias_sq"],
                         "FedLSA plateau": r["fedlsa_plateau"], "rel. error": r["rel_error"],
                         "window start / last": r["fedlsa_window_ratio"], "rounds": str(int(r["rounds"])),
                         "agrees": {OK: "yes", FAIL: "no", OPEN: "undecided"}[outcome]})
        errors = biased["rel_error"].dropna()
        if len(errors):
            w = biased.loc[errors.idxmax()]
            notes[:0] = [f"{cases.count(OK)} of {len(biased)} cells with H > 1 agree; the largest "
                         f"relative error is {w['rel_error']:.2e} ({where(w, eta=False)}: predicted "
                         f"{w['predicted_bias_sq']:.4g}, measured {w['fedlsa_plateau']:.4g}).", ""]
        for _, r in exact[exact["H"] == 1].iterrows():
            notes.append(f"- H = 1 ({r['setting']}, N = {int(r['N'])}): the bias is 0 (FedLSA with one "
                         f"local step is unbiased); its plateau is {r['fedlsa_plateau']:.2e}.")
        verdict = combine(cases)
        if not cases:
            decide.append("a cell with the exact oracle and H > 1")
        return Judgement(verdict, rows, notes,
                         "; ".join(decide) if decide and verdict in (UNDECIDED, PARTLY) else None,
                         margin(biased, tol))

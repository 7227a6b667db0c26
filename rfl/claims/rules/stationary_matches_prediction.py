"""``stationary_matches_prediction``: with mini-batch noise (the stochastic pool oracle),
FedLSA's E||theta_t - theta*||^2 settles at its stationary value, bias^2 + variance (Mangold
et al., SCAFFLSA; computed exactly from the agents' pools, ``FederatedLSA.
fedlsa_stationary_pool``).

The measured plateau is the mean over the plateau window of the seed-mean curve, an average
over S independent seeds, so it is judged by its Monte Carlo standard error se = sd(seeds'
window means) / sqrt(S): a cell agrees when |measured - predicted| <= t_S se, t_S the
two-sided ``level`` quantile of Student's t with S - 1 degrees of freedom, and the start is
forgotten by the window (the table's ``transient``, initial x contraction^(window start),
is at most se).
"""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..lsa_cells import cells, no_table, rounds_for_window_start, t_quantile, where
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine


def start_forgotten_at(r) -> float:
    """The first round t with initial x contraction^t <= se (the run's second-moment
    contraction); NaN without a contraction < 1."""
    rho, init, se = r.get("contraction", np.nan), r["initial"], r["fedlsa_plateau_se"]
    if not (0 < rho < 1 and init > 0 and se > 0):
        return np.nan
    return float(max(0.0, np.ceil(np.log(se / init) / np.log(rho))))


def case(r, level: float, tail: float) -> tuple[str, str | None, str | None]:
    """(outcome, why, what would decide it) of one cell. A FedLSA that diverged (infinite
    plateau) fails. Undecided: no prediction, fewer than two seeds or no standard error (no
    t-tolerance), or a start not yet forgotten at the window (more rounds: computed)."""
    seeds, se = r["fedlsa_seeds"], r["fedlsa_plateau_se"]
    if r["fedlsa_plateau"] == np.inf:
        return FAIL, "FedLSA diverged (infinite plateau)", None
    if not (np.isfinite(r["predicted_plateau"]) and np.isfinite(r["fedlsa_plateau"])):
        return OPEN, "no prediction or no FedLSA curve", f"a prediction and FedLSA runs at {where(r)}"
    if not (seeds >= 2 and np.isfinite(se)):
        return OPEN, f"{int(seeds)} seed(s): no standard error", f"at least 2 seeds at {where(r)} ({int(seeds)} run)"
    if np.isnan(r["transient"]):
        return (OPEN, "no predicted transient (the runs record no contraction)",
                f"runs at {where(r)} that record their second-moment contraction")
    if not r["transient"] <= se:
        t0 = start_forgotten_at(r)
        need = rounds_for_window_start(t0, tail, start=int(r["rounds"]))
        return (OPEN, f"the start is not forgotten (transient {r['transient']:.3g} > se {se:.3g})",
                f"about {need:.0f} rounds at {where(r)} ({int(r['rounds'])} run), so that the plateau "
                f"window starts at round {t0:.0f}" if np.isfinite(need) else f"more rounds at {where(r)}")
    err, tol = abs(r["fedlsa_plateau"] - r["predicted_plateau"]), t_quantile(seeds, level) * se
    if err <= tol:
        return OK, None, None
    return FAIL, f"|measured - predicted| = {err:.3g} > {tol:.3g}", None


def margin(t, level: float) -> str:
    """The deciding statistic on one line: the cell with the largest |z| = |measured -
    predicted| / se relative to its tolerance t_S (the two-sided ``level`` Student quantile),
    against t_S; then each cell kept undecided by its seeds or its transient, with its bound."""
    z = ((t["fedlsa_plateau"] - t["predicted_plateau"]).abs() / t["fedlsa_plateau_se"]).astype(float)
    tq = t["fedlsa_seeds"].map(lambda n: t_quantile(n, level)).astype(float)
    z = z.where(np.isfinite(tq))
    parts = []
    if z.notna().any():
        i = (z / tq).idxmax()
        parts.append(S.value_margin("|z|", float(z[i]), S.Claim("", high=float(tq[i])), label=where(t.loc[i], eta=False)))
    else:
        parts.append(f"|z|: no cell with a prediction and 2 seeds, claim <= t_{level:g}")
    for i, r in t.iterrows():
        if r["fedlsa_plateau"] == np.inf:
            parts.append(f"{where(r, eta=False)}: FedLSA diverged (plateau inf)")
        elif not (r["fedlsa_seeds"] >= 2 and np.isfinite(r["fedlsa_plateau_se"])):
            parts.append(S.value_margin("seeds", int(r["fedlsa_seeds"]), S.Claim("", low=2), label=where(r, eta=False)))
        elif np.isfinite(z[i]) and not r["transient"] <= r["fedlsa_plateau_se"]:
            parts.append(S.value_margin("transient", float(r["transient"]),
                                        S.Claim("", high=float(r["fedlsa_plateau_se"])), label=where(r, eta=False))
                         + " (se)")
    return S.margin_line(parts)


class StationaryMatchesPrediction(Rule):
    name = "stationary_matches_prediction"
    summary = "FedLSA's plateau within the two-sided Student-t multiple of its seed standard error of bias^2 + variance"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "level": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.99}}}

    def describe(self, p: dict) -> str:
        return (f"every (setting, N, eta, H): |measured - predicted| <= t se with t the two-sided "
                f"{p['level']:.0%} Student quantile for (seeds - 1) degrees of freedom, and the predicted "
                f"transient at the window's start <= se; a FedLSA that diverged fails; a cell without "
                f"a prediction, with fewer than 2 seeds, or whose start is not yet forgotten, is undecided")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        t = cells(ev)
        if t is None or t.empty:
            return no_table(UNDECIDED)
        tail = ev.config.get("lsa", {}).get("tail", 0.1)
        rows, cases, notes, decide = [], [], [], []
        for _, r in t.iterrows():
            outcome, why, d = case(r, p["level"], tail)
            cases.append(outcome)
            if why:
                notes.append(f"- {where(r, eta=False)}: {'disagrees' if outcome == FAIL else 'undecided'}, {why}.")
            if d:
                decide.append(d)
            tol = t_quantile(r["fedlsa_seeds"], p["level"]) * r["fedlsa_plateau_se"]
            rows.append({"setting": r["setting"], "N": str(int(r["N"])), "H": str(int(r["H"])),
                         "predicted plateau": r["predicted_plateau"], "FedLSA plateau": r["fedlsa_plateau"],
                         "se": r["fedlsa_plateau_se"], "t se": tol, "z": r["z"],
                         "seeds": str(int(r["fedlsa_seeds"])),
                         "agrees": {OK: "yes", FAIL: "no", OPEN: "undecided"}[outcome]})
        z = np.abs(t["z"].to_numpy(float))
        notes.append(f"{cases.count(OK)} of {len(t)} cells agree"
                     + (f" (largest |z| = {np.nanmax(z):.2f})." if np.isfinite(z).any() else "."))
        verdict = combine(cases)
        return Judgement(verdict, rows, notes,
                         "; ".join(decide) if decide and verdict in (UNDECIDED, PARTLY) else None,
                         margin(t, p["level"]))

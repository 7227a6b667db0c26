"""``improves_significantly``: with mini-batch noise, SCAFFLSA improves on FedLSA where FedLSA's
bias dominates its error (Mangold et al., SCAFFLSA: the control variates remove the bias, not
the noise). In the cells of the study's table (``rfl.reporting.lsa``) whose predicted bias^2
is at least the predicted variance (removing the bias at least halves FedLSA's error),
SCAFFLSA's plateau (same window) lies below FedLSA's by more than t se_diff, se_diff =
sqrt(se_FedLSA^2 + se_SCAFFLSA^2), t the two-sided ``level`` Student quantile with the smaller
seed count - 1 degrees of freedom. Where the variance dominates, nothing is claimed.
"""

from __future__ import annotations

import numpy as np

from ..lsa_cells import cells, no_table, rounds_to_reach, t_quantile, where
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine


def still_falling(r) -> bool:
    """SCAFFLSA's curve still falls over the plateau window: start / last - 1 > 3 se / last."""
    last = r["scafflsa_last"]
    return bool(last > 0 and r["scafflsa_window_ratio"] - 1 > 3 * r["scafflsa_plateau_se"] / last)


def margin(r, level: float) -> float:
    """t se_diff: t with the smaller seed count, se_diff from both standard errors."""
    seeds = min(r["fedlsa_seeds"], r["scafflsa_seeds"])
    return t_quantile(seeds, level) * float(np.hypot(r["fedlsa_plateau_se"], r["scafflsa_plateau_se"]))


def case(r, level: float) -> tuple[str, str | None]:
    """(outcome, what would decide it) of one bias-dominated cell: it holds when FedLSA's
    plateau - SCAFFLSA's > t se_diff; undecided without both plateaus, with fewer than two
    seeds of a method (no standard error), or short of the margin while SCAFFLSA still falls
    (rounds at its per-round factor to reach FedLSA's plateau - the margin, computed); fails
    otherwise."""
    m = margin(r, level)
    gap = r["fedlsa_plateau"] - r["scafflsa_plateau"]
    seeds = int(min(r["fedlsa_seeds"], r["scafflsa_seeds"]))
    if not np.isfinite(gap):
        return OPEN, f"FedLSA and SCAFFLSA plateaus at {where(r)}"
    if not np.isfinite(m):
        return OPEN, f"at least 2 seeds of each method at {where(r)} ({seeds} run)"
    if gap > m:
        return OK, None
    if still_falling(r):
        more = rounds_to_reach(r["scafflsa_last"], r.get("scafflsa_rate", np.nan), r["fedlsa_plateau"] - m)
        if np.isfinite(more):
            return OPEN, f"about {r['rounds'] + more:.0f} rounds at {where(r)} ({int(r['rounds'])} run)"
        if np.isnan(more):
            return OPEN, f"more rounds at {where(r)}"
    return FAIL, None


class ImprovesSignificantly(Rule):
    name = "improves_significantly"
    summary = "SCAFFLSA's plateau below FedLSA's by more than t se_diff where the bias dominates"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "level": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.99}}}

    def describe(self, p: dict) -> str:
        return (f"cells with predicted bias^2 >= predicted variance: SCAFFLSA's plateau is below "
                f"FedLSA's by more than t sqrt(se_FedLSA^2 + se_SCAFFLSA^2) (t the two-sided "
                f"{p['level']:.0%} Student quantile, smaller seed count - 1 degrees of freedom); a cell "
                f"with fewer than 2 seeds, or short of it while SCAFFLSA still falls, is undecided")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        t = cells(ev)
        if t is None or t.empty:
            return no_table(UNDECIDED)
        dom = t[t["predicted_bias_sq_pool"] >= t["predicted_variance"]]
        rows, cases, notes, decide, margins = [], [], [], [], []
        if dom.empty:
            notes.append("No cell has a predicted bias^2 at least its predicted variance.")
            decide.append("a cell whose predicted bias^2 is at least its predicted variance")
        for _, r in dom.iterrows():
            outcome, d = case(r, p["level"])
            cases.append(outcome)
            if d:
                decide.append(d)
            m = margin(r, p["level"])
            margins.append(f"{where(r, eta=False)}: FedLSA - SCAFFLSA plateau "
                           f"{r['fedlsa_plateau'] - r['scafflsa_plateau']:.3g}, claim > t se_diff = {m:.3g} "
                           f"({int(min(r['fedlsa_seeds'], r['scafflsa_seeds']))} seeds, t)")
            f = r["fedlsa_plateau"] / r["scafflsa_plateau"] if r["scafflsa_plateau"] > 0 else np.inf
            still = " (still falling: more rounds would lower it)" if still_falling(r) else ""
            notes.append(f"- {where(r, eta=False)}: bias^2 {r['predicted_bias_sq_pool']:.3g} vs variance "
                         f"{r['predicted_variance']:.3g}; FedLSA {r['fedlsa_plateau']:.4g}, SCAFFLSA "
                         f"{r['scafflsa_plateau']:.4g} over the same window{still} (factor {f:.3g}, "
                         f"margin {m:.2g}): " + {OK: "improves", FAIL: "no significant improvement",
                                                 OPEN: "undecided"}[outcome] + ".")
            rows.append({"setting": r["setting"], "N": str(int(r["N"])), "H": str(int(r["H"])),
                         "pred. bias^2": r["predicted_bias_sq_pool"], "pred. variance": r["predicted_variance"],
                         "FedLSA plateau": r["fedlsa_plateau"], "SCAFFLSA plateau": r["scafflsa_plateau"],
                         "factor": f, "margin t se_diff": m,
                         "improves": {OK: "yes", FAIL: "no", OPEN: "undecided"}[outcome]})
        verdict = combine(cases)
        return Judgement(verdict, rows, notes,
                         "; ".join(decide) if decide and verdict in (UNDECIDED, PARTLY) else None,
                         "; ".join(margins) or None)

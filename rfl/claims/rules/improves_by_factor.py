"""``improves_by_factor``: SCAFFLSA's control variates remove FedLSA's heterogeneity bias
(Mangold et al., SCAFFLSA: it converges to theta* itself): per cell (setting, N, eta, H > 1)
of the study's table (``rfl.reporting.lsa``), SCAFFLSA's error at the last round is at least
``factor`` times below FedLSA's plateau.

A cell short of the factor whose SCAFFLSA curve is still falling is not refuted: at the
per-round factor of its last rounds (``scafflsa_rate``: the second half of its rounds) the
curve reaches FedLSA's plateau / ``factor`` after a computed number of rounds, and the cell
is undecided until that many are run.
"""

from __future__ import annotations

import numpy as np

from rfl.reporting.lsa import RATE_WINDOW, window_length

from ..lsa_cells import cells, no_table, rounds_to_reach, where
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine


def fall(r) -> float:
    """How much SCAFFLSA's curve falls over the rate window (the second half of its rounds):
    rate^-(rounds in the window - 1), from the table's per-round factor; NaN without it."""
    rate = r.get("scafflsa_rate", np.nan)
    if not (np.isfinite(rate) and rate > 0):
        return np.nan
    n = window_length(np.zeros(int(r["rounds"]) + 1), RATE_WINDOW)
    return float(rate ** -(n - 1))


def case(r, factor: float, rel_tol: float) -> tuple[str, str | None, float]:
    """(outcome, why, rounds in all that would reach the factor) of one cell. It holds with
    FedLSA's plateau / SCAFFLSA's last value >= ``factor``. Short of it: undecided while
    SCAFFLSA still falls by more than 1 + ``rel_tol`` over the second half of its rounds (the
    rounds needed at its per-round factor, or NaN without one); fails once it has levelled
    off, or diverged. Undecided without a finite FedLSA plateau or a SCAFFLSA curve."""
    plateau, last = r["fedlsa_plateau"], r["scafflsa_last"]
    if not np.isfinite(plateau) or np.isnan(last):
        return OPEN, "no finite FedLSA plateau or no SCAFFLSA curve", np.nan
    if r["scafflsa_factor"] >= factor:
        return OK, None, np.nan
    drop = fall(r)
    still = drop > 1 + rel_tol if np.isfinite(drop) else r["scafflsa_window_ratio"] > 1 + rel_tol
    if not still:
        return FAIL, "SCAFFLSA has levelled off (or diverged) short of the factor", np.nan
    more = rounds_to_reach(last, r.get("scafflsa_rate", np.nan), plateau / factor)
    if more == np.inf:
        return FAIL, "SCAFFLSA does not fall over its last rounds", np.nan
    return OPEN, "SCAFFLSA is still falling", float(r["rounds"] + more)


class ImprovesByFactor(Rule):
    name = "improves_by_factor"
    summary = "SCAFFLSA's last error at least `factor` below FedLSA's plateau, per cell with H > 1"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "factor": {"type": "number", "exclusiveMinimum": 1, "default": 100.0},
        "rel_tol": {"type": "number", "exclusiveMinimum": 0, "default": 0.01},
        "roundoff": {"type": "number", "exclusiveMinimum": 0, "default": 1e-18}}}

    def describe(self, p: dict) -> str:
        return (f"every (setting, N, eta, H > 1): SCAFFLSA's error at the last round is at least "
                f"{p['factor']:g}x below FedLSA's plateau; partly if for some. A cell short of it whose "
                f"SCAFFLSA curve still falls by more than {p['rel_tol']:g} (relative) over the second "
                f"half of its rounds is undecided, with the rounds its per-round factor needs to get "
                f"there; one without a finite FedLSA plateau or a SCAFFLSA curve is undecided")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        t = cells(ev)
        if t is None or t.empty:
            return no_table(UNDECIDED)
        factor = p["factor"]
        rows, cases, notes, decide = [], [], [], []
        for _, r in t[t["H"] > 1].iterrows():
            outcome, why, need = case(r, factor, p["rel_tol"])
            cases.append(outcome)
            f, last = r["scafflsa_factor"], r["scafflsa_last"]
            level = (" (round-off level)" if last <= p["roundoff"] * r["initial"] else
                     " (still falling at the last round)" if fall(r) > 1 + p["rel_tol"] else "")
            effect = (f"SCAFFLSA lowers the error by a factor {f:.3g}" if f >= 1 else
                      "no factor (a curve is missing or diverged)" if not f > 0 else
                      f"SCAFFLSA's error is {1 / f:.3g}x FedLSA's (factor {f:.3g}): no improvement yet")
            notes.append(f"- {where(r)}: FedLSA {r['fedlsa_plateau']:.3g}, SCAFFLSA {last:.3g} after "
                         f"{int(r['rounds'])} rounds{level}: {effect}.")
            if outcome == OPEN:
                target = r["fedlsa_plateau"] / factor
                decide.append(f"about {need:.0f} rounds at {where(r)} ({int(r['rounds'])} run)"
                              if np.isfinite(need) else f"more rounds at {where(r)} ({why})")
                if np.isfinite(need):
                    notes.append(f"  Undecided: FedLSA's plateau / {factor:g} = {target:.3g}; SCAFFLSA falls by "
                                 f"a factor {r['scafflsa_rate']:.4g} per round over the second half of its "
                                 f"rounds, and at that rate gets there after about {need:.0f} rounds in all "
                                 f"({int(r['rounds'])} run).")
            elif outcome == FAIL:
                notes.append(f"  Fails: {why}.")
            rows.append({"setting": r["setting"], "N": str(int(r["N"])), "eta": f"{r['eta']:g}",
                         "H": str(int(r["H"])), "FedLSA plateau": r["fedlsa_plateau"],
                         "SCAFFLSA, last round": last, "factor": f, "rounds": str(int(r["rounds"])),
                         "SCAFFLSA per-round factor": r.get("scafflsa_rate", np.nan),
                         "rounds to reach the factor": need if outcome == OPEN else np.nan})
        if not cases:
            decide.append("a cell with H > 1")
        verdict = combine(cases)
        margin = "; ".join(f"{where(r)}: factor {r['scafflsa_factor']:.3g}, claim >= {factor:g}"
                           for _, r in t[t["H"] > 1].iterrows()) or None
        return Judgement(verdict, rows, notes,
                         "; ".join(decide) if decide and verdict in (UNDECIDED, PARTLY) else None, margin)

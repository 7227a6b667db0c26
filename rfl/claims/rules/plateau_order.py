"""``plateau_order``: the level a method reaches falls as a dataset parameter grows (the authors'
``PCAStief_Syn`` scripts: more agents S, or more local data N, give a lower plateau; their
legends order the curves by S and by N).

The plateau is the median excess risk over the last 10% of rounds; it is exact only for a
curve that has levelled off. A curve still decreasing gives an upper bound of its plateau, so
the order may be broken for certain (a levelled-off plateau above the level of a smaller
parameter value) or left open: then more rounds of the curves still decreasing decide it.
"""

from __future__ import annotations

import numpy as np

from ..curves import levelled_off, linear_phase, median_curve, rounds_to_level_off, tail_contraction
from ..rule import Evidence, Judgement, Rule
from ..verdicts import NOT, PARTLY, UNDECIDED, non_increasing


def ordering(levels: list[float]) -> str:
    """Levels in increasing order of the growing parameter: reproduced if non-increasing, partly
    if only the last is below the first, not reproduced otherwise; undecided with fewer than two
    levels or a level that is not finite."""
    if len(levels) < 2 or not all(np.isfinite(levels)):
        return UNDECIDED
    return non_increasing(levels)


def ordering_with_bounds(levels: list[float], exact: list[bool]) -> str:
    """As ``ordering`` when every level is ``exact`` (a levelled-off plateau). A level that is
    not exact is the last level of a curve still decreasing: an upper bound of its plateau.
    Then the claim (non-increasing levels) is broken for certain if an exact level lies above a
    level (exact or bound) before it: not reproduced (partly if the last level, exact or a
    bound, lies below an exact first level); otherwise the bounds leave it open: undecided."""
    if len(levels) < 2 or not all(np.isfinite(levels)):
        return UNDECIDED
    if all(exact):
        return ordering(levels)
    broken = any(exact[j] and levels[j] > levels[i] for j in range(len(levels)) for i in range(j))
    if not broken:
        return UNDECIDED
    return PARTLY if exact[0] and levels[-1] < levels[0] else NOT


def more_rounds(label: str, curve, rounds: int, factor: float) -> str:
    """What would level off a curve still decreasing at its last round (``rounds``)."""
    q, extra = tail_contraction(curve), rounds_to_level_off(curve, factor)
    pace = f"falling {q:.4g}x per round over its last 10% of rounds" if np.isfinite(q) else "still falling"
    if extra == 0:
        return f"{label}: more rounds ({pace}, as fast as in its linear phase: no plateau yet)"
    if np.isfinite(extra):
        return (f"{label}: more rounds ({pace}; at that pace, slowing towards its estimated "
                f"limit, it levels off after about {int(extra)} more rounds, {rounds + int(extra)} in all)")
    return f"{label}: more rounds ({pace}, no limit in sight yet)"


class PlateauOrder(Rule):
    name = "plateau_order"
    summary = "the plateau is non-increasing as a dataset parameter grows (levelled-off curves)"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "by": {"type": "array", "minItems": 1, "items": {"type": "string"}, "default": ["S"]},
        "algorithm": {"type": "string", "default": "rfedags"},
        "participation": {"enum": ["every", "any"], "default": "every"},
        "level_factor": {"type": "number", "exclusiveMinimum": 1, "default": 1.2}}}

    def describe(self, p: dict) -> str:
        who = "every agent" if p["participation"] == "every" else "under the experiment's participation"
        by = ", ".join(p["by"])
        return (f"the plateau (median excess risk over the last 10% of rounds, {p['algorithm']} at "
                f"its smallest K, {who}) is non-increasing as ({by}) grows (partly: only the "
                f"largest below the smallest). A curve not levelled off (the 10% of rounds before "
                f"its last 10% more than {p['level_factor']:g}x above them, or its last 20% of "
                f"rounds contracting at least half as fast, in log, as its linear phase) gives only "
                f"an upper bound of its plateau: not reproduced if a levelled-off plateau lies above the "
                f"level of a smaller ({by}) all the same, undecided if the bounds leave the order open")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        items = []
        for e in ev.names():
            params = ev.dataset(e).get("params", {})
            runs = ev.by_k(e, p["algorithm"], p["participation"])
            if runs:
                items.append((tuple(params.get(k) for k in p["by"]), e, runs))
        items.sort(key=lambda x: x[0])
        label = ", ".join(p["by"])
        rows, levels, exact, notes, open_ = [], [], [], [], []
        for value, e, runs in items:
            K = min(runs)
            curve = median_curve(runs[K])
            fit = linear_phase(curve)
            flat = levelled_off(curve, p["level_factor"])
            where = f"{label} = {', '.join(map(str, value))}"
            if not flat:
                notes.append(f"- {where}: still decreasing at the last round (its last level bounds "
                             f"its plateau from above).")
                open_.append(more_rounds(where, curve, int(curve.dropna().index[-1]), p["level_factor"]))
            levels.append(fit["plateau"])
            exact.append(flat)
            t0 = runs[K][0].iloc[0]
            f_star = float(t0["cost"] - t0["excess_risk"])          # every run of a dataset shares F*
            rows.append({label: ", ".join(map(str, value)), "experiment": e, "K": str(K),
                         "contraction/round": fit["rate"], "R^2": fit["r2"], "excess risk, first": fit["start"],
                         "plateau": fit["plateau"],
                         "plateau / abs(F*)": fit["plateau"] / abs(f_star) if f_star else np.nan,
                         "levelled off": "yes" if flat else "no"})
        verdict = ordering_with_bounds(levels, exact)
        decide = None
        if verdict == UNDECIDED:
            decide = "; ".join(open_) if open_ else f"runs of at least two values of ({label}) with a finite plateau"
        return Judgement(verdict, rows, notes, decide)

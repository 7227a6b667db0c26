"""``converges_to_objective``: under Bernoulli joins, the unbiased schemes (inverse-probability
weights, true or estimated) converge to the minimiser x* of F, the "biased" aggregation of the
authors' ``RFedAGSP__.m`` (participants averaged with 1/|S_t|) to the minimiser x~* of the
reweighted objective F~ = sum_i w~_i f_i, w~ proportional to pi~_i = E[1{i in S_t}/|S_t|]
(their Figures 5 and 6: each run scored against F and against F~).

A run that converges to x* has excess risk against F tending to 0 and against F~ tending to
gap~ = F~(x*) - F~(x~*); one that converges to x~* the converse, with gap = F(x~*) - F(x*).
Both gaps are recorded by every run of an experiment with ``weighted_objective`` (metadata).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rfl.reporting.figures import method_label

from .. import stats as S
from ..curves import levelled, median_curve, plateau
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine
from .level_vs_share import participations
from .plateau_order import more_rounds

#: the schemes whose aggregate follows F~ rather than F
BIASED = ("biased",)


def gaps(ev: Evidence, experiment: str) -> dict | None:
    """The metadata's ``weighted_objective`` of the experiment's first run that has one."""
    from rfl import io

    for path in ev.spec["runs"].get(experiment, []):
        meta = Path(str(path)[: -len(".csv")] + ".meta.json")
        if meta.exists():
            wo = io.read_json(meta).get("weighted_objective")
            if wo and "gap_F" in wo:
                return wo
    return None


def case(target: dict, other: dict, small: float, tol: float) -> str:
    """Converged to the target's minimiser: the target's plateau / its gap at most ``small``
    and the other's plateau / its gap within 1 +- ``tol``. A target ratio above ``small`` fails
    when that curve has levelled off (it stays away from the target's minimiser), is open while
    it still falls; a target reached with the other objective off its gap fails."""
    rt, ro = target["ratio"], other["ratio"]
    if not (np.isfinite(rt) and np.isfinite(ro)):
        return OPEN
    if rt <= small:
        return OK if abs(ro - 1) <= tol else FAIL
    return FAIL if target["levelled"] else OPEN


class ConvergesToObjective(Rule):
    name = "converges_to_objective"
    summary = ("unbiased schemes reach F's minimiser, the biased one F~'s: each plateau against "
               "its gap F(x~*) - F(x*) or F~(x*) - F~(x~*)")
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": {"type": "string", "default": "rfedags"},
        "small": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.1},
        "tol": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.5},
        "level_factor": {"type": "number", "exclusiveMinimum": 1, "default": 1.2}}}

    def describe(self, p: dict) -> str:
        return (f"for every Bernoulli scheme of each experiment ({p['algorithm']}; plateau: median "
                f"over the last 10% of rounds of the median over seeds): the objective it should "
                f"minimise (F~ for `biased`, F otherwise) has plateau <= {p['small']:g} x the gap "
                f"between the two minimisers measured in it, while against the other objective the "
                f"plateau is within {p['tol']:.0%} of that objective's gap; a target plateau above "
                f"{p['small']:g} x gap fails once its curve has levelled off (last 10% of rounds "
                f"within {p['level_factor']:g}x of the 10% before), is undecided while it still falls")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, cases, notes, decide, margins = [], [], [], [], []
        near = S.Claim("plateau / gap", high=p["small"])
        off = S.Claim("plateau / gap", low=1 - p["tol"], high=1 + p["tol"])
        for e in ev.names():
            g = gaps(ev, e)
            if g is None:
                cases.append(OPEN)
                notes.append(f"- `{e}`: no run recorded a weighted objective (experiments.{e}.weighted_objective).")
                decide.append(f"`{e}`: runs with a weighted objective")
                margins.append(f"`{e}`: no gap between the minimisers recorded")
                continue
            if not (g["gap_F"] > 0 and g["gap_weighted"] > 0):
                cases.append(OPEN)
                notes.append(f"- `{e}`: the minimisers of F and F~ coincide (gaps {g['gap_F']:.3g}, "
                             f"{g['gap_weighted']:.3g}): nothing to tell apart.")
                decide.append(f"`{e}`: unequal p_i on heterogeneous agents")
                margins.append(f"`{e}`: gaps {g['gap_F']:.3g}, {g['gap_weighted']:.3g}, claim > 0")
                continue
            parts = participations(ev, e)
            for key, runs in ev.runs(e).items():
                part = parts.get(key)
                if key[0] != p["algorithm"] or not isinstance(part, dict) or "bernoulli" not in part["scheme"] \
                        and part["scheme"] not in BIASED:
                    continue
                stats = {}
                for metric, gap in (("excess_risk", g["gap_F"]), ("excess_risk_weighted", g["gap_weighted"])):
                    curve = median_curve(runs, metric) if metric in runs[0] else None
                    level = plateau(curve.dropna()) if curve is not None and curve.notna().any() else np.nan
                    stats[metric] = {"curve": curve, "level": level, "ratio": level / gap,
                                     "levelled": curve is not None and levelled(curve, p["level_factor"])}
                biased = part["scheme"] in BIASED
                target, other = (("excess_risk_weighted", "excess_risk") if biased
                                 else ("excess_risk", "excess_risk_weighted"))
                outcome = case(stats[target], stats[other], p["small"], p["tol"])
                cases.append(outcome)
                where = f"`{e}`, {method_label(key)}"
                names = {"excess_risk": "F", "excess_risk_weighted": "F~"}
                margins.append(S.value_margin(f"plateau / gap in {names[target]}", stats[target]["ratio"],
                                              near, label=where) + "; " + S.value_margin(
                    f"plateau / gap in {names[other]}", stats[other]["ratio"], off, label=where))
                if outcome == OPEN and stats[target]["curve"] is not None:
                    c = stats[target]["curve"]
                    decide.append(more_rounds(where, c, int(c.dropna().index[-1]), p["level_factor"]))
                rows.append({"experiment": e, "method": method_label(key),
                             "minimises": "F~" if biased else "F",
                             "plateau vs F": stats["excess_risk"]["level"], "F(x~*) - F(x*)": g["gap_F"],
                             "ratio F": stats["excess_risk"]["ratio"],
                             "plateau vs F~": stats["excess_risk_weighted"]["level"],
                             "F~(x*) - F~(x~*)": g["gap_weighted"],
                             "ratio F~": stats["excess_risk_weighted"]["ratio"],
                             "holds": {OK: "yes", FAIL: "no", OPEN: "open"}[outcome]})
        verdict = combine(cases)
        if not rows and not notes:
            decide.append("Bernoulli or biased schemes in the experiments")
        return Judgement(verdict, rows, notes,
                         "; ".join(decide) if decide and verdict in (UNDECIDED, PARTLY) else None,
                         S.margin_line(margins) or "no Bernoulli or biased scheme run")

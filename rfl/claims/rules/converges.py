"""``converges``: every method converges to the minimiser (the authors'
``HSPHyper_WordNet_Fixed.m``: RFedAGS, RFedAvg and RFedSVRG with a fixed step): each method's
median excess risk after the last round is at most a factor of its value at round 0."""

from __future__ import annotations

import numpy as np

from rfl.reporting.figures import method_label

from ..curves import diverged_at, levelled_off, linear_phase, median_curve
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine


def case(curve, factor: float) -> tuple[str, str | None]:
    """(outcome, why) of one median curve: it holds if its last value is at most ``factor`` times
    its round-0 value; a curve that diverged fails; one with fewer than two values, or above the
    mark but still decreasing at its last round, is undecided (with the rounds that would take
    it there at its fitted contraction)."""
    t_div = diverged_at(curve)
    if t_div is not None:
        return FAIL, f"diverged at round {t_div}"
    c = curve.dropna()
    if len(c) < 2:
        return OPEN, "fewer than two recorded rounds"
    first, end = float(c.iloc[0]), float(c.iloc[-1])
    if end <= factor * first:
        return OK, None
    if levelled_off(c):
        return FAIL, None
    fit = linear_phase(c)
    if fit["status"] == "ok" and fit["rate"] < 1 and end > 0:
        need = int(np.ceil(np.log(factor * first / end) / np.log(fit["rate"])))
        return OPEN, (f"still decreasing at round {int(c.index[-1])} ({end / first:.3g} of its round-0 "
                      f"value); at its fitted contraction {fit['rate']:.4g} per round about {need} "
                      f"more rounds would reach {factor:g}")
    return OPEN, f"still decreasing at round {int(c.index[-1])}, without a contraction to extrapolate"


class Converges(Rule):
    name = "converges"
    summary = "every method's median excess risk falls by a factor from round 0 to the last round"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "factor": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 1e-3}}}

    def describe(self, p: dict) -> str:
        return (f"every method's median excess risk after the last round is at most {p['factor']:g} "
                f"times its value at round 0 (a method that diverged fails; one above that but still "
                f"decreasing is undecided)")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, cases, notes, decide, margins = [], [], [], [], []
        names = ev.names()
        for e in names:
            for key, runs in ev.runs(e).items():
                curve = median_curve(runs)
                outcome, why = case(curve, p["factor"])
                cases.append(outcome)
                where = (f"`{e}`, " if len(names) > 1 else "") + method_label(key)
                if why:
                    notes.append(f"- {where}: {'fails' if outcome == FAIL else 'undecided'}: {why}.")
                    if outcome == OPEN:
                        decide.append(f"{where}: {why}")
                c = curve.dropna()
                first = float(c.iloc[0]) if len(c) else np.nan
                end = float(c.iloc[-1]) if len(c) else np.nan
                margins.append(f"{where}: last / round 0 {end / first if first else np.nan:.3g}, claim <= "
                               f"{p['factor']:g} (median over {len(runs)} seed{'s' if len(runs) != 1 else ''})")
                rows.append({**({"experiment": e} if len(names) > 1 else {}), "method": method_label(key),
                             "excess risk, round 0": first, "excess risk, last": end,
                             "last / round 0": end / first if first else np.nan,
                             "rounds": str(int(c.index[-1])) if len(c) else "-"})
        verdict = combine(cases)
        return Judgement(verdict, rows, notes,
                         "; ".join(decide) if decide and verdict in (UNDECIDED, PARTLY) else None,
                         "; ".join(margins) or None)

"""``linear_rate``: with a fixed step, a method converges linearly to a neighbourhood of x*
(RFedAGS paper, Theorem 4.3): per K, the median excess-risk curve over seeds has a log-linear
phase with contraction < 1, a good fit, and a real decrease."""

from __future__ import annotations

import numpy as np

from ..curves import MIN_FIT_ROUNDS, linear_phase, median_curve, seed_note
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine

#: still decreasing: the curve's log-decrease per round over its last rounds is at least this
#: fraction of the fitted one, -log(contraction)
STILL = 0.5
#: the fraction of the total log-decrease the fit covers (``curves.linear_phase``)
FIT_SHARE = 0.9


def still_decreasing(curve, rate: float) -> bool:
    """Whether ``curve`` still falls at its last rounds at the fitted contraction ``rate``: the
    log of the median of the 10% of rounds (at least 3) before its last 10% over the median of
    the last 10%, per round, is at least ``STILL`` x (-log rate). A geometric curve r^t falls by
    exactly -log r per round at every round; one that has levelled off at a floor falls by
    about 0. With fewer than two windows of values nothing says it stopped: True."""
    c = curve.dropna().clip(lower=1e-300)
    n = max(3, len(c) // 10)
    if len(c) < 2 * n:
        return True
    drop = np.log(float(c.iloc[-2 * n:-n].median()) / float(c.iloc[-n:].median())) / n
    return bool(drop >= STILL * -np.log(rate))


def rounds_to_decide(rate: float, min_decrease: float) -> tuple[int, int]:
    """(rounds for a ``min_decrease``-fold decrease at contraction ``rate``: ceil(log(d) /
    -log(rate)); the rounds T a curve contracting at ``rate`` needs for the rule to see that
    decrease: its fit covers the rounds to ``FIT_SHARE`` of the total log-decrease, ceil(0.9 T),
    so the smallest T with ceil(0.9 T) >= the first number)."""
    need = int(np.ceil(np.log(min_decrease) / -np.log(rate)))
    return need, (10 * (need - 1)) // 9 + 1


def case(fit: dict, curve, r2: float, min_decrease: float) -> tuple[str, str | None]:
    """(outcome, why) of one fitted curve: it holds with contraction < 1, R^2 >= ``r2`` and a
    decrease >= ``min_decrease`` over the fitted rounds; a diverged curve fails; fewer than
    three recorded rounds, or a curve that contracts well but has not yet decreased enough and
    is still going down at its last round (``still_decreasing``), cannot be decided: ``why``
    then says how many rounds would decide it."""
    if fit["status"] == "diverged":
        return FAIL, f"the run diverged at round {fit['diverged_at']} (median over seeds)"
    if fit["status"] == "insufficient":
        return OPEN, f"fewer than {MIN_FIT_ROUNDS + 1} recorded rounds"
    contracting = fit["rate"] < 1 and fit["r2"] >= r2
    if contracting and fit["decrease"] >= min_decrease:
        return OK, None
    if contracting and still_decreasing(curve, fit["rate"]):
        need, rounds = rounds_to_decide(fit["rate"], min_decrease)
        return OPEN, (f"still decreasing at its last round, by {fit['decrease']:.3g}x so far; about "
                      f"{rounds} rounds would decide it (at the fitted contraction {fit['rate']:.4g}, "
                      f"{need} rounds make a {min_decrease:g}x decrease, and the fit covers the rounds "
                      f"to 90% of the log-decrease)")
    return FAIL, None


class LinearRate(Rule):
    name = "linear_rate"
    summary = "per K, a log-linear phase with contraction < 1, R^2 >= r2 and a decrease >= min_decrease"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": {"type": "string", "default": "rfedags"},
        "participation": {"enum": ["every", "any"], "default": "every"},
        "r2": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.9},
        "min_decrease": {"type": "number", "exclusiveMinimum": 1, "default": 2.0}}}

    def describe(self, p: dict) -> str:
        who = "every agent" if p["participation"] == "every" else "under the experiment's participation"
        return (f"per experiment and K ({p['algorithm']}, {who}), a log-linear fit over the "
                f"rounds in which the median curve makes 90% of its total log-decrease has "
                f"contraction < 1 and R^2 >= {p['r2']:g}, and the excess risk falls at least "
                f"{p['min_decrease']:g}x over those rounds; reproduced if for every K. A curve that "
                f"diverges (a diverged seed counts as +inf from then on) fails; one with fewer than "
                f"3 recorded rounds, or still decreasing without the full decrease yet, is undecided")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, cases, notes, decide = [], [], [], []
        names = ev.names()
        for e in names:
            for K, runs in ev.by_k(e, p["algorithm"], p["participation"]).items():
                curve = median_curve(runs)
                fit = linear_phase(curve)
                outcome, why = case(fit, curve, p["r2"], p["min_decrease"])
                cases.append(outcome)
                where = (f"`{e}`, " if len(names) > 1 else "") + f"K = {K}"
                notes += [n for n in (seed_note(K, runs),) if n]
                if why:
                    notes.append(f"- {where}: {'fails' if outcome == FAIL else 'undecided'}: {why}.")
                    if outcome == OPEN:
                        decide.append(f"{where}: {why}")
                rows.append({**({"experiment": e} if len(names) > 1 else {}), "K": str(K),
                             "F(x_1)-F*": fit["start"], "contraction/round": fit["rate"],
                             "R^2 (log-linear)": fit["r2"],
                             "rounds fitted": str(fit["rounds"]) if fit["status"] == "ok" else "-",
                             "decrease": fit["decrease"], "level reached": fit["plateau"]})
        verdict = combine(cases)
        return Judgement(verdict, rows, notes, "; ".join(decide) if decide and verdict in (UNDECIDED, PARTLY) else None)

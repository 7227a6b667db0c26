"""``lowest_level``: every agent in every round reaches the lowest excess risk (the authors'
participation figures, ``PCAST_MNIST_partial_scheme_fixed.m`` with ``RFedAGSP.m``'s modes):
per experiment, the level with every agent is at or below the level of every partial scheme.

Each partial scheme is compared with the every-agent runs as ``ends_as_low`` compares two
methods (``ends_as_low.level_test``): per seed the plateau (median excess risk over the last
10% of rounds), paired by seed (the schemes of an experiment share their draws per seed), the
log ratio every agent / partial with a Student-t interval across seeds, at most 1 for the
claim to hold. A plateau is exact only for a curve that has levelled off (median over seeds),
otherwise an upper bound.
"""

from __future__ import annotations

import numpy as np

from rfl.reporting.figures import method_label

from .. import stats as S
from ..curves import levelled_off, median_curve, plateau, tail_contraction
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine
from .ends_as_low import level_test
from .plateau_order import more_rounds


def levels(ev: Evidence, experiment: str, algorithm: str, factor: float) -> list[dict]:
    """One record per method of ``algorithm`` in ``experiment``: key, median curve, level
    (``plateau``) and whether the curve has levelled off."""
    out = []
    for key, runs in ev.runs(experiment).items():
        if key[0] != algorithm:
            continue
        curve = median_curve(runs)
        c = curve.dropna()
        out.append({"key": key, "runs": runs, "curve": curve, "level": plateau(c) if len(c) else np.nan,
                    "exact": levelled_off(curve, factor)})
    return out


def lowest(full: dict, partial: list[dict]) -> str:
    """Whether the every-agent level ``full`` is at or below every partial level, with the levels
    of curves still decreasing as upper bounds: holds for certain if every partial level is
    exact and at or above ``full``'s; broken for certain if an exact ``full`` lies above a
    partial level (the partial plateau is at most that); open otherwise."""
    F, P = full["level"], [x["level"] for x in partial]
    if not (np.isfinite(F) and np.all(np.isfinite(P))):
        return OPEN
    if full["exact"] and any(p < F for p in P):
        return FAIL
    if all(p >= F for p in P) and all(x["exact"] for x in partial):
        return OK
    return OPEN


def crossing(r: dict, full: dict) -> str:
    """For a partial scheme still decreasing above the every-agent level: the rounds its tail
    contraction would take to reach that level (what it must do to break the order)."""
    q = tail_contraction(r["curve"])
    if r is full or not (r["level"] > full["level"] > 0 and 0 < q < 1):
        return ""
    return (f"; at that pace it would reach the every-agent level {full['level']:.3g} after about "
            f"{int(np.ceil(np.log(full['level'] / r['level']) / np.log(q)))} more rounds")


class LowestLevel(Rule):
    name = "lowest_level"
    across_seeds = True
    summary = "per experiment, the level with every agent is at or below every partial scheme's"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": {"type": "string", "default": "rfedags"},
        "level_factor": {"type": "number", "exclusiveMinimum": 1, "default": 1.2}}}

    def describe(self, p: dict) -> str:
        return (f"in each experiment, the level ({p['algorithm']}: per seed, median excess risk over "
                f"the last 10% of rounds) with every agent over that of each partial scheme, paired by "
                f"seed, has a 95% Student-t interval across seeds (geometric mean, at least "
                f"{S.MIN_SEEDS} seeds) at most 1 (the lowest every-agent level if several K; not "
                f"reproduced if wholly above 1 for a scheme). A curve not "
                f"levelled off (the 10% of rounds before its last 10% more than "
                f"{p['level_factor']:g}x above them, or still contracting as fast as in its linear "
                f"phase) bounds its plateau from above: undecided if "
                f"the bounds leave the order open, or without both kinds of run")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, cases, notes, decide, tests = [], [], [], [], []
        for e in ev.names():
            recs = levels(ev, e, p["algorithm"], p["level_factor"])
            full = [r for r in recs if r["key"][2] is None]
            partial = [r for r in recs if r["key"][2] is not None]
            if not (full and partial):
                cases.append(OPEN)
                what = "no run" if not recs else "no run with every agent" if not full else "no partial scheme"
                notes.append(f"- `{e}`: {what}.")
                decide.append(f"`{e}`: runs with every agent and with a partial scheme")
                continue
            best = min(full, key=lambda r: r["level"] if np.isfinite(r["level"]) else np.inf)
            pair_tests = [level_test(best["runs"], r["runs"], 1.0, f"`{e}`, {method_label(r['key'])}", p,
                                     (method_label(best["key"]), method_label(r["key"])))[0] for r in partial]
            tests += pair_tests
            kinds = [t.outcome for t in pair_tests]
            outcome = FAIL if FAIL in kinds else OK if all(k == OK for k in kinds) else OPEN
            cases.append(outcome)
            if outcome == OPEN:
                pending = [r for r in [best, *partial] if not r["exact"] and r["curve"].notna().any()]
                for r in pending:
                    where = f"`{e}`, {method_label(r['key'])}"
                    decide.append(more_rounds(where, r["curve"], int(r["curve"].dropna().index[-1]),
                                              p["level_factor"]) + crossing(r, best))
                if not pending:
                    decide += [t.why for t in pair_tests if t.outcome == OPEN and t.why]
            lv = [r["level"] for r in partial]
            rows.append({"experiment": e, "every agent": best["level"], "partial, lowest": min(lv),
                         "partial, highest": max(lv),
                         "levelled off": f"{sum(r['exact'] for r in [best, *partial])} of {1 + len(partial)}",
                         "every agent lowest": {OK: "yes", FAIL: "no", OPEN: "open"}[outcome]})
        verdict = combine(cases)
        return Judgement(verdict, rows, notes,
                         "; ".join(decide) if decide and verdict in (UNDECIDED, PARTLY) else None,
                         S.margin_line(tests))

"""``larger_k_faster``: a larger number of local steps K speeds up convergence in rounds, up to a
point (RFedAGS paper, Figure 1 and Section 5.1: "K must not be too large").

Both halves are tested, on consecutive K (K_1 < K_2 < ...) of one experiment, each pair raced
over several levels and paired by seed as ``faster_than`` does (``rfl.claims.rules.faster_than
.race``: the geometric mean over levels of the ratio of rounds, K_{i+1} against K_i, with a
Student-t interval across seeds): "speeds up" holds when the first pair's ratio lies at or
below ``max_ratio``; "up to a point" when a later pair's lies wholly above it (a larger K that
no longer helps). With ``up_to_a_point: false`` the claim is only the first half.
"""

from __future__ import annotations

from .. import stats as S
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, NOT, OK, OPEN, PARTLY, REPRODUCED, UNDECIDED
from .faster_than import RACE, race


def halves(outcomes: list[str], up_to_a_point: bool = True) -> tuple[str, str | None]:
    """(verdict, why) from the outcomes of the consecutive pairs (K_{i+1} faster than K_i) in
    increasing K: the first pair must hold (fails: not reproduced; open: undecided); then, for
    "up to a point", a later pair must fail (a K beyond which a larger one stops helping):
    reproduced if one does, partly if every later pair holds (every K run still helps),
    undecided if none fails and some are open. Fewer than two K: undecided."""
    if not outcomes:
        return UNDECIDED, "at least two K"
    first = outcomes[0]
    if first == FAIL:
        return NOT, None
    if first == OPEN:
        return UNDECIDED, None
    if not up_to_a_point:
        return REPRODUCED, None
    later = outcomes[1:]
    if FAIL in later:
        return REPRODUCED, None
    if OPEN in later:
        return UNDECIDED, None
    return PARTLY, ("a larger K than those run: every larger K run still speeds it up, so the point "
                    "beyond which it stops helping is not seen")


class LargerKFaster(Rule):
    name = "larger_k_faster"
    across_seeds = True
    summary = ("a larger K needs fewer rounds (consecutive K raced over several levels, paired by "
               "seed), up to a point: some larger K no longer does")
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": {"type": "string", "default": "rfedags"},
        "participation": {"enum": ["every", "any"], "default": "every",
                          "description": "the runs: with every agent taking part, or under "
                                         "whichever participation the experiment runs"},
        "up_to_a_point": {"type": "boolean", "default": True,
                          "description": "also test that some larger K stops speeding it up"},
        "level_factor": {"type": "number", "exclusiveMinimum": 1, "default": 1.2}, **RACE}}

    def describe(self, p: dict) -> str:
        who = f"{p['algorithm']} under the experiment's participation: " if p.get("participation") == "any" else ""
        second = (f"; and up to a point: some later pair's ratio lies wholly above {p['max_ratio']:g} "
                  f"(a larger K no longer helps; partly if every K run still helps)"
                  if p["up_to_a_point"] else "")
        return (f"{who}per pair of consecutive K, per seed the geometric mean over {p['levels']} levels "
                f"(evenly in log between the lower start and the higher plateau) of the ratio of "
                f"rounds (1 + rounds of the larger K) / (1 + rounds of the smaller) to reach each "
                f"level, with a 95% Student-t interval across paired seeds (at least {S.MIN_SEEDS}); "
                f"a larger K speeds it up: the first pair's interval at most {p['max_ratio']:g} (not "
                f"reproduced if wholly above){second}; undecided while an interval straddles the bound")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, verdicts, decide, tests, notes = [], [], [], [], []
        names = ev.names()
        race_p = {**p, "first": "larger K", "second": "smaller K"}
        for e in names:
            by_k = ev.by_k(e, p["algorithm"], p.get("participation", "every"))
            Ks = list(by_k)
            outcomes = []
            for k0, k1 in zip(Ks, Ks[1:]):
                where = (f"`{e}`, " if len(names) > 1 else "") + f"K = {k1} vs {k0}"
                test, row = race(by_k[k1], by_k[k0], race_p, where)
                outcomes.append(test.outcome)
                tests.append(test)
                if test.outcome == OPEN and test.why:
                    decide.append(test.why)
                rows.append({**({"experiment": e} if len(names) > 1 else {}), "K": f"{k1} vs {k0}",
                             **row, "speeds up": {OK: "yes", FAIL: "no", OPEN: "undecided"}[test.outcome]})
            v, why = halves(outcomes, p["up_to_a_point"])
            verdicts.append(v)
            if why:
                (decide if v == UNDECIDED else notes).append((f"`{e}`: " if len(names) > 1 else "") + why)
        decided = set(verdicts) - {UNDECIDED}
        # experiments undecided beside ones that agree leave the claim as those agree, unless they
        # all hold (the undecided could still fail); a mixture of decided verdicts is partly
        verdict = (UNDECIDED if decided <= {REPRODUCED} and UNDECIDED in verdicts or not decided
                   else decided.pop() if len(decided) == 1 else PARTLY)
        if not rows:
            notes.append("Fewer than two K: nothing to compare.")
        return Judgement(verdict, rows, notes,
                         "; ".join(decide) if decide and verdict in (UNDECIDED, PARTLY) else None,
                         S.margin_line(tests))

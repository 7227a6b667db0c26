"""``larger_k_faster``: a larger number of local steps K speeds up convergence in rounds, up to a
point (RFedAGS paper, Figure 1): the rounds to reach a common level are non-increasing in K."""

from __future__ import annotations

import numpy as np

from ..curves import diverged_at, last, levelled, median_curve, plateau, rounds_to
from ..rule import Evidence, Judgement, Rule
from ..verdicts import NOT, PARTLY, REPRODUCED, UNDECIDED


def judge_times(curves: dict) -> tuple[str, float, dict, str | None]:
    """(verdict, level, {K: rounds to reach level}, what would decide it). The level is the
    geometric mean of the lowest initial excess risk and the worst final level (over the K whose
    curve did not diverge); reproduced if the rounds are non-increasing in K, partly if only the
    largest K beats the smallest, not reproduced otherwise. Undecided with fewer than two K or
    no finite level, and when a K that has not reached the level is still decreasing (more
    rounds could still order them)."""
    starts = [last(c.iloc[:1]) for c in curves.values()]
    levels = [p for p in (plateau(c.dropna()) for c in curves.values()
                          if c.notna().any() and diverged_at(c) is None) if np.isfinite(p)]
    if len(curves) < 2 or not levels or not np.all(np.isfinite(starts)):
        return UNDECIDED, np.nan, {K: np.nan for K in curves}, "at least two K with a finite level"
    level = float(np.sqrt(min(starts) * max(levels)))
    times = {K: rounds_to(c, level) for K, c in curves.items()}
    t = list(times.values())
    monotone = all(np.isfinite(t)) and all(a >= b for a, b in zip(t, t[1:]))
    if monotone:
        return REPRODUCED, level, times, None
    pending = [K for K, c in curves.items() if not np.isfinite(times[K]) and diverged_at(c) is None
               and not levelled(c)]
    if pending:
        return UNDECIDED, level, times, (f"more rounds: K = {', '.join(map(str, pending))} has not "
                                         f"reached {level:.3g} and is still decreasing")
    faster = np.isfinite(t[0]) and np.isfinite(t[-1]) and t[-1] < t[0]
    return (PARTLY if faster else NOT), level, times, None


class LargerKFaster(Rule):
    name = "larger_k_faster"
    summary = "rounds to reach a common level are non-increasing in K"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": {"type": "string", "default": "rfedags"}}}

    def describe(self, p: dict) -> str:
        return ("rounds to reach the geometric mean of the initial excess risk and the worst final "
                "level (of the K that did not diverge); reproduced if non-increasing in K, partly if "
                "only the largest K beats the smallest; undecided with fewer than two K, or when a K "
                "that has not reached the level is still decreasing")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, verdicts, decide = [], [], []
        names = ev.names()
        for e in names:
            curves = {K: median_curve(r) for K, r in ev.by_k(e, p["algorithm"]).items()}
            v, level, times, why = judge_times(curves)
            verdicts.append(v)
            if why:
                decide.append((f"`{e}`: " if len(names) > 1 else "") + why)
            rows += [{**({"experiment": e} if len(names) > 1 else {}), "K": str(K),
                      "level": level, "rounds to reach the level": times[K], "level reached": plateau(c)}
                     for K, c in curves.items()]
        verdict = verdicts[0] if len(set(verdicts)) == 1 else PARTLY
        notes = [] if not any(v == UNDECIDED for v in verdicts) or rows else \
            ["Fewer than two K, or no K with a finite final level: nothing to compare."]
        return Judgement(verdict, rows, notes, "; ".join(decide) if decide and verdict == UNDECIDED else None)

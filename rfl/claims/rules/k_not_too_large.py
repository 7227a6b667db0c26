"""``k_not_too_large``: more local steps stop paying off at the largest K run (RFedAGS paper
Section 5.1: "K must be not too large since too large K makes upper bounds large for expected
optimal gaps ... This analysis is verified by Figure 1"; slides: the optimal K is finite).

Statistic: per seed, the level after the run's rounds (median metric over the last 10% of
rounds; below ``floor`` as floor) at the largest K over the level at the best smaller K (the
one with the lowest mean log level across seeds), paired by seed; interval across seeds on the
log scale. Holds when it lies above 1 (the largest K ends higher than a smaller one), fails
when wholly below (at these K the largest is best: no sign of "too large").
"""

from __future__ import annotations

from .. import stats as S
from ..rule import Evidence, Judgement, Rule
from ._shared import ALGORITHM, FLOOR, METRIC, PARTICIPATION, best_k, k_pair


def largest_and_best_smaller(runs: dict, levels: dict):
    """(the largest K, the best smaller K), or None with fewer than two K."""
    if len(runs) < 2:
        return None
    top = max(runs)
    return top, best_k(levels, [k for k in runs if k < top])


class KNotTooLarge(Rule):
    name = "k_not_too_large"
    across_seeds = True
    summary = "the level after the run at the largest K is above the best smaller K's, paired over seeds"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": ALGORITHM, "metric": METRIC, "floor": FLOOR, "participation": PARTICIPATION}}

    def describe(self, p: dict) -> str:
        return (f"per experiment ({p['algorithm']}): per seed, the level after the last round (median "
                f"{p['metric']} over the last 10% of rounds, at least {p['floor']:g}) at the largest K "
                f"over the level at the best smaller K (lowest mean log level), paired by seed; holds "
                f"when its interval across seeds lies above 1, fails when wholly below; undecided with "
                f"fewer than two K or {S.MIN_SEEDS} seeds")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        return k_pair(ev, p, largest_and_best_smaller, "above", "largest K", "runs at two K at least")

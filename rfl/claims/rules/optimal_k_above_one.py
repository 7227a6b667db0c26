"""``optimal_k_above_one``: the best number of local steps is K > 1 (the RFedAGS slides under
Figures 1 and 2: "Optimal K greater than 1", "Optimal K > 1 exists"; paper Section 4.3: K*
minimises the bound on the optimality gap after T rounds).

Statistic: per seed, the level reached after the run's rounds (median metric over the last
10% of rounds, ``stats.tail_level``; below ``floor`` as floor) at the best K > 1 (the K with the
lowest mean log level across seeds) over the level at K = 1, paired by seed; interval across
seeds on the log scale. Holds when it lies below 1, fails when wholly above.
"""

from __future__ import annotations

from .. import stats as S
from ..rule import Evidence, Judgement, Rule
from ._shared import ALGORITHM, FLOOR, METRIC, PARTICIPATION, best_k, k_pair


def best_above_one(runs: dict, levels: dict):
    """(the best K > 1, 1), or None without K = 1 and a K > 1."""
    larger = [K for K in runs if K > 1]
    return (best_k(levels, larger), 1) if 1 in runs and larger else None


class OptimalKAboveOne(Rule):
    name = "optimal_k_above_one"
    across_seeds = True
    summary = "the level after the run at the best K > 1 is below K = 1's, paired over seeds"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": ALGORITHM, "metric": METRIC, "floor": FLOOR, "participation": PARTICIPATION}}

    def describe(self, p: dict) -> str:
        return (f"per experiment ({p['algorithm']}): per seed, the level after the last round (median "
                f"{p['metric']} over the last 10% of rounds, at least {p['floor']:g}) at the best K > 1 "
                f"(lowest mean log level) over the level at K = 1, paired by seed; holds when its "
                f"interval across seeds lies below 1, fails when wholly above; undecided without K = 1 "
                f"and a K > 1, or with fewer than {S.MIN_SEEDS} seeds")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        return k_pair(ev, p, best_above_one, "below", "best K > 1", "runs at K = 1 and at a K > 1")

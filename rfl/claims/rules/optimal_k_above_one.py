"""``optimal_k_above_one``: the best number of local steps is K > 1 (the RFedAGS slides under
Figures 1 and 2: "Optimal K greater than 1", "Optimal K > 1 exists"; paper Section 4.3: K*
minimises the bound on the optimality gap after T rounds).

Statistic: per seed, the level reached after the run's rounds (median metric over the last
10% of rounds, ``stats.tail_level``; below ``floor`` as floor) at the best K > 1 (the K with the
lowest mean log level across seeds) over the level at K = 1, paired by seed; interval across
seeds on the log scale. Holds when it lies below 1, fails when wholly above.
"""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..rule import Evidence, Judgement, Rule
from ._shared import ALGORITHM, FLOOR, METRIC, PARTICIPATION, floored_level, judgement

def k_levels(runs_by_k: dict, level) -> dict:
    """K -> per-seed levels (``stats.per_seed``) of one algorithm's runs."""
    return {K: S.per_seed(runs, level) for K, runs in runs_by_k.items()}


def best_k(levels: dict, among) -> int:
    """The K among ``among`` with the lowest mean log level across seeds."""
    return min(among, key=lambda K: float(np.mean(np.log(levels[K].clip(lower=1e-300)))))


def level_rows(e, levels: dict, multi: bool) -> list[dict]:
    """One row per K: the geometric mean of its seeds' levels and its seeds."""
    return [{**({"experiment": e} if multi else {}), "K": str(K),
             "level (geometric mean over seeds)": float(np.exp(np.mean(np.log(v.clip(lower=1e-300))))),
             "seeds": len(v)} for K, v in levels.items()]


class OptimalKAboveOne(Rule):
    name = "optimal_k_above_one"
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
        rows, tests, missing = [], [], []
        level = floored_level(p["metric"], p["floor"])
        multi = len(ev.names()) > 1
        for e in ev.names():
            runs = ev.by_k(e, p["algorithm"], p["participation"])
            levels = k_levels(runs, level)
            rows += level_rows(e, levels, multi)
            larger = [K for K in runs if K > 1]
            if 1 not in runs or not larger:
                missing.append(f"`{e}`: runs at K = 1 and at a K > 1")
                continue
            K = best_k(levels, larger)
            tests.append(S.judged(S.paired(runs[K], runs[1], S.log_ratio_of(level)),
                                  S.Claim(f"level ratio K = {K} / K = 1", high=1.0),
                                  label=(f"`{e}`" if multi else "best K > 1"), log=True))
        return judgement(rows, tests, missing)

"""``outperforms``: one method ends lower than each of the others (Li & Ma: "RFedSVRG
outperforms the Riemannian counterparts of ... FedAvg and FedProx").

Statistic: per seed, the ratio of the first method's level to the other's (level: the median
of the metric over the last 10% of rounds, ``stats.tail_level``; below ``floor``, the metric's
round-off, it counts as ``floor``), paired by seed (the methods share their draws), on the log
scale; interval across seeds (``stats``). The claim holds when the interval lies below
``ratio`` (default 1: strictly lower), fails when it lies wholly above.
"""

from __future__ import annotations

from .. import stats as S
from ..rule import Evidence, Judgement, Rule
from ._shared import FLOOR, PARTICIPATION, at_common_k, floored_level, judgement


class Outperforms(Rule):
    name = "outperforms"
    across_seeds = True
    summary = "per K and other method, the first method's level over the other's is below a ratio, paired over seeds"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "first": {"type": "string", "default": "rfedsvrg"},
        "others": {"type": "array", "minItems": 1, "items": {"type": "string"},
                   "default": ["rfedavg", "rfedprox"]},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "default": 1.0},
        "metric": {"type": "string", "default": "excess_risk"},
        "floor": FLOOR, "participation": PARTICIPATION}}

    def describe(self, p: dict) -> str:
        return (f"per experiment, K and method among {', '.join(p['others'])}: per seed, {p['first']}'s "
                f"level (median {p['metric']} over the last 10% of rounds, at least {p['floor']:g}) "
                f"over the other's, paired by seed; holds when its interval across seeds lies below "
                f"{p['ratio']:g}, fails when it lies wholly above (fewer than {S.MIN_SEEDS} seeds: "
                f"undecided)")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, tests, missing = [], [], []
        level = floored_level(p["metric"], p["floor"])
        multi = len(ev.names()) > 1
        for e, other, K, first, second, where in at_common_k(ev, p["first"], p["others"],
                                                             p["participation"], missing):
            t = S.judged(S.paired(first, second, S.log_ratio_of(level)),
                         S.Claim(f"level ratio {p['first']}/{other}", high=p["ratio"]),
                         label=f"{where}{other}, K = {K}", log=True)
            tests.append(t)
            rows.append({**({"experiment": e} if multi else {}), "other": other, "K": str(K),
                         f"{p['first']} level": S.interval(S.per_seed(first, level)).estimate,
                         f"{other} level": S.interval(S.per_seed(second, level)).estimate,
                         "ratio [interval]": t.interval.text(), "outcome": t.outcome})
        return judgement(rows, tests, missing)

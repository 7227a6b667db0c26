"""``removes_drift``: with a fixed step and heterogeneous agents, the first method converges to
x* while the second stalls at a plateau (Li & Ma: RFedSVRG "avoid[s] the client-drift effect
and correctly converges to the global stationary points"; RFedAvg's fixed point is not x*).

Two statistics per K, each per seed with an interval across seeds (``stats``):

- the first method's level (median metric over the last 10% of rounds; below ``floor``, the
  round-off, as floor) over its round-0 value: at most ``converged`` (it reached x* to that
  relative accuracy);
- the second's level over the first's, paired by seed: at least ``stall`` (the second stays
  that far above), and the second's median curve levelled off (``curves.levelled_off``: a
  plateau, not a slow approach; still falling leaves the case undecided).
"""

from __future__ import annotations

import math

from .. import stats as S
from ..curves import levelled_off, median_curve
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OPEN
from ._shared import FLOOR, PARTICIPATION, at_common_k, floored_level, judgement


def start_of(metric: str):
    """A run's metric at its first recorded round."""
    return lambda t: float(S.curve_of(t, metric).dropna().iloc[0])


class RemovesDrift(Rule):
    name = "removes_drift"
    across_seeds = True
    summary = "per K, the first method's level falls below a relative accuracy while the second levels off a factor above it"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "first": {"type": "string", "default": "rfedsvrg"},
        "second": {"type": "string", "default": "rfedavg"},
        "converged": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 1e-10},
        "stall": {"type": "number", "exclusiveMinimum": 1, "default": 1e3},
        "level_factor": {"type": "number", "exclusiveMinimum": 1, "default": 1.2},
        "metric": {"type": "string", "default": "excess_risk"},
        "floor": FLOOR, "participation": PARTICIPATION}}

    def describe(self, p: dict) -> str:
        return (f"per K both ran: per seed, {p['first']}'s level (median {p['metric']} over the last "
                f"10% of rounds, at least {p['floor']:g}) over its round-0 value is at most "
                f"{p['converged']:g}, and {p['second']}'s level over {p['first']}'s (paired by seed) is "
                f"at least {p['stall']:g} with {p['second']}'s median curve levelled off (last 10% of "
                f"rounds within {p['level_factor']:g}x of the 10% before, no longer contracting); "
                f"each by its interval across seeds (fewer than {S.MIN_SEEDS} seeds: undecided)")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, tests, missing = [], [], []
        level = floored_level(p["metric"], p["floor"])
        start = start_of(p["metric"])
        multi = len(ev.names()) > 1
        for e, _, K, a, b, prefix in at_common_k(ev, p["first"], [p["second"]], p["participation"], missing):
            where = f"{prefix}K = {K}"
            rel = S.per_seed(a, lambda t: math.log(level(t) / start(t)) if start(t) > 0 else math.nan)
            t1 = S.judged(rel, S.Claim(f"{p['first']} level / start", high=p["converged"]), label=where, log=True)
            t2 = S.judged(S.paired(b, a, S.log_ratio_of(level)),
                          S.Claim(f"{p['second']}/{p['first']} level ratio", low=p["stall"]),
                          label=where, log=True)
            flat = levelled_off(median_curve(b, p["metric"]), p["level_factor"])
            if not flat and t2.outcome != FAIL:
                t2 = S.with_outcome(t2, OPEN, f"{where}: {p['second']} still decreasing at the "
                                              f"last round: more rounds")
            tests += [t1, t2]
            rows.append({**({"experiment": e} if multi else {}), "K": str(K),
                         f"{p['first']} level / start": t1.interval.text(),
                         f"{p['second']}/{p['first']} level": t2.interval.text(),
                         f"{p['second']} levelled off": flat})
        return judgement(rows, tests, missing)

"""``sooner_in_time``: one participation scheme reaches an excess-risk level in less simulated
time than another (the authors' Figures 7 and 8, ``*_lazy*`` scripts: three straggler agents
whose local work counts 10x, ``RFedAGSP_.m``'s round time = the sum of the participants' local
times; scheme II joins the stragglers with p = 0.05, scheme I samples s agents uniformly and
so takes them as often as anyone).

Statistic, per seed (the schemes share their draws per seed, so seed i of one is paired with
seed i of the other): for each factor c (``level_factors``, one case each) the level is c x the
higher of the two runs' plateaus (``stats.tail_level``: median over the last 10% of rounds), so
both runs reach it; each run's time to it is its ``time`` column (``rfl.simtime``) at its first
round at or below the level, and the statistic is log(time of the first / time of the
second). Across seeds, a Student-t interval of the mean log ratio (``stats.decide``): sooner
when it lies below 1, not sooner when it lies wholly at or above 1 (a tie included), undecided
otherwise or with fewer than ``stats.MIN_SEEDS`` paired seeds.
"""

from __future__ import annotations

import math

import numpy as np

from rfl.reporting.figures import method_label

from .. import stats as S
from ..curves import rounds_to
from ..rule import Evidence, Judgement, Rule
from ..verdicts import OK, OPEN, PARTLY, UNDECIDED, combine
from .level_vs_share import participations, scheme_of


def pick(ev: Evidence, experiment: str, scheme: str, algorithm: str):
    """(key, runs) of the first method of ``algorithm`` running ``scheme`` (``full``,
    ``uniform`` or a scheme's name), or None."""
    parts = participations(ev, experiment)
    for key, runs in ev.runs(experiment).items():
        if key[0] == algorithm and key in parts and scheme_of(parts[key], 1)[0] == scheme:
            return key, runs
    return None


def pair_level(ta, tb, factor: float) -> float:
    """``factor`` x the higher of two runs' plateaus (``stats.tail_level``; a diverged run's
    infinite plateau left out), NaN when neither is finite."""
    finite = [v for v in (S.tail_level(ta), S.tail_level(tb)) if np.isfinite(v)]
    return factor * max(finite) if finite else np.nan


def reached(table, level: float) -> tuple[float, float]:
    """(round, simulated time) of a run's first round at or below ``level`` (``stats.curve_of``:
    +inf from a diverged round on); (NaN, +inf) if it never gets there within the run (later
    than any time it reached), NaNs for a NaN level."""
    if not np.isfinite(level):
        return np.nan, np.nan
    t = rounds_to(S.curve_of(table), level)
    if not np.isfinite(t):
        return np.nan, math.inf
    return t, float(table.set_index("round")["time"].loc[t])


def log_time_ratio(factor: float):
    """The paired statistic of seed i: log(time of a / time of b) to the pair's level
    (``pair_level``); +-inf when only one run gets there, NaN when neither does."""
    def f(ta, tb):
        level = pair_level(ta, tb, factor)
        return S.log_ratio_of(lambda t: reached(t, level)[1])(ta, tb)
    return f


class SoonerInTime(Rule):
    name = "sooner_in_time"
    across_seeds = True
    summary = ("one scheme reaches a level (a factor above both plateaus) in less simulated time "
               "than another, paired over seeds")
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": {"type": "string", "default": "rfedags"},
        "first": {"type": "string", "default": "bernoulli"},
        "second": {"type": "string", "default": "uniform"},
        "level_factors": {"type": "array", "minItems": 1,
                          "items": {"type": "number", "exclusiveMinimum": 1}, "default": [2.0]}}}

    def describe(self, p: dict) -> str:
        factors = ", ".join(f"{f:g}" for f in p["level_factors"])
        return (f"in each experiment and for each factor c in {factors}: per seed, {p['algorithm']} "
                f"with scheme `{p['first']}` and with `{p['second']}` (paired by seed) run to the level "
                f"c x the higher of their plateaus (median excess risk over the last 10% of rounds), "
                f"and the ratio of their simulated times (the `time` column) at the first round at or "
                f"below it; sooner when its 95% Student-t interval across seeds (log scale) lies below "
                f"1, not sooner when it lies wholly at or above 1 (a tie included), undecided "
                f"otherwise, with fewer than {S.MIN_SEEDS} seeds, or without both schemes or a time "
                f"column")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, tests, margins, missing = [], [], [], []
        claim = S.Claim("time ratio", high=1.0, strict=True)
        for e in ev.names():
            a, b = (pick(ev, e, p[k], p["algorithm"]) for k in ("first", "second"))
            if a is None or b is None or "time" not in a[1][0] or "time" not in b[1][0]:
                missing.append(f"`{e}`: both schemes, experiments.{e}.time declared")
                margins.append(f"`{e}`: no time ratio, {claim.text()}")
                continue
            for factor in p["level_factors"]:
                t = S.judged(S.paired(a[1], b[1], log_time_ratio(factor)), claim,
                             label=f"`{e}`, c = {factor:g}", log=True)
                tests.append(t)
                margins.append(t)
                rows.append(self.row(e, factor, a, b, t))
        verdict = combine([t.outcome for t in tests] + [OPEN] * len(missing))
        why = [t.why for t in tests if t.outcome == OPEN and t.why] + missing
        return Judgement(verdict, rows, [], "; ".join(why) if why and verdict in (UNDECIDED, PARTLY) else None,
                         S.margin_line(margins))

    @staticmethod
    def row(e, factor, a, b, test: S.Test) -> dict:
        """The case's row: per scheme the median over its paired seeds of the round and the time
        at which it reached the seed's level, and the time ratio's interval."""
        runs_a, runs_b = S.by_seed(a[1]), S.by_seed(b[1])
        seeds = sorted(set(runs_a) & set(runs_b), key=lambda s: (str(type(s)), s))
        got = {"first": [], "second": []}
        for s in seeds:
            level = pair_level(runs_a[s], runs_b[s], factor)
            got["first"].append(reached(runs_a[s], level))
            got["second"].append(reached(runs_b[s], level))
        med = {k: np.median(np.array(v, float), axis=0) if v else (np.nan, np.nan) for k, v in got.items()}
        est, lo, hi = test.interval.shown()
        return {"experiment": e, "factor": f"{factor:g}", "seeds paired": len(seeds),
                "first": method_label(a[0]), "first: round": med["first"][0], "first: time": med["first"][1],
                "second": method_label(b[0]), "second: round": med["second"][0], "second: time": med["second"][1],
                "time ratio": est, "interval": f"[{lo:.3g}, {hi:.3g}]",
                "sooner": {OK: "yes", OPEN: "open"}.get(test.outcome, "no")}

"""``faster_than``: one method converges in fewer rounds than another (the authors'
``PCAStief_Syn_AGSvsTM``: RFedAGS against RFedAvg with the tangent-mean aggregation): per K,
over the whole descent, paired by seed.

Per seed (the methods share their draws per seed), the statistic is the geometric mean over
several levels of the ratio of rounds (1 + rounds of the first) / (1 + rounds of the second)
to first get to each level (``rfl.claims.curves.log_rounds_ratio``: ``levels`` levels evenly
in log between the lower start and the higher plateau). One level decides nothing: a tie at
one level with one method ahead elsewhere is read from every level. Across seeds, a Student-t
interval of the mean log ratio (``rfl.claims.stats``): faster when it lies at or below
``max_ratio``, not faster when it lies wholly above it (a tie included), undecided otherwise.
"""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..curves import levelled_off, log_rounds_ratio
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine
from .ends_as_low import PAIR, who

#: parameters of a race over several levels
RACE = {"levels": {"type": "integer", "minimum": 1, "default": 4,
                   "description": "levels, evenly in log between the lower start and the higher plateau"},
        "max_ratio": {"type": "number", "exclusiveMinimum": 0, "default": 0.95,
                      "description": "faster: the geometric mean over levels of the ratio of rounds "
                                     "(1 + first's) / (1 + second's) at most this"}}


def race(runs_a, runs_b, p: dict, where: str, label: str = "rounds ratio") -> tuple[S.Test, dict]:
    """(the test of "a faster than b" over their paired seeds, numbers for the row). A seed's
    rounds not reached within the run are censored (a lower bound): an OK that rests on the
    first method's censored rounds, or a FAIL on the second's, is open while that method's
    median curve has not levelled off (``level_factor``)."""
    from ..curves import median_curve
    censored = {"a": False, "b": False}

    def stat(ta, tb):
        r, ca, cb = log_rounds_ratio(S.curve_of(ta), S.curve_of(tb), p["levels"])
        censored["a"] |= ca
        censored["b"] |= cb
        return r

    sample = S.paired(runs_a, runs_b, stat)
    test = S.judged(sample, S.Claim(label, high=p["max_ratio"]), where, log=True)
    factor = p.get("level_factor", 1.2)
    if test.outcome == OK and censored["a"] and not levelled_off(median_curve(runs_a), factor):
        test = S.with_outcome(test, OPEN, f"{where}: more rounds ({p['first']} has not reached every "
                                          f"level and is still decreasing)")
    if test.outcome == FAIL and censored["b"] and not levelled_off(median_curve(runs_b), factor):
        test = S.with_outcome(test, OPEN, f"{where}: more rounds ({p['second']} has not reached every "
                                          f"level and is still decreasing)")
    e, lo, hi = test.interval.shown()
    return test, {"seeds paired": str(test.interval.n), label: e,
                  "interval": f"[{lo:.3g}, {hi:.3g}]" if np.isfinite(e) else "-"}


def pair_runs(ev: Evidence, p: dict):
    """(experiment, K, first's runs, second's runs) for every K both methods ran."""
    part = p.get("participation", "every")
    for e in ev.names():
        a, b = ev.by_k(e, p["first"], part), ev.by_k(e, p["second"], part)
        for K in sorted(set(a) & set(b)):
            yield e, K, a[K], b[K]


class FasterThan(Rule):
    name = "faster_than"
    across_seeds = True
    summary = ("per K, over several levels and paired by seed, the first method needs fewer rounds "
               "than the second (interval of the rounds ratio at most max_ratio)")
    params_schema = {"type": "object", "additionalProperties": False, "properties": {**PAIR, **RACE}}

    def describe(self, p: dict) -> str:
        return (f"per K both ran ({who(p)}), per seed the geometric mean over {p['levels']} levels "
                f"(evenly in log between the lower start and the higher plateau) of (1 + rounds of "
                f"{p['first']}) / (1 + rounds of {p['second']}) to first reach each level; across "
                f"paired seeds (95% Student-t interval, at least {S.MIN_SEEDS} seeds) at most "
                f"{p['max_ratio']:g}: faster; wholly above {p['max_ratio']:g} (a tie included): not "
                f"faster; otherwise undecided")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, cases, decide, tests = [], [], [], []
        multi = len(ev.names()) > 1
        for e, K, a, b in pair_runs(ev, p):
            where = (f"`{e}`, " if multi else "") + f"K = {K}"
            test, row = race(a, b, p, where)
            cases.append(test.outcome)
            tests.append(test)
            if test.outcome == OPEN:
                decide.append(test.why)
            rows.append({**({"experiment": e} if multi else {}), "K": str(K), **row})
        if not cases:
            decide.append(f"runs of {p['first']} and {p['second']} at a common K")
        verdict = combine(cases)
        return Judgement(verdict, rows, [],
                         "; ".join(d for d in decide if d) if decide and verdict in (UNDECIDED, PARTLY) else None,
                         S.margin_line(tests))

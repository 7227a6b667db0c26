"""``ends_as_low``: one method ends at least as low as another (the authors'
``PCAStief_Syn_AGSvsTM``: RFedAGS against RFedAvg with the tangent-mean aggregation): per K,
the first method's plateau is at most a factor times the second's.

Per seed, the plateau is the median excess risk over the run's last 10% of rounds
(``rfl.claims.stats.tail_level``), and the two methods are paired by seed (they share their
draws per seed): the statistic is log(first's plateau / second's), with a Student-t interval
across seeds (``level_test``). A plateau is exact only for a curve that has levelled off; a
curve still decreasing gives an upper bound of it. So the claim holds for certain when the
interval lies under the factor and the second's median curve has levelled off, and is broken
when the interval lies above the factor and the first's has; otherwise more rounds (or seeds)
decide it.
"""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..curves import diverged_at, levelled_off, median_curve, more_rounds, plateau
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine

PAIR = {"first": {"type": "string", "default": "rfedags"},
        "second": {"type": "string", "default": "rfedavg"},
        "level_factor": {"type": "number", "exclusiveMinimum": 1, "default": 1.2},
        "participation": {"enum": ["every", "any"], "default": "every",
                          "description": "the runs compared: with every agent taking part, or "
                                         "under whichever participation the experiment runs "
                                         "(every agent first; the authors' scripts that sample agents)"}}
#: how plateaus of datasets of different scale are compared
SCALE = {"scale": {"enum": ["none", "initial", "fstar"], "default": "none",
                   "description": "none: the excess risk's plateau as it is (what the authors' "
                                  "scripts plot: the optimality gap); initial: relative to the "
                                  "seed's F(x_0) - F*; fstar: relative to |F*| (scale-free, for "
                                  "datasets whose F* differ)"}}
SCALE_TEXT = {"none": "the plateau", "initial": "the plateau relative to F(x_0) - F*",
              "fstar": "the plateau relative to |F*|"}


def who(p: dict) -> str:
    """The runs a pair rule compares, as its text names them."""
    return "every agent" if p.get("participation", "every") == "every" else "under the experiment's participation"


def seed_level(table, scale: str = "none") -> float:
    """One run's plateau (``stats.tail_level``), divided by its F(x_0) - F* (``initial``: the
    excess risk at round 0) or by |F*| (``fstar``: F* = cost - excess risk at round 0)."""
    level = S.tail_level(table)
    if scale == "none":
        return level
    first = table.iloc[0]
    ref = float(first["excess_risk"]) if scale == "initial" else abs(float(first["cost"] - first["excess_risk"]))
    return level / ref if ref > 0 else np.nan


def level_test(runs_low, runs_high, factor: float, where: str, p: dict, names=("first", "second"),
               scale: str = "none") -> tuple[S.Test, dict, list[str], list[str]]:
    """(test, numbers, notes, what would decide) of "``runs_low``'s plateau is at most
    ``factor`` times ``runs_high``'s", per seed paired (``seed_level``), Student-t interval of
    the log ratio across seeds. An OK needs the high curve (median over seeds) levelled off
    (its plateau is not yet known otherwise), a FAIL the low one; a run that diverged has no
    plateau: a FAIL if it is the low one (infinite ratio), open if the high one."""
    lv = p.get("level_factor", 1.2)
    sample = S.paired(runs_low, runs_high, lambda a, b: _log_ratio(seed_level(a, scale), seed_level(b, scale)))
    test = S.judged(sample, S.Claim("plateau ratio", high=factor), where, log=True)
    ml, mh = median_curve(runs_low), median_curve(runs_high)
    flat_l = diverged_at(ml) is None and ml.notna().any() and levelled_off(ml, lv)
    flat_h = diverged_at(mh) is None and mh.notna().any() and levelled_off(mh, lv)
    notes, decide = [], []
    if test.outcome == OK and not flat_h or test.outcome == FAIL and not flat_l and diverged_at(ml) is None:
        test = S.with_outcome(test, OPEN, None)
    if test.outcome == OPEN:
        for name, c, flat in ((names[0], ml, flat_l), (names[1], mh, flat_h)):
            if not flat and diverged_at(c) is None and c.notna().any():
                notes.append(f"- {where}: {name} is still decreasing at the last round (its last level "
                             f"bounds its plateau from above).")
                decide.append(more_rounds(f"{where}, {name}", c, int(c.dropna().index[-1]), lv))
        if not decide and test.why:
            decide.append(test.why)
    e, lo, hi = test.interval.shown()
    level = lambda c: plateau(c.dropna()) if c.notna().any() and diverged_at(c) is None else np.nan  # noqa: E731
    numbers = {f"{names[0]} plateau": level(ml), f"{names[1]} plateau": level(mh),
               "ratio": e, "interval": f"[{lo:.3g}, {hi:.3g}]" if np.isfinite(e) else "-",
               "seeds paired": str(test.interval.n),
               f"{names[0]} levelled off": bool(flat_l), f"{names[1]} levelled off": bool(flat_h)}
    return test, numbers, notes, decide


def _log_ratio(x: float, y: float) -> float:
    if np.isinf(x) and not np.isinf(y):
        return np.inf
    if not (x > 0 and y > 0 and np.isfinite(x) and np.isfinite(y)):
        return np.nan
    return float(np.log(x / y))


def pairs(ev: Evidence, p: dict):
    """(experiment, K, first's runs, second's runs) for every K both methods ran (with every
    agent, or under any participation: ``p["participation"]``), in the order of the claim's
    experiments."""
    part = p.get("participation", "every")
    for e in ev.names():
        a, b = ev.by_k(e, p["first"], part), ev.by_k(e, p["second"], part)
        for K in sorted(set(a) & set(b)):
            yield e, K, a[K], b[K]


class EndsAsLow(Rule):
    name = "ends_as_low"
    across_seeds = True
    summary = "per K, paired by seed, the first method's plateau is at most a factor times the second's"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        **PAIR, "factor": {"type": "number", "minimum": 1, "default": 1.1}}}

    def describe(self, p: dict) -> str:
        return (f"per K both ran ({who(p)}), per seed {p['first']}'s plateau (median excess risk over "
                f"the last 10% of rounds) over {p['second']}'s, paired by seed; the 95% Student-t "
                f"interval of the ratio across seeds (geometric mean, at least {S.MIN_SEEDS} seeds) "
                f"at most {p['factor']:g}: holds; wholly above {p['factor']:g}: fails. A curve not "
                f"levelled off (median over seeds: the 10% of rounds before its last 10% more than "
                f"{p['level_factor']:g}x above them, or still contracting as fast as in its linear "
                f"phase) bounds its plateau from above: undecided if that leaves it open; a run "
                f"that diverged has no plateau (fails if the first)")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, cases, notes, decide, tests = [], [], [], [], []
        multi = len(ev.names()) > 1
        for e, K, a, b in pairs(ev, p):
            where = (f"`{e}`, " if multi else "") + f"K = {K}"
            test, numbers, n, d = level_test(a, b, p["factor"], where, p, (p["first"], p["second"]))
            cases.append(test.outcome)
            tests.append(test)
            notes += n
            decide += d
            rows.append({**({"experiment": e} if multi else {}), "K": str(K), **numbers})
        verdict = combine(cases)
        if verdict == UNDECIDED and not decide:
            decide.append(f"runs of {p['first']} and {p['second']} at a common K with finite plateaus")
        return Judgement(verdict, rows, notes,
                         "; ".join(decide) if decide and verdict in (UNDECIDED, PARTLY) else None,
                         S.margin_line(tests))

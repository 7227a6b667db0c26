"""``curves_within_factor``: two methods converge at the same rate: at each common K, their
linear rates agree within a factor. Used for rfl's own comparison of RFedAGS and RFedAvg at
K > 1 (the paper claims no likeness there; its Section 3.3 identity at K = 1, with Exp and
parallel transport, is ``identical_runs``) and for ZO-RFedProj's "same order of rate".

Per seed, each method's rate is the slope of its log-linear phase (``rfl.claims.curves
.seed_rate``: from the escape from the initial plateau to before the noise floor); the two
methods share their draws per seed, so the statistic is the paired ratio of the two slopes
(log-contractions), with a Student-t interval of its log across seeds (``rfl.claims.stats``):
the same rate when the interval lies within [1/factor, factor], different when it lies wholly
outside. "Identical" (K = 1 with the exponential map and parallel transport) is an identity
claim of its own, checked to round-off; "within a factor at every round" decided on curves of
independent draws is not a statistic of a rate. The largest |log ratio| of the two median
curves over the rounds is shown as evidence."""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..curves import diverged_at, max_log_ratio, median_curve, seed_rate
from ..rule import Evidence, Judgement, Rule
from ..verdicts import OPEN, UNDECIDED, combine


def slope_log_ratio(a, b) -> float:
    """log(slope of a / slope of b) of two runs' linear phases (``seed_rate``): both
    decreasing: the log ratio; one not decreasing (slope >= 0, or diverged) and the other
    decreasing: -inf or +inf (rates that cannot agree); neither: NaN."""
    fa, fb = seed_rate(S.curve_of(a)), seed_rate(S.curve_of(b))
    sa = fa["slope"] if fa["status"] in ("ok", "flat") else np.nan
    sb = fb["slope"] if fb["status"] in ("ok", "flat") else np.nan
    if fa["status"] == "diverged":
        sa = np.inf
    if fb["status"] == "diverged":
        sb = np.inf
    if sa < 0 and sb < 0:
        return float(np.log(sa / sb))
    if sa < 0 <= sb:
        return np.inf
    if sb < 0 <= sa:
        return -np.inf
    return np.nan


class CurvesWithinFactor(Rule):
    name = "curves_within_factor"
    across_seeds = True
    summary = ("same rate: per K, the paired ratio of two methods' per-seed linear rates lies within "
               "a factor (interval across seeds)")
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "first": {"type": "string", "default": "rfedags"},
        "second": {"type": "string", "default": "rfedavg"},
        "factor": {"type": "number", "exclusiveMinimum": 1, "default": 1.25,
                   "description": "the rates (log-contractions per round) agree within this factor"},
        "participation": {"enum": ["every", "any"], "default": "every",
                          "description": "the runs compared: with every agent, or under "
                                         "whichever participation the experiment runs"}}}

    def describe(self, p: dict) -> str:
        who = "" if p["participation"] == "every" else " (under the experiment's participation)"
        return (f"at every K both run{who}, per seed the log-contraction per round of {p['first']}'s "
                f"linear phase (from its escape from the initial plateau to before its floor) over "
                f"{p['second']}'s, paired by seed; the 95% Student-t interval of the ratio across "
                f"seeds (geometric mean, at least {S.MIN_SEEDS} seeds) within [1/{p['factor']:g}, "
                f"{p['factor']:g}]: the same rate; wholly outside: different rates; otherwise undecided")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, cases, notes, tests, decide = [], [], [], [], []
        multi = len(ev.names()) > 1
        for e in ev.names():
            a_runs = ev.by_k(e, p["first"], p["participation"])
            b_runs = ev.by_k(e, p["second"], p["participation"])
            for K in sorted(set(a_runs) & set(b_runs)):
                where = (f"`{e}`, " if multi else "") + f"K = {K}"
                sample = S.paired(a_runs[K], b_runs[K], slope_log_ratio)
                test = S.judged(sample, S.Claim("rate ratio", 1 / p["factor"], p["factor"]), where, log=True)
                cases.append(test.outcome)
                tests.append(test)
                if test.outcome == OPEN and test.why:
                    decide.append(test.why)
                a, b = median_curve(a_runs[K]), median_curve(b_runs[K])
                for name, c in ((p["second"], b), (p["first"], a)):
                    if diverged_at(c) is not None:
                        notes.append(f"- {where}: {name} diverged at round {diverged_at(c)}.")
                def rate(runs) -> float:
                    slopes = S.per_seed(runs, lambda t: seed_rate(S.curve_of(t))["slope"]).dropna()
                    return float(np.exp(slopes.mean())) if len(slopes) else np.nan
                est, lo, hi = test.interval.shown()
                rows.append({**({"experiment": e} if multi else {}), "K": str(K),
                             f"{p['first']} contraction": rate(a_runs[K]),
                             f"{p['second']} contraction": rate(b_runs[K]),
                             "rate ratio": est, "interval": f"[{lo:.3g}, {hi:.3g}]" if np.isfinite(est) else "-",
                             "seeds paired": str(test.interval.n),
                             "max abs(log ratio) over rounds": max_log_ratio(b, a)})
        verdict = combine(cases)
        return Judgement(verdict, rows, notes, "; ".join(decide) if decide and verdict == UNDECIDED else None,
                         S.margin_line(tests))

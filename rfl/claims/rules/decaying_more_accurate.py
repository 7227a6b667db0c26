"""``decaying_more_accurate``: decaying step sizes find a more accurate solution than a fixed
step (RFedAGS paper, Theorem 4.4 and Figure 1(d-f)): per K, the decaying run ends below the
fixed one.

Per seed, the decaying run's level (its last value, or the median of its last 10% of rounds)
over the fixed run's of the same seed (the two experiments draw the same seeds), with a
Student-t interval of the log ratio across seeds (``rfl.claims.stats``): more accurate when
the interval lies below 1, not when it lies at or above 1 and the decaying run has levelled
off (a decaying run still decreasing may end lower)."""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..curves import diverged_at, last, levelled, median_curve, plateau
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine

ROLES = {"type": "object", "additionalProperties": False, "required": ["fixed", "decaying"],
         "properties": {"fixed": {"type": "string"}, "decaying": {"type": "string"}}}


def seed_statistic(table, statistic: str) -> float:
    """One run's level: its last value (``last``) or the median of its last 10% of rounds."""
    c = S.curve_of(table).dropna()
    return float(c.iloc[-1]) if statistic == "last" else S.tail_level(table)


def compare(fixed, dec, statistic: str) -> tuple[str, str | None, str | None]:
    """(outcome, why, what would decide it): the decaying curve's ``statistic`` (``last``: the last round; ``plateau``:
    median of the last 10% of rounds) is below the fixed curve's. A decaying run that diverged
    fails; a fixed run that diverged, or a curve without a value, leaves it undecided; a
    decaying run above the fixed one but still decreasing at its last round is undecided."""
    t_dec, t_fix = diverged_at(dec), diverged_at(fixed)
    if t_dec is not None:
        return FAIL, f"the decaying-step run diverged at round {t_dec}", None
    if t_fix is not None:
        return (OPEN, f"the fixed-step run diverged at round {t_fix}: no level to compare with",
                "a fixed-step run that does not diverge")
    stat = last if statistic == "last" else (lambda c: plateau(c.dropna()))
    f_end, d_end = stat(fixed), stat(dec)
    if not (np.isfinite(f_end) and np.isfinite(d_end)):
        return OPEN, "no value at the last round", "runs with a value"
    if d_end < f_end:
        return OK, None, None
    if not levelled(dec):
        return (OPEN, "the decaying run ends above the fixed one but is still decreasing at its last round",
                "more rounds of the decaying run")
    return FAIL, None, None


class DecayingMoreAccurate(Rule):
    name = "decaying_more_accurate"
    across_seeds = True
    summary = "per K, the decaying-step run ends below the fixed-step run"
    experiments_schema = ROLES
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": {"type": "string", "default": "rfedags"},
        "statistic": {"enum": ["last", "plateau"], "default": "last"}}}

    def describe(self, p: dict) -> str:
        what = ("the median excess risk at the last round" if p["statistic"] == "last" else
                "the median excess risk over the last 10% of rounds")
        return (f"per K ({p['algorithm']}, every agent), per seed {what} of the decaying run over "
                f"that of the fixed run, paired by seed; the 95% Student-t interval of the ratio "
                f"across seeds (geometric mean, at least {S.MIN_SEEDS} seeds) below 1: holds; at or "
                f"above 1: fails; reproduced if for every K (a decaying run that diverged fails; "
                f"a fixed run that diverged, or a decaying run not below the fixed one that is still "
                f"decreasing, is undecided)")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        fixed = ev.by_k(ev.experiments["fixed"], p["algorithm"])
        dec = ev.by_k(ev.experiments["decaying"], p["algorithm"])
        rows, cases, notes, decide = [], [], [], []
        tests = []
        for K in sorted(set(fixed) & set(dec)):
            fc, dc = median_curve(fixed[K]), median_curve(dec[K])
            outcome, why, needs = compare(fc, dc, p["statistic"])
            test = None
            if outcome != OPEN or why == "the decaying run ends above the fixed one but is still decreasing at its last round":
                sample = S.paired(dec[K], fixed[K], S.log_ratio_of(lambda t: seed_statistic(t, p["statistic"])))
                test = S.judged(sample, S.Claim("ratio (dec/fixed)", high=1.0, strict=True), f"K = {K}", log=True)
                if diverged_at(dc) is not None:
                    pass                                     # a diverged decaying run fails: kept
                elif test.outcome == FAIL and not levelled(dc):
                    outcome = OPEN
                else:
                    outcome, why, needs = test.outcome, None, None
                    if outcome == OPEN:
                        why = needs = test.why.split(": ", 1)[1]
                tests.append(test)
            cases.append(outcome)
            if why:
                notes.append(f"- K = {K}: {'fails' if outcome == FAIL else 'undecided'}: {why}.")
            if needs:
                decide.append(f"K = {K}: {needs}")
            f_end, d_end = last(fc), last(dc)
            est, lo, hi = test.interval.shown() if test else (np.nan, np.nan, np.nan)
            rows.append({"K": str(K), "seeds paired": str(test.interval.n) if test else "0",
                         "fixed, last round": f_end, "decaying, last round": d_end,
                         "decaying, at the fixed run's last round": last(dc, min(dc.index[-1], fc.index[-1])),
                         "fixed, plateau": plateau(fc.dropna()), "decaying, plateau": plateau(dc.dropna()),
                         "ratio (dec/fixed)": est,
                         "interval": f"[{lo:.3g}, {hi:.3g}]" if np.isfinite(est) else "-"})
        verdict = combine(cases)
        return Judgement(verdict, rows, notes,
                         "; ".join(decide) if decide and verdict in (UNDECIDED, PARTLY) else None,
                         S.margin_line(tests))

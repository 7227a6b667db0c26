"""``linear_rate``: with a fixed step, a method converges linearly to a neighbourhood of x*
(RFedAGS paper, Theorem 4.3): per K, each seed's excess-risk curve has a log-linear phase
(``rfl.claims.curves.seed_rate``: from its escape from the initial plateau to before its noise
floor), and across seeds (``rfl.claims.stats``) the phase's log-decrease is at least
``min_decrease``-fold and its slope does not flatten (the late half's slope at least
``linearity`` times the early half's: a geometric curve gives 1, a sublinear one less).

No single fit decides: each is one seed's number, and the verdict reads their interval."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import stats as S
from ..curves import MIN_FIT_ROUNDS, median_curve, plateau, seed_rate
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine

#: still decreasing: the curve's log-decrease per round over its last rounds is at least this
#: fraction of the fitted one, -log(contraction)
STILL = 0.5


def still_decreasing(curve, rate: float) -> bool:
    """Whether ``curve`` still falls at its last rounds at the fitted contraction ``rate``: the
    log of the median of the 10% of rounds (at least 3) before its last 10% over the median of
    the last 10%, per round, is at least ``STILL`` x (-log rate). A geometric curve r^t falls by
    exactly -log r per round at every round; one that has levelled off at a floor falls by
    about 0. With fewer than two windows of values nothing says it stopped: True."""
    c = curve.dropna().clip(lower=1e-300)
    n = max(3, len(c) // 10)
    if len(c) < 2 * n:
        return True
    drop = np.log(float(c.iloc[-2 * n:-n].median()) / float(c.iloc[-n:].median())) / n
    return bool(drop >= STILL * -np.log(rate))


def rounds_to_decide(rate: float, min_decrease: float, limit: int = 1 << 20) -> int | None:
    """The fewest rounds T after which a curve contracting exactly at ``rate`` (r^t, t = 0..T)
    shows the rule a ``min_decrease``-fold decrease over its linear phase (``seed_rate``; the
    phase leaves out the first and last 10% of the log-decrease, so T exceeds
    log(min_decrease) / -log(rate) by about a quarter); None beyond ``limit`` or for rate >= 1."""
    if not 0 < rate < 1:
        return None
    need = math.log(min_decrease)

    def enough(T):
        f = seed_rate(pd.Series(rate ** np.arange(T + 1.0)))
        return f["status"] == "ok" and f["decrease"] >= need

    lo, hi = MIN_FIT_ROUNDS, MIN_FIT_ROUNDS
    while not enough(hi):
        lo, hi = hi, 2 * hi
        if hi > limit:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


def judge_k(runs, p: dict, where: str) -> tuple[str, dict, list[str], str | None, list]:
    """(outcome, row, notes, what would decide, tests) of one K's runs (one table per seed)."""
    notes = []
    metric = p.get("metric", "excess_risk")
    med = median_curve(runs, metric)
    diverged = [t for t in runs if (t["status"] == "diverged").any()]
    start = "F(x_1)-F*" if metric == "excess_risk" else f"{metric} at round 0"
    row = {"seeds": str(len(runs)), start: float(med.dropna().iloc[0]) if med.notna().any() else np.nan,
           "contraction/round": np.nan, "contraction interval": "-", "decrease": np.nan,
           "late/early slope": np.nan, "R^2 (median)": np.nan, "escape round (median)": "-",
           "fit ends (median)": "-", "level reached": plateau(med.dropna()) if med.notna().any() else np.nan}
    if diverged:
        first = min(int(t.loc[t["status"] == "diverged", "round"].min()) for t in diverged)
        notes.append(f"- {where}: {len(diverged)} of {len(runs)} seeds diverged (first at round {first}); "
                     f"{'the claim fails for it' if 2 * len(diverged) >= len(runs) else 'left out of the fits'}.")
        if 2 * len(diverged) >= len(runs):
            return FAIL, row, notes + [f"- {where}: fails: the run diverged at round {first} (median over seeds)."], None, [
                S.value_margin("diverged seeds", len(diverged), S.Claim("", high=len(runs) / 2, strict=True),
                               label=where) + f" (of {len(runs)})"]
    kept = [t for t in runs if not (t["status"] == "diverged").any()]
    fits = S.per_seed(kept, lambda t: 0.0)      # the seeds, in order
    seeds = S.by_seed(kept)
    fit = {s: seed_rate(S.curve_of(seeds[s], metric)) for s in fits.index}
    if any(f["status"] == "insufficient" and len(seeds[s]) <= MIN_FIT_ROUNDS for s, f in fit.items()):
        why = f"fewer than {MIN_FIT_ROUNDS + 1} recorded rounds"
        return OPEN, row, notes + [f"- {where}: undecided: {why}."], f"{where}: {why}", [
            S.value_margin("recorded rounds (fewest over seeds)", min(len(t) for t in seeds.values()),
                           S.Claim("", low=MIN_FIT_ROUNDS + 1), label=where)]
    ok = {s: f for s, f in fit.items() if f["status"] in ("ok", "flat")}
    if not ok:
        why = (f"no seed has a linear phase of {MIN_FIT_ROUNDS + 1} rounds or more (each falls to its "
               f"floor within fewer rounds): record the rounds more finely")
        return OPEN, row, notes + [f"- {where}: undecided: {why}."], f"{where}: {why}", [
            S.value_margin("seeds with a linear phase", 0, S.Claim("", low=1), label=where)
            + f" (of {len(fit)})"]
    slope = pd.Series({s: f["slope"] for s, f in ok.items()}, dtype=float)
    decrease = pd.Series({s: f["decrease"] for s, f in ok.items()}, dtype=float)
    linear = pd.Series({s: f["linearity"] for s, f in ok.items()}, dtype=float)
    t_dec = S.judged(decrease, S.Claim("decrease", low=p["min_decrease"]), where, log=True)
    t_lin = S.judged(linear, S.Claim("late/early slope", low=p["linearity"]), where)
    iv = S.interval(slope, log=True)
    e, lo, hi = iv.shown()
    row.update({"contraction/round": e, "contraction interval": f"[{lo:.4g}, {hi:.4g}]",
                "decrease": float(np.exp(decrease.mean())) if len(decrease) else np.nan,
                "late/early slope": float(linear.mean()) if linear.notna().any() else np.nan,
                "R^2 (median)": float(np.nanmedian([f["r2"] for f in ok.values()])) if any(
                    np.isfinite(f["r2"]) for f in ok.values()) else np.nan,
                "escape round (median)": _median_round([f["t0"] for f in ok.values()]),
                "fit ends (median)": _median_round([f["t1"] for f in ok.values()])})
    outcomes = {t_dec.outcome, t_lin.outcome}
    if FAIL in outcomes:
        outcome = FAIL
    elif outcomes == {OK}:
        outcome = OK
    else:
        outcome = OPEN
    decide = None
    rate = float(np.exp(slope.mean())) if len(slope) else np.nan
    if outcome != OK and t_dec.outcome != OK and t_lin.outcome != FAIL and 0 < rate < 1 \
            and still_decreasing(med, rate) and len(kept) >= S.MIN_SEEDS:
        T = rounds_to_decide(rate, p["min_decrease"])
        last = int(med.dropna().index[-1])
        outcome = OPEN
        why = (f"still decreasing at its last round, by {float(np.exp(decrease.mean())):.3g}x so far over "
               f"its linear phase; about {T} rounds would decide it (at the mean contraction "
               f"{rate:.4g} per round, a curve needs {T} rounds to show a {p['min_decrease']:g}x "
               f"decrease between its escape and its floor; {last} were run)" if T else
               "still decreasing at its last round, too slowly to say how many rounds would decide it")
        decide = f"{where}: {why}"
        notes.append(f"- {where}: undecided: {why}.")
    elif outcome == OPEN:
        why = "; ".join(t.why for t in (t_dec, t_lin) if t.why)
        decide = why or f"{where}: more seeds"
        notes.append(f"- {where}: undecided: {decide}.")
    return outcome, row, notes, decide, [t_dec, t_lin]


def _median_round(values) -> str:
    v = [x for x in values if np.isfinite(x)]
    return f"{float(np.median(v)):g}" if v else "-"


class LinearRate(Rule):
    name = "linear_rate"
    across_seeds = True
    summary = ("per K, each seed's log-linear phase (after its escape, before its floor): across "
               "seeds a decrease >= min_decrease and a slope that does not flatten")
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": {"type": "string", "default": "rfedags"},
        "participation": {"enum": ["every", "any"], "default": "every"},
        "min_decrease": {"type": "number", "exclusiveMinimum": 1, "default": 2.0},
        "metric": {"type": "string", "default": "excess_risk",
                   "description": "the curve fitted: excess_risk, or e.g. dist_to_opt for a run that "
                                  "converges exactly (its excess risk reaches 0 and negative round-off, "
                                  "which has no logarithm)"},
        "linearity": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.5,
                      "description": "the least ratio of the late half's log-slope to the early "
                                     "half's (1: geometric; 1/t curves give about 0.3)"}}}

    def describe(self, p: dict) -> str:
        who = "every agent" if p["participation"] == "every" else "under the experiment's participation"
        what = "excess risk" if p["metric"] == "excess_risk" else p["metric"]
        return (f"per experiment and K ({p['algorithm']}, {who}), each seed's log {what} is fitted "
                f"by a line from its escape from the initial plateau (the first round after which it "
                f"stays below 10% of its log-decrease to its plateau) to the round it has made 90% of "
                f"it (before the noise floor); across seeds (95% Student-t intervals, at least "
                f"{S.MIN_SEEDS} seeds) the fitted decrease over that phase is at least "
                f"{p['min_decrease']:g}x and the late half's slope at least {p['linearity']:g} times "
                f"the early half's (a geometric curve: 1). Reproduced if for every K; fails if an "
                f"interval lies wholly on the wrong side, or half the seeds or more diverge; "
                f"undecided otherwise, or with too few rounds, or still decreasing")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, cases, notes, decide, tests = [], [], [], [], []
        names = ev.names()
        for e in names:
            for K, runs in ev.by_k(e, p["algorithm"], p["participation"]).items():
                where = (f"`{e}`, " if len(names) > 1 else "") + f"K = {K}"
                outcome, row, n, d, t = judge_k(runs, p, where)
                cases.append(outcome)
                notes += n
                tests += t
                if d and outcome == OPEN:
                    decide.append(d)
                rows.append({**({"experiment": e} if len(names) > 1 else {}), "K": str(K), **row})
        verdict = combine(cases)
        if not cases:
            who = "every agent" if p["participation"] == "every" else "any participation"
            tests.append(S.value_margin(f"values of K with {p['algorithm']} runs ({who})", 0, S.Claim("", low=1)))
            notes.append(f"No run of {p['algorithm']} with {who} in {', '.join(f'`{e}`' for e in names)}: "
                         f"nothing to judge (``participation: any`` judges runs of any participation).")
            decide.append(f"runs of {p['algorithm']} with {who}")
        return Judgement(verdict, rows, notes,
                         "; ".join(decide) if decide and verdict in (UNDECIDED, PARTLY) else None,
                         S.margin_line(tests))

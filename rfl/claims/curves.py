"""Statistics of excess-risk curves that the claim rules share (medians over seeds, plateaus,
the linear phase, levelling off). A curve is a ``pd.Series`` indexed by round."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rfl.reporting.figures import _column, summarise

MIN_FIT_ROUNDS = 2      # a log-linear fit needs the rounds 0..2 at least (three points)


def median_curve(runs, metric="excess_risk") -> pd.Series:
    """Per round, the median over seeds of ``metric``. A seed that diverged counts as +inf from
    the round it diverged on (not as missing), so the median is infinite once half the seeds
    or more have diverged; without a diverged seed this is the median drawn in the figures."""
    curve = summarise(runs, metric)["median"]
    if not any((t["status"] == "diverged").any() for t in runs):
        return curve
    index = curve.index
    wide = pd.concat([_column(t, metric, index).rename(i) for i, t in enumerate(runs)], axis=1)
    for i, t in enumerate(runs):
        bad = t.loc[t["status"] == "diverged", "round"]
        if len(bad):
            wide.loc[index >= bad.min(), i] = np.inf
    return wide.median(axis=1).rename("median")


def diverged_at(curve: pd.Series):
    """The first round at which ``curve`` is infinite (its runs diverged), else None."""
    bad = np.nonzero(np.isinf(curve.values))[0]
    return curve.index[bad[0]] if len(bad) else None


def plateau(curve: pd.Series) -> float:
    """Level reached: median over the last 10% of rounds (at least 3)."""
    n = max(3, len(curve) // 10)
    return float(curve.iloc[-n:].median())


def last(curve: pd.Series, upto=None) -> float:
    """The curve's value at its last round with a value (at or before ``upto``), NaN if none."""
    c = curve.dropna()
    if upto is not None:
        c = c.loc[:upto]
    return float(c.iloc[-1]) if len(c) else np.nan


def rounds_to(curve: pd.Series, level: float) -> float:
    """The first round at which ``curve`` is at or below ``level`` (NaN if never)."""
    hit = np.nonzero(curve.values <= level)[0]
    return float(curve.index[hit[0]]) if len(hit) else np.nan


def first_below(curve: pd.Series, level: float) -> float:
    """The first round at which ``curve`` is strictly below ``level`` (NaN if never): a curve
    that never leaves its start does not reach a level equal to it."""
    hit = np.nonzero(curve.values < level)[0]
    return float(curve.index[hit[0]]) if len(hit) else np.nan


def linear_phase(curve: pd.Series) -> dict:
    """Fit log(curve) ~ a + b t over the transient: from t = 0 until the curve has made 90% of its
    total log-decrease (its linear phase, whether or not it levels off before the last round).
    Returns the contraction factor per round exp(b), R^2 of the fit, the rounds fitted, the
    decrease over them, and the final level (median of the last 10% of rounds); ``status`` is
    "ok", "diverged" (``diverged_at``: the first infinite round; no fit) or "insufficient"
    (fewer than MIN_FIT_ROUNDS + 1 rounds with a value: no fit). Rounds without a value (NaN:
    no seed has one) are left out of the fit."""
    t_div = diverged_at(curve)
    values = curve.dropna()
    if t_div is not None or len(values) <= MIN_FIT_ROUNDS:
        return {"status": "diverged" if t_div is not None else "insufficient", "diverged_at": t_div,
                "rate": np.nan, "r2": np.nan, "rounds": 0, "decrease": np.nan,
                "plateau": plateau(values) if len(values) else np.nan,
                "start": float(values.iloc[0]) if len(values) else np.nan}
    c = values.clip(lower=1e-300)
    logc = np.log(c.values)
    total = logc[0] - logc.min()
    # the first round with 90% of the decrease (the whole curve if it never decreases)
    reached = int(np.nonzero(logc <= logc[0] - 0.9 * total)[0][0]) if total > 0 else len(c) - 1
    end = max(reached, MIN_FIT_ROUNDS)
    t, y = c.index.values[: end + 1].astype(float), logc[: end + 1]
    b, a = np.polyfit(t, y, 1)
    resid = y - (a + b * t)
    ss = ((y - y.mean()) ** 2).sum()
    r2 = 1 - (resid ** 2).sum() / ss if ss > 0 else 1.0
    return {"status": "ok", "diverged_at": None,
            "rate": float(np.exp(b)), "r2": float(r2), "rounds": int(end),
            "decrease": float(c.iloc[0] / c.iloc[end]), "plateau": plateau(c), "start": float(c.iloc[0])}


def levelled(curve: pd.Series, factor: float = 1.2) -> bool:
    """Whether ``curve`` has levelled off: median of its last 10% of rounds (at least 3) within
    ``factor`` of the median of the 10% before them; False with fewer than 6 values."""
    c = curve.dropna()
    n = max(3, len(c) // 10)
    if len(c) < 2 * n:
        return False
    end, before = float(c.iloc[-n:].median()), float(c.iloc[-2 * n:-n].median())
    return bool(np.isfinite(end) and np.isfinite(before) and before <= factor * end)


def max_log_ratio(a: pd.Series, b: pd.Series) -> float:
    """max over the rounds both curves have of |log a - log b| (values below 1e-300 clipped); a
    round where exactly one of them diverged gives +inf, one where both did is left out; NaN
    if no round is left."""
    d = (np.log(a.clip(lower=1e-300)) - np.log(b.clip(lower=1e-300))).abs().dropna()
    return float(d.max())                        # NaN if empty


def seed_note(K, runs) -> str | None:
    """The line that says how many seeds of a K diverged, or None if none did."""
    rounds = [int(t.loc[t["status"] == "diverged", "round"].min()) for t in runs
              if (t["status"] == "diverged").any()]
    if not rounds:
        return None
    return (f"- K = {K}: {len(rounds)} of {len(runs)} seeds diverged (first at round {min(rounds)}); "
            "each counts as +inf in the median from the round it diverged on.")


def windows(curve: pd.Series, k: int = 3) -> tuple[int, list[float]]:
    """(n, medians of the last ``k`` windows of n rounds, oldest first), n = max(3, len // 10)
    as in ``plateau`` and ``levelled``; an empty list with fewer than k n values."""
    c = curve.dropna()
    n = max(3, len(c) // 10)
    if len(c) < k * n:
        return n, []
    return n, [float(c.iloc[len(c) - (k - i) * n: len(c) - (k - i - 1) * n].median()) for i in range(k)]


def tail_contraction(curve: pd.Series) -> float:
    """The contraction per round over the curve's last 20% of rounds: (median of the last 10% /
    median of the 10% before) ** (1 / n); NaN with fewer than 6 values or a level that is not
    positive and finite."""
    n, m = windows(curve, 2)
    if not m or not (np.all(np.isfinite(m)) and min(m) > 0):
        return np.nan
    before, end = m
    return float((end / before) ** (1.0 / n))


def rounds_to_level_off(curve: pd.Series, factor: float = 1.2) -> float:
    """Roughly how many more rounds until ``levelled(curve, factor)`` holds, if the curve keeps
    approaching its limit L geometrically, c_t = L + A q^t: q and L are estimated from the
    medians m1 > m2 > m3 of its last three windows of n rounds (q^n = (m2 - m3) / (m1 - m2),
    L = m3 - (m2 - m3) q^n / (1 - q^n): Aitken's extrapolation), and the model is extended round
    by round (the windows growing with the curve) until the median of its last 10% of rounds
    is within ``factor`` of the 10% before. 0 if it has levelled off already; NaN when no limit
    is in sight (the windows do not decrease at a decreasing pace, or L <= 0: the curve keeps
    contracting towards 0) or with fewer than 9 values."""
    if levelled(curve, factor):
        return 0.0
    c = curve.dropna()
    n, m = windows(c, 3)
    if not m or not np.all(np.isfinite(m)):
        return np.nan
    m1, m2, m3 = m
    d1, d2 = m1 - m2, m2 - m3
    if not (d1 > 0 and d2 > 0 and d2 < d1):
        return np.nan
    qn = d2 / d1
    limit = m3 - d2 * qn / (1 - qn)
    if limit <= 0:
        return np.nan
    q = qn ** (1.0 / n)
    T = len(c)
    # the model at round t (t = 0 .. ): excess over the limit is m3 - limit at the last
    # window's centre, T - (n + 1) / 2
    centre = T - (n + 1) / 2.0
    extra = np.arange(1, 1000 * T + 1)
    length = T + extra
    w = np.maximum(3, length // 10)
    end_c = length - (w + 1) / 2.0
    before_c = end_c - w
    model = lambda t: limit + (m3 - limit) * q ** (t - centre)  # noqa: E731
    ok = np.nonzero(model(before_c) <= factor * model(end_c))[0]
    return float(extra[ok[0]]) if len(ok) else np.nan


def still_contracting(curve: pd.Series) -> bool:
    """Whether the curve still contracts over its last 20% of rounds at a pace comparable to its
    linear phase: the tail contraction per round (``tail_contraction``) at most the square root
    of the fitted one (``linear_phase``), i.e. at least half its log-rate, and that linear phase
    (the rounds to 90% of the total log-decrease) reaches into those last 20%. A short curve
    falling steadily by 0.5% per round passes ``levelled`` (its windows differ by less than the
    factor) but is no plateau: it is still in its linear phase. A long curve that made 90% of its
    decrease early and drifts since (a noisy plateau) has ended its linear phase."""
    fit = linear_phase(curve)
    q = tail_contraction(curve)
    c = curve.dropna()
    n = max(3, len(c) // 10)
    # the linear phase reaches into the last 20% of rounds (a phase that ended before them, and a
    # plateau's noise since, is no linear phase going on)
    ongoing = fit["status"] == "ok" and fit["rounds"] >= c.index[max(len(c) - 2 * n, 0)]
    return bool(ongoing and fit["rate"] < 1 and np.isfinite(q) and q <= np.sqrt(fit["rate"]))


def levelled_off(curve: pd.Series, factor: float = 1.2) -> bool:
    """``levelled`` and no longer ``still_contracting``: a plateau reached, not a slow decrease."""
    return levelled(curve, factor) and not still_contracting(curve)


#: the linear phase of one seed starts once the curve has made this share of its log-decrease
#: to its plateau for good (the escape from an initial plateau or saddle), and ends when it has
#: made ``1 - ESCAPE_SHARE`` of it (before the noise floor)
ESCAPE_SHARE = 0.1


def linear_window(curve: pd.Series) -> tuple[int, int] | None:
    """(t0, t1), positions in ``curve`` (one seed, positive values) of its linear phase: with y
    the log of the curve, y_end the log of its plateau (``plateau``: median of the last 10% of
    rounds) and D = y_0 - y_end its log-decrease, t0 is the first position after which y stays
    below y_0 - ESCAPE_SHARE D (the escape from an initial plateau: the curve has left it for
    good), t1 the first position from t0 on with y <= y_0 - (1 - ESCAPE_SHARE) D (still above
    the noise floor). None when the curve does not decrease (D <= 0) or has fewer than
    MIN_FIT_ROUNDS + 1 values."""
    y = np.log(curve.clip(lower=1e-300).to_numpy(dtype=float))
    if len(y) <= MIN_FIT_ROUNDS:
        return None
    D = y[0] - np.log(max(plateau(curve), 1e-300))
    if not D > 0:
        return None
    above = np.nonzero(y >= y[0] - ESCAPE_SHARE * D)[0]
    t0 = int(above[-1]) + 1 if len(above) else 0
    if t0 >= len(y):
        return None
    hit = np.nonzero(y[t0:] <= y[0] - (1 - ESCAPE_SHARE) * D)[0]
    t1 = t0 + int(hit[0]) if len(hit) else len(y) - 1
    return t0, t1


def seed_rate(curve: pd.Series) -> dict:
    """The linear phase of one seed's curve (``linear_window``), fitted log(curve) ~ a + b t by
    least squares: ``slope`` b (the log-contraction per round; contraction exp(b)), ``decrease``
    the fitted line's log-decrease over the window -b (t1 - t0), ``linearity`` the ratio of the
    slopes fitted on the window's second and first halves (1 for a geometric curve, below 1 for
    a sublinear one, NaN with fewer than 4 rounds in the window), ``r2``, ``t0``, ``t1`` (rounds).
    ``status``: "ok", "diverged" (an infinite value), "flat" (no decrease: slope 0, decrease
    0) or "insufficient" (fewer than MIN_FIT_ROUNDS + 1 rounds in all or in the window)."""
    c = curve.dropna()
    out = {"status": "ok", "slope": np.nan, "decrease": np.nan, "linearity": np.nan, "r2": np.nan,
           "t0": np.nan, "t1": np.nan}
    if np.isinf(c.to_numpy(dtype=float)).any():
        return {**out, "status": "diverged"}
    if len(c) <= MIN_FIT_ROUNDS:
        return {**out, "status": "insufficient"}
    w = linear_window(c)
    if w is None:
        return {**out, "status": "flat", "slope": 0.0, "decrease": 0.0}
    t0, t1 = w
    if t1 - t0 < MIN_FIT_ROUNDS:
        return {**out, "status": "insufficient", "t0": float(c.index[t0]), "t1": float(c.index[t1])}
    t = c.index.to_numpy(dtype=float)[t0:t1 + 1]
    y = np.log(c.clip(lower=1e-300).to_numpy(dtype=float))[t0:t1 + 1]
    b, a = np.polyfit(t, y, 1)
    ss = ((y - y.mean()) ** 2).sum()
    r2 = 1 - ((y - a - b * t) ** 2).sum() / ss if ss > 0 else 1.0
    lin = np.nan
    if len(t) >= 4:
        h = len(t) // 2
        b1, b2 = np.polyfit(t[:h + 1], y[:h + 1], 1)[0], np.polyfit(t[h:], y[h:], 1)[0]
        lin = b2 / b1 if b1 < 0 else np.nan
    return {**out, "slope": float(b), "decrease": float(-b * (t[-1] - t[0])), "linearity": float(lin),
            "r2": float(r2), "t0": float(t[0]), "t1": float(t[-1])}


def race_levels(a: pd.Series, b: pd.Series, n: int) -> np.ndarray:
    """``n`` levels spaced evenly in log strictly between the lower start of two curves and the
    higher of their plateaus P (both curves get there): start (P / start)^(j / (n + 1)), j =
    1..n. If the higher plateau is not below the start (a curve that does not fall below the
    other's start), P is the lower plateau (the other curve never reaches the levels: censored).
    Empty without a finite positive start and plateau below it."""
    start = min(last(a.iloc[:1]), last(b.iloc[:1]))
    if not (a.notna().any() and b.notna().any()):
        return np.array([])
    pa, pb = plateau(a.dropna()), plateau(b.dropna())
    P = max(pa, pb) if max(pa, pb) < start else min(pa, pb)
    if not (np.isfinite(start) and np.isfinite(P) and 0 < P < start):
        return np.array([])
    return start * (P / start) ** (np.arange(1, n + 1) / (n + 1))


def rounds_to_levels(curve: pd.Series, levels) -> tuple[np.ndarray, bool]:
    """(rounds at which ``curve`` first gets to or below each level, whether any level is not
    reached: then that level's round is censored at the last round + 1, a lower bound; +inf,
    never, for a curve that diverged (an infinite value))."""
    c = curve.dropna()
    end = float(c.index[-1]) + 1 if len(c) else np.nan
    if np.isinf(c.to_numpy(dtype=float)).any():
        end = np.inf
    t = np.array([rounds_to(c, lv) for lv in levels], dtype=float)
    censored = bool(np.isnan(t).any())
    return np.where(np.isnan(t), end, t), censored


def log_rounds_ratio(a: pd.Series, b: pd.Series, n: int = 4) -> tuple[float, bool, bool]:
    """How many rounds curve ``a`` needs against ``b`` over the whole descent: the mean over the
    ``race_levels`` of log((1 + rounds of a) / (1 + rounds of b)) (0: as fast; negative: a
    faster), with whether a's and b's rounds were censored (``rounds_to_levels``). NaN without
    levels."""
    levels = race_levels(a, b, n)
    if not len(levels):
        return np.nan, False, False
    ta, ca = rounds_to_levels(a, levels)
    tb, cb = rounds_to_levels(b, levels)
    return float(np.mean(np.log1p(ta) - np.log1p(tb))), ca, cb


def more_rounds(label: str, curve, rounds: int, factor: float) -> str:
    """What would level off a curve still decreasing at its last round (``rounds``)."""
    q, extra = tail_contraction(curve), rounds_to_level_off(curve, factor)
    pace = f"falling {q:.4g}x per round over its last 10% of rounds" if np.isfinite(q) else "still falling"
    if extra == 0:
        return f"{label}: more rounds ({pace}, as fast as in its linear phase: no plateau yet)"
    if np.isfinite(extra):
        return (f"{label}: more rounds ({pace}; at that pace, slowing towards its estimated "
                f"limit, it levels off after about {int(extra)} more rounds, {rounds + int(extra)} in all)")
    return f"{label}: more rounds ({pace}, no limit in sight yet)"

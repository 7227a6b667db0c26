"""The statistics across seeds that the comparative and rate rules share, so that a rule is its
statement plus its statistic.

A rule computes **one number per seed** (``per_seed``), or per seed a comparison of two
methods (``paired``): the runs of an experiment's methods share their draws per seed (the same
mini-batches and participants per seed, round, agent and local step), so seed i of one method
is compared with seed i of the other and the seed-to-seed spread of the problem cancels. Runs
carry their seed as ``table.attrs["seed"]`` (``rfl.reporting.figures.load_runs``); a table
without one is numbered by its position.

The sample gets an **interval** across seeds by a named standard method (``interval``):

- ``"t"``: Student-t interval of the mean, mean +- t_{(1+level)/2, n-1} s / sqrt(n)
  (``scipy.stats.t``); the default, valid from 2 seeds, exact for normal samples;
- ``"bootstrap"``: ``scipy.stats.bootstrap`` (BCa) of the mean with a fixed seeded generator
  (``rng=default_rng(seed)``), from ``BOOTSTRAP_MIN`` seeds on (fewer: the t interval, and the
  interval says so);
- ``"sign"``: the distribution-free interval of the median from order statistics
  [x_(k), x_(n+1-k)], the dual of the exact sign test (``scipy.stats.binomtest``): it excludes
  a value exactly when the two-sided sign test rejects it at 1 - level. With too few seeds to
  reach the level (5 for 95%) it is the whole line: undecided.

A sample of a constant (identical curves, an exact identity) has the interval [c, c].

**Deciding** (``decide``): a claim is a region of the statistic (``Claim``: ``<= high``,
``>= low`` or within both), its bound holding the rule's stated margin. The case holds
(``OK``) when the interval lies inside the region, fails (``FAIL``) only when the interval
lies wholly outside it, and is undecided (``OPEN``) otherwise, or with fewer than
``MIN_SEEDS`` seeds whatever the interval (one seed never refutes a comparison). An open case
says what would decide it: the seeds at which the t interval, at the observed spread and
estimate, would clear the bound (``seeds_needed``). A ratio of positive quantities is judged
on the log scale (``log=True``): the mean log ratio, shown as the geometric-mean ratio.

Every test carries a one-line ``margin`` such as ``"ratio 0.66 [0.55, 0.78], claim <= 1"``;
the rule joins its cases' margins into ``Judgement.margin``, printed on every verdict line.

API (stable): ``MIN_SEEDS``, ``LEVEL``, ``METHODS``, ``seed_of``, ``by_seed``, ``per_seed``,
``paired``, ``Interval``, ``interval``, ``Claim``, ``Test``, ``decide``, ``seeds_needed``,
``judged``, ``margin_line``, ``value_margin`` (the margin of a case judged without a seed
interval: a table's cell, a median curve, a ratio +- z uncertainties, a largest error, a count;
optionally with the same statistic's interval across seeds); per-seed curve statistics:
``log_ratio_of``, ``tail_level``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import pandas as pd
from scipy import stats as sps

from .verdicts import FAIL, OK, OPEN

#: fewest seeds that decide a comparison or a rate, either way
MIN_SEEDS = 3
#: confidence level of every interval
LEVEL = 0.95
#: fewest seeds for a bootstrap interval (fewer: the t interval)
BOOTSTRAP_MIN = 10
#: the interval methods
METHODS = ("t", "bootstrap", "sign")
#: the bootstrap's generator seed (fixed: the same sample gives the same interval)
BOOTSTRAP_SEED = 0


# ---- samples: one number per seed ------------------------------------------------------------
def seed_of(table: pd.DataFrame, default):
    """The seed of a run table (``attrs["seed"]``, set when it is read), else ``default``."""
    s = table.attrs.get("seed")
    return default if s is None else s


def by_seed(runs) -> dict:
    """seed -> run table of one method's runs (one table per seed)."""
    return {seed_of(t, i): t for i, t in enumerate(runs)}


def per_seed(runs, statistic: Callable[[pd.DataFrame], float]) -> pd.Series:
    """``statistic(table)`` of each run, indexed by seed (sorted)."""
    out = {s: float(statistic(t)) for s, t in by_seed(runs).items()}
    return pd.Series(out, dtype=float).sort_index()


def paired(runs_a, runs_b, statistic: Callable[[pd.DataFrame, pd.DataFrame], float]) -> pd.Series:
    """``statistic(table_a, table_b)`` for each seed both methods ran (runs that share their
    draws per seed), indexed by seed (sorted); seeds of only one method are left out."""
    a, b = by_seed(runs_a), by_seed(runs_b)
    common = sorted(set(a) & set(b), key=lambda s: (str(type(s)), s))
    return pd.Series({s: float(statistic(a[s], b[s])) for s in common}, dtype=float)


def curve_of(table: pd.DataFrame, metric: str = "excess_risk") -> pd.Series:
    """One run's ``metric`` by round; +inf from the round a diverged run stopped on."""
    c = table.set_index("round")[metric].astype(float)
    bad = table.loc[table["status"] == "diverged", "round"]
    if len(bad):
        c = c.copy()
        c.loc[c.index >= bad.min()] = np.inf
    return c


def tail_level(table: pd.DataFrame, metric: str = "excess_risk", share: float = 0.1) -> float:
    """A run's level reached: the median of ``metric`` over its last ``share`` of rounds (at
    least 3), as ``rfl.claims.curves.plateau`` of one seed; +inf for a diverged run (its table
    stops at the diverged round, so its last rounds alone would not say so)."""
    if (table["status"] == "diverged").any():
        return math.inf
    c = curve_of(table, metric).dropna()
    if not len(c):
        return np.nan
    n = max(3, int(len(c) * share))
    return float(c.iloc[-n:].median())


def log_ratio_of(statistic: Callable[[pd.DataFrame], float]):
    """The paired statistic log(statistic(a) / statistic(b)) (for ``paired``)."""
    def f(a, b):
        x, y = statistic(a), statistic(b)
        if not (x > 0 and y > 0):
            return np.nan
        if np.isinf(x) or np.isinf(y):
            return math.inf if np.isinf(x) and not np.isinf(y) else (-math.inf if np.isinf(y) and not np.isinf(x) else np.nan)
        return math.log(x / y)
    return f


# ---- intervals ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Interval:
    """An interval across seeds: the ``estimate`` (mean; median for ``sign``), [``low``,
    ``high``] at ``level``, from ``n`` seeds by ``method``; ``spread``: the sample's standard
    deviation (ddof 1; 0 for one value); ``log``: the numbers are logs of a ratio."""

    estimate: float
    low: float
    high: float
    n: int
    method: str
    level: float = LEVEL
    spread: float = 0.0
    log: bool = False

    def shown(self) -> tuple[float, float, float]:
        """(estimate, low, high) in the statistic's own units (exp of logs)."""
        f = np.exp if self.log else (lambda v: v)
        return float(f(self.estimate)), float(f(self.low)), float(f(self.high))

    def text(self) -> str:
        """``"0.66 [0.55, 0.78]"`` (the shown units)."""
        e, lo, hi = self.shown()
        return f"{_num(e)} [{_num(lo)}, {_num(hi)}]"


def _num(v: float) -> str:
    return f"{v:.3g}" if np.isfinite(v) else ("inf" if v > 0 else "-inf" if v < 0 else "nan")


def interval(sample, method: str = "t", level: float = LEVEL, log: bool = False) -> Interval:
    """The interval across seeds of ``sample`` (one number per seed; NaN values left out) by
    ``method`` (``METHODS``, see the module docstring). ``log``: the sample holds log ratios
    (carried to ``Interval.log`` for display). With no value: NaN; with one: that value and the
    whole line; a constant sample: [c, c]."""
    if method not in METHODS:
        raise ValueError(f"interval method {method!r}; allowed: {', '.join(METHODS)}")
    x = np.asarray(pd.Series(sample, dtype=float).dropna(), dtype=float)
    n = len(x)
    if n == 0:
        return Interval(np.nan, np.nan, np.nan, 0, method, level, np.nan, log)
    if np.isinf(x).any():
        # a diverged seed: the mean is infinite on its side; nothing bounds the other side
        est = float(np.mean(x)) if not (np.isposinf(x).any() and np.isneginf(x).any()) else np.nan
        lo = -np.inf if np.isneginf(x).any() else float(np.min(x))
        hi = np.inf if np.isposinf(x).any() else float(np.max(x))
        return Interval(est, lo if n > 1 else -np.inf, hi if n > 1 else np.inf, n, method, level, np.inf, log)
    sd = float(np.std(x, ddof=1)) if n > 1 else 0.0
    if method == "sign":
        return _sign_interval(x, level, log)
    if n == 1:
        return Interval(float(x[0]), -np.inf, np.inf, 1, method, level, 0.0, log)
    mean = float(np.mean(x))
    if np.all(x == x[0]):
        return Interval(float(x[0]), float(x[0]), float(x[0]), n, method, level, 0.0, log)
    if method == "bootstrap" and n >= BOOTSTRAP_MIN:
        res = sps.bootstrap((x,), np.mean, confidence_level=level, method="BCa",
                            rng=np.random.default_rng(BOOTSTRAP_SEED))
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        return Interval(mean, lo, hi, n, "bootstrap", level, sd, log)
    half = float(sps.t.ppf((1 + level) / 2, n - 1)) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n, "t", level, sd, log)


def sign_rank(n: int, level: float) -> int | None:
    """The largest k with P(k <= B <= n - k) >= level for B ~ Binomial(n, 1/2), i.e. the
    order statistics (x_(k), x_(n+1-k)) that cover the median at ``level``; None if even
    (x_(1), x_(n)) does not (1 - 2^(1-n) < level)."""
    best = None
    for k in range(1, n // 2 + 1):
        if 1 - 2 * sps.binom.cdf(k - 1, n, 0.5) >= level:
            best = k
    return best


def _sign_interval(x, level, log) -> Interval:
    n, xs = len(x), np.sort(x)
    sd = float(np.std(x, ddof=1)) if n > 1 else 0.0
    k = sign_rank(n, level)
    med = float(np.median(x))
    if k is None:
        return Interval(med, -np.inf, np.inf, n, "sign", level, sd, log)
    return Interval(med, float(xs[k - 1]), float(xs[n - k]), n, "sign", level, sd, log)


# ---- deciding -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Claim:
    """The region a statistic must lie in for the claim to hold, in the statistic's own units
    (a ratio, not its log): ``low <= statistic <= high``, or with ``strict`` ``low < statistic <
    high`` (an interval touching a bound then does not support the claim, and one that lies on
    the bound refutes it); ``what`` names the statistic ("ratio", "contraction", ...)."""

    what: str
    low: float = -np.inf
    high: float = np.inf
    strict: bool = False

    def text(self) -> str:
        lt, gt = ("<", ">") if self.strict else ("<=", ">=")
        if np.isfinite(self.low) and np.isfinite(self.high):
            return f"claim in {'(' if self.strict else '['}{_num(self.low)}, {_num(self.high)}{')' if self.strict else ']'}"
        if np.isfinite(self.high):
            return f"claim {lt} {_num(self.high)}"
        return f"claim {gt} {_num(self.low)}"

    def bounds(self, log: bool) -> tuple[float, float]:
        """(low, high) on the scale of the sample (logs when ``log``)."""
        if not log:
            return self.low, self.high
        lo = math.log(self.low) if self.low > 0 else -np.inf
        hi = math.log(self.high) if self.high > 0 else (-np.inf if np.isfinite(self.high) else np.inf)
        return lo, hi


@dataclass(frozen=True)
class Test:
    """One case decided from an interval: ``outcome`` (OK, FAIL, OPEN), the ``interval``, the
    ``claim``, the one-line ``margin`` and, when open, ``why`` (what would decide it)."""

    outcome: str
    interval: Interval
    claim: Claim
    margin: str
    why: str | None = None


def seeds_needed(iv: Interval, claim: Claim, limit: int = 100_000) -> int | None:
    """The fewest seeds at which the t interval at the observed spread and estimate would lie
    wholly on one side of the claim's nearest bound; MIN_SEEDS when the spread is 0; None when
    the estimate sits on a bound (no number of seeds decides it at that estimate) or nothing
    is finite."""
    lo, hi = claim.bounds(iv.log)
    e = iv.estimate
    if not np.isfinite(e) or not np.isfinite(iv.spread):
        return None
    d = min(abs(e - b) for b in (lo, hi) if np.isfinite(b))
    if d == 0:
        return None
    if iv.spread == 0:
        return MIN_SEEDS
    q = (1 + iv.level) / 2

    def clears(n):                     # the t half-width at n seeds below d: decreasing in n
        n = np.asarray(n)
        return sps.t.ppf(q, n - 1) * iv.spread / np.sqrt(n) < d

    # the first n in [2, limit] that clears: among the first 64 in one call, else by bisection
    # (t quantiles at 10^5 degrees of freedom cost seconds per report, this ~20 evaluations)
    n = np.arange(2, min(limit, 65) + 1)
    ok = np.nonzero(clears(n))[0]
    if len(ok):
        return max(int(n[ok[0]]), MIN_SEEDS)
    if limit <= 65 or not clears(limit):
        return None
    lo, hi = 65, limit                 # clears(lo) is False, clears(hi) True
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if clears(mid) else (mid, hi)
    return max(hi, MIN_SEEDS)


def decide(iv: Interval, claim: Claim, label: str = "", min_seeds: int = MIN_SEEDS) -> Test:
    """The case a claim makes of an interval (the module docstring): OK inside the claim's
    region, FAIL wholly outside it, OPEN otherwise or with fewer than ``min_seeds`` seeds.
    ``label`` prefixes the margin (e.g. the K)."""
    lo, hi = claim.bounds(iv.log)
    margin = (f"{label}: " if label else "") + f"{claim.what} {iv.text()}, {claim.text()}" + (
        f" ({iv.n} seed{'s' if iv.n != 1 else ''}, {iv.method})")
    where = f"{label}: " if label else ""
    if iv.n == 0:
        return Test(OPEN, iv, claim, margin, f"{where}no seed has a value of the statistic")
    if iv.n < min_seeds:
        return Test(OPEN, iv, claim, margin,
                    f"{where}{iv.n} seed{'s' if iv.n != 1 else ''}; at least {min_seeds} decide it")
    if not (np.isfinite(iv.low) or np.isfinite(iv.high)) and np.isnan(iv.estimate):
        return Test(OPEN, iv, claim, margin, f"{where}no finite statistic")
    inside = lo < iv.low and iv.high < hi if claim.strict else lo <= iv.low and iv.high <= hi
    outside = iv.high <= lo or iv.low >= hi if claim.strict else iv.high < lo or iv.low > hi
    if inside:
        return Test(OK, iv, claim, margin)
    if outside:
        return Test(FAIL, iv, claim, margin)
    n = seeds_needed(iv, claim)
    why = (f"{where}the interval straddles the bound; about {n} seeds at the observed spread "
           f"would decide it" if n else
           f"{where}the interval straddles the bound and its estimate sits on it: more seeds do "
           f"not decide it at this estimate")
    return Test(OPEN, iv, claim, margin, why)


def judged(sample, claim: Claim, label: str = "", method: str = "t", log: bool = False,
           min_seeds: int = MIN_SEEDS) -> Test:
    """``decide(interval(sample, method, log=log), claim, label, min_seeds)``."""
    return decide(interval(sample, method, log=log), claim, label, min_seeds)


def value_margin(what: str, value: float, claim: Claim, uncertainty: float | None = None,
                 z: float = 1.0, label: str = "", iv: Interval | None = None) -> str:
    """The margin of a case judged without a seed interval: ``"label: what v [v - z u,
    v + z u], claim ..."`` with its uncertainty ``u`` (``z`` of them on each side), or ``"what
    v, claim ..."`` without one (a table's cell, a median curve, a count, a largest error);
    with ``iv`` (the same statistic per seed) also ``"per seed 0.4 [0.38, 0.42] (3 seeds, t)"``
    before the claim."""
    head = f"{label}: " if label else ""
    body = f"{what} {_num(value)}"
    if uncertainty is not None:
        body += f" [{_num(value - z * uncertainty)}, {_num(value + z * uncertainty)}]"
    if iv is not None and iv.n > 0:
        body += f", per seed {iv.text()} ({iv.n} seed{'s' if iv.n != 1 else ''}, {iv.method})"
    return f"{head}{body}, {claim.text()}"


def margin_line(tests) -> str | None:
    """The margins of a claim's tests on one line ("; "-joined), None without a test; a test
    may be a ``Test`` or its margin string (``value_margin``)."""
    parts = [t if isinstance(t, str) else t.margin for t in tests if t is not None]
    return "; ".join(parts) if parts else None


def with_outcome(test: Test, outcome: str, why: str | None = None) -> Test:
    """``test`` with another outcome (a rule's own condition, e.g. a curve not levelled off)."""
    return replace(test, outcome=outcome, why=why)


__all__ = ["MIN_SEEDS", "LEVEL", "METHODS", "BOOTSTRAP_MIN", "seed_of", "by_seed", "per_seed",
           "paired", "curve_of", "tail_level", "log_ratio_of", "Interval", "interval",
           "sign_rank", "Claim", "Test", "seeds_needed", "decide", "judged", "margin_line",
           "value_margin", "with_outcome"]

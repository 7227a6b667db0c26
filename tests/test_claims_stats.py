"""The shared statistics of the claim rules (``rfl.claims.stats``): intervals across seeds by
named methods checked against scipy's closed forms and the exact sign test, the decision on
both sides of a bound, the seed rule (fewer than 3 seeds decide nothing), pairing by seed."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from rfl.claims import stats as S
from rfl.claims.verdicts import FAIL, OK, OPEN


def _table(values, seed=None):
    t = pd.DataFrame({"round": np.arange(len(values)), "excess_risk": np.asarray(values, float),
                      "status": "ok"})
    if seed is not None:
        t.attrs["seed"] = seed
    return t


X = np.array([0.3, -0.1, 0.7, 0.2, 0.45, 0.05, 0.6])


def test_t_interval_is_scipys_one_sample_t_confidence_interval():
    iv = S.interval(X, "t")
    ci = sps.ttest_1samp(X, 0.0).confidence_interval(0.95)
    assert (iv.low, iv.high) == pytest.approx((ci.low, ci.high), rel=1e-12)
    assert iv.estimate == pytest.approx(X.mean()) and iv.n == len(X) and iv.method == "t"


def test_sign_interval_excludes_a_value_exactly_when_the_exact_sign_test_rejects_it():
    rng = np.random.default_rng(1)
    for n in (5, 6, 9, 14):
        x = rng.normal(size=n)
        iv = S.interval(x, "sign")
        xs = np.sort(x)
        # probe between and beyond the order statistics (never on a value: no ties)
        probes = np.concatenate([[xs[0] - 1], (xs[1:] + xs[:-1]) / 2, [xs[-1] + 1]])
        for v in probes:
            above = int((x > v).sum())
            p = sps.binomtest(above, n, 0.5).pvalue
            assert (not iv.low <= v <= iv.high) == (p <= 0.05), (n, v, p)


def test_sign_interval_with_too_few_seeds_for_the_level_is_the_whole_line():
    assert S.sign_rank(4, 0.95) is None and S.sign_rank(6, 0.95) == 1   # 1 - 2/2^6 = 0.969
    iv = S.interval([1.0, 2.0, 3.0, 4.0], "sign")
    assert iv.low == -np.inf and iv.high == np.inf


def test_bootstrap_is_seeded_and_needs_enough_seeds():
    x = np.random.default_rng(3).normal(size=12)
    a, b = S.interval(x, "bootstrap"), S.interval(x, "bootstrap")
    assert (a.low, a.high) == (b.low, b.high) and a.method == "bootstrap"
    assert a.low < x.mean() < a.high
    assert S.interval(x[:5], "bootstrap").method == "t"      # too few seeds for a bootstrap
    with pytest.raises(ValueError, match="allowed: t, bootstrap, sign"):
        S.interval(x, "wald")


@pytest.mark.parametrize("method", S.METHODS)
def test_identical_per_seed_curves_give_a_ratio_interval_of_exactly_one(method):
    runs = [_table(0.5 ** np.arange(30) * (1 + s), seed=s) for s in range(6)]
    sample = S.paired(runs, [t.copy() for t in runs], S.log_ratio_of(S.tail_level))
    iv = S.interval(sample, method, log=True)
    assert iv.shown() == (1.0, 1.0, 1.0)
    t = S.decide(iv, S.Claim("ratio", high=1.0))
    assert t.outcome == OK and t.margin.startswith("ratio 1 [1, 1], claim <= 1")


def test_pairs_by_seed_not_by_position():
    a = [_table([4.0, 2.0, 1.0 + s], seed=s) for s in (0, 1, 2)]
    b = [_table([4.0, 2.0, 1.0 + s], seed=s) for s in (2, 0, 1)]   # listed in another order
    d = S.paired(a, b, lambda x, y: x["excess_risk"].iloc[-1] - y["excess_risk"].iloc[-1])
    assert list(d.index) == [0, 1, 2] and list(d) == [0.0, 0.0, 0.0]
    assert list(S.paired(a, b[:1], lambda x, y: 0.0).index) == [2]       # seeds of both only


@pytest.mark.parametrize("n", [1, 2])
def test_fewer_than_three_seeds_never_decide_even_far_from_the_bound(n):
    t = S.judged([5.0, 5.1][:n], S.Claim("difference", high=0.0))
    assert t.outcome == OPEN and f"{n} seed" in t.why and "at least 3" in t.why


@pytest.mark.parametrize("shift, want", [(-1.0, OK), (1.0, FAIL), (0.0, OPEN)])
def test_decision_on_both_sides_of_the_bound(shift, want):
    x = np.array([-0.1, 0.0, 0.1]) + shift          # t half-width 0.248
    t = S.judged(x, S.Claim("difference", high=0.0))
    assert t.outcome == want
    if want == OPEN:
        assert "sits on it" in t.why                 # the estimate is the bound itself


def test_decision_at_the_interval_edge():
    x = np.array([-0.1, 0.0, 0.1])
    half = sps.t.ppf(0.975, 2) * 0.1 / math.sqrt(3)
    assert S.judged(x - half - 1e-9, S.Claim("d", high=0.0)).outcome == OK
    assert S.judged(x - half + 1e-9, S.Claim("d", high=0.0)).outcome == OPEN
    assert S.judged(x + half + 1e-9, S.Claim("d", high=0.0)).outcome == FAIL
    assert S.judged(x + half - 1e-9, S.Claim("d", high=0.0)).outcome == OPEN


def test_two_sided_claim_and_log_scale():
    # log ratios around log 1.5: inside [1/2, 2] when tight, outside when the ratio is 3
    t = S.judged(np.log([1.45, 1.5, 1.55]), S.Claim("ratio", 0.5, 2.0), log=True)
    assert t.outcome == OK and "claim in [0.5, 2]" in t.margin
    assert S.judged(np.log([2.9, 3.0, 3.1]), S.Claim("ratio", 0.5, 2.0), log=True).outcome == FAIL
    assert S.judged(np.log([0.3, 0.33, 0.36]), S.Claim("ratio", 0.5, 2.0), log=True).outcome == FAIL


def test_seeds_needed_is_the_first_n_whose_t_half_width_clears_the_bound():
    x = np.array([0.2, -0.3, 0.5, 0.1])               # mean 0.125, straddles 0 at 4 seeds
    iv = S.interval(x)
    n = S.seeds_needed(iv, S.Claim("d", low=0.0))
    s, d = x.std(ddof=1), x.mean()
    assert sps.t.ppf(0.975, n - 1) * s / math.sqrt(n) < d <= sps.t.ppf(0.975, n - 2) * s / math.sqrt(n - 1)
    t = S.decide(iv, S.Claim("d", low=0.0))
    assert t.outcome == OPEN and f"about {n} seeds" in t.why


def _seeds_needed_by_scan(iv, claim, limit):
    """The oracle: every n in [2, limit] tried, the first whose t half-width clears the bound."""
    lo, hi = claim.bounds(iv.log)
    d = min(abs(iv.estimate - b) for b in (lo, hi) if np.isfinite(b))
    n = np.arange(2, limit + 1)
    ok = np.nonzero(sps.t.ppf((1 + iv.level) / 2, n - 1) * iv.spread / np.sqrt(n) < d)[0]
    return max(int(n[ok[0]]), S.MIN_SEEDS) if len(ok) else None


@pytest.mark.parametrize("gap", [0.5, 0.1, 0.03, 0.01, 0.004, 0.0015, 1e-4])
@pytest.mark.parametrize("limit", [40, 65, 66, 3000])
def test_seeds_needed_matches_a_scan_of_every_n(gap, limit):
    # from a few seeds (the first 64 n) to thousands (the bisection) and past the limit (None)
    x = np.array([0.3, -0.2, 0.25, 0.05]) + gap - 0.1                 # spread ~0.23
    iv = S.interval(x)
    claim = S.Claim("d", low=0.0) if iv.estimate > 0 else S.Claim("d", high=0.0)
    assert S.seeds_needed(iv, claim, limit=limit) == _seeds_needed_by_scan(iv, claim, limit)


def test_a_diverged_seed_makes_the_interval_unbounded_on_its_side():
    iv = S.interval([0.1, 0.2, np.inf])
    assert iv.high == np.inf and iv.low == 0.1
    assert S.decide(iv, S.Claim("d", high=1.0)).outcome == OPEN
    assert S.decide(iv, S.Claim("d", high=0.05)).outcome == FAIL     # every seed above it


def test_margin_line_joins_the_cases():
    a = S.judged([1.0, 1.0, 1.0], S.Claim("x", high=2.0), "K = 1")
    assert S.margin_line([a, a]) == "; ".join([a.margin] * 2) and S.margin_line([]) is None
    assert a.margin == "K = 1: x 1 [1, 1], claim <= 2 (3 seeds, t)"


def test_a_strict_claim_is_refuted_by_an_interval_on_its_bound():
    assert S.judged([1.0, 1.0, 1.0], S.Claim("r", high=1.0)).outcome == OK
    t = S.judged([1.0, 1.0, 1.0], S.Claim("r", high=1.0, strict=True))
    assert t.outcome == FAIL and "claim < 1" in t.margin
    assert S.judged([0.9, 0.95, 1.0], S.Claim("r", high=1.0, strict=True)).outcome == OPEN
    assert S.judged([0.9, 0.92, 0.94], S.Claim("r", high=1.0, strict=True)).outcome == OK


def test_no_value_is_open_and_says_so():
    t = S.judged([np.nan, np.nan, np.nan], S.Claim("r", high=1.0), "K = 1")
    assert t.outcome == OPEN and t.why == "K = 1: no seed has a value of the statistic"


def test_tail_level_of_a_run_that_diverged_is_infinite():
    """A run stops at the round it diverged on (one infinite value among its last rounds): its
    level is +inf, not the median of the finite rounds before; the same curve with status ok
    has the median of its last 3 values."""
    c = 0.5 ** np.arange(10)
    t = _table(c, seed=0)
    assert S.tail_level(t) == pytest.approx(np.median(c[-3:]), rel=1e-15)
    t.loc[t.index[-1], "status"] = "diverged"
    assert S.tail_level(t) == math.inf

"""The rules that judge the claims of Figures 1 and 2 (``rfl.claims.rules``) and the curve
statistics they share (``rfl.claims.curves``).

Every input is made here with a known answer: excess risks that are exactly r^t (with or
without a floor), decaying runs a known factor below or above the fixed ones, RFedAvg a known
factor from RFedAGS. Each rule is checked on both sides of each of its thresholds, on runs
that diverged or are too short, and on its undecided side (a curve still going down at its
last round), where the rounds that would decide it are checked against their closed form.
The rules read run files in the runner's format (``rfl.testing.run_files``) through
``Evidence``, as ``rfl reproduction`` does.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rfl.claims import curves as C
from rfl.claims.rule import Evidence
from rfl.claims.rules.decaying_more_accurate import compare
from rfl.claims.rules.larger_k_faster import halves
from rfl.claims.rules.linear_rate import rounds_to_decide, still_decreasing
from rfl.claims.verdicts import FAIL, NOT, OK, OPEN, PARTLY, REPRODUCED, UNDECIDED
from rfl.registry import RULES
from rfl.testing.run_files import write_run


def geometric(r, T, floor=0.0, start=1.0):
    return start * r ** np.arange(T + 1.0) + floor


def write_curve(root, exp, values, *, name="rfedags", K=1, seed=0, diverge_at=None, participation=None):
    """A run table of excess risk ``values`` (rounds 0..len-1); with ``diverge_at`` it stops
    there as the runner stops a run: a last row of status "diverged" without a value."""
    values = np.asarray(values, float)
    status = np.array(["ok"] * len(values), dtype=object)
    if diverge_at is not None:
        values, status = values[:diverge_at + 1].copy(), status[:diverge_at + 1]
        values[diverge_at], status[diverge_at] = np.nan, "diverged"
    part = "" if participation is None else f"_s{participation}"
    path = root / "runs" / exp / f"{name}_K{K}{part}_seed{seed}.csv"
    write_run(path, {"round": np.arange(len(values)), "excess_risk": values, "status": status},
              {"experiment": exp, "run_id": path.stem, "seed": seed,
               "algorithm": {"name": name, "K": K, "batch_size": 1, "participation": participation}})
    return str(path)


def runs_of(root, exp, by_k: dict, name="rfedags", **kw) -> list[str]:
    """{K: [curve per seed, or (curve, diverge_at)]} written as run files."""
    out = []
    for K, seeds in by_k.items():
        for seed, item in enumerate(seeds):
            curve, div = item if isinstance(item, tuple) else (item, None)
            out.append(write_curve(root, exp, curve, name=name, K=K, seed=seed, diverge_at=div, **kw))
    return out


def judge(rule: str, runs: dict, experiments, **params):
    """The rule's judgement of ``runs`` ({experiment: paths}) with its defaults and ``params``."""
    spec = {"config": {"experiments": {e: {} for e in runs}}, "runs": runs, "tables": {}}
    r = RULES[rule]()
    return r.judge(Evidence(spec, experiments), {**r.defaults(), **params})


# ---- curve statistics -------------------------------------------------------------------------
def test_linear_phase_of_an_exact_geometric_curve():
    r, T = 0.5, 30
    fit = C.linear_phase(pd.Series(geometric(r, T)))
    assert fit["status"] == "ok"
    assert fit["rate"] == pytest.approx(r, rel=1e-12) and fit["r2"] == pytest.approx(1.0, abs=1e-12)
    # 90% of the total log-decrease (30 log 2) is first made at t = 27
    assert fit["rounds"] == 27 and fit["decrease"] == pytest.approx(2.0 ** 27, rel=1e-9)
    assert fit["start"] == 1.0


def test_linear_phase_stops_where_the_curve_levels_off():
    """max(r^t, r^20): linear until 20, then flat; 90% of the decrease is made at t = 18."""
    r = 0.7
    fit = C.linear_phase(pd.Series(np.maximum(geometric(r, 60), r ** 20)))
    assert fit["rounds"] == 18
    assert fit["rate"] == pytest.approx(r, rel=1e-10) and fit["r2"] == pytest.approx(1.0, abs=1e-10)
    assert fit["decrease"] == pytest.approx(r ** -18, rel=1e-10)
    assert fit["plateau"] == pytest.approx(r ** 20, rel=1e-12)


def test_plateau_is_the_median_of_the_last_tenth():
    assert C.plateau(pd.Series(np.r_[np.full(90, 5.0), np.arange(10.0)])) == 4.5
    assert C.plateau(pd.Series([9.0, 1.0, 2.0, 3.0])) == 2.0         # at least three rounds
    assert C.plateau(pd.Series(np.r_[np.full(28, 7.0), [1.0, 2.0]])) == 2.0


@pytest.mark.parametrize("L", [0.5, 5.0])
def test_linear_phase_of_a_step(L):
    """log c = 0, 0, 0, -L, ...: the fit covers t = 0..3 and R^2 is the squared correlation of
    (0, 1, 2, 3) with (0, 0, 0, -1) = 0.6."""
    fit = C.linear_phase(pd.Series(np.exp(np.r_[0.0, 0.0, 0.0, np.full(20, -L)])))
    assert fit["rounds"] == 3 and fit["decrease"] == pytest.approx(np.exp(L))
    assert fit["r2"] == pytest.approx(np.corrcoef([0, 1, 2, 3], [0, 0, 0, -1])[0, 1] ** 2)


def test_linear_phase_window_where_90_percent_is_not_a_whole_round():
    fit = C.linear_phase(pd.Series(geometric(0.5, 25)))       # 22.5 halvings: first at t = 23
    assert fit["rounds"] == 23 and fit["decrease"] == pytest.approx(2.0 ** 23)


def test_linear_phase_of_a_curve_that_reaches_zero():
    fit = C.linear_phase(pd.Series([1.0, 0.1, 0.01, 0.0, 0.0, 0.0]))
    assert fit["status"] == "ok" and np.isfinite(fit["rate"]) and np.isfinite(fit["r2"])
    assert fit["rounds"] == 3 and fit["decrease"] == pytest.approx(1e300)


@pytest.mark.parametrize("curve", [np.ones(20), 1.0 + 0.01 * np.arange(20.0)])
def test_linear_phase_of_a_flat_or_rising_curve(curve):
    fit = C.linear_phase(pd.Series(curve))
    assert fit["status"] == "ok" and fit["rate"] >= 1 and fit["rounds"] == 19


def test_linear_phase_skips_rounds_without_a_value():
    values = geometric(0.5, 20)
    values[5] = np.nan
    fit = C.linear_phase(pd.Series(values))
    assert fit["rate"] == pytest.approx(0.5, rel=1e-12) and fit["r2"] == pytest.approx(1.0)


@pytest.mark.parametrize("values, status", [
    ([1.0], "insufficient"), ([1.0, 0.5], "insufficient"), ([np.nan] * 3, "insufficient"),
    ([1.0, np.inf], "diverged"), ([1.0, 0.5, 0.25, np.inf], "diverged")])
def test_linear_phase_without_enough_rounds_or_after_divergence(values, status):
    fit = C.linear_phase(pd.Series(values))
    assert fit["status"] == status and np.isnan(fit["rate"])
    if status == "diverged":
        assert fit["diverged_at"] == len(values) - 1


def _table(values, diverge_at=None):
    return pd.DataFrame([{"round": t, "excess_risk": v if diverge_at is None or t < diverge_at else np.nan,
                          "status": "ok" if diverge_at is None or t < diverge_at else "diverged"}
                         for t, v in enumerate(values) if diverge_at is None or t <= diverge_at])


def test_a_diverged_seed_counts_as_infinite_in_the_median():
    a, b, c = geometric(0.3, 10), geometric(0.5, 10), geometric(0.9, 10)
    one = C.median_curve([_table(a, diverge_at=4), _table(b), _table(c)])
    assert np.allclose(one.values[:4], b[:4]) and np.allclose(one.values[4:], c[4:])
    assert C.diverged_at(one) is None
    two = C.median_curve([_table(a, diverge_at=4), _table(b, diverge_at=6), _table(c)])
    assert C.diverged_at(two) == 6 and np.isfinite(two.values[:6]).all()
    assert np.allclose(C.median_curve([_table(a), _table(b), _table(c)]).values, b)


def test_rounds_to_and_max_log_ratio():
    c = pd.Series([1.0, 0.5, 0.25, 0.125])
    assert C.rounds_to(c, 0.25) == 2 and C.rounds_to(c, 0.3) == 2 and np.isnan(C.rounds_to(c, 0.1))
    a = pd.Series([1.0, 2.0, 4.0])
    assert C.max_log_ratio(a, a * 2) == pytest.approx(np.log(2))
    assert C.max_log_ratio(a, pd.Series([1.0, 2.0, 12.0])) == pytest.approx(np.log(3))
    assert C.max_log_ratio(a, pd.Series([1.0, np.inf, np.inf])) == np.inf      # one diverged
    assert C.max_log_ratio(pd.Series([1.0, np.inf]), pd.Series([1.5, np.inf])) == pytest.approx(np.log(1.5))
    assert np.isnan(C.max_log_ratio(pd.Series([np.nan]), pd.Series([1.0])))


# ---- linear_rate (Theorem 4.3) ----------------------------------------------------------------
def seeds(curve, n=3):
    """``n`` seeds of one curve (identical: the per-seed statistic has no spread)."""
    return [curve] * n


def test_seed_rate_of_an_exact_geometric_curve():
    """r^t, t = 0..60, r = 1/2: the plateau (median of the last 6 values) is r^57.5, D = 57.5 log 2;
    the phase runs from the first round below r^5.75 (t = 6) to the first at or below r^51.75 (52)."""
    f = C.seed_rate(pd.Series(geometric(0.5, 60)))
    assert f["status"] == "ok" and (f["t0"], f["t1"]) == (6.0, 52.0)
    assert f["slope"] == pytest.approx(math.log(0.5), rel=1e-12)
    assert f["decrease"] == pytest.approx(46 * math.log(2), rel=1e-12)
    assert f["linearity"] == pytest.approx(1.0, rel=1e-12) and f["r2"] == pytest.approx(1.0)


def test_seed_rate_starts_after_an_initial_plateau():
    """20 rounds at 1, then 0.8^t: the phase starts after the plateau, and its slope is log 0.8."""
    curve = np.r_[np.ones(20), geometric(0.8, 80)]
    f = C.seed_rate(pd.Series(curve))
    assert f["t0"] > 20 and f["slope"] == pytest.approx(math.log(0.8), rel=1e-9)
    assert C.linear_phase(pd.Series(curve))["rate"] > 0.81    # one fit from round 0 is biased by the plateau


@pytest.mark.parametrize("curve, status", [(np.ones(30), "flat"), (1.0 + 0.01 * np.arange(30.0), "flat"),
                                           (geometric(0.5, 1), "insufficient")])
def test_seed_rate_of_a_flat_rising_or_short_curve(curve, status):
    assert C.seed_rate(pd.Series(curve))["status"] == status


def test_linear_rate_reproduced_partly_and_not(tmp_path):
    """0.8^t and 0.5^t with floors, 3 seeds each: both K hold; a K whose runs all diverge at round 1
    fails (named); every K diverged: not reproduced."""
    f1, f2 = geometric(0.8, 60, floor=1e-4), geometric(0.5, 60, floor=1e-6)
    j = judge("linear_rate", {"p": runs_of(tmp_path, "p", {1: seeds(f1), 2: seeds(f2)})}, ["p"])
    assert j.verdict == REPRODUCED and j.decide is None and j.notes == []
    fit = C.seed_rate(pd.Series(f2))
    row = j.rows[1]
    assert row["K"] == "2" and row["seeds"] == "3" and row["F(x_1)-F*"] == pytest.approx(1 + 1e-6)
    assert row["contraction/round"] == pytest.approx(math.exp(fit["slope"]))
    assert row["escape round (median)"] == f"{fit['t0']:g}" and row["fit ends (median)"] == f"{fit['t1']:g}"
    assert "K = 2: decrease " in j.margin and "claim >= 2 (3 seeds, t)" in j.margin
    j = judge("linear_rate", {"q": runs_of(tmp_path, "q", {1: seeds(f1), 2: seeds((f2, 1))})}, ["q"])
    assert j.verdict == PARTLY
    assert "- K = 2: fails: the run diverged at round 1 (median over seeds)." in j.notes
    j = judge("linear_rate", {"d": runs_of(tmp_path, "d", {1: seeds((f1, 1)), 2: seeds((f2, 3))})}, ["d"])
    assert j.verdict == NOT


def test_an_initial_plateau_followed_by_a_geometric_decay_is_a_linear_rate(tmp_path):
    curves = [np.r_[np.full(10 + 5 * s, 1.0), geometric(0.8, 80, floor=1e-6)] for s in range(3)]
    j = judge("linear_rate", {"p": runs_of(tmp_path, "p", {1: curves})}, ["p"])
    assert j.verdict == REPRODUCED
    assert j.rows[0]["contraction/round"] == pytest.approx(0.8, rel=0.01)     # the floor bends it a little


def test_linear_rate_one_diverged_seed_of_four_is_a_note(tmp_path):
    f = geometric(0.5, 40, floor=1e-6)
    j = judge("linear_rate", {"p": runs_of(tmp_path, "p", {1: [f, f, f, (f, 30)]})}, ["p"])
    assert j.verdict == REPRODUCED
    assert j.notes[0].startswith("- K = 1: 1 of 4 seeds diverged (first at round 30); left out")
    j = judge("linear_rate", {"q": runs_of(tmp_path, "q", {1: [f, (f, 20), (f, 30)]})}, ["q"])
    assert j.verdict == NOT                                   # two of three: the median diverges


@pytest.mark.parametrize("curve", [
    1.0 / (1.0 + np.arange(100.0)),                                    # sublinear: slope flattens
    np.maximum(geometric(0.99, 80), 0.99 ** 40) + 0 * np.arange(81),   # levelled after 1.5x
    np.ones(30)])
def test_linear_rate_fails_a_curve_that_is_not_linear_or_levelled_too_early(tmp_path, curve):
    j = judge("linear_rate", {"p": runs_of(tmp_path, "p", {1: seeds(curve)})}, ["p"])
    assert j.verdict == NOT and j.decide is None


@pytest.mark.parametrize("n", [1, 2])
def test_linear_rate_never_fails_on_fewer_than_three_seeds(tmp_path, n):
    j = judge("linear_rate", {"p": runs_of(tmp_path, "p", {1: seeds(np.ones(30), n)})}, ["p"])
    assert j.verdict == UNDECIDED and f"{n} seed" in j.decide and "at least 3" in j.decide


def test_linear_rate_linearity_threshold_on_both_sides(tmp_path):
    curve = 1.0 / (1.0 + np.arange(100.0))
    lin = C.seed_rate(pd.Series(curve))["linearity"]
    paths = {"p": runs_of(tmp_path, "p", {1: seeds(curve)})}
    assert judge("linear_rate", paths, ["p"], linearity=lin * (1 - 1e-9)).verdict == REPRODUCED
    assert judge("linear_rate", paths, ["p"], linearity=lin * (1 + 1e-9)).verdict == NOT


def test_linear_rate_min_decrease_on_both_sides(tmp_path):
    curve = geometric(0.9, 200, floor=1e-3)                 # levelled off: a failure is final
    dec = math.exp(C.seed_rate(pd.Series(curve))["decrease"])
    paths = {"p": runs_of(tmp_path, "p", {1: seeds(curve)})}
    assert judge("linear_rate", paths, ["p"], min_decrease=dec * (1 - 1e-9)).verdict == REPRODUCED
    assert judge("linear_rate", paths, ["p"], min_decrease=dec * (1 + 1e-9)).verdict == NOT   # levelled


@pytest.mark.parametrize("T", [0, 1])
def test_linear_rate_too_few_rounds_is_undecided(tmp_path, T):
    j = judge("linear_rate", {"p": runs_of(tmp_path, "p", {1: seeds(geometric(0.5, T))})}, ["p"])
    assert j.verdict == UNDECIDED
    assert "- K = 1: undecided: fewer than 3 recorded rounds." in j.notes
    assert j.decide == "K = 1: fewer than 3 recorded rounds"


@pytest.mark.parametrize("r", [0.99, 0.95, 0.9])
def test_linear_rate_a_curve_still_decreasing_is_undecided_with_the_rounds_that_decide_it(tmp_path, r):
    """Excess risk exactly r^t: the phase leaves out the first and last 10% of the log-decrease,
    so a 2x decrease over it needs more than n = log 2 / -log r rounds and, with the plateau
    window, less than 1.5 n + 10. One round fewer than the rule's number: undecided, and the
    decide text names it; that many rounds: reproduced."""
    T = rounds_to_decide(r, 2.0)
    n = math.log(2) / -math.log(r)
    assert n < T < 1.5 * n + 10
    short = judge("linear_rate", {"p": runs_of(tmp_path, "p", {3: seeds(geometric(r, T - 1))})}, ["p"])
    assert short.verdict == UNDECIDED
    assert f"about {T} rounds would decide it" in short.decide
    assert short.decide.startswith("K = 3: still decreasing at its last round")
    full = judge("linear_rate", {"q": runs_of(tmp_path, "q", {3: seeds(geometric(r, T))})}, ["q"])
    assert full.verdict == REPRODUCED and full.decide is None


def test_still_decreasing_separates_a_geometric_curve_from_a_levelled_one():
    assert still_decreasing(pd.Series(geometric(0.99, 200)), 0.99)
    assert not still_decreasing(pd.Series(np.maximum(geometric(0.9, 200), 1e-3)), 0.9)
    assert still_decreasing(pd.Series([1.0, 0.9, 0.81, 0.73]), 0.9)       # too short to tell


def test_linear_rate_reads_only_its_algorithm_with_every_agent(tmp_path):
    f = geometric(0.5, 30)
    runs = {"p": runs_of(tmp_path, "p", {2: seeds(f)}, participation=3)
            + runs_of(tmp_path, "p", {2: seeds(f)}, name="rfedavg")}
    j = judge("linear_rate", runs, ["p"])
    assert j.verdict == UNDECIDED and j.rows == []            # no case
    assert judge("linear_rate", runs, ["p"], algorithm="rfedavg").verdict == REPRODUCED


# ---- decaying_more_accurate (Theorem 4.4) -----------------------------------------------------
def _decaying(tmp_path, fixed: dict, dec: dict, n=3, **params):
    """Each K's one curve written as ``n`` seeds (identical: no spread), of the fixed and the
    decaying experiment."""
    fixed, dec = ({K: v * n if len(v) == 1 else v for K, v in d.items()} for d in (fixed, dec))
    runs = {"f": runs_of(tmp_path, "f", fixed), "d": runs_of(tmp_path, "d", dec)}
    return judge("decaying_more_accurate", runs, {"fixed": "f", "decaying": "d"}, **params)


@pytest.mark.parametrize("factor, want", [(0.5, REPRODUCED), (0.999, REPRODUCED), (1.0, NOT),
                                          (1.001, NOT), (3.0, NOT)])
def test_decaying_by_a_known_factor(tmp_path, factor, want):
    """Decaying curve = factor x a levelled fixed curve: more accurate iff factor < 1."""
    f = geometric(0.6, 30, floor=1e-3)
    j = _decaying(tmp_path, {1: [f], 2: [f]}, {1: [factor * f], 2: [factor * f]})
    assert j.verdict == want and j.decide is None
    assert j.rows[0]["ratio (dec/fixed)"] == pytest.approx(factor)


def test_decaying_above_but_still_decreasing_is_undecided(tmp_path):
    """Fixed levelled at 1e-3; decaying 0.9^t over 40 rounds ends at 0.9^40 = 0.015, still
    falling 0.9^-4 = 1.5x between the last two windows of 4 rounds."""
    f = geometric(0.6, 40, floor=1e-3)
    j = _decaying(tmp_path, {1: [f], 2: [f]}, {1: [geometric(0.9, 40)], 2: [f / 2]})
    assert j.verdict == UNDECIDED
    assert j.decide == "K = 1: more rounds of the decaying run"
    assert ("- K = 1: undecided: the decaying run ends above the fixed one but is still decreasing "
            "at its last round.") in j.notes
    # the same decaying run with a K that fails: partly, and still says what would decide it
    j = _decaying(tmp_path / "b", {1: [f], 2: [f]}, {1: [geometric(0.9, 40)], 2: [2 * f]})
    assert j.verdict == NOT and j.decide is None


def test_decaying_diverged_runs(tmp_path):
    f = geometric(0.5, 20, floor=1e-3)
    j = _decaying(tmp_path, {1: [f], 2: [f]}, {1: [(f, 5)], 2: [f / 4]})
    assert j.verdict == PARTLY
    assert "- K = 1: fails: the decaying-step run diverged at round 5." in j.notes
    j = _decaying(tmp_path / "b", {1: [(f, 1)], 2: [(f, 3)]}, {1: [f], 2: [f]})
    assert j.verdict == UNDECIDED
    assert j.decide == "K = 1: a fixed-step run that does not diverge; K = 2: a fixed-step run that does not diverge"


@pytest.mark.parametrize("n", [1, 2])
def test_decaying_never_refuted_by_fewer_than_three_seeds(tmp_path, n):
    f = geometric(0.6, 30, floor=1e-3)
    j = _decaying(tmp_path, {1: [f]}, {1: [3 * f]}, n=n)
    assert j.verdict == UNDECIDED and "at least 3" in j.decide


def test_decaying_pairs_the_seeds_of_the_two_experiments(tmp_path):
    """Seed s levels at 1e-3 x 4^s with a fixed step and at 0.8 x that with a decaying one: the
    seeds' levels overlap across the two, paired each is 0.8: reproduced, ratio interval [0.8, 0.8]."""
    fixed = [geometric(0.6, 30, floor=1e-3 * 4 ** s) for s in range(3)]
    j = _decaying(tmp_path, {1: fixed}, {1: [0.8 * f for f in fixed]})
    assert j.verdict == REPRODUCED and j.rows[0]["interval"] == "[0.8, 0.8]"


def test_decaying_compares_last_rounds_of_different_lengths():
    fixed, dec = pd.Series(geometric(0.5, 20, floor=0.01)), pd.Series(geometric(0.85, 40))
    assert compare(fixed, dec, "last")[0] == OK                  # 0.85^40 = 0.0015 < 0.01
    assert compare(dec, fixed, "last")[0] == FAIL                # swapped; levelled at 0.01
    assert compare(pd.Series([1.0, np.nan]), pd.Series([np.nan, np.nan]), "last")[:2] == (
        OPEN, "no value at the last round")


def test_decaying_statistic_last_or_plateau(tmp_path):
    """A decaying run levelled at 2e-2 whose last round dips to 5e-3, against a fixed run at
    1e-2: below at the last round, above over the last 10%."""
    f, d = np.full(40, 1e-2), np.r_[np.full(39, 2e-2), 5e-3]
    assert _decaying(tmp_path, {1: [f]}, {1: [d]}).verdict == REPRODUCED
    assert _decaying(tmp_path / "b", {1: [f]}, {1: [d]}, statistic="plateau").verdict == NOT


# ---- larger_k_faster (Figure 1) ---------------------------------------------------------------
@pytest.mark.parametrize("outcomes, point, want", [
    ([], True, UNDECIDED), ([FAIL], True, NOT), ([OPEN, FAIL], True, UNDECIDED),
    ([OK], True, PARTLY), ([OK, OK], True, PARTLY), ([OK, FAIL], True, REPRODUCED),
    ([OK, OK, FAIL], True, REPRODUCED), ([OK, OPEN], True, UNDECIDED), ([OK, OPEN, FAIL], True, REPRODUCED),
    ([OK, OK], False, REPRODUCED), ([FAIL, OK], False, NOT)])
def test_larger_k_faster_both_halves(outcomes, point, want):
    assert halves(outcomes, point)[0] == want


def _ks(tmp_path, rates, n=3, floor=1e-8, **params):
    """K = 1, 2, 4, ... at the given contraction per round (each floored), ``n`` seeds."""
    by_k = {2 ** i: [geometric(q, 120, floor)] * n for i, q in enumerate(rates)}
    return judge("larger_k_faster", {"k": runs_of(tmp_path, "k", by_k)}, ["k"], **params)


@pytest.mark.parametrize("rates, want", [
    ((0.9, 0.5, 0.3, 0.3), REPRODUCED),        # K = 8 no faster than K = 4: up to a point
    ((0.9, 0.5, 0.3), PARTLY),                 # every K run still helps: the point is not seen
    ((0.5, 0.9), NOT), ((0.5, 0.5), NOT)])      # a larger K slower, or as fast
def test_larger_k_faster_through_files(tmp_path, rates, want):
    j = _ks(tmp_path, rates)
    assert j.verdict == want
    assert [r["K"] for r in j.rows] == [f"{2 ** (i + 1)} vs {2 ** i}" for i in range(len(rates) - 1)]
    if want == PARTLY:
        assert any("the point beyond which it stops helping is not seen" in n for n in j.notes)
    assert j.margin.startswith("K = 2 vs 1: rounds ratio ")


def test_larger_k_faster_without_the_second_half(tmp_path):
    assert _ks(tmp_path, (0.9, 0.5, 0.3), up_to_a_point=False).verdict == REPRODUCED


@pytest.mark.parametrize("n", [1, 2])
def test_larger_k_faster_never_refuted_by_fewer_than_three_seeds(tmp_path, n):
    j = _ks(tmp_path, (0.5, 0.9), n=n)
    assert j.verdict == UNDECIDED and "at least 3" in j.decide


def test_larger_k_faster_a_diverged_larger_K_is_not_faster(tmp_path):
    f = geometric(0.8, 60, 1e-6)
    paths = {"k": runs_of(tmp_path, "k", {1: [f] * 3, 2: [(f, 2)] * 3})}
    assert judge("larger_k_faster", paths, ["k"]).verdict == NOT


# ---- curves_within_factor (Section 5.1) -------------------------------------------------------
def _alike(tmp_path, ags: dict, avg: dict, **params):
    runs = {"p": runs_of(tmp_path, "p", ags) + runs_of(tmp_path, "p", avg, name="rfedavg")}
    return judge("curves_within_factor", runs, ["p"], **params)


@pytest.mark.parametrize("ratio, want", [(1.2, REPRODUCED), (1 / 1.2, REPRODUCED), (1.3, NOT),
                                         (1 / 1.3, NOT), (1.0, REPRODUCED)])
def test_same_rate_compares_the_rates_not_the_levels(tmp_path, ratio, want):
    """RFedAvg at q^(t / ratio) (its log-contraction 1/ratio of RFedAGS's) against RFedAGS at q^t,
    3 seeds: the rate ratio is exactly ``ratio`` (factor 1.25 both ways). A level offset (3x the
    whole curve) changes no rate."""
    q = 0.7
    j = _alike(tmp_path, {2: [geometric(q, 60)] * 3},
               {2: [3 * geometric(q ** (1 / ratio), 60 * 2)] * 3})
    assert j.verdict == want
    assert j.rows[0]["rate ratio"] == pytest.approx(ratio, rel=1e-6)
    assert j.rows[0]["seeds paired"] == "3"


def test_identical_per_seed_curves_give_a_rate_ratio_of_exactly_one(tmp_path):
    curves = [geometric(q, 80, 1e-8) for q in (0.5, 0.6, 0.7)]       # the seeds differ, the methods not
    j = _alike(tmp_path, {1: curves}, {1: curves})
    assert j.verdict == REPRODUCED and j.rows[0]["rate ratio"] == 1.0 and j.rows[0]["interval"] == "[1, 1]"
    assert j.margin == "K = 1: rate ratio 1 [1, 1], claim in [0.8, 1.25] (3 seeds, t)"


@pytest.mark.parametrize("n", [1, 2])
def test_same_rate_never_refuted_by_fewer_than_three_seeds(tmp_path, n):
    j = _alike(tmp_path, {1: [geometric(0.5, 60)] * n}, {1: [geometric(0.9, 60)] * n})
    assert j.verdict == UNDECIDED and "at least 3" in j.decide


def test_curves_within_factor_per_K_diverged_and_parameter(tmp_path):
    f, g = geometric(0.5, 40, floor=1e-8), geometric(0.5 ** (1 / 1.5), 40, floor=1e-8)
    j = _alike(tmp_path, {1: [f] * 3, 2: [f] * 3, 3: [f] * 3}, {1: [f] * 3, 2: [g] * 3, 3: [(f, 3)] * 3})
    assert j.verdict == PARTLY and "- K = 3: rfedavg diverged at round 3." in j.notes
    assert [r["K"] for r in j.rows] == ["1", "2", "3"]
    assert _alike(tmp_path / "b", {2: [f] * 3}, {2: [g] * 3}, factor=1.6).verdict == REPRODUCED


# ---- contraction_in_k (Figure 2) --------------------------------------------------------------
@pytest.mark.parametrize("rates, want", [
    ((0.9, 0.8, 0.5), REPRODUCED), ((0.8, 0.8), REPRODUCED), ((0.8, 0.9, 0.5), PARTLY),
    ((0.5, 0.8), NOT), ((0.8, 0.5, 0.9), NOT), ((0.7,), UNDECIDED)])
def test_contraction_order_in_K(tmp_path, rates, want):
    T = 50
    by_k = {2 * i + 1: seeds(geometric(q, T)) for i, q in enumerate(rates)}
    j = judge("contraction_in_k", {"m": runs_of(tmp_path, "m", by_k)}, ["m"])
    assert j.verdict == want
    assert [r["contraction/round"] for r in j.rows] == pytest.approx(list(rates))


def test_contraction_in_k_diverged_short_and_one_seed(tmp_path):
    T = 50
    # K = 1 diverged counts as the slowest; K = 3 with one round is left out
    j = judge("contraction_in_k", {"d": runs_of(tmp_path, "d", {1: seeds((geometric(0.9, T), 4)),
                                                                 3: seeds(geometric(0.7, 1)),
                                                                 5: seeds(geometric(0.5, T))})}, ["d"])
    assert j.verdict == REPRODUCED
    j = judge("contraction_in_k", {"e": runs_of(tmp_path, "e", {1: seeds(geometric(0.5, 1)),
                                                                 3: seeds(geometric(0.5, T))})}, ["e"])
    assert j.verdict == UNDECIDED and j.decide == "runs with at least two K"
    j = judge("contraction_in_k", {"o": runs_of(tmp_path, "o", {1: [geometric(0.5, T)], 3: [geometric(0.9, T)]})},
              ["o"])
    assert j.verdict == UNDECIDED and "at least 3" in j.decide          # one seed refutes nothing


def test_contraction_in_k_pairs_seeds(tmp_path):
    """Seed s contracts at q_s with K = 1 and q_s exp(-d_s) with K = 3 (q_s = 0.6, 0.75, 0.9; d_s =
    0.1, 0.12, 0.08): the seeds' rates overlap across K; paired, the differences -d_s have the t
    interval -0.1 +- 4.30 x 0.02 / sqrt 3, below 0: reproduced; swapped: not."""
    qs, ds = (0.6, 0.75, 0.9), (0.1, 0.12, 0.08)
    k1, k3 = [geometric(q, 60) for q in qs], [geometric(q * np.exp(-d), 60) for q, d in zip(qs, ds)]
    assert judge("contraction_in_k", {"p": runs_of(tmp_path, "p", {1: k1, 3: k3})}, ["p"]).verdict == REPRODUCED
    assert judge("contraction_in_k", {"q": runs_of(tmp_path, "q", {1: k3, 3: k1})}, ["q"]).verdict == NOT


def test_by_k_reads_every_agent_or_the_experiments_own_participation(tmp_path):
    """``participation: every`` reads only runs with every agent; ``any`` reads the run under the
    experiment's participation (s = 3 here), the every-agent run first where both exist."""
    sampled = geometric(0.9, 40)
    runs = {"e": runs_of(tmp_path, "e", {5: seeds(sampled)}, participation=3)}
    assert judge("linear_rate", runs, ["e"]).verdict == UNDECIDED            # no every-agent run
    j = judge("linear_rate", runs, ["e"], participation="any")
    assert j.verdict == REPRODUCED and j.rows[0]["contraction/round"] == pytest.approx(0.9)
    runs["e"] += runs_of(tmp_path, "e", {5: seeds(geometric(0.5, 40))})
    j = judge("linear_rate", runs, ["e"], participation="any")
    assert j.rows[0]["contraction/round"] == pytest.approx(0.5)              # every agent first
    assert "under the experiment's participation" in RULES["plateau_order"]().describe(
        {**RULES["plateau_order"].defaults(), "participation": "any"})
    with pytest.raises(ValueError, match="allowed: every, any"):
        Evidence({"runs": runs, "config": {}}, ["e"]).by_k("e", "rfedags", "some")


def test_a_noisy_plateau_after_an_early_linear_phase_has_levelled_off():
    """0.9969^t to round 255 (90% of the log-decrease made by round 257), then a plateau with
    +-35% noise whose last 10% of rounds sit 12% lower: the tail contracts 0.9979 per round,
    below the square root of the early rate, but the linear phase ended long before the last
    20% of rounds, so it is a (noisy) plateau; a curve falling 0.5% per round from the start is
    still in its linear phase."""
    from rfl.claims.curves import levelled_off, linear_phase, still_contracting

    t = np.arange(601)
    noisy = pd.Series(0.9969 ** np.minimum(t, 255) * np.where(t > 255, 1 + 0.35 * (-1.0) ** t, 1.0)
                      * np.where(t > 540, 0.88, 1.0))
    assert linear_phase(noisy)["rounds"] == 257
    assert not still_contracting(noisy) and levelled_off(noisy)
    steady = pd.Series(0.995 ** np.arange(41))
    assert still_contracting(steady) and not levelled_off(steady)


def test_linear_rate_of_a_step_to_the_floor_is_undecided_and_says_why(tmp_path):
    """exp(0, 0, 0, -5, -5, ...): the whole decrease in one round, no phase of 3 rounds to fit."""
    step = np.exp(np.r_[0.0, 0.0, 0.0, np.full(20, -5.0)])
    j = judge("linear_rate", {"p": runs_of(tmp_path, "p", {1: seeds(step)})}, ["p"])
    assert j.verdict == UNDECIDED and "no seed has a linear phase of 3 rounds or more" in j.decide


def test_linear_rate_margin_on_the_paths_without_a_fit(tmp_path):
    """Every K's margin: all seeds diverged (3 of 3 against < 3/2), too few recorded rounds (2
    against MIN_FIT_ROUNDS + 1), a curve that drops to its floor in one round (no seed with a
    linear phase: 0 against >= 1); and the fitted K's decrease with its interval."""
    from rfl.claims.curves import MIN_FIT_ROUNDS
    f1 = geometric(0.8, 60, floor=1e-4)
    j = judge("linear_rate", {"d": runs_of(tmp_path, "d", {1: seeds(f1), 2: seeds((f1, 1))})}, ["d"])
    m1, m2 = j.margin.split("; K = 2: ")[0], j.margin.split("; K = 2: ")[1]
    assert m1.startswith("K = 1: decrease ") and "claim >= 2" in m1
    assert m2 == "diverged seeds 3, claim < 1.5 (of 3)"
    j = judge("linear_rate", {"s": runs_of(tmp_path, "s", {1: seeds(geometric(0.5, 1))})}, ["s"])
    assert j.verdict == UNDECIDED
    assert j.margin == f"K = 1: recorded rounds (fewest over seeds) 2, claim >= {MIN_FIT_ROUNDS + 1}"
    drop = np.r_[1.0, np.full(29, 1e-6)]
    j = judge("linear_rate", {"f": runs_of(tmp_path, "f", {1: seeds(drop)})}, ["f"])
    assert j.verdict == UNDECIDED and "no seed has a linear phase" in j.decide
    assert j.margin == "K = 1: seeds with a linear phase 0, claim >= 1 (of 3)"


def test_linear_rate_without_runs_of_its_participation_has_a_margin(tmp_path):
    """Runs with 5 of the agents only (participation 5): ``every`` finds no K (0 against >= 1);
    ``any`` judges them."""
    f = geometric(0.5, 40, floor=1e-6)
    paths = {"p": runs_of(tmp_path, "p", {1: seeds(f)}, participation=5)}
    j = judge("linear_rate", paths, ["p"])
    assert j.verdict == UNDECIDED and j.rows == [] and j.decide == "runs of rfedags with every agent"
    assert j.margin == "values of K with rfedags runs (every agent) 0, claim >= 1"
    j = judge("linear_rate", paths, ["p"], participation="any")
    assert j.verdict == REPRODUCED and j.margin.startswith("K = 1: decrease ")

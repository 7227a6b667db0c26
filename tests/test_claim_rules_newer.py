"""The claim rules of the newer experiments, participation schemes and measurements beyond the
paper (``plateau_order``, ``converges``, ``lowest_level``, ``ends_as_low``, ``faster_than``,
``decreasing_in_k``, ``final_values``, ``table_pivot``, ``level_vs_share``), judged from run
files in the runner's format whose answer is known: exact geometric decays q^t, with or
without a floor, so that plateaus, crossing rounds and the rounds to level off follow from
the formula. Each rule on both sides of each threshold, and on its undecided side."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rfl import io
from rfl.claims import curves as C
from rfl.claims.judge import judge_claim
from rfl.claims.rules.level_vs_share import scheme_of
from rfl.claims.verdicts import NOT, PARTLY, REPRODUCED, UNDECIDED
from rfl.participation import tag
from rfl.testing.run_files import write_run


def geometric(q, T, floor=0.0, start=1.0):
    return start * q ** np.arange(T + 1) + floor


class Study:
    """Run files and the config that names them, built up by ``run``."""

    def __init__(self, root):
        self.root = root
        self.config = {"datasets": {}, "experiments": {}, "figures": {}}
        self.runs: dict[str, list[str]] = {}
        self.tables: dict[str, str] = {}

    def run(self, experiment, values, *, name="rfedags", K=5, participation=None, seed=0,
            params=None, extra=None, status=None, dataset=None):
        dataset = dataset or experiment
        ds = self.config["datasets"].setdefault(dataset, {"problem": "pca_stiefel", "params": params or {}})
        exp = self.config["experiments"].setdefault(experiment, {"dataset": dataset, "methods": []})
        method = {"algorithm": name, "K": [K], "participation": participation}
        if method not in exp["methods"]:
            exp["methods"].append(method)
        rid = f"{name}_K{K}{tag(participation)}_seed{seed}"
        path = self.root / "runs" / experiment / f"{rid}.csv"
        cols = {"round": np.arange(len(values)), "excess_risk": np.asarray(values, float), **(extra or {})}
        if status is not None:
            cols["status"] = status
        write_run(path, cols, {"experiment": experiment, "run_id": rid, "seed": seed,
                               "algorithm": {"name": name, "K": K, "participation": participation},
                               "dataset": {"name": experiment, "problem": ds["problem"], "params": ds["params"]}})
        self.runs.setdefault(experiment, []).append(str(path))
        return self

    def seeds(self, experiment, values, n=3, **kw):
        """``run`` for seeds 0..n-1 (each a callable of the seed, or the same ``values``)."""
        for s in range(n):
            self.run(experiment, values(s) if callable(values) else values, seed=s, **kw)
        return self

    def judge(self, rule, experiments, params=None):
        claim = {"section": "s", "statement": "c", "rule": rule, "params": params or {},
                 "experiments": experiments}
        spec = {"config": self.config, "runs": self.runs, "tables": self.tables}
        return judge_claim(spec, "c", claim)


# ---- curve statistics: the rounds that would level a curve off ----------------------------------
def first_levelled_length(q, floor, T0, factor=1.2):
    """Oracle: the fewest rounds beyond T0 after which the exact curve q^t + floor has
    levelled off by the definition (brute force over extensions)."""
    for extra in range(0, 20 * T0):
        if C.levelled(pd.Series(geometric(q, T0 + extra, floor)), factor):
            return extra
    raise AssertionError("never levels off")


@pytest.mark.parametrize("q, floor, T0", [(0.98, 1e-3, 300), (0.95, 1e-4, 120), (0.99, 1e-2, 200)])
def test_rounds_to_level_off_of_a_geometric_decay_to_a_floor(q, floor, T0):
    curve = pd.Series(geometric(q, T0, floor))
    assert not C.levelled(curve)
    assert C.rounds_to_level_off(curve) == first_levelled_length(q, floor, T0)


def test_rounds_to_level_off_without_a_limit_in_sight():
    assert np.isnan(C.rounds_to_level_off(pd.Series(geometric(0.98, 300))))        # towards 0
    assert np.isnan(C.rounds_to_level_off(pd.Series(np.linspace(1.0, 0.01, 301))))  # linear: no slowing
    assert np.isnan(C.rounds_to_level_off(pd.Series(geometric(0.9, 7, 0.1))))      # fewer than 9 values
    assert C.rounds_to_level_off(pd.Series(geometric(0.5, 100, 1e-3))) == 0.0      # levelled already


def test_tail_contraction_of_a_geometric_curve():
    assert C.tail_contraction(pd.Series(geometric(0.97, 200))) == pytest.approx(0.97)
    assert np.isnan(C.tail_contraction(pd.Series([1.0, 0.5, 0.2])))


def test_a_slow_steady_decrease_is_no_plateau():
    """0.995^t over 10 rounds: its last 3 rounds are only 1.015x below the 3 before (levelled
    by the factor 1.2) but it contracts at its linear-phase pace: not levelled off. A geometric
    decay that reached its floor is."""
    slow = pd.Series(geometric(0.995, 10))
    assert C.levelled(slow) and C.still_contracting(slow) and not C.levelled_off(slow)
    flat = pd.Series(geometric(0.5, 100, 1e-3))
    assert C.levelled_off(flat) and not C.still_contracting(flat)
    # 0.9 per round for 24 rounds, then 0.945: its last 3 rounds 1.185x below the 3 before
    # (levelled by the factor), its tail contraction 0.945 slower than the fitted 0.9 but within
    # sqrt(0.9) = 0.9487: still contracting
    two = pd.Series(np.r_[0.9 ** np.arange(24), 0.9 ** 23 * 0.945 ** np.arange(1, 7)])
    assert C.tail_contraction(two) == pytest.approx(0.945)
    assert C.levelled(two) and C.still_contracting(two) and not C.levelled_off(two)


def test_converges_at_toy_size_is_undecided(tmp_path):
    """Ten rounds at 0.995 per round (0.95 of the start): undecided, not failed; at the fitted
    contraction 0.995, 1e-3 needs log(1e-3) / log(0.995) = 1378.1 rounds, 1369 more."""
    r = Study(tmp_path).run("h", geometric(0.995, 10, start=0.225)).judge("converges", ["h"])
    assert r["verdict"] == UNDECIDED and "about 1369 more rounds" in r["decide"]


# ---- plateau_order ------------------------------------------------------------------------------
def agents(tmp_path, floors, falling=None):
    """S = 6, 10, 20: RFedAGS 0.9^t + floor over 200 rounds (levelled off), 3 seeds; ``falling``:
    the S whose curve is q^t + floor with q = 0.99 instead (still decreasing at round 200)."""
    st = Study(tmp_path)
    for S, floor in zip((6, 10, 20), floors):
        q = 0.99 if S == falling else 0.9
        st.seeds(f"a{S}", geometric(q, 200, floor), params={"S": S, "N": 100})
    return st


@pytest.mark.parametrize("floors, want", [((3e-3, 2e-3, 1e-3), REPRODUCED), ((3e-3, 3e-3, 1e-3), REPRODUCED),
                                          ((3e-3, 4e-3, 1e-3), PARTLY), ((1e-3, 2e-3, 3e-3), NOT)])
def test_plateau_order_of_levelled_curves(tmp_path, floors, want):
    r = agents(tmp_path, floors).judge("plateau_order", ["a20", "a6", "a10"], {"by": ["S"]})
    assert r["verdict"] == want and r["decide"] is None
    assert [row["S"] for row in r["rows"]] == ["6", "10", "20"]          # sorted by S, not declared order
    # write_run's cost column is 0, so F* = -excess_risk[0] = -(1 + floor): plateau / |F*|
    plateau = np.median(geometric(0.9, 200, floors[2])[-20:])
    assert r["rows"][2]["plateau"] == pytest.approx(plateau)
    assert r["rows"][2]["plateau / abs(F*)"] == pytest.approx(plateau / (1 + floors[2]))


def test_plateau_order_a_curve_still_falling_leaves_it_undecided(tmp_path):
    """S = 20 still decreasing (0.99^t + 1e-3: its last level, 0.135, far above 1e-3): its
    plateau may end below S = 10's or not; what decides it is the rounds that level it off."""
    r = agents(tmp_path, (3e-3, 2e-3, 1e-3), falling=20).judge("plateau_order", ["a6", "a10", "a20"])
    assert r["verdict"] == UNDECIDED
    assert r["rows"][2]["levelled off"] == "no"
    extra = first_levelled_length(0.99, 1e-3, 200)
    assert "S = 20: more rounds (falling 0.99" in r["decide"]
    assert f"levels off after about {extra} more rounds, {200 + extra} in all" in r["decide"]
    assert ("- S = 20 vs 10: S = 20 is still decreasing at the last round (its last level bounds its "
            "plateau from above).") in r["notes"]


def test_plateau_order_broken_for_certain_despite_a_curve_still_falling(tmp_path):
    """S = 6 still decreasing at 0.99^t + 1e-4 (last level 0.134 bounds its plateau), S = 20
    levelled at 0.9^t + 0.5 above that bound: the order is broken whatever S = 6 does."""
    st = Study(tmp_path)
    st.seeds("a6", geometric(0.99, 200, 1e-4), params={"S": 6}).seeds("a20", geometric(0.9, 200, 0.5), params={"S": 20})
    assert st.judge("plateau_order", ["a6", "a20"])["verdict"] == NOT


def test_plateau_order_by_two_parameters_and_the_smallest_K(tmp_path):
    """By (d, r); K = 1 (0.9^t + level) is judged, not K = 5 (which would reverse the order)."""
    st = Study(tmp_path)
    st.seeds("d1", geometric(0.9, 200, 2e-3), K=1, params={"d": 10, "r": 2})
    st.seeds("d1", geometric(0.9, 200, 1e-9), K=5, params={"d": 10, "r": 2})
    st.seeds("d2", geometric(0.9, 200, 1e-3), K=1, params={"d": 20, "r": 3})
    st.seeds("d2", geometric(0.9, 200, 1e-2), K=5, params={"d": 20, "r": 3})
    r = st.judge("plateau_order", ["d1", "d2"], {"by": ["d", "r"]})
    assert r["verdict"] == REPRODUCED and [row["d, r"] for row in r["rows"]] == ["10, 2", "20, 3"]
    assert [row["K"] for row in r["rows"]] == ["1", "1"]


def test_plateau_order_scale_free_across_datasets_of_different_scale(tmp_path):
    """S = 6 on a dataset 16x the scale of S = 20's (start 16, plateau 16 x 2e-3) against S = 20
    (start 1, plateau 1e-3): in absolute terms S = 20 is lower (reproduced); relative to
    F(x_0) - F* S = 20's plateau (1e-3) is below S = 6's (2e-3) too; with S = 20 at 4e-3 the
    absolute order holds (4e-3 < 3.2e-2) but the scale-free one does not."""
    for p20, absolute, relative in ((1e-3, REPRODUCED, REPRODUCED), (4e-3, REPRODUCED, NOT)):
        st = Study(tmp_path / str(p20))
        st.seeds("a6", 16 * geometric(0.9, 200, 2e-3), params={"S": 6})
        st.seeds("a20", geometric(0.9, 200, p20), params={"S": 20})
        assert st.judge("plateau_order", ["a6", "a20"])["verdict"] == absolute
        r = st.judge("plateau_order", ["a6", "a20"], {"scale": "initial"})
        assert r["verdict"] == relative and "relative to F(x_0) - F*" in r["rule_text"]


def test_plateau_order_pairs_seeds_and_reads_their_spread(tmp_path):
    """Per seed s the S = 20 plateau is c x S = 6's, the seeds' plateaus 1e-3 x (1, 2, 4): paired,
    c = 0.8 holds at every seed (reproduced), c = 1.2 fails at every seed (not reproduced) although
    the seeds' plateaus overlap across values."""
    for c, want in ((0.8, REPRODUCED), (1.2, NOT)):
        st = Study(tmp_path / str(c))
        st.seeds("a6", lambda s: geometric(0.5, 100, 1e-3 * 2 ** s), params={"S": 6})
        st.seeds("a20", lambda s: geometric(0.5, 100, c * 1e-3 * 2 ** s), params={"S": 20})
        assert st.judge("plateau_order", ["a6", "a20"])["verdict"] == want


# ---- converges ------------------------------------------------------------------------------------
@pytest.mark.parametrize("ratio, want", [(0.9e-3, REPRODUCED), (1e-3, REPRODUCED), (1.1e-3, PARTLY)])
def test_converges_by_a_factor_from_round_0(tmp_path, ratio, want):
    """RFedAGS falls by 0.9^200 (converged); RFedAvg flat at 0.2 and ``ratio`` x 0.2 at its last
    round (levelled off: a drop in one round does not move a median of 20 rounds)."""
    avg = np.full(201, 0.2)
    avg[-1] = 0.2 * ratio
    st = Study(tmp_path).run("h", geometric(0.9, 200, start=0.2)).run("h", avg, name="rfedavg")
    r = st.judge("converges", ["h"], {"factor": 1e-3})
    assert r["verdict"] == want
    assert r["rows"][1]["last / round 0"] == pytest.approx(ratio)


def test_converges_a_method_still_decreasing_is_undecided_with_the_rounds_it_needs(tmp_path):
    """0.99^t over 200 rounds is 0.134 of its start: 1e-3 needs t >= log(1e-3) / log(0.99) =
    687.3, so 488 more rounds."""
    r = Study(tmp_path).run("h", geometric(0.99, 200)).judge("converges", ["h"])
    assert r["verdict"] == UNDECIDED
    assert "about 488 more rounds would reach 0.001" in r["decide"]


def test_converges_a_diverged_method_fails(tmp_path):
    values = np.r_[geometric(0.9, 10), np.nan]
    status = np.array(["ok"] * 11 + ["diverged"], dtype=object)
    st = Study(tmp_path).run("h", values, status=status)
    r = st.judge("converges", ["h"])
    assert r["verdict"] == NOT and "diverged at round 11" in r["notes"][0]


# ---- ends_as_low and faster_than ------------------------------------------------------------------
def pair(tmp_path, ags, avg):
    """Three seeds each (identical: the plateau ratio has no spread) of RFedAGS and RFedAvg."""
    return Study(tmp_path).seeds("t", ags, K=50).seeds("t", avg, name="rfedavg", K=50)


@pytest.mark.parametrize("factor, want", [(0.5, REPRODUCED), (1.0, REPRODUCED), (1.09, REPRODUCED),
                                          (1.11, NOT), (3.0, NOT)])
def test_ends_as_low_within_a_factor(tmp_path, factor, want):
    """RFedAGS 0.7^t + factor x 1e-4 against RFedAvg 0.7^t + 1e-4 (both levelled off)."""
    st = pair(tmp_path, geometric(0.7, 100, factor * 1e-4), geometric(0.7, 100, 1e-4))
    r = st.judge("ends_as_low", ["t"], {"factor": 1.1})
    assert r["verdict"] == want
    assert r["rows"][0]["ratio"] == pytest.approx(np.median(geometric(0.7, 100, factor * 1e-4)[-10:])
                                                  / np.median(geometric(0.7, 100, 1e-4)[-10:]))


@pytest.mark.parametrize("ratio, want", [(1.25, REPRODUCED), (1.25 + 2 ** -20, NOT)])
def test_ends_as_low_at_exactly_the_factor(tmp_path, ratio, want):
    """Levels held flat from round 20 on (exact plateaus 2^-10 and ratio x 2^-10, both exact in
    binary): a plateau exactly the factor above holds, one a hair above fails."""
    flat = lambda level: np.r_[np.geomspace(1.0, level, 21), np.full(80, level)]  # noqa: E731
    r = pair(tmp_path, flat(ratio * 2.0 ** -10), flat(2.0 ** -10)).judge("ends_as_low", ["t"], {"factor": 1.25})
    assert r["verdict"] == want


@pytest.mark.parametrize("ags, avg", [
    (geometric(0.7, 100, 1e-4), geometric(0.97, 100, 1e-4)),     # RFedAvg still falling: may end lower
    (geometric(0.97, 100, 1e-4), geometric(0.7, 100, 1e-4))])    # RFedAGS above, still falling
def test_ends_as_low_undecided_while_a_curve_still_falls(tmp_path, ags, avg):
    r = pair(tmp_path, ags, avg).judge("ends_as_low", ["t"])
    assert r["verdict"] == UNDECIDED and "more rounds" in r["decide"]


@pytest.mark.parametrize("n", [1, 2])
def test_ends_as_low_one_or_two_seeds_never_refute(tmp_path, n):
    st = Study(tmp_path).seeds("t", geometric(0.7, 100, 1e-3), n, K=50) \
        .seeds("t", geometric(0.7, 100, 1e-4), n, name="rfedavg", K=50)
    r = st.judge("ends_as_low", ["t"])
    assert r["verdict"] == UNDECIDED and "at least 3" in r["decide"]


def test_ends_as_low_interval_across_noisy_seeds(tmp_path):
    """RFedAGS's plateau over RFedAvg's per seed: 1.05, 0.95, 1.0 x c; the t interval of the
    mean log ratio (scipy's closed form) decides against the factor 1.1."""
    from scipy import stats as sps
    got = []
    for c in (0.9, 1.3, 1.06):
        mult = np.array([1.05, 0.95, 1.0]) * c
        st = Study(tmp_path / str(c)).seeds("t", lambda s: flat_level(mult[s] * 1e-3), K=50) \
            .seeds("t", flat_level(1e-3), name="rfedavg", K=50)
        r = st.judge("ends_as_low", ["t"])
        ci = sps.ttest_1samp(np.log(mult), 0.0).confidence_interval(0.95)
        want = REPRODUCED if np.exp(ci.high) <= 1.1 else NOT if np.exp(ci.low) > 1.1 else UNDECIDED
        assert r["verdict"] == want
        assert r["rows"][0]["interval"] == f"[{np.exp(ci.low):.3g}, {np.exp(ci.high):.3g}]"
        got.append(r["verdict"])
    assert got == [REPRODUCED, NOT, UNDECIDED]          # each side of the bound, and astride it


def flat_level(level):
    """Falls from 1 to ``level`` by round 20, then holds it: plateau exactly ``level``."""
    return np.r_[np.geomspace(1.0, level, 21), np.full(80, level)]


def pair3(tmp_path, ags, avg, n=3):
    """``n`` seeds of RFedAGS and RFedAvg (each a curve, or a callable of the seed) at K = 50."""
    return Study(tmp_path).seeds("t", ags, n, K=50).seeds("t", avg, n, name="rfedavg", K=50)


@pytest.mark.parametrize("q_ags, q_avg, want", [(0.5, 0.7, REPRODUCED), (0.7, 0.7, NOT),
                                                (0.7, 0.5, NOT), (1.0, 0.5, NOT)])
def test_faster_than_over_several_levels(tmp_path, q_ags, q_avg, want):
    r = pair3(tmp_path, geometric(q_ags, 100, 1e-6), geometric(q_avg, 100, 1e-6)).judge("faster_than", ["t"])
    assert r["verdict"] == want
    if q_ags < 1:
        # oracle: the levels 1.000001 (P / 1.000001)^(j / 5), P the higher plateau, by a plain loop
        a, b = geometric(q_ags, 100, 1e-6), geometric(q_avg, 100, 1e-6)
        P = max(np.median(a[-10:]), np.median(b[-10:]))
        levels = [1.000001 * (P / 1.000001) ** (j / 5) for j in (1, 2, 3, 4)]
        first = lambda c, lv: next(t for t in range(101) if c[t] <= lv)       # noqa: E731
        ratio = np.exp(np.mean([np.log((1 + first(a, lv)) / (1 + first(b, lv))) for lv in levels]))
        assert r["rows"][0]["rounds ratio"] == pytest.approx(ratio, rel=1e-12)
        assert r["rows"][0]["interval"] == f"[{ratio:.3g}, {ratio:.3g}]"     # identical seeds: no spread


def test_identical_curves_are_a_tie_not_faster_and_their_ratio_is_exactly_one(tmp_path):
    r = pair3(tmp_path, geometric(0.7, 100, 1e-6), geometric(0.7, 100, 1e-6)).judge("faster_than", ["t"])
    assert r["verdict"] == NOT and r["rows"][0]["rounds ratio"] == 1.0
    assert r["margin"] == "K = 50: rounds ratio 1 [1, 1], claim <= 0.95 (3 seeds, t)"


def test_a_tie_at_one_level_with_one_method_ahead_elsewhere_is_not_faster(tmp_path):
    """RFedAvg at 0.5^t; RFedAGS flat at 1 until round 10, then 0.25 per round to 0.5^20 at round
    20, then 0.5^t: they tie at every level from 0.5^20 down and RFedAvg is ahead at every level
    above it. The old rule read one level (sqrt(start x plateau) ~ 1e-6, reached by both at
    round 20: a tie); here every level counts."""
    t = np.arange(101)
    ags = np.where(t <= 10, 1.0, np.where(t <= 20, 0.25 ** (t - 10.0), 0.5 ** t)) + 1e-12
    avg = geometric(0.5, 100, 1e-12)
    assert ags[20] == avg[20] and (ags[1:20] > avg[1:20]).all() and (ags[20:] == avg[20:]).all()
    r = pair3(tmp_path, ags, avg).judge("faster_than", ["t"])
    assert r["verdict"] == NOT and r["rows"][0]["rounds ratio"] > 1
    # the mirror: RFedAGS ahead above the tie, as fast below it: faster
    r = pair3(tmp_path / "m", avg, ags).judge("faster_than", ["t"])
    assert r["verdict"] == REPRODUCED


@pytest.mark.parametrize("n", [1, 2])
def test_one_or_two_seeds_never_refute_faster(tmp_path, n):
    r = pair3(tmp_path, geometric(0.9, 100, 1e-6), geometric(0.5, 100, 1e-6), n).judge("faster_than", ["t"])
    assert r["verdict"] == UNDECIDED and f"{n} seed" in r["decide"] and "at least 3" in r["decide"]


def test_faster_than_pairs_by_seed_and_reads_the_spread(tmp_path):
    """Per seed s, RFedAvg at q_s^t and RFedAGS at q_s^(t / c): ratios of rounds near c with
    seed-to-seed spread; paired, the interval is tight around c (unpaired, the seeds'
    different q would blur it). c = 0.9 holds under 0.95; c = 1 is a tie (not faster)."""
    qs = [0.6, 0.7, 0.8]
    for c, want in ((0.8, REPRODUCED), (1.0, NOT)):
        r = pair3(tmp_path / str(c), lambda s: geometric(qs[s] ** (1 / c), 200, 1e-9),
                  lambda s: geometric(qs[s], 200, 1e-9)).judge("faster_than", ["t"])
        assert r["verdict"] == want


def test_faster_than_undecided_while_the_first_has_not_got_there(tmp_path):
    """RFedAGS at 100 x 0.97^t still decreasing against RFedAvg at 0.5^t + 0.9 levelled: RFedAGS's
    plateau is above the start 1.9, so the levels run down to RFedAvg's plateau 0.9, out of
    RFedAGS's reach within the run (censored)."""
    r = pair3(tmp_path, geometric(0.97, 100, start=100.0), geometric(0.5, 100, 0.9)).judge("faster_than", ["t"])
    assert r["verdict"] == NOT        # its censored rounds are a lower bound: slower already


def test_faster_than_undecided_while_the_second_has_not_got_there(tmp_path):
    """The mirror: RFedAGS levelled at 0.9 in a few rounds, RFedAvg not yet at the levels: a
    FAIL could not rest on RFedAvg's censored rounds, but RFedAGS is faster whatever they are."""
    r = pair3(tmp_path, geometric(0.5, 100, 0.9), geometric(0.97, 100, start=100.0)).judge("faster_than", ["t"])
    assert r["verdict"] == REPRODUCED


# ---- decreasing_in_k ------------------------------------------------------------------------------
@pytest.mark.parametrize("values, want", [((1e-1, 1e-3, 1.04e-3), REPRODUCED), ((1e-1, 1e-3, 1.06e-3), PARTLY),
                                          ((1e-3, 1e-2), NOT), ((1e-3,), UNDECIDED)])
def test_decreasing_in_k_up_to_a_tolerance(tmp_path, values, want):
    st = Study(tmp_path)
    for K, rel in zip((1, 2, 4), values):
        st.seeds("l", geometric(0.9, 60), K=K, extra={"rel_error": np.linspace(1.0, rel, 61)})
    assert st.judge("decreasing_in_k", ["l"], {"tolerance": 1.05})["verdict"] == want


def test_decreasing_in_k_from_the_relative_error_column(tmp_path):
    st = Study(tmp_path)
    for K, rel in ((1, 1e-2), (4, 1e-4)):
        st.seeds("l", geometric(0.9, 60), K=K, extra={"rel_error": np.linspace(1.0, rel, 61)})
    r = st.judge("decreasing_in_k", ["l"], {"metric": "rel_error"})
    assert r["verdict"] == REPRODUCED and [row["rel_error, last"] for row in r["rows"]] == [1e-2, 1e-4]
    assert r["margin"] == "K = 4 vs 1: rel_error ratio 0.01 [0.01, 0.01], claim <= 1.05 (3 seeds, t)"
    st.seeds("m", geometric(0.9, 60), K=1, extra={"rel_error": np.full(61, np.nan)})
    st.seeds("m", geometric(0.9, 60), K=4, extra={"rel_error": np.full(61, np.nan)})
    r = st.judge("decreasing_in_k", ["m"])
    assert r["verdict"] == UNDECIDED and "at least two K" in r["decide"]


def test_decreasing_in_k_one_seed_refutes_nothing(tmp_path):
    st = Study(tmp_path)
    for K, rel in ((1, 1e-4), (4, 1e-2)):
        st.run("l", geometric(0.9, 60), K=K, extra={"rel_error": np.linspace(1.0, rel, 61)})
    r = st.judge("decreasing_in_k", ["l"])
    assert r["verdict"] == UNDECIDED and "at least 3" in r["decide"]


# ---- participation: lowest_level and level_vs_share -----------------------------------------------
def schemes(st, experiment, levels, falling=(), dataset=None, n=3):
    """Runs of 50 rounds falling from 1 to each scheme's level by round 20 (levelled off), or for
    a scheme in ``falling`` 0.9^t + level (still decreasing: 1.69x over its last 5 rounds), three
    seeds each (``n``)."""
    parts = {"full": None, "uniform": 3, "bernoulli": {"scheme": "bernoulli", "rho": 0.3}}
    for scheme, level in levels.items():
        for seed in range(n):
            values = (geometric(0.9, 49, level) if scheme in falling else
                      np.r_[np.geomspace(1.0, level, 21), np.full(29, level)])
            st.run(experiment, values, participation=parts[scheme], seed=seed, params={"S": 10}, dataset=dataset)
    return st


@pytest.mark.parametrize("levels, want", [
    ({"full": 1e-5, "uniform": 3e-4, "bernoulli": 2e-4}, REPRODUCED),
    ({"full": 1e-4, "uniform": 1e-4}, REPRODUCED),                       # at the full level: still lowest
    ({"full": 1e-4, "uniform": 3e-4, "bernoulli": 5e-5}, NOT)])
def test_lowest_level_full_participation(tmp_path, levels, want):
    r = schemes(Study(tmp_path), "p", levels).judge("lowest_level", ["p"])
    assert r["verdict"] == want
    assert r["rows"][0]["every agent"] == pytest.approx(levels["full"])


def test_lowest_level_never_refuted_by_two_seeds(tmp_path):
    r = schemes(Study(tmp_path), "p", {"full": 1e-4, "uniform": 3e-5}, n=2).judge("lowest_level", ["p"])
    assert r["verdict"] == UNDECIDED and "at least 3" in r["decide"]
    assert r["margin"] == "`p`, RFedAGS-K=5, s=3: plateau ratio 3.33 [3.33, 3.33], claim <= 1 (2 seeds, t)"


def test_lowest_level_per_experiment_and_the_undecided_sides(tmp_path):
    st = Study(tmp_path)
    schemes(st, "ok", {"full": 1e-5, "uniform": 3e-4})
    schemes(st, "bad", {"full": 1e-4, "uniform": 3e-5})
    assert st.judge("lowest_level", ["ok", "bad"])["verdict"] == PARTLY
    # every agent still decreasing (its level an upper bound) above a partial level: open
    schemes(st, "f", {"full": 1e-4, "uniform": 3e-5}, falling=("full",))
    r = st.judge("lowest_level", ["f"])
    assert r["verdict"] == UNDECIDED and "`f`, RFedAGS-K=5: more rounds" in r["decide"]
    # a partial scheme still decreasing, above the full level: it may still end below
    schemes(st, "g", {"full": 1e-4, "uniform": 3e-4}, falling=("uniform",))
    r = st.judge("lowest_level", ["g"])
    assert r["verdict"] == UNDECIDED
    # its level: the median of 0.9^t + 3e-4 over rounds 45..49; its pace over the 5 rounds before
    level, before = 0.9 ** 47 + 3e-4, 0.9 ** 42 + 3e-4
    q = (level / before) ** (1 / 5)
    n = int(np.ceil(np.log(1e-4 / level) / np.log(q)))
    assert f"reach the every-agent level 0.0001 after about {n} more rounds" in r["decide"]
    # no partial scheme: nothing to compare
    schemes(st, "h", {"full": 1e-4})
    r = st.judge("lowest_level", ["ok", "h"])
    assert r["verdict"] == UNDECIDED and "- `h`: no partial scheme." in r["notes"]


def test_level_vs_share_lines(tmp_path):
    st = Study(tmp_path)
    schemes(st, "p3", {"full": 1e-5, "uniform": 2e-4, "bernoulli": 3e-4}, dataset="d")
    schemes(st, "m3", {"full": 1e-5, "uniform": 5e-2}, dataset="mnist")        # another dataset: apart
    parts = {"uniform": 7, "bernoulli": {"scheme": "bernoulli", "rho": 0.7}}
    for scheme, level in (("uniform", 2e-4), ("bernoulli", 1e-4)):
        st.run("p7", np.r_[np.geomspace(1.0, level, 21), np.full(29, level)], participation=parts[scheme],
               params={"S": 10}, dataset="d")
    r = st.judge("level_vs_share", ["p3", "p7", "m3"])
    assert r["verdict"] is None
    assert r["notes"] == ["- `d`, bernoulli: share 0.3: 0.0003, share 0.7: 0.0001 (decreasing in the share)",
                          "- `d`, uniform: share 0.3: 0.0002, share 0.7: 0.0002 (not monotone in the share)"]
    full = [row for row in r["rows"] if row["scheme"] == "full" and row["experiment"] == "p3"]
    assert len(full) == 1 and full[0]["expected share of agents"] == 1.0 and full[0]["authors"] == "full"


def test_scheme_and_expected_share_of_each_participation():
    assert scheme_of(None, 12) == ("full", 1.0)
    assert scheme_of(3, 12) == ("uniform", 0.25)                                     # s / S
    probs = [0.2, 0.4, 0.6]
    assert scheme_of({"scheme": "bernoulli", "rho": 0.5, "probabilities": probs}, 3) == ("bernoulli", np.mean(probs))
    assert scheme_of({"scheme": "bernoulli_estimated", "rho": 0.3, "probabilities": None}, 3) == \
        ("bernoulli_estimated", 0.3)


# ---- measurements ---------------------------------------------------------------------------------
def test_final_values_medians_over_seeds(tmp_path):
    st = Study(tmp_path)
    for seed, (last, floats) in enumerate(((1e-3, 100.0), (3e-3, 300.0), (2e-3, 200.0))):
        values = np.r_[np.linspace(1.0, 0.1, 10), last]
        st.run("k", values, K=4, seed=seed, extra={"floats": np.r_[np.zeros(10), floats]})
    r = st.judge("final_values", ["k"], {"first": ["excess_risk"], "last": ["excess_risk", "floats"], "fit": True})
    row = r["rows"][0]
    assert r["verdict"] is None and row["method"] == "RFedAGS-K=4"
    assert row["excess_risk, last"] == pytest.approx(2e-3) and row["floats, last"] == 200.0
    assert row["excess_risk, round 0"] == 1.0 and row["rounds"] == "10" and "contraction/round" in row


def test_table_pivot_of_the_heterogeneity_table(tmp_path):
    cells = [("CPESph", "RFedAGS", 0.5, 8, 7e-3), ("CPESph", "RFedAGS", 1.0, 1, 1e-3),
             ("CPESph", "RFedAGS", 1.0, 8, 5e-3), ("CPESph", "RFedProj", 1.0, 4, 2e-4)]
    path = tmp_path / "het.csv"
    io.write_table(path, pd.DataFrame([{"problem": p, "method": m, "participation": s, "K": K, "mean": v,
                                        "std": 0.0, "seeds": 2, "diverged": 0} for p, m, s, K, v in cells]))
    st = Study(tmp_path).run("cpesph_het", geometric(0.9, 10))
    st.tables["heterogeneity"] = str(path)
    r = st.judge("table_pivot", ["cpesph_het"])
    assert r["verdict"] is None
    rows = {row["K"]: row for row in r["rows"]}
    assert set(rows) == {"1", "4", "8"}
    assert rows["8"]["RFedAGS, participation=0.5"] == 7e-3 and rows["8"]["RFedAGS, participation=1"] == 5e-3
    assert rows["4"]["RFedProj, participation=1"] == 2e-4 and np.isnan(rows["1"]["RFedAGS, participation=0.5"])
    st.tables["heterogeneity"] = str(tmp_path / "missing.csv")
    assert st.judge("table_pivot", ["cpesph_het"])["notes"] == ["No table `heterogeneity` was written."]


# ---- the declarations ------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["config/config.yaml", "config/smoke.yaml"])
def test_the_configs_declare_these_claims(path):
    from rfl import config
    claims = config.load(path)["claims"]
    rules = {c["rule"] for c in claims.values()}
    assert {"plateau_order", "converges", "lowest_level", "ends_as_low", "faster_than", "decreasing_in_k",
            "final_values", "table_pivot", "level_vs_share"} <= rules
    sections = {c["section"] for c in claims.values()}
    assert "Newer experiments: PCA on St(d, r), synthetic" in sections


def test_the_report_judges_the_declared_claims(tmp_path):
    """``write_report`` from a config with a plateau_order claim and a measurement: the summary
    has the claim's row under its section and ref, the measurement has none, and the sections
    follow in declaration order."""
    from rfl.reporting.reproduction import write_report

    st = agents(tmp_path, (3e-3, 2e-3, 1e-3))
    st.config["claims"] = {
        "agents": {"section": "Newer experiments: PCA on St(d, r), synthetic", "ref": "PCAStief_Syn (agents)",
                   "statement": "more agents, lower plateau", "rule": "plateau_order", "params": {"by": ["S"]},
                   "experiments": ["a6", "a10", "a20"]},
        "table": {"section": "Measurements", "statement": "final levels", "rule": "final_values",
                  "experiments": ["a6"]}}
    st.config["tables"] = {}
    out = tmp_path / "REPRODUCTION.md"
    write_report({"config": st.config, "runs": st.runs, "tables": {"table2": str(tmp_path / "none.csv")},
                  "paper": {}}, out)
    text = out.read_text()
    summary = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in summary.splitlines() if "more agents, lower plateau" in line]
    assert len(rows) == 1 and "#agents)" in rows[0] and "| reproduced |" in rows[0]
    assert "final levels" not in text.split("## Newer experiments")[0]              # no summary row
    assert text.index("## Newer experiments: PCA on St(d, r), synthetic") < text.index("## Measurements")
    assert "### Measurement: final levels" in text

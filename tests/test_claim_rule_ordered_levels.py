"""``ordered_levels`` (Figure 9 of the authors' PCASphere_MNIST: the plateau rises from the i.i.d.
to the heavily non-i.i.d. split) and the ``participation`` param of ``ends_as_low`` and
``larger_k_faster``, on constructed run tables."""

from __future__ import annotations

import numpy as np
import pytest

from test_claim_rules_newer import Study, geometric

from rfl.claims.rules.ordered_levels import order_verdict
from rfl.claims.verdicts import FAIL, NOT, OK, OPEN, PARTLY, REPRODUCED, UNDECIDED

P = {"scheme": "bernoulli_estimated", "probabilities": [0.5, 0.25, 1.0]}
SPLITS = ("iid", "slight", "heavy")


def flat(level, T=100):
    """Falls from 1 to ``level`` by round 20, then holds it: levelled off, plateau exactly ``level``."""
    return np.r_[np.geomspace(1.0, level, 21), np.full(T - 20, level)]


def splits(tmp_path, levels, falling=None, participation=P):
    """RFedAGS (K = 5) on three experiments with the given plateaus; ``falling``: the split whose
    curve is 0.99^t + level instead (still decreasing at round 99, last level ~0.37)."""
    st = Study(tmp_path)
    for split, level in zip(SPLITS, levels):
        values = geometric(0.99, 99, level) if split == falling else flat(level)
        st.seeds(split, values, participation=participation)
    return st


@pytest.mark.parametrize("levels, want", [
    ((1e-3, 2e-3, 3e-3), REPRODUCED),
    ((1e-3, 1.05e-3, 1e-3), REPRODUCED),          # within the tolerance 1.1 both ways
    ((1e-3, 3e-3, 2e-3), PARTLY),                 # slight above heavy, iid still below heavy
    ((2.1e-3, 1e-3, 2e-3), PARTLY),               # iid above slight, still below 1.1 x heavy
    ((3e-3, 2e-3, 1e-3), NOT)])
def test_levels_in_the_declared_order(tmp_path, levels, want):
    r = splits(tmp_path, levels).judge("ordered_levels", list(SPLITS), {"participation": "any"})
    assert r["verdict"] == want and r["decide"] is None
    assert [row["plateau"] for row in r["rows"]] == pytest.approx(levels)
    assert r["rows"][0]["plateau / next"] == pytest.approx(levels[0] / levels[1])
    assert [row["levelled off"] for row in r["rows"]] == ["yes"] * 3


def test_the_declared_order_not_a_sorted_one(tmp_path):
    st = splits(tmp_path, (1e-3, 2e-3, 3e-3))
    assert st.judge("ordered_levels", ["heavy", "slight", "iid"], {"participation": "any"})["verdict"] == NOT


@pytest.mark.parametrize("ratio, want", [(1.25, REPRODUCED), (1.25 + 2 ** -20, NOT)])
def test_at_exactly_the_tolerance(tmp_path, ratio, want):
    """Binary-exact plateaus 2^-10 x ratio before 2^-10: a level exactly the factor above holds."""
    st = Study(tmp_path).seeds("iid", flat(ratio * 2.0 ** -10), participation=P).seeds("heavy", flat(2.0 ** -10), participation=P)
    r = st.judge("ordered_levels", ["iid", "heavy"], {"participation": "any", "factor": 1.25})
    assert r["verdict"] == want


def test_a_curve_still_falling_leaves_it_undecided_with_the_rounds_it_needs(tmp_path):
    """heavy at 0.99^t + 3e-3 bounds its plateau by ~0.37 only: slight (2e-3) may or may not be
    below 1.1x it."""
    r = splits(tmp_path, (1e-3, 2e-3, 3e-3), falling="heavy").judge("ordered_levels", list(SPLITS),
                                                                      {"participation": "any"})
    assert r["verdict"] == UNDECIDED
    assert r["rows"][2]["levelled off"] == "no"
    assert "`heavy`: more rounds (falling 0.99" in r["decide"]
    assert ("- `slight` vs `heavy`: `heavy` is still decreasing at the last round (its last level bounds "
            "its plateau from above).") in r["notes"]


def test_out_of_order_for_certain_despite_a_curve_still_falling(tmp_path):
    """iid levelled at 0.5, above 1.1x slight's bound (~0.37): out of order whatever slight does."""
    st = Study(tmp_path).seeds("iid", flat(0.5), participation=P).seeds("slight", geometric(0.99, 99, 1e-3), participation=P)
    assert st.judge("ordered_levels", ["iid", "slight"], {"participation": "any"})["verdict"] == NOT


def test_participation_every_ignores_sampled_runs_and_the_smallest_K_is_judged(tmp_path):
    st = splits(tmp_path, (1e-3, 2e-3, 3e-3))
    r = st.judge("ordered_levels", list(SPLITS))                      # default: every agent
    assert r["verdict"] == UNDECIDED and r["rows"] == [] and "at least two" in r["decide"]
    st.seeds("iid", flat(9e-3), K=2, participation=P)                  # smaller K, above heavy
    assert st.judge("ordered_levels", list(SPLITS), {"participation": "any"})["verdict"] == NOT


def test_the_verdict_table():
    assert order_verdict([OK, OK], OK) == REPRODUCED
    assert order_verdict([OK, FAIL], OPEN) == UNDECIDED
    assert order_verdict([OPEN, OK], OK) == UNDECIDED
    assert order_verdict([FAIL, OPEN], FAIL) == NOT


# ---- the participation param of ends_as_low and larger_k_faster ----------------------------------
def test_ends_as_low_under_the_experiments_participation(tmp_path):
    st = Study(tmp_path).seeds("t", flat(2e-3), participation=P).seeds("t", flat(1e-3), name="rfedavg", participation=P)
    assert st.judge("ends_as_low", ["t"])["verdict"] == UNDECIDED       # every agent: no runs
    r = st.judge("ends_as_low", ["t"], {"participation": "any"})
    assert r["verdict"] == NOT and r["rows"][0]["ratio"] == pytest.approx(2.0)
    assert "under the experiment's participation" in r["rule_text"]


def test_larger_k_faster_under_the_experiments_participation(tmp_path):
    st = Study(tmp_path).seeds("k", geometric(0.9, 100, 1e-4), K=2, participation=P)
    st.seeds("k", geometric(0.5, 100, 1e-4), K=8, participation=P)
    assert st.judge("larger_k_faster", ["k"])["verdict"] == UNDECIDED
    r = st.judge("larger_k_faster", ["k"], {"participation": "any", "up_to_a_point": False})
    assert r["verdict"] == REPRODUCED
    assert [row["K"] for row in r["rows"]] == ["8 vs 2"]


# ---- seeds: plateaus told apart by their interval across seeds --------------------------------------
def noisy(level, d, T=100):
    """Falls to ``level`` by round 20, then alternates level (1 - d), level (1 + d): median
    ``level`` over any even window."""
    tail = np.where(np.arange(T - 20) % 2 == 0, level * (1 - d), level * (1 + d))
    return np.r_[np.geomspace(1.0, level, 21), tail]


@pytest.mark.parametrize("n, want", [(1, UNDECIDED), (2, UNDECIDED), (3, NOT)])
def test_ordered_levels_never_refuted_by_fewer_than_three_seeds(tmp_path, n, want):
    st = Study(tmp_path)
    for split, level in zip(SPLITS, (3e-3, 2e-3, 1e-3)):
        st.seeds(split, noisy(level, 0.1), n)
    r = st.judge("ordered_levels", list(SPLITS))
    assert r["verdict"] == want
    if n < 3:
        assert "at least 3" in r["decide"]


def test_ordered_levels_pairs_seeds_whose_plateaus_overlap(tmp_path):
    """Per seed s, slight is 1.5x iid and heavy 1.5x slight, the seeds' scales 1, 3, 9: the seeds'
    plateaus overlap across splits, but paired each split is 1.5x the one before: reproduced;
    in reverse order: not reproduced."""
    st = Study(tmp_path)
    for i, split in enumerate(SPLITS):
        st.seeds(split, lambda s, i=i: flat(1e-4 * 3 ** s * 1.5 ** i))
    assert st.judge("ordered_levels", list(SPLITS))["verdict"] == REPRODUCED
    assert st.judge("ordered_levels", list(SPLITS[::-1]))["verdict"] == NOT


def test_given_probabilities_of_a_participation_sweep_are_three_methods(tmp_path):
    """p_i, 0.8 p_i, 0.6 p_i (Figure 12's sweep) are three legend entries and three rows of a
    measurement, not three seeds of one method."""
    from rfl.participation.base import label

    sweep = [{"scheme": "bernoulli_estimated", "probabilities": [c * 0.5, c * 1.0]} for c in (1.0, 0.8, 0.6)]
    assert [label(p) for p in sweep] == [f"bernoulli_estimated p_i given, mean {m:.3g}" for m in (0.75, 0.6, 0.45)]
    st = Study(tmp_path)
    for p, level in zip(sweep, (1e-3, 2e-3, 3e-3)):
        st.run("sweep", flat(level), participation=p)
    r = st.judge("final_values", ["sweep"])
    got = {row["method"]: row["excess_risk, last"] for row in r["rows"]}
    assert got == pytest.approx({f"RFedAGS-K=5, bernoulli_estimated p_i given, mean {m:.3g}": v
                                 for m, v in ((0.75, 1e-3), (0.6, 2e-3), (0.45, 3e-3))})

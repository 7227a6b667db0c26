"""Gaps that mutation testing of rfl/claims left open (fourth batch): a rule class's contract
errors accumulate, a method's scalar K names an LSA cell, the rows of improves_by_factor,
ends_as_low, linear_rate and decaying_more_accurate name their columns, larger_k_faster with an
undecided experiment beside a reproduced one, the ratio in converges' note, and the start of a
stationary cell without a recorded contraction. Expected values follow from the constructed
inputs (an exact geometric curve has R^2 = 1 and ratio q^T; a floored curve's plateau is its
floor; 10 x 0.5^t <= 0.1 first at t = 7).

Two survivors of the batch are equivalent: ``rounds_to_level_off``'s NaN when no extended
round qualifies is unreachable (a curve not levelled with a positive Aitken limit has
q^n < 5/6, so over 1000 T extra rounds the model's excess falls below the limit's float
resolution and the window ratio reaches 1 < factor), and ``lowest_level.crossing``'s q < 1 is
implied for a curve not levelled off (not ``levelled`` gives q < factor^(-1/n) < 1,
``still_contracting`` gives q <= sqrt(rate) < 1)."""

from __future__ import annotations

import numpy as np
import pytest

from rfl.claims import lsa_cells
from rfl.claims.rule import Evidence, Rule
from rfl.claims.rules.stationary_matches_prediction import start_forgotten_at
from rfl.claims.verdicts import REPRODUCED, UNDECIDED

from test_claim_rules_newer import Study, geometric, pair
from test_lsa_claims import config_for, judge, row


def test_contract_errors_list_every_missing_part():
    """A class without judge, describe and summary lacks all three (the experiments schema it
    inherits is valid, so it must not hide the others)."""
    class Bare(Rule):                   # no ``name``: not declared, so not checked on creation
        pass

    errors = Bare.contract_errors(deep=True)
    assert "does not implement judge, describe" in errors
    assert "declares no summary (a non-empty string)" in errors


def test_a_scalar_K_names_a_cell_as_a_one_element_list_does():
    cfg = config_for([row()])
    cfg["experiments"]["e0"]["methods"] = [{"algorithm": "fedavg", "K": 4}, {"algorithm": "scafflsa", "K": [4, 8]}]
    assert lsa_cells.experiment_cells(Evidence({"config": cfg}, ["e0"])) == \
        [("exact", "heterogeneous", 2, 0.5, 4, 0), ("exact", "heterogeneous", 2, 0.5, 8, 0)]   # (..., H, replicas: 0 = one chain)


def test_improves_by_factor_row_shows_the_rounds_run(tmp_path):
    j = judge(tmp_path, "improves_by_factor", [row(rounds=12)])
    assert j.verdict == REPRODUCED and j.rows[0]["rounds"] == "12"


def test_ends_as_low_rows_name_K_and_with_two_experiments_the_experiment(tmp_path):
    """Two experiments, each RFedAGS and RFedAvg at K = 50 (3 seeds), both levelled at 1e-4: one row each,
    named by experiment and K; ratio of the plateaus 1."""
    st = pair(tmp_path, geometric(0.7, 100, 1e-4), geometric(0.7, 100, 1e-4))
    st.seeds("u", geometric(0.7, 100, 1e-4), K=50).seeds("u", geometric(0.7, 100, 1e-4), name="rfedavg", K=50)
    r = st.judge("ends_as_low", ["t", "u"])
    assert r["verdict"] == REPRODUCED
    assert [(x["experiment"], x["K"]) for x in r["rows"]] == [("t", "50"), ("u", "50")]
    assert r["rows"][0]["ratio"] == pytest.approx(1.0)


def test_linear_rate_row_shows_R2_of_an_exact_geometric_curve(tmp_path):
    """log 0.9^t is a line: R^2 = 1, contraction 0.9."""
    r = Study(tmp_path).seeds("h", geometric(0.9, 200)).judge("linear_rate", ["h"])
    assert r["rows"][0]["R^2 (median)"] == pytest.approx(1.0)
    assert r["rows"][0]["contraction/round"] == pytest.approx(0.9)
    assert r["rows"][0]["contraction interval"] == "[0.9, 0.9]" and r["verdict"] == REPRODUCED


def test_decaying_more_accurate_rows_show_both_plateaus(tmp_path):
    """Fixed 0.5^t floored at 1e-3, decaying floored at 1e-5: the plateaus are the floors."""
    st = Study(tmp_path).seeds("f", np.maximum(0.5 ** np.arange(101.0), 1e-3)) \
        .seeds("d", np.maximum(0.5 ** np.arange(101.0), 1e-5))
    r = st.judge("decaying_more_accurate", {"fixed": "f", "decaying": "d"})
    assert r["verdict"] == REPRODUCED
    assert r["rows"][0]["fixed, plateau"] == pytest.approx(1e-3)
    assert r["rows"][0]["decaying, plateau"] == pytest.approx(1e-5)


def test_larger_k_faster_undecided_beside_reproduced_is_undecided(tmp_path):
    """Experiment a: K = 1, 2, 4, 8 at 0.9^t, 0.5^t, 0.2^t, 0.2^t floored, 3 seeds (K = 8 no
    faster: reproduced, both halves); experiment b has one K (nothing to compare: undecided).
    The undecided experiment could still fail, so the claim is undecided."""
    st = Study(tmp_path)
    for K, q in zip((1, 2, 4, 8), (0.9, 0.5, 0.2, 0.2)):
        st.seeds("a", np.maximum(q ** np.arange(151.0), 1e-10), K=K)
    st.seeds("b", np.maximum(0.5 ** np.arange(151.0), 1e-4), K=1)
    assert st.judge("larger_k_faster", ["a"])["verdict"] == REPRODUCED
    assert st.judge("larger_k_faster", ["a", "b"])["verdict"] == UNDECIDED

def test_converges_note_gives_last_over_round_0(tmp_path):
    """5 x 0.99^t over 200 rounds: last / round 0 = 0.99^200 = 0.134 (not 5^2 x 0.134)."""
    r = Study(tmp_path).run("h", geometric(0.99, 200, start=5.0)).judge("converges", ["h"])
    assert r["verdict"] == UNDECIDED
    assert f"({0.99 ** 200:.3g} of its round-0 value)" in "\n".join(r["notes"])


def test_start_forgotten_without_a_contraction_is_nan():
    """initial 10, se 0.1, contraction 0.5: 10 x 0.5^t <= 0.1 first at t = 7; no contraction
    recorded: NaN."""
    assert start_forgotten_at({"contraction": 0.5, "initial": 10.0, "fedlsa_plateau_se": 0.1}) == 7.0
    assert np.isnan(start_forgotten_at({"initial": 10.0, "fedlsa_plateau_se": 0.1}))


def test_converges_margin_names_the_ratio_and_the_claim(tmp_path):
    """0.9^t over 200 rounds: last / round 0 = 0.9^200 = 7.06e-10, against the factor 1e-3."""
    r = Study(tmp_path).seeds("h", geometric(0.9, 200)).judge("converges", ["h"])
    assert r["margin"] == f"RFedAGS-K=5: last / round 0 {0.9 ** 200:.3g}, claim <= 0.001 (median over 3 seeds)"

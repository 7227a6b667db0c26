"""Gaps that mutation testing of rfl/claims left open (third batch): what a rule class without a
summary is told, a report cell of a value that is neither a number nor text, the note on seeds
that diverged, the rows and notes of several experiments (converges, ends_as_low), the rounds
ends_as_low says would level a curve off, curves_within_factor's explanation at every K, the
improves_by_factor and stationary_matches_prediction notes, and the bias rounds without a
positive prediction. Expected values follow from the constructed inputs."""

from __future__ import annotations

import numpy as np

from rfl.claims import curves as C
from rfl.claims.judge import markdown_table
from rfl.claims.rule import Rule
from rfl.claims.rules.bias_matches_prediction import rounds_needed
from rfl.claims.verdicts import NOT, REPRODUCED, UNDECIDED

from test_claim_rules import _table
from test_claim_rules_newer import Study, geometric
from test_lsa_claims import judge, pool_row, row


def test_a_rule_without_a_summary_is_told_so():
    class NoSummary(Rule):                        # no ``name``: not declared, only checked
        def judge(self, ev, p):
            return None

        def describe(self, p):
            return ""

    assert NoSummary.contract_errors() == ["declares no summary (a non-empty string)"]


def test_a_cell_neither_text_nor_number_is_shown_as_itself():
    """A tuple is neither text nor a number: the cell shows its str, "(1, 2)"."""
    assert markdown_table([{"a": (1, 2)}])[2].strip("| ") == "(1, 2)"


def test_the_seed_note_says_how_a_diverged_seed_counts():
    """Seeds diverged at rounds 4 and 6 of three: 2 of 3, first at round 4."""
    runs = [_table(geometric(0.3, 10), diverge_at=4), _table(geometric(0.5, 10), diverge_at=6),
            _table(geometric(0.9, 10))]
    assert C.seed_note(5, runs) == ("- K = 5: 2 of 3 seeds diverged (first at round 4); "
                                    "each counts as +inf in the median from the round it diverged on.")


def test_no_bias_rounds_without_a_positive_prediction():
    """A prediction of 0 has no relative tolerance to reach (log 0): NaN, as for no contraction."""
    assert np.isnan(rounds_needed({"contraction": 0.5, "initial": 10.0, "predicted_bias_sq": 0.0}, 0.01))
    # 10 x 0.5^t <= 0.01 x 2 first at t = ceil(log2(500)) = 9
    assert rounds_needed({"contraction": 0.5, "initial": 10.0, "predicted_bias_sq": 2.0}, 0.01) == 9.0


def test_converges_one_recorded_round_is_undecided_and_says_why(tmp_path):
    r = Study(tmp_path).run("h", [0.5]).judge("converges", ["h"])
    assert r["verdict"] == UNDECIDED
    assert r["notes"] == ["- RFedAGS-K=5: undecided: fewer than two recorded rounds."]
    assert r["decide"] == "RFedAGS-K=5: fewer than two recorded rounds"


def test_converges_rows_of_several_experiments_name_their_experiment(tmp_path):
    st = Study(tmp_path).run("h", geometric(0.9, 200)).run("g", geometric(0.9, 200))
    r = st.judge("converges", ["h", "g"])
    assert [x["experiment"] for x in r["rows"]] == ["h", "g"]


def test_ends_as_low_rows_and_notes_of_several_experiments_name_their_experiment(tmp_path):
    """RFedAGS levelled at 1e-4 against RFedAvg still falling (0.97^t): undecided in both."""
    st = Study(tmp_path)
    for e in ("t", "u"):
        st.run(e, geometric(0.7, 100, 1e-4), K=50).run(e, geometric(0.97, 100, 1e-4), name="rfedavg", K=50)
    r = st.judge("ends_as_low", ["t", "u"])
    assert [x["experiment"] for x in r["rows"]] == ["t", "u"]
    assert r["notes"][0].startswith("- `t`, K = 50: rfedavg is still decreasing")
    assert r["notes"][1].startswith("- `u`, K = 50: rfedavg is still decreasing")


def test_ends_as_low_counts_the_rounds_to_level_off_from_the_last_round(tmp_path):
    """RFedAvg 0.97^t + 1e-4 recorded up to round 100: it levels off after ``extra`` more
    rounds (rounds_to_level_off), 100 + extra in all."""
    avg = geometric(0.97, 100, 1e-4)
    r = Study(tmp_path).run("t", geometric(0.7, 100, 1e-4), K=50).run("t", avg, name="rfedavg", K=50) \
        .judge("ends_as_low", ["t"])
    extra = C.rounds_to_level_off(C.median_curve([_table(avg)]), 1.2)
    assert r["verdict"] == UNDECIDED and 0 < extra < np.inf
    assert f"after about {int(extra)} more rounds, {100 + int(extra)} in all" in r["decide"]


def test_ends_as_low_decided_has_nothing_to_decide(tmp_path):
    """Both levelled at the same floor 1e-4, 3 seeds: reproduced, so no ``decide``."""
    r = Study(tmp_path).seeds("t", geometric(0.7, 100, 1e-4), K=50) \
        .seeds("t", geometric(0.7, 100, 1e-4), name="rfedavg", K=50).judge("ends_as_low", ["t"])
    assert r["verdict"] == REPRODUCED and r["decide"] is None


def test_curves_within_factor_names_every_k_in_its_margin(tmp_path):
    """0.5^t against 0.9^t at K = 1 and K = 5 (3 seeds): rates apart at both, each K in the margin."""
    st = Study(tmp_path)
    for K in (1, 5):
        st.seeds("t", geometric(0.5, 60), K=K).seeds("t", geometric(0.9, 60), name="rfedavg", K=K)
    r = st.judge("curves_within_factor", ["t"])
    assert r["verdict"] == NOT
    assert r["margin"].startswith("K = 1: rate ratio ") and "; K = 5: rate ratio " in r["margin"]


def test_improves_by_factor_a_levelled_scafflsa_is_not_said_to_be_falling(tmp_path):
    """SCAFFLSA at 2e-4 (far above round-off 1e-18 x 10) with per-round factor 1: no fall, so
    its note carries no level remark."""
    j = judge(tmp_path, "improves_by_factor", [row()])
    assert j.notes[0].endswith("after 12 rounds: SCAFFLSA lowers the error by a factor 1e+04.")


def test_stationary_note_counts_the_agreeing_cells_and_the_largest_z(tmp_path):
    """Two cells at their prediction with z = 0.5 and -1.25: both agree, largest |z| 1.25."""
    j = judge(tmp_path, "stationary_matches_prediction",
              [pool_row(z=0.5), pool_row(setting="homogeneous", z=-1.25)])
    assert j.verdict == REPRODUCED
    assert "2 of 2 cells agree (largest |z| = 1.25)." in j.notes

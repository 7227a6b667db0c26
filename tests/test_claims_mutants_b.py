"""Gaps that mutation testing of rfl/claims left open (second batch): the number format of the
report's tables, R^2 of a fit that has nothing to explain, the row and note names of the
converges, stationary_matches_prediction and improves_significantly rules, their ``decide``
on a decided claim, and the rule texts that state what the rules decide. Expected values follow
from the constructed inputs: 4 significant figures of 1/3, a geometric curve's last value, the
cell's own plateau."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rfl.claims import curves as C
from rfl.claims.judge import markdown_table
from rfl.claims.rules.larger_k_faster import halves
from rfl.claims.verdicts import FAIL, NOT, OPEN, REPRODUCED
from rfl.registry import RULES

from test_claim_rules_newer import Study, geometric
from test_lsa_claims import T99, judge, pool_row


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_numbers_in_a_report_table_have_four_significant_figures():
    """1/3 -> 0.3333, 123456 -> 1.235e+05 (Python's ``.4g``), a float64 as a float."""
    table = markdown_table([{"a": 1 / 3, "b": 123456, "c": np.float64(2) / 3}])
    assert _cells(table[2]) == ["0.3333", "1.235e+05", "0.6667"]


def test_a_constant_curve_is_fitted_exactly():
    """log 1 = 0 at every round: the line 0 + 0 t fits with no residual, R^2 = 1 (no variance
    to explain, none left), contraction exp(0) = 1, no decrease."""
    fit = C.linear_phase(pd.Series(np.ones(11)))
    assert fit["status"] == "ok" and fit["r2"] == 1.0 and fit["rate"] == 1.0 and fit["decrease"] == 1.0


def test_converges_rows_name_the_first_and_last_excess_risk(tmp_path):
    """0.2 x 0.9^t over 200 rounds: round 0 at 0.2, the last at 0.2 x 0.9^200."""
    r = Study(tmp_path).run("h", geometric(0.9, 200, start=0.2)).judge("converges", ["h"])
    row = r["rows"][0]
    assert row["excess risk, round 0"] == pytest.approx(0.2)
    assert row["excess risk, last"] == pytest.approx(0.2 * 0.9 ** 200)
    assert row["rounds"] == "200"


def test_stationary_rows_show_the_measured_and_predicted_plateau_and_a_decided_claim_has_no_decide(tmp_path):
    """A cell 0.5 t se above its prediction agrees; one 2 t se above does not; both are decided,
    so nothing would decide them."""
    tol = T99[5] * 0.1
    j = judge(tmp_path, "stationary_matches_prediction", [pool_row(predicted_plateau=1.0 + 0.5 * tol)])
    assert j.verdict == REPRODUCED and j.decide is None
    assert j.rows[0]["FedLSA plateau"] == 1.0
    assert j.rows[0]["predicted plateau"] == pytest.approx(1.0 + 0.5 * tol)
    j = judge(tmp_path, "stationary_matches_prediction", [pool_row(predicted_plateau=1.0 + 2 * tol)])
    assert j.verdict == NOT and j.decide is None


def test_improves_significantly_note_names_the_cell_as_its_row_does(tmp_path):
    """The rows name a cell by setting, N and H (the table has one eta per cell); the note names
    it the same way, without eta."""
    margin = T99[5] * np.hypot(0.1, 0.1)
    cell = pool_row(predicted_bias_sq_pool=1.0, scafflsa_plateau=1.0 - 2 * margin)
    j = judge(tmp_path, "improves_significantly", [cell])
    assert j.verdict == REPRODUCED
    assert j.notes[0].startswith("- heterogeneous, N = 2, H = 4: bias^2 1 vs variance 0.5;")
    assert "eta" not in j.notes[0] and j.notes[0].endswith(": improves.")


def test_linear_rate_text_says_whose_runs_it_reads():
    p = RULES["linear_rate"].defaults()
    assert "(rfedags, every agent)" in RULES["linear_rate"]().describe({**p, "participation": "every"})
    other = RULES["linear_rate"]().describe({**p, "participation": "any"})
    assert "every agent" not in other and "(rfedags, under the experiment's participation)" in other


def test_larger_k_faster_text_states_both_halves_and_its_bound():
    """The rule's text states what ``halves`` decides: the first pair at most max_ratio, a later
    pair wholly above it for "up to a point", and drops the second half when told to."""
    p = RULES["larger_k_faster"].defaults()
    text = RULES["larger_k_faster"]().describe(p)
    assert "the first pair's interval at most 0.95 (not reproduced if wholly above)" in text
    assert "some later pair's ratio lies wholly above 0.95" in text
    assert "later pair" not in RULES["larger_k_faster"]().describe({**p, "up_to_a_point": False})
    assert halves([FAIL, OPEN])[0] == NOT

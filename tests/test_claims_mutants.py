"""Tests that pin what surviving mutants of ``rfl.claims`` could change: the evidence rows'
column names and values a claim page shows, the selection a measurement names, an experiment
without run tables, and the round a start is forgotten at when no contraction < 1 is known.

Expected values come from the constructed inputs: a curve that falls as 0.9^t for 50 rounds
then stays flat has contraction 0.9 over its linear phase; the median of three seeds is the
middle one; log(se / initial) / log(rho) is undefined for rho outside (0, 1).
"""

from __future__ import annotations

import numpy as np
import pytest

from rfl.claims import curves as C
from rfl.claims.rule import Evidence
from rfl.claims.rules.stationary_matches_prediction import start_forgotten_at
from rfl.claims.verdicts import REPRODUCED
from rfl.registry import RULES

from test_claim_rules import _alike, _table, geometric as geom_r
from test_claim_rules_newer import Study
from test_lsa_claims import judge as lsa_judge, pool_row, row


def test_an_experiment_without_run_tables_has_no_runs():
    """An experiment the spec lists no run tables for reads as no runs, not an error."""
    ev = Evidence({"config": {}, "runs": {}, "tables": {}}, ["x"])
    assert ev.runs("x") == {}
    assert ev.by_k("x") == {}


def test_median_curve_is_named_median_with_or_without_a_diverged_seed():
    """Both branches of median_curve return the summary's ``median`` series: here the middle
    seed: 0.5^t while all three of 0.3^t, 0.5^t, 0.9^t have a value, then 0.9^t, the middle of
    (0.5^t, 0.9^t, inf) once 0.3^t has diverged at round 4."""
    a, b, c = geom_r(0.3, 10), geom_r(0.5, 10), geom_r(0.9, 10)
    plain = C.median_curve([_table(a), _table(b), _table(c)])
    one = C.median_curve([_table(a, diverge_at=4), _table(b), _table(c)])
    want = np.r_[b[:4], c[4:]]
    assert plain.name == one.name == "median"
    assert np.allclose(one.values, want)


def test_table_rows_names_its_selection():
    p = {**RULES["table_rows"].defaults(), "table": "table2",
         "where": {"protocol": "heldout", "normalisation": "pooled"}, "columns": ["r", "nmse"]}
    assert RULES["table_rows"]().describe(p) == (
        "the rows of `table2` (protocol = heldout, normalisation = pooled), columns r, nmse")


def test_improves_by_factor_rows_show_the_rounds_run(tmp_path):
    cells = [row(H=2, rounds=12), row(H=8, rounds=30)]
    j = lsa_judge(tmp_path, "improves_by_factor", cells)
    assert j.verdict == REPRODUCED
    assert [r["rounds"] for r in j.rows] == ["12", "30"]


def test_improves_significantly_rows_show_the_predicted_variance(tmp_path):
    j = lsa_judge(tmp_path, "improves_significantly", [pool_row(predicted_bias_sq_pool=0.75,
                                                               predicted_variance=0.25)])
    assert j.rows[0]["pred. bias^2"] == 0.75 and j.rows[0]["pred. variance"] == 0.25


def test_stationary_rows_say_yes_for_an_agreeing_cell(tmp_path):
    j = lsa_judge(tmp_path, "stationary_matches_prediction", [pool_row()])
    assert j.verdict == REPRODUCED and j.rows[0]["agrees"] == "yes"


@pytest.mark.parametrize("rho", [np.nan, 1.0, 2.0, 0.0, -0.5])
def test_start_forgotten_at_needs_a_contraction_below_one(rho):
    """initial x rho^t <= se has no first round to compute for rho outside (0, 1)."""
    assert np.isnan(start_forgotten_at({"contraction": rho, "initial": 1e3, "fedlsa_plateau_se": 0.1}))


def test_start_forgotten_at_needs_a_positive_start_and_se():
    assert np.isnan(start_forgotten_at({"contraction": 0.5, "initial": 0.0, "fedlsa_plateau_se": 0.1}))
    assert np.isnan(start_forgotten_at({"contraction": 0.5, "initial": 1e3, "fedlsa_plateau_se": 0.0}))
    # 1e3 x 0.5^t <= 1e3 x 2^-10 first at t = 10
    assert start_forgotten_at({"contraction": 0.5, "initial": 1e3, "fedlsa_plateau_se": 1e3 * 2 ** -10}) == 10.0


def test_plateau_order_rows_show_the_contraction_per_round(tmp_path):
    """0.9^t for t <= 50, then flat at 0.9^50: 90% of the log-decrease is reached at t = 45,
    and the fit over rounds 0..45 of an exact geometric curve has contraction 0.9."""
    curve = 0.9 ** np.minimum(np.arange(201.0), 50)
    st = Study(tmp_path).run("a6", curve, params={"S": 6}).run("a20", curve * 0.5, params={"S": 20})
    r = st.judge("plateau_order", ["a6", "a20"], {"by": ["S"]})
    assert [x["contraction/round"] for x in r["rows"]] == [pytest.approx(0.9), pytest.approx(0.9)]


def test_curves_within_factor_rows_name_their_K(tmp_path):
    f = geom_r(0.5, 20, floor=1e-4)
    j = _alike(tmp_path, {1: [f] * 3, 3: [f] * 3}, {1: [1.5 * f] * 3, 3: [1.5 * f] * 3})
    assert [x["K"] for x in j.rows] == ["1", "3"]


def test_converges_rows_name_the_experiment_when_it_reads_several(tmp_path):
    st = Study(tmp_path).run("h1", geom_r(0.9, 200, start=0.2)).run("h2", geom_r(0.9, 200, start=0.4))
    r = st.judge("converges", ["h1", "h2"])
    assert [x["experiment"] for x in r["rows"]] == ["h1", "h2"]
    one = Study(tmp_path / "one").run("h1", geom_r(0.9, 200, start=0.2)).judge("converges", ["h1"])
    assert "experiment" not in one["rows"][0]

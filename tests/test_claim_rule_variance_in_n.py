"""The rule ``variance_in_n`` (linear speed-up: FedLSA's and SCAFFLSA's variance term falls as
1/N) on constructed rows of the LSA study's table: both sides of the factor bound, the
undecided side (interval straddling a bound, start not forgotten, a non-positive variance), and
the seeds it asks for. Expected numbers are computed here from the inputs."""

from __future__ import annotations

import numpy as np
import pytest

from rfl.claims.verdicts import NOT, PARTLY, REPRODUCED, UNDECIDED
from tests.test_lsa_claims import judge, row


def cell(N, *, fed=None, fed_se=0.01, scaf=None, scaf_se=0.01, bias_sq=0.5, H=4, **kw):
    """A pool-oracle homogeneous cell at N agents: FedLSA's plateau = bias_sq + ``fed``,
    SCAFFLSA's plateau ``scaf``; started long ago (transient 0, SCAFFLSA's rate 1)."""
    base = {"transient": 0.0, "scafflsa_rate": 1.0} | kw
    return row(oracle="pool", setting="homogeneous", N=N, H=H, predicted_bias_sq_pool=bias_sq,
               fedlsa_plateau=bias_sq + fed, fedlsa_plateau_se=fed_se, scafflsa_plateau=scaf,
               scafflsa_plateau_se=scaf_se, fedlsa_seeds=5, **base)


def test_ratio_at_the_expected_n_ratio_is_reproduced(tmp_path):
    # FedLSA variance 1.0 vs 0.1 (plateau minus bias^2 0.5), SCAFFLSA 2.0 vs 0.2: ratios 10
    j = judge(tmp_path, "variance_in_n", [cell(10, fed=1.0, scaf=2.0), cell(100, fed=0.1, scaf=0.2)])
    assert j.verdict == REPRODUCED and j.decide is None
    fed, scaf = j.rows
    assert fed["algorithm"] == "FedLSA" and fed["ratio"] == pytest.approx(10.0)
    # u = r sqrt((0.01/1)^2 + (0.01/0.1)^2)
    assert fed["uncertainty"] == pytest.approx(10 * np.hypot(0.01, 0.1))
    assert scaf["ratio"] == pytest.approx(10.0) and fed["expected"] == 10.0


def test_a_variance_that_does_not_fall_with_n_is_not_reproduced(tmp_path):
    # ratio 1 (no speed-up) for both, far outside [10/1.5, 15]
    j = judge(tmp_path, "variance_in_n", [cell(10, fed=0.1, scaf=0.1, fed_se=1e-3, scaf_se=1e-3),
                                          cell(100, fed=0.1, scaf=0.1, fed_se=1e-3, scaf_se=1e-3)])
    assert j.verdict == NOT


@pytest.mark.parametrize("r, verdict", [(10 / 1.5 * 1.02, REPRODUCED), (10 / 1.5 * 0.98, NOT),
                                        (15 * 0.98, REPRODUCED), (15 * 1.02, NOT)])
def test_both_sides_of_each_factor_bound(tmp_path, r, verdict):
    # negligible standard errors: the ratio alone decides
    j = judge(tmp_path, "variance_in_n", [cell(10, fed=r, scaf=r, fed_se=1e-9, scaf_se=1e-9),
                                          cell(100, fed=1.0, scaf=1.0, fed_se=1e-9, scaf_se=1e-9)])
    assert j.verdict == verdict


def test_one_algorithm_holding_and_one_failing_is_partly(tmp_path):
    j = judge(tmp_path, "variance_in_n", [cell(10, fed=1.0, scaf=0.3, scaf_se=1e-4),
                                          cell(100, fed=0.1, scaf=0.1, scaf_se=1e-4)])
    assert j.verdict == PARTLY


def test_an_interval_straddling_a_bound_is_undecided_with_the_seeds_needed(tmp_path):
    # FedLSA ratio 8 +- 1.2 (se 0.015 of 0.1 on the large N only): [5.6, 10.4] at z = 2 straddles 6.67
    j = judge(tmp_path, "variance_in_n", [cell(10, fed=0.8, fed_se=1e-12, scaf=1.0, scaf_se=1e-12),
                                          cell(100, fed=0.1, fed_se=0.015, scaf=0.1, scaf_se=1e-12)])
    fed = j.rows[0]
    assert fed["ratio"] == pytest.approx(8.0) and fed["uncertainty"] == pytest.approx(1.2)
    assert j.verdict == UNDECIDED
    margin = 8.0 - 10 / 1.5
    need = (1.2 * 2 / margin) ** 2
    assert f"about {need:.1f}x the seeds (5 now)" in j.decide and "FedLSA, homogeneous" in j.decide


def test_a_start_not_forgotten_is_undecided(tmp_path):
    # FedLSA: transient above its se at N = 100; SCAFFLSA: still falling at rate 0.9 over 12 rounds
    j = judge(tmp_path, "variance_in_n", [cell(10, fed=1.0, scaf=1.0),
                                          cell(100, fed=0.1, scaf=0.1, transient=0.02, scafflsa_rate=0.9)])
    assert j.verdict == UNDECIDED
    assert "FedLSA, homogeneous, eta = 0.5, H = 4: more rounds at N = 100" in j.decide
    assert "SCAFFLSA, homogeneous, eta = 0.5, H = 4: more rounds at N = 100" in j.decide
    # SCAFFLSA's late fall 0.1 (1 - 0.9^12) = 0.072 > 2 se = 0.02; with se 0.04 it is forgotten
    j = judge(tmp_path, "variance_in_n", [cell(10, fed=1.0, scaf=1.0),
                                          cell(100, fed=0.1, scaf=0.1, scaf_se=0.04, scafflsa_rate=0.9)])
    assert "SCAFFLSA, homogeneous, eta = 0.5, H = 4: more rounds" not in (j.decide or "")


def test_a_bias_that_swamps_the_variance_is_undecided(tmp_path):
    # FedLSA's plateau below its predicted bias^2 at N = 100: no positive variance to divide by
    j = judge(tmp_path, "variance_in_n", [cell(10, fed=1.0, scaf=1.0),
                                          cell(100, fed=-0.05, fed_se=0.2, scaf=0.1)])
    assert j.verdict == UNDECIDED and "FedLSA, homogeneous, eta = 0.5, H = 4: more seeds" in j.decide


def test_cells_at_one_n_only_decide_nothing(tmp_path):
    j = judge(tmp_path, "variance_in_n", [cell(10, fed=1.0, scaf=1.0)])
    assert j.verdict == UNDECIDED and j.decide


def margin_numbers(margin: str, what: str):
    """(value, low, high, claim) of the first ``"what v [lo, hi], claim ..."`` in a margin."""
    import re
    m = re.search(re.escape(what) + r" (\S+) \[(\S+), (\S+)\], (claim [^;(]+)", margin)
    assert m, margin
    return float(m[1]), float(m[2]), float(m[3]), m[4].strip()


def test_margin_is_the_ratio_with_z_errors_against_the_expected_band(tmp_path):
    # FedLSA ratio 8 +- 1.2, z = 2: [5.6, 10.4] against [10/1.5, 10 x 1.5]; SCAFFLSA 10 +- ~0
    j = judge(tmp_path, "variance_in_n", [cell(10, fed=0.8, fed_se=1e-12, scaf=1.0, scaf_se=1e-12),
                                          cell(100, fed=0.1, fed_se=0.015, scaf=0.1, scaf_se=1e-12)])
    fed, scaf = j.margin.split("; ")
    assert fed.startswith("FedLSA, homogeneous") and scaf.startswith("SCAFFLSA, homogeneous")
    v, lo, hi, claim = margin_numbers(fed, "ratio")
    assert (v, lo, hi) == pytest.approx((8.0, 8.0 - 2 * 1.2, 8.0 + 2 * 1.2), rel=1e-3)
    assert claim == f"claim in [{10 / 1.5:.3g}, 15]"
    assert margin_numbers(scaf, "ratio")[:3] == pytest.approx((10.0, 10.0, 10.0), rel=1e-3)


def test_margin_on_the_undecided_paths(tmp_path):
    # start not forgotten at N = 100: the ratio 10 is still printed, with why it does not count
    j = judge(tmp_path, "variance_in_n", [cell(10, fed=1.0, scaf=1.0),
                                          cell(100, fed=0.1, scaf=0.1, transient=0.02)])
    fed = j.margin.split("; ")[0]
    assert margin_numbers(fed, "ratio")[0] == pytest.approx(10.0)
    assert fed.endswith("(start not forgotten at N = 100)")
    # FedLSA's variance at N = 100 is -0.05 +- 0.2: [-0.45, 0.35], claim > 0
    j = judge(tmp_path, "variance_in_n", [cell(10, fed=1.0, scaf=1.0),
                                          cell(100, fed=-0.05, fed_se=0.2, scaf=0.1)])
    v, lo, hi, claim = margin_numbers(j.margin, "variance N=100")
    assert (v, lo, hi) == pytest.approx((-0.05, -0.45, 0.35)) and claim == "claim > 0"
    j = judge(tmp_path, "variance_in_n", [cell(10, fed=1.0, scaf=1.0)])
    assert j.margin == "numbers of agents N per (setting, eta, H) 1, claim >= 2"


# ---- cells with replicas: the sample is replicas x seeds, stationarity from the window's drift ----
def rep_cell(N, drift=0.0, scaf_drift=0.0, **kw):
    """``cell`` run with 4 replicas per seed; the window's drift of each curve given."""
    return cell(N, replicas=4, fedlsa_drift=drift, scafflsa_drift=scaf_drift,
                scafflsa_rate=0.5, **kw)          # a rate that the one-chain test would reject


@pytest.mark.parametrize("drift, forgotten", [(0.039, True), (0.041, False)])
def test_a_replica_cell_is_stationary_when_its_window_drift_is_within_2z_se(tmp_path, drift, forgotten):
    # se 0.01 at N = 100, z = 2: the bound is 2 x 2 x 0.01 = 0.04 (the rate plays no part)
    j = judge(tmp_path, "variance_in_n", [rep_cell(10, fed=1.0, scaf=1.0, fed_se=1e-3, scaf_se=1e-3),
                                          rep_cell(100, drift=-drift, scaf_drift=-drift, fed=0.1, scaf=0.1)])
    assert (j.verdict == REPRODUCED) is forgotten
    if not forgotten:
        assert j.verdict == UNDECIDED
        assert "FedLSA, homogeneous, eta = 0.5, H = 4, 4 replicas per seed: more rounds at N = 100" in j.decide
        assert "SCAFFLSA, homogeneous, eta = 0.5, H = 4, 4 replicas per seed: more rounds at N = 100" in j.decide


def test_a_replica_cells_transient_still_counts(tmp_path):
    j = judge(tmp_path, "variance_in_n", [rep_cell(10, fed=1.0, scaf=1.0),
                                          rep_cell(100, fed=0.1, scaf=0.1, transient=0.02)])
    assert j.verdict == UNDECIDED and "FedLSA, homogeneous, eta = 0.5, H = 4, 4 replicas per seed: more rounds" in j.decide


def test_replica_cells_compare_with_replica_cells_and_ask_for_replicas(tmp_path):
    # the one-chain cells (ratio 1) are another comparison than the replica cells (ratio 8 +- 1.2)
    j = judge(tmp_path, "variance_in_n", [rep_cell(10, fed=0.8, fed_se=1e-12, scaf=1.0, scaf_se=1e-12),
                                          rep_cell(100, fed=0.1, fed_se=0.015, scaf=0.1, scaf_se=1e-12)],
              extra_rows=[cell(10, fed=0.1, scaf=0.1), cell(100, fed=0.1, scaf=0.1)])
    assert [r["ratio"] for r in j.rows] == pytest.approx([8.0, 10.0])
    need = (1.2 * 2 / (8.0 - 10 / 1.5)) ** 2
    assert j.verdict == UNDECIDED and f"about {need:.1f}x the replicas x seeds (4 x 5 now)" in j.decide

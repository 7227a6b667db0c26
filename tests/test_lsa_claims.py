"""The federated TD(0) / LSA claim rules (rfl/claims/rules: bias_matches_prediction,
improves_by_factor, stationary_matches_prediction, improves_significantly, lsa_table) on
constructed rows of the study's table, each on both sides of each of its thresholds and on
the inputs that leave it undecided (a curve still falling, too few seeds, a start not yet
forgotten, a missing prediction or curve); the rounds a still-falling SCAFFLSA needs are
checked against the closed form of a geometric curve C r^t written as run files.

Expected values are computed here from the inputs: Student quantiles from a printed table,
rounds from log(target / start) / log(rate), window starts from the window's definition.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rfl import io
from rfl.claims import lsa_cells
from rfl.claims.judge import claim_lines, judge_claim
from rfl.claims.rule import Evidence
from rfl.claims.verdicts import NOT, PARTLY, REPRODUCED, UNDECIDED
from rfl.registry import RULES
from rfl.reporting import lsa
from rfl.testing.run_files import write_run


# ---- constructed cells ---------------------------------------------------------------------------
def row(**kw) -> dict:
    """One row of the study's table (rfl.reporting.lsa.summary's columns): an exact-oracle
    heterogeneous cell N = 2, eta = 0.5, H = 4, 12 rounds, 3 seeds, FedLSA at its prediction and
    levelled, SCAFFLSA 1e4 below it."""
    base = {"oracle": "exact", "setting": "heterogeneous", "N": 2, "eta": 0.5, "H": 4, "batch_size": 1,
            "rounds": 12, "initial": 10.0, "predicted_bias_sq": 2.0, "fedlsa_plateau": 2.0, "rel_error": 0.0,
            "fedlsa_window_ratio": 1.0, "scafflsa_last": 2e-4, "scafflsa_window_ratio": 1.0,
            "scafflsa_factor": 1e4, "fedlsa_seeds": 3, "scafflsa_seeds": 3, "scafflsa_rate": 1.0,
            "predicted_plateau": 2.0, "plateau_ratio": 1.0, "predicted_bias_sq_pool": 2.0,
            "predicted_variance": 0.0, "contraction": 0.5, "fedlsa_plateau_se": np.nan, "z": np.nan,
            "transient": 0.0, "scafflsa_plateau": 2e-4, "scafflsa_plateau_se": np.nan}
    return base | kw


def config_for(rows: list[dict]) -> dict:
    """A config with one lsa dataset and experiment per row's cell (the keys Evidence reads)."""
    datasets, experiments = {}, {}
    for i, r in enumerate(rows):
        datasets[f"d{i}"] = {"problem": "lsa", "params": {"setting": r["setting"], "n_agents": r["N"],
                                                          "oracle": r["oracle"]}}
        experiments[f"e{i}"] = {"dataset": f"d{i}", "step": {"rule": "fixed", "alpha": r["eta"]},
                                "methods": [{"algorithm": "fedavg", "K": [r["H"]]},
                                            {"algorithm": "scafflsa", "K": [r["H"]]}]}
        if r.get("replicas"):
            experiments[f"e{i}"]["replicas"] = r["replicas"]
    return {"datasets": datasets, "experiments": experiments, "lsa": {"tail": 0.1}}


def judge(tmp_path, rule: str, rows: list[dict], params: dict | None = None, extra_rows=()):
    """The rule's judgement of ``rows`` (table written as ``rfl lsa`` writes it; ``extra_rows``
    are in the table but not run by the claim's experiments)."""
    path = tmp_path / "fedlsa_bias.csv"
    io.write_table(path, pd.DataFrame([*rows, *extra_rows]))
    spec = {"config": config_for(rows), "runs": {}, "tables": {"lsa": str(path)}}
    ev = Evidence(spec, [f"e{i}" for i in range(len(rows))])
    return RULES[rule]().judge(ev, {**RULES[rule].defaults(), **(params or {})})


# two-sided 99% quantiles of Student's t (printed tables): 1, 4 and 9 degrees of freedom
T99 = {2: 63.657, 5: 4.604, 10: 3.250}


def test_t_quantiles_from_the_printed_table():
    for seeds, q in T99.items():
        assert lsa_cells.t_quantile(seeds, 0.99) == pytest.approx(q, abs=1e-3)
    assert lsa_cells.t_quantile(5, 0.95) == pytest.approx(2.776, abs=1e-3)
    assert np.isnan(lsa_cells.t_quantile(1, 0.99)) and np.isnan(lsa_cells.t_quantile(0, 0.99))
    assert np.isnan(lsa_cells.t_quantile(np.nan, 0.99))


def test_rounds_to_reach_a_target():
    # 8 * 0.5^k <= 1 first at k = 3
    assert lsa_cells.rounds_to_reach(8.0, 0.5, 1.0) == 3.0
    assert lsa_cells.rounds_to_reach(8.0, 0.5, 1.01) == 3.0 and lsa_cells.rounds_to_reach(8.0, 0.5, 0.99) == 4.0
    assert lsa_cells.rounds_to_reach(1.0, 0.9, 0.5) == np.ceil(np.log(0.5) / np.log(0.9))     # 7
    assert lsa_cells.rounds_to_reach(1.0, 0.5, 1.0) == 0.0           # there already
    assert lsa_cells.rounds_to_reach(1.0, 1.0, 1.0) == 0.0           # there, though not falling
    assert lsa_cells.rounds_to_reach(2.0, 1.0, 1.0) == np.inf and lsa_cells.rounds_to_reach(2.0, 1.5, 1.0) == np.inf
    assert lsa_cells.rounds_to_reach(2.0, 0.5, 0.0) == np.inf       # a geometric curve never reaches 0
    for args in ((np.inf, 0.5, 1.0), (2.0, 0.5, np.nan), (2.0, np.inf, 1.0), (2.0, np.nan, 1.0)):
        assert np.isnan(lsa_cells.rounds_to_reach(*args)), args


@pytest.mark.parametrize("round_, tail, want", [
    # window of 40 rounds at tail 0.1: the last round(4.0) = 4 rounds, from round 37
    (37, 0.1, 40), (38, 0.1, 41),
    # 110 rounds: 11 rounds, from round 100; 109 rounds: round(10.9) = 11, from round 99
    (100, 0.1, 110), (1, 0.1, 2), (0, 0.1, 2), (np.inf, 0.1, np.inf),
    # tail 0.5, 20 rounds: 10 rounds from round 11; 21 rounds: round(10.5) = 10 from round 12
    (11, 0.5, 20), (12, 0.5, 21), (5, 1.0, np.inf)])
def test_rounds_for_the_plateau_window_to_start_at_a_round(round_, tail, want):
    assert lsa_cells.rounds_for_window_start(round_, tail, start=2) == want


def test_window_start_is_the_first_round_of_the_plateau_window():
    assert lsa_cells.window_start(40, 0.1) == 37 and lsa_cells.window_start(12, 0.1) == 11
    assert lsa_cells.window_start(2000, 0.1) == 1801


def test_a_claim_reads_the_cells_of_its_experiments_only(tmp_path):
    mine = [row(), row(setting="homogeneous", N=3, eta=0.1, H=10)]
    other = [row(H=8), row(eta=0.25), row(oracle="pool")]           # not run by the experiments
    j = judge(tmp_path, "lsa_table", mine, extra_rows=other)
    assert j.verdict is None and [(r["setting"], r["N"], r["eta"], r["H"]) for r in j.rows] == \
        [("heterogeneous", "2", "0.5", "4"), ("homogeneous", "3", "0.1", "10")]
    # a dataset without an oracle key runs the pool oracle, as `rfl lsa` reads it
    cfg = config_for([row(oracle="pool")])
    del cfg["datasets"]["d0"]["params"]["oracle"]
    assert lsa_cells.experiment_cells(Evidence({"config": cfg}, ["e0"])) == \
        [("pool", "heterogeneous", 2, 0.5, 4, 0)]
    # an experiment of another problem runs no cell
    cfg["datasets"]["d0"]["problem"] = "cpesph"
    assert lsa_cells.experiment_cells(Evidence({"config": cfg}, ["e0"])) == []
    # no table: a measurement with nothing to show, an undecided claim
    ev = Evidence({"config": config_for(mine), "runs": {}, "tables": {}}, ["e0"])
    assert RULES["bias_matches_prediction"]().judge(ev, {"rel_tol": 0.01}).verdict == UNDECIDED
    assert "fedlsa_bias.csv" in RULES["lsa_table"]().judge(ev, {"columns": "bias"}).decide


def test_lsa_table_shows_the_bias_or_the_stationary_columns(tmp_path):
    r = row(oracle="pool", fedlsa_plateau_se=0.01234, predicted_variance=1.0)
    j = judge(tmp_path, "lsa_table", [r], {"columns": "stationary"})
    assert j.rows[0]["FedLSA plateau ± se"] == "2 ± 0.012" and j.rows[0]["pred. variance"] == 1.0
    j = judge(tmp_path, "lsa_table", [row(), row(H=1, rel_error=np.nan)], {"columns": "bias"})
    assert [x["rel. error"] for x in j.rows] == [0.0, "n/a (H = 1: bias 0)"]
    assert not RULES["lsa_table"].judges


# ---- bias_matches_prediction -------------------------------------------------------------------
@pytest.mark.parametrize("rel, ratio, want", [
    (0.009, 1.0, REPRODUCED), (0.01, 1.0, REPRODUCED), (0.011, 1.0, NOT),
    (0.0, 1.009, REPRODUCED), (0.0, 0.991, REPRODUCED),
    (0.0, 0.989, NOT),                                  # rising at the end: not levelled, not falling
    (0.0, 1.011, UNDECIDED), (0.5, 1.011, UNDECIDED)])  # still falling: more rounds decide it
def test_fedlsa_bias_on_both_sides_of_the_tolerance(tmp_path, rel, ratio, want):
    cells = [row(rel_error=rel, fedlsa_plateau=2.0 * (1 + rel), fedlsa_window_ratio=ratio),
             row(H=1, rel_error=np.nan, predicted_bias_sq=0.0, fedlsa_window_ratio=5.0)]   # H = 1: not judged
    j = judge(tmp_path, "bias_matches_prediction", cells)
    assert j.verdict == want
    assert len(j.rows) == 1 and "- H = 1 (heterogeneous, N = 2): the bias is 0" in "\n".join(j.notes)
    if want == UNDECIDED:
        # the transient 10 x 0.5^t <= 0.01 x 2 first at t = ceil(log(0.002) / log(0.5)) = 9
        assert j.decide == ("heterogeneous, N = 2, eta = 0.5, H = 4: FedLSA still falls by a factor 1.011 "
                            "over its plateau window; the transient falls below 0.01 x the prediction after "
                            "about 9 rounds (12 run)")
    else:
        assert j.decide is None


def test_fedlsa_bias_threshold_is_a_parameter_and_inclusive(tmp_path):
    cell = row(rel_error=0.25, fedlsa_plateau=2.5, fedlsa_window_ratio=1.25)
    assert judge(tmp_path, "bias_matches_prediction", [cell], {"rel_tol": 0.25}).verdict == REPRODUCED
    cell = row(rel_error=0.25, fedlsa_plateau=2.5, fedlsa_window_ratio=0.75)
    assert judge(tmp_path, "bias_matches_prediction", [cell], {"rel_tol": 0.25}).verdict == REPRODUCED
    assert judge(tmp_path, "bias_matches_prediction", [cell], {"rel_tol": 0.24}).verdict == NOT


def test_fedlsa_bias_partly_missing_and_diverged(tmp_path):
    ok, bad = row(), row(setting="homogeneous", rel_error=0.5, fedlsa_plateau=3.0)
    j = judge(tmp_path, "bias_matches_prediction", [ok, bad])
    assert j.verdict == PARTLY and j.notes[0].startswith("1 of 2 cells with H > 1 agree; the largest relative "
                                                         "error is 5.00e-01 (homogeneous, N = 2, H = 4")
    nopred = row(H=8, rel_error=np.nan, predicted_bias_sq=np.nan)
    j = judge(tmp_path, "bias_matches_prediction", [ok, nopred])
    assert j.verdict == UNDECIDED and "no prediction or no FedLSA curve" in j.decide
    diverged = row(rel_error=np.inf, fedlsa_plateau=np.inf)
    assert judge(tmp_path, "bias_matches_prediction", [diverged]).verdict == NOT
    # a pool-oracle cell is not judged by this rule (its plateau carries the noise)
    j = judge(tmp_path, "bias_matches_prediction", [ok, row(oracle="pool", rel_error=0.5)])
    assert j.verdict == REPRODUCED and "1 cell(s) of the pool oracle are not judged" in j.notes[2]
    # without a cell with H > 1 nothing is judged
    assert judge(tmp_path, "bias_matches_prediction", [row(H=1)]).verdict == UNDECIDED


# ---- improves_by_factor (SCAFFLSA removes the bias) -----------------------------------------
@pytest.mark.parametrize("factors, want", [
    ((100.0, 1e4), REPRODUCED), ((99.9, 1e4), PARTLY), ((99.9, 2.0), NOT), ((0.5, 1e3), PARTLY)])
def test_scafflsa_factor_of_levelled_curves(tmp_path, factors, want):
    cells = [row(H=H, scafflsa_factor=f, scafflsa_last=2.0 / f) for H, f in zip((2, 8), factors)]
    cells.append(row(H=1, scafflsa_factor=1e-3))                     # H = 1: no bias to remove
    j = judge(tmp_path, "improves_by_factor", cells)
    assert j.verdict == want and len(j.rows) == 2 and j.decide is None
    if 0.5 in factors:
        assert "SCAFFLSA's error is 2x FedLSA's (factor 0.5): no improvement yet." in "\n".join(j.notes)


def _fall(drop, rounds=12):
    """The per-round factor whose fall over the second half of ``rounds`` rounds (the last
    round(rounds / 2) rounds, i.e. round(rounds / 2) - 1 steps) is ``drop``."""
    steps = max(2, round(0.5 * rounds)) - 1
    return drop ** (-1 / steps)


@pytest.mark.parametrize("drop, want", [(1.011, UNDECIDED), (1.009, NOT)])
def test_scafflsa_short_of_the_factor_is_undecided_while_it_still_falls(tmp_path, drop, want):
    rate = _fall(drop)                             # 12 rounds: the last 6, 5 steps
    cell = row(scafflsa_factor=10.0, scafflsa_last=0.2, scafflsa_rate=rate)
    j = judge(tmp_path, "improves_by_factor", [cell])
    assert j.verdict == want
    if want == UNDECIDED:
        more = np.ceil(np.log(0.02 / 0.2) / np.log(rate))          # 0.2 rate^n <= 2 / 100
        assert j.decide == f"about {12 + more:.0f} rounds at heterogeneous, N = 2, eta = 0.5, H = 4 (12 run)"
        assert j.rows[0]["rounds to reach the factor"] == 12 + more
    else:
        assert j.decide is None and "Fails: SCAFFLSA has levelled off" in "\n".join(j.notes)
    # beside a cell that holds: undecided while it may still hold, partly once it fails
    j = judge(tmp_path, "improves_by_factor", [cell, row(H=8)])
    assert j.verdict == (UNDECIDED if want == UNDECIDED else PARTLY)
    # beside a failed cell: not reproduced either way (a failed case breaks the claim)
    bad = row(H=8, scafflsa_factor=2.0, scafflsa_last=1.0)
    assert judge(tmp_path, "improves_by_factor", [cell, bad]).verdict == NOT


def test_scafflsa_without_a_curve_or_a_fedlsa_level_is_undecided(tmp_path):
    nosc = row(scafflsa_last=np.nan, scafflsa_factor=np.inf)
    assert judge(tmp_path, "improves_by_factor", [nosc]).verdict == UNDECIDED
    fed_div = row(fedlsa_plateau=np.inf, scafflsa_factor=np.inf)
    j = judge(tmp_path, "improves_by_factor", [fed_div, row(H=8)])
    assert j.verdict == UNDECIDED and "no finite FedLSA plateau or no SCAFFLSA curve" in j.decide
    sc_div = row(scafflsa_last=np.inf, scafflsa_factor=0.0, scafflsa_rate=np.nan, scafflsa_window_ratio=np.nan)
    j = judge(tmp_path, "improves_by_factor", [sc_div])
    assert j.verdict == NOT and "no factor (a curve is missing or diverged)" in "\n".join(j.notes)
    # falling over the window, but no per-round factor recorded: undecided, no number
    norate = row(scafflsa_factor=10.0, scafflsa_rate=np.nan, scafflsa_window_ratio=1.5)
    j = judge(tmp_path, "improves_by_factor", [norate])
    assert j.verdict == UNDECIDED and j.decide.startswith("more rounds at heterogeneous, N = 2")


def test_scafflsa_factor_and_round_off_are_parameters(tmp_path):
    cell = row(scafflsa_factor=20.0, scafflsa_last=1e-20, initial=10.0)
    j = judge(tmp_path, "improves_by_factor", [cell], {"factor": 20.0})
    assert j.verdict == REPRODUCED and "(round-off level)" in j.notes[0]
    assert judge(tmp_path, "improves_by_factor", [cell], {"factor": 20.1}).verdict == NOT
    j = judge(tmp_path, "improves_by_factor", [cell], {"roundoff": 1e-22})
    assert "round-off" not in j.notes[0]


# ---- the rounds estimate on a geometric SCAFFLSA curve, through run files and `rfl lsa` ----------
def _lsa_run(root, method, seed, curve, *, N=2, eta=0.5, H=4):
    path = root / f"N{N}_H{H}" / f"{method}_seed{seed}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    spec = {"seed": seed, "dataset": {"problem": "lsa", "params": {"setting": "heterogeneous", "n_agents": N,
                                                                   "oracle": "exact"}},
            "algorithm": {"name": method, "K": H, "batch_size": 1, "participation": None},
            "step": {"rule": "fixed", "alpha": eta}}
    write_run(path, {"excess_risk": np.asarray(curve, float)}, spec,
              predictions={"fedlsa_bias_sq": float(curve[-1]) if method == "fedavg" else None})
    return path


@pytest.mark.parametrize("C, r, B, T", [(1.0, 0.9, 1.0, 12), (50.0, 0.994, 14.0, 12), (3.0, 0.5, 0.6, 7)])
def test_rounds_needed_by_a_geometric_scafflsa_curve(tmp_path, C, r, B, T):
    """SCAFFLSA = C r^t, FedLSA flat at B: SCAFFLSA is at or below B / 100 from round
    n* = ceil(log(B / (100 C)) / log r) on; with T < n* rounds run the cell is undecided with
    n* the rounds it names."""
    t = np.arange(T + 1)
    paths = [_lsa_run(tmp_path, "fedavg", s, np.full(T + 1, B)) for s in (0, 1)]
    paths += [_lsa_run(tmp_path, "scafflsa", s, C * r ** t) for s in (0, 1)]
    table = lsa.summary(lsa.collect(paths), tail=0.1)
    n_star = int(np.ceil(np.log(B / (100 * C)) / np.log(r)))
    assert n_star > T
    j = judge(tmp_path, "improves_by_factor", table.to_dict("records"))
    assert j.verdict == UNDECIDED
    assert j.decide == f"about {n_star} rounds at heterogeneous, N = 2, eta = 0.5, H = 4 ({T} run)"
    # run to n* rounds, the same curve holds
    t = np.arange(n_star + 1)
    more = [_lsa_run(tmp_path / "long", "fedavg", s, np.full(n_star + 1, B)) for s in (0, 1)]
    more += [_lsa_run(tmp_path / "long", "scafflsa", s, C * r ** t) for s in (0, 1)]
    long = lsa.summary(lsa.collect(more), tail=0.1)
    assert judge(tmp_path / "long", "improves_by_factor", long.to_dict("records")).verdict == REPRODUCED


def _numbers(margin: str, what: str) -> tuple[float, float]:
    """(value, bound) of ``"what v, claim <=|>= b"`` in a margin."""
    import re
    m = re.search(re.escape(what) + r" (\S+), claim [<>]=? (\S+?)(?:;| |$)", margin)
    assert m, margin
    return float(m[1]), float(m[2])


def test_fedlsa_bias_margin_is_the_largest_relative_error_and_window_ratio_against_rel_tol(tmp_path):
    ok, bad = row(), row(setting="homogeneous", rel_error=0.5, fedlsa_plateau=3.0, fedlsa_window_ratio=1.011)
    j = judge(tmp_path, "bias_matches_prediction", [ok, bad])
    rel, win = j.margin.split("; ")
    assert rel.startswith("homogeneous, N = 2, eta = 0.5, H = 4: ") and win.startswith("homogeneous")
    assert _numbers(rel, "largest relative error") == pytest.approx((0.5, 0.01))
    assert _numbers(win, "largest |window start / last - 1|") == pytest.approx((0.011, 0.01))
    j = judge(tmp_path, "bias_matches_prediction", [row(rel_error=0.004, fedlsa_window_ratio=0.993)], {"rel_tol": 0.25})
    assert _numbers(j.margin, "largest relative error") == pytest.approx((0.004, 0.25))
    assert _numbers(j.margin, "|window start / last - 1|") == pytest.approx((0.007, 0.25))
    assert judge(tmp_path, "bias_matches_prediction", [row(H=1)]).margin == \
        "cells with the exact oracle and H > 1 0, claim >= 1"


# ---- stationary_matches_prediction (pool oracle) -------------------------------------------------
def pool_row(**kw) -> dict:
    """A pool-oracle cell, 40 rounds, 5 seeds of each method: FedLSA at its prediction 1.0 with
    se 0.1, its start forgotten; bias^2 = variance = 0.5."""
    return row(**{"oracle": "pool", "fedlsa_seeds": 5, "scafflsa_seeds": 5, "fedlsa_plateau": 1.0,
                  "predicted_plateau": 1.0, "fedlsa_plateau_se": 0.1, "scafflsa_plateau_se": 0.1,
                  "transient": 0.0, "rounds": 40, "z": 0.0, "predicted_bias_sq_pool": 0.5,
                  "predicted_variance": 0.5, **kw})


@pytest.mark.parametrize("k, want", [(0.99, REPRODUCED), (-0.99, REPRODUCED), (1.01, NOT), (-1.01, NOT)])
def test_stationary_plateau_on_both_sides_of_the_t_tolerance(tmp_path, k, want):
    tol = T99[5] * 0.1
    j = judge(tmp_path, "stationary_matches_prediction", [pool_row(predicted_plateau=1.0 + k * tol)])
    assert j.verdict == want and j.rows[0]["t se"] == pytest.approx(tol, abs=1e-4)
    if want == NOT:
        assert f"disagrees, |measured - predicted| = {abs(k) * tol:.3g} > {tol:.3g}" in j.notes[0]


def test_stationary_level_is_a_parameter(tmp_path):
    cell = pool_row(predicted_plateau=1.0 + 3.0 * 0.1)                 # 3 se: t_{0.975, 4} = 2.776 < 3 < 4.604
    assert judge(tmp_path, "stationary_matches_prediction", [cell]).verdict == REPRODUCED
    assert judge(tmp_path, "stationary_matches_prediction", [cell], {"level": 0.95}).verdict == NOT


def test_stationary_plateau_undecided_with_fewer_than_two_seeds(tmp_path):
    one = pool_row(fedlsa_seeds=1, fedlsa_plateau_se=np.nan)
    j = judge(tmp_path, "stationary_matches_prediction", [one, pool_row(H=8)])
    assert j.verdict == UNDECIDED
    assert j.decide == "at least 2 seeds at heterogeneous, N = 2, eta = 0.5, H = 4 (1 run)"
    nopred = pool_row(predicted_plateau=np.nan)
    assert judge(tmp_path, "stationary_matches_prediction", [nopred]).verdict == UNDECIDED
    diverged = pool_row(fedlsa_plateau=np.inf)
    assert judge(tmp_path, "stationary_matches_prediction", [diverged]).verdict == NOT
    notrans = pool_row(transient=np.nan)
    assert judge(tmp_path, "stationary_matches_prediction", [notrans]).verdict == UNDECIDED


@pytest.mark.parametrize("transient, want", [(0.1, REPRODUCED), (0.1001, UNDECIDED)])
def test_stationary_plateau_needs_the_start_forgotten(tmp_path, transient, want):
    """initial x rho^t <= se from t0 = ceil(log(se / initial) / log rho) on: with initial 1e3,
    rho = 0.5 and se = 1e3 x 2^-99.5, t0 = 100, and the plateau window (the last 10% of the
    rounds) starts at round 100 with 110 rounds (the last round(11.0) = 11: 100..110)."""
    se = 1e3 * 2 ** -99.5
    cell = pool_row(fedlsa_plateau_se=se, transient=transient * se / 0.1, initial=1e3, contraction=0.5)
    j = judge(tmp_path, "stationary_matches_prediction", [cell])
    assert j.verdict == want
    if want == UNDECIDED:
        assert j.decide == ("about 110 rounds at heterogeneous, N = 2, eta = 0.5, H = 4 (40 run), so that the "
                            "plateau window starts at round 100")
        assert "undecided, the start is not forgotten" in j.notes[0]


# ---- improves_significantly (pool oracle, SCAFFLSA) ----------------------------------------------
@pytest.mark.parametrize("gap_k, bias_sq, want", [
    (1.01, 1.0, REPRODUCED), (0.99, 1.0, NOT), (1.0, 1.0, NOT),       # more than the margin
    (1.01, 0.49, UNDECIDED)])                                        # the variance dominates: no cell
def test_scafflsa_pool_on_both_sides_of_the_margin(tmp_path, gap_k, bias_sq, want):
    margin = T99[5] * np.hypot(0.1, 0.1)
    cell = pool_row(predicted_bias_sq_pool=bias_sq, scafflsa_plateau=1.0 - gap_k * margin)
    j = judge(tmp_path, "improves_significantly", [cell])
    assert j.verdict == want
    if want == UNDECIDED:
        assert j.notes == ["No cell has a predicted bias^2 at least its predicted variance."]
    else:
        assert j.rows[0]["margin t se_diff"] == pytest.approx(margin, abs=1e-4)
        assert j.margin.endswith(f"FedLSA - SCAFFLSA plateau {gap_k * margin:.3g}, claim > t se_diff = "
                                 f"{margin:.3g} (5 seeds, t)")


def test_scafflsa_pool_margin_takes_the_smaller_seed_count(tmp_path):
    margin = T99[5] * 0.05                                 # hypot(0.03, 0.04) = 0.05, t with 5 seeds
    for f_seeds, s_seeds in ((10, 5), (5, 10)):
        cell = pool_row(fedlsa_seeds=f_seeds, scafflsa_seeds=s_seeds, fedlsa_plateau_se=0.03,
                        scafflsa_plateau_se=0.04, scafflsa_plateau=1.0 - 1.01 * margin)
        assert judge(tmp_path, "improves_significantly", [cell]).verdict == REPRODUCED
        cell["scafflsa_plateau"] = 1.0 - 0.99 * margin
        assert judge(tmp_path, "improves_significantly", [cell]).verdict == NOT


def test_scafflsa_pool_undecided_with_one_seed_or_while_still_falling(tmp_path):
    one = pool_row(scafflsa_seeds=1, scafflsa_plateau_se=np.nan, scafflsa_plateau=0.0)
    j = judge(tmp_path, "improves_significantly", [one])
    assert j.verdict == UNDECIDED and j.decide == ("at least 2 seeds of each method at heterogeneous, N = 2, "
                                                   "eta = 0.5, H = 4 (1 run)")
    # short of the margin, but falling over the window (start / last - 1 = 0.5 > 3 se / last = 0.3):
    # at 0.9 per round from 1.0 it is below FedLSA's plateau - margin after ceil(log(1 - m) / log 0.9)
    margin = T99[5] * np.hypot(0.1, 0.1)
    falling = pool_row(scafflsa_plateau=1.0, scafflsa_last=1.0, scafflsa_window_ratio=1.5, scafflsa_rate=0.9)
    j = judge(tmp_path, "improves_significantly", [falling])
    more = np.ceil(np.log(1.0 - margin) / np.log(0.9))
    assert j.verdict == UNDECIDED
    assert j.decide == f"about {40 + more:.0f} rounds at heterogeneous, N = 2, eta = 0.5, H = 4 (40 run)"
    assert "(still falling: more rounds would lower it)" in j.notes[0]
    # at the threshold (start / last - 1 = 3 se / last exactly): not falling, the cell fails
    edge = falling | {"scafflsa_window_ratio": 1.3}
    assert judge(tmp_path, "improves_significantly", [edge]).verdict == NOT


# ---- the claims as the report renders them ----------------------------------------------------
def test_claim_markdown_names_the_rounds_that_would_decide_it(tmp_path):
    cells = [row(H=1000, scafflsa_factor=0.9654, scafflsa_last=2.0 / 0.9654, scafflsa_rate=0.994236),
             row(H=10)]
    path = tmp_path / "fedlsa_bias.csv"
    io.write_table(path, pd.DataFrame(cells))
    cfg = config_for(cells)
    cfg["claims"] = {"c": {"section": "Federated TD(0) / LSA (Mangold et al.)", "ref": "Mangold et al.",
                           "statement": "SCAFFLSA removes FedLSA's bias", "rule": "improves_by_factor",
                           "experiments": ["e0", "e1"]}}
    spec = {"config": cfg, "runs": {"e0": ["x.csv"], "e1": ["y.csv"]}, "tables": {"lsa": str(path)}}
    result = judge_claim(spec, "c", cfg["claims"]["c"])
    more = np.ceil(np.log(0.02 / (2.0 / 0.9654)) / np.log(0.994236))
    assert result["verdict"] == UNDECIDED
    lines = claim_lines(result)
    assert f"What would decide it: about {12 + more:.0f} rounds at heterogeneous, N = 2, eta = 0.5, " \
           f"H = 1000 (12 run)." in lines
    assert ("**Verdict: undecided at this size.** Margin: heterogeneous, N = 2, eta = 0.5, H = 1000: factor "
            f"{0.9654:.3g}, claim >= 100; heterogeneous, N = 2, eta = 0.5, H = 10: factor 1e+04, claim >= 100. "
            "_Rule (improves_by_factor): every (setting, N, eta, H > 1): SCAFFLSA's error at the last round is at "
            "least 100x below FedLSA's plateau") in "\n".join(lines)
    for i, ln in enumerate(lines):                       # blocks stand apart
        if ln.startswith(("### ", "**Verdict", "What would")):
            assert lines[i + 1] == "" and (i == 0 or lines[i - 1] == ""), ln


def test_pool_thresholds_at_equality(tmp_path):
    """|measured - predicted| = t se exactly agrees (<=); a gap of exactly the margin is no
    improvement (more than it). The values are exact: a plateau of 0 against t se, se_S = 0."""
    from scipy import stats

    t_se = stats.t.ppf(0.995, 4) * 0.1
    cell = pool_row(fedlsa_plateau=0.0, predicted_plateau=t_se)
    assert judge(tmp_path, "stationary_matches_prediction", [cell]).verdict == REPRODUCED
    edge = pool_row(fedlsa_plateau=t_se, scafflsa_plateau=0.0, scafflsa_plateau_se=0.0,
                    predicted_bias_sq_pool=1.0)
    assert judge(tmp_path, "improves_significantly", [edge]).verdict == NOT


def test_stationary_margin_is_the_largest_z_against_the_t_quantile(tmp_path):
    """|z| = |1 - (1 + k t se)| / se = k t_{0.995, 4} against t_{0.995, 4} = 4.604 (printed)."""
    for k in (0.5, 1.01):
        j = judge(tmp_path, "stationary_matches_prediction", [pool_row(predicted_plateau=1.0 + k * T99[5] * 0.1),
                                                             pool_row(H=8, predicted_plateau=1.05)])
        assert j.margin.startswith("heterogeneous, N = 2, H = 4: |z|")
        assert _numbers(j.margin, "|z|") == pytest.approx((k * T99[5], T99[5]), rel=5e-3)
    j = judge(tmp_path, "stationary_matches_prediction", [pool_row(fedlsa_seeds=1, fedlsa_plateau_se=np.nan),
                                                         pool_row(H=8, predicted_plateau=1.2)])
    assert j.margin.startswith("heterogeneous, N = 2, H = 8: |z|")
    assert _numbers(j.margin, "|z|") == pytest.approx((2.0, T99[5]), rel=5e-3)
    assert "heterogeneous, N = 2, H = 4: seeds 1, claim >= 2" in j.margin
    j = judge(tmp_path, "stationary_matches_prediction", [pool_row(transient=0.3)])
    assert "heterogeneous, N = 2, H = 4: transient 0.3, claim <= 0.1 (se)" in j.margin


def test_a_cell_with_replicas_is_not_the_one_chain_cell_of_the_same_setting(tmp_path):
    """The same (oracle, setting, N, eta, H) run with replicas and with one chain per seed: two
    cells; a claim reads the one its experiments run."""
    reps, plain = row(replicas=4, fedlsa_plateau=3.0), row(replicas=0)
    j = judge(tmp_path, "lsa_table", [reps], extra_rows=[plain])
    assert [r["FedLSA plateau"] for r in j.rows] == [3.0]
    j = judge(tmp_path, "lsa_table", [plain], extra_rows=[reps])
    assert [r["FedLSA plateau"] for r in j.rows] == [2.0]

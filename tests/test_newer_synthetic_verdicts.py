"""The verdicts of the newer synthetic experiments (``rfl.reporting.newer_synthetic``): each rule
on both sides of its thresholds, from curves with a known answer (exact geometric decays, with
or without a floor), and the section end to end from run files in the runner's format."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rfl.reporting import newer_synthetic as NS
from rfl.reporting import reproduction as R
from rfl.reporting.reproduction import INSUFFICIENT, NOT, PARTLY, REPRODUCED
from rfl.testing.run_files import write_run


def geometric(q, T, floor=0.0, start=1.0):
    return pd.Series(start * q ** np.arange(T + 1) + floor)


# ---- rules -------------------------------------------------------------------------------------
def test_levelled_off_only_with_a_floor():
    assert NS.levelled(geometric(0.8, 100, floor=1e-3))
    assert not NS.levelled(geometric(0.97, 100))                 # still falling 1.36x per 10 rounds
    assert not NS.levelled(geometric(0.8, 4, floor=1.0))         # fewer than 6 values
    # the threshold: the 10% before the last 10% is at most LEVEL_FACTOR above it
    c = pd.Series(np.r_[np.ones(80), np.full(10, 1.19), np.ones(10)])
    assert NS.levelled(c) and not NS.levelled(pd.Series(np.r_[np.ones(80), np.full(10, 1.21), np.ones(10)]))


@pytest.mark.parametrize("levels, want", [([3.0, 2.0, 1.0], REPRODUCED), ([2.0, 2.0], REPRODUCED),
                                          ([3.0, 4.0, 1.0], PARTLY), ([1.0, 2.0, 3.0], NOT),
                                          ([1.0, 0.5, 1.0], NOT), ([1.0, np.nan], INSUFFICIENT),
                                          ([1.0], INSUFFICIENT), ([], INSUFFICIENT)])
def test_ordering(levels, want):
    assert NS.ordering(levels) == want


@pytest.mark.parametrize("levels, exact, want", [
    ([3.0, 2.0, 1.0], [True] * 3, REPRODUCED),
    ([1.0, 2.0, 3.0], [False, False, True], NOT),          # 3 > the bound 1: broken whatever
    ([3.0, 4.0, 1.0], [True, True, False], PARTLY),        # 4 > 3 broken; the last bound below the first
    ([3.0, 2.0, 1.0], [False, True, True], INSUFFICIENT),  # the first plateau could lie below 1
    ([1.0, 2.0, 3.0], [True, True, False], NOT),           # 2 > 1 broken
    ([2.0, 1.0], [True, False], INSUFFICIENT)])            # the bound below: order open
def test_ordering_with_upper_bounds(levels, exact, want):
    assert NS.ordering_with_bounds(levels, exact) == want


@pytest.mark.parametrize("values, want", [([1e-1, 1e-3, 1.04e-3], REPRODUCED), ([1e-1, 1e-3, 1.06e-3], PARTLY),
                                          ([1e-3, 1e-2], NOT), ([1e-3, np.nan], INSUFFICIENT)])
def test_relative_error_in_k(values, want):
    assert NS.rel_error_in_k(values) == want


@pytest.mark.parametrize("factor, want", [(0.5, REPRODUCED), (1.0, REPRODUCED), (1.09, REPRODUCED),
                                          (1.11, NOT), (3.0, NOT)])
def test_ags_vs_tm_final_level(factor, want):
    tm = geometric(0.7, 100, floor=1e-4)
    ags = geometric(0.7, 100, floor=factor * 1e-4)
    assert NS.ags_vs_tm(ags, tm)[0] == want


@pytest.mark.parametrize("q_ags, q_tm, want", [(0.5, 0.7, REPRODUCED), (0.7, 0.7, PARTLY),
                                               (0.7, 0.5, NOT), (1.0, 0.5, NOT)])
def test_ags_vs_tm_speed(q_ags, q_tm, want):
    _, speed, numbers = NS.ags_vs_tm(geometric(q_ags, 100, 1e-6), geometric(q_tm, 100, 1e-6))
    assert speed == want
    if q_ags < 1:
        assert numbers["RFedAGS rounds"] == pytest.approx(np.ceil(np.log(np.sqrt(1e-6)) / np.log(q_ags)), abs=1)


def test_ags_vs_tm_without_values_is_insufficient():
    empty = pd.Series([np.nan] * 5)
    assert NS.ags_vs_tm(empty, geometric(0.5, 4))[:2] == (INSUFFICIENT, INSUFFICIENT)


# ---- the section from run files -----------------------------------------------------------------
def _run(root, experiment, problem, curve, name="rfedags", K=5, participation=None, extra=None):
    path = root / "runs" / experiment / f"{name}_K{K}_s{participation}.csv"
    write_run(path, {"round": np.arange(len(curve)), "excess_risk": np.asarray(curve), **(extra or {})},
              {"algorithm": {"name": name, "K": K, "participation": participation},
               "dataset": {"problem": problem}, "experiment": experiment, "seed": 0})
    return str(path)


def _report(tmp_path, lrmc_rates=(0.9, 0.6), rel_last=(1e-2, 1e-4), pca_floors=(3e-3, 2e-3, 1e-3),
            ags_tm=(1e-6, 1e-6), still_falling=False):
    datasets, experiments, runs = {}, {}, {}
    datasets["lrmc"] = {"problem": "lrmc", "params": {}}
    experiments["lrmc"] = {"dataset": "lrmc"}
    runs["lrmc"] = []
    for K, q, rel in zip((1, 4), lrmc_rates, rel_last):
        curve = geometric(q, 60, floor=1e-12)
        extra = {c: np.linspace(1.0, rel, 61) for c in ("rel_error", "test_rmse", "test_rmse_refit")}
        runs["lrmc"].append(_run(tmp_path, "lrmc", "lrmc", curve, K=K, extra=extra))
    runs["lrmc"].append(_run(tmp_path, "lrmc", "lrmc", geometric(0.6, 60, 1e-12), K=4, participation=2,
                             extra={c: np.linspace(1.0, 1e-4, 61) for c in ("rel_error", "test_rmse", "test_rmse_refit")}))
    for S, floor in zip((6, 10, 20), pca_floors):
        e = f"pca_stiefel_agents_s{S}"
        datasets[e] = {"problem": "pca_stiefel", "params": {"S": S, "N": 100, "d": 20, "r": 3}}
        experiments[e] = {"dataset": e}
        curve = geometric(0.97, 200) if still_falling and S == 20 else geometric(0.9, 200, floor=floor)
        runs[e] = [_run(tmp_path, e, "pca_stiefel", curve)]
    e = "pca_stiefel_ags_vs_tm"
    datasets[e] = {"problem": "pca_stiefel", "params": {"S": 2, "N": 60, "d": 50, "r": 1}}
    experiments[e] = {"dataset": e}
    runs[e] = [_run(tmp_path, e, "pca_stiefel", geometric(0.5, 150, ags_tm[0]), K=50),
               _run(tmp_path, e, "pca_stiefel", geometric(0.6, 150, ags_tm[1]), name="rfedavg", K=50)]
    spec = {"config": {"tables": {}, "figures": {}, "datasets": datasets, "experiments": experiments},
            "paper": {}, "runs": runs, "tables": {"table2": str(tmp_path / "none.csv")}}
    out = tmp_path / "REPRODUCTION.md"
    R.write_report(spec, out)
    text = out.read_text()
    summary = {}
    for line in text.split("## Summary", 1)[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("where", "---"):
            summary[(cells[0], cells[1])] = cells[2]
    return summary, text


def test_section_all_claims_hold(tmp_path):
    summary, text = _report(tmp_path)
    assert summary[("LRMCGrass_Syn", "linear convergence (every agent)")] == REPRODUCED
    assert summary[("LRMCGrass_Syn", "larger K faster")] == REPRODUCED
    assert summary[("LRMCGrass_Syn", "larger K, smaller relative error")] == REPRODUCED
    assert summary[("PCAStief_Syn (agents)", "linear rate with a fixed step")] == REPRODUCED
    assert summary[("PCAStief_Syn (agents)", "more agents, lower plateau")] == REPRODUCED
    assert summary[("PCAStief_Syn (AGS vs TM)", "RFedAGS ends at least as low as the tangent mean")] == REPRODUCED
    assert summary[("PCAStief_Syn (AGS vs TM)", "RFedAGS faster than the tangent mean")] == REPRODUCED
    assert "RFedAGS-K=4, s=2" in text                           # partial participation is tabulated


def test_section_claims_that_fail(tmp_path):
    summary, _ = _report(tmp_path, lrmc_rates=(0.6, 0.9), rel_last=(1e-4, 1e-2),
                         pca_floors=(1e-3, 2e-3, 3e-3), ags_tm=(1e-5, 1e-6))
    assert summary[("LRMCGrass_Syn", "larger K faster")] == NOT
    assert summary[("LRMCGrass_Syn", "larger K, smaller relative error")] == NOT
    assert summary[("PCAStief_Syn (agents)", "more agents, lower plateau")] == NOT
    assert summary[("PCAStief_Syn (AGS vs TM)", "RFedAGS ends at least as low as the tangent mean")] == NOT


def test_a_curve_still_falling_has_no_plateau(tmp_path):
    summary, text = _report(tmp_path, still_falling=True)
    assert summary[("PCAStief_Syn (agents)", "more agents, lower plateau")] == INSUFFICIENT
    assert "S = 20: still decreasing at the last round" in text


def test_plateaus_relative_to_the_optimal_value(tmp_path):
    _, text = _report(tmp_path)
    # write_run's cost column is 0, so F* = 0 - excess_risk[0] = -(1 + floor): plateau / |F*|
    row = [line for line in text.splitlines() if line.startswith("| 20 | pca_stiefel_agents_s20")][0]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[7]) == pytest.approx(1e-3 / (1 + 1e-3), rel=1e-3)

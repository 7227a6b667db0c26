"""Table 1 and Table 2 from result files whose answers are known by construction: the best
test NMSE of each run, its round, the mean over splits and the signed difference to the
paper (ours - paper), in the CSV the reproduction report reads and in the displayed tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rfl import io
from rfl.reporting import tables

from test_verdicts import write_run

METHODS = ["RFedAGS-K=1", "RFedAGS-K=4", "RFedAGS-K=8", "RFedAGS-K=10", "RFedAvg", "RSD", "RCG", "RLBFGS"]
PAPER = {"methods": METHODS,
         "3": {"nmse": [0.509, 0.478, 0.472, 0.47, 0.509, 0.465, 0.46, 0.46],
               "round": [100, 100, 100, 100, 100, 62, 62, 99]}}


def nmse_curve(best, at, T=20):
    """1 at round 0, down to ``best`` at round ``at`` (and again later: the first counts), 0.1
    above it elsewhere."""
    c = np.full(T + 1, best + 0.1)
    c[0] = 1.0
    c[at] = best
    c[T] = best
    return c


@pytest.fixture
def school_runs(tmp_path):
    paths = []
    # RFedAGS K = 1: best 0.50 at round 3 and 0.52 at round 5 -> mean 0.51, ours - paper = +0.001
    for seed, (best, at) in enumerate(((0.50, 3), (0.52, 5))):
        paths.append(write_run(tmp_path, "school_r3", np.linspace(1, 0.5, 21), K=1, seed=seed,
                               extra={"test_nmse": nmse_curve(best, at)}))
    # RSD: best 0.445 at round 7 in both splits -> ours - paper = -0.020 (we are better)
    for seed in (0, 1):
        paths.append(write_run(tmp_path, "school_r3", np.linspace(1, 0.5, 21), name="rsd", K=None,
                               seed=seed, extra={"test_nmse": nmse_curve(0.445, 7)}))
    # RFedAGS K = 2 (not in the paper) diverges at round 4; its best before that is 0.6 at round 2
    paths.append(write_run(tmp_path, "school_r3", np.linspace(1, 0.5, 21), K=2, diverge_at=4,
                           extra={"test_nmse": nmse_curve(0.6, 2)}))
    return tmp_path, paths


def test_table2_best_nmse_and_signed_difference(school_runs):
    root, paths = school_runs
    spec = {"experiments": {"3": "school_r3"}, "paper": PAPER}
    out = root / "t2.csv"
    tidy = tables.table2(spec, out, paths).set_index("method")
    k1, rsd, k2 = tidy.loc["RFedAGS-K=1"], tidy.loc["RSD"], tidy.loc["RFedAGS-K=2"]
    assert k1["nmse_mean"] == pytest.approx(0.51) and k1["round_mean"] == 4
    assert k1["nmse_std"] == pytest.approx(np.std([0.50, 0.52], ddof=1))
    assert k1["paper_nmse"] == 0.509 and k1["paper_round"] == 100
    assert k1["difference"] == pytest.approx(+0.001)                  # ours worse: positive
    assert rsd["difference"] == pytest.approx(-0.020)                 # ours better: negative
    assert rsd["round_mean"] == 7 and rsd["n_splits"] == 2
    assert k2["nmse_mean"] == pytest.approx(0.6) and k2["round_mean"] == 2
    assert np.isnan(k2["paper_nmse"]) and np.isnan(k2["difference"]) and np.isnan(k2["nmse_std"])
    # the file the reproduction report reads, and the displayed table
    back = io.read_table(out).set_index("method")
    assert back.loc["RSD", "difference"] == pytest.approx(-0.020)
    md = out.with_suffix(".md").read_text()
    assert "| 3 | RFedAGS-K=1 | 0.510 ± 0.014 | 4 ± 1 | 0.509 | 100 | +0.001 | 2 |" in md
    assert "| 3 | RSD | 0.445 ± 0.000 | 7 ± 0 | 0.465 | 62 | -0.020 | 2 |" in md
    assert r"$\pm$" in out.with_suffix(".tex").read_text()


def test_best_nmse_first_round_of_the_minimum_and_ok_rows_only():
    t = pd.DataFrame({"round": [0, 1, 2, 3, 4], "test_nmse": [1.0, 0.3, 0.5, 0.3, np.nan],
                      "status": ["ok", "ok", "ok", "ok", "diverged"]})
    best = tables.best_nmse([t])
    assert best.loc[0, "nmse"] == 0.3 and best.loc[0, "round"] == 1
    t.loc[4, "test_nmse"] = 0.0                  # a value on the diverged row does not count
    assert tables.best_nmse([t]).loc[0, "nmse"] == 0.3


def test_table1_parameters_from_the_config(tmp_path):
    spec = {"rows": [{"label": "CPESph", "dataset": {"params": {"d": 8, "S": 4, "N": 20, "nu": 0.1}},
                      "fixed": {"step": {"alpha": 1.0}, "batch_size": 8, "rounds": 10},
                      "decaying": {"step": {"alpha0": 2.0, "beta": 5.0, "dec": 0.5}, "rounds": 30}}]}
    df = tables.table1(spec, tmp_path / "t1.csv")
    row = df.iloc[0]
    assert (row["problem"], row["d"], row["S"], row["N"], row["alpha"], row["alpha0"], row["beta"],
            row["B"], row["rounds_fixed"], row["rounds_decaying"]) == ("CPESph", 8, 4, 20, 1.0, 2.0, 5.0, 8, 10, 30)
    assert row["p"] is None or np.isnan(row["p"])
    assert "| CPESph | 8 | - | 0.1 |" in (tmp_path / "t1.md").read_text()


def test_best_nmse_of_a_run_without_a_measurement_is_nan():
    """A run that diverged at round 0, or one with no test NMSE at all: no value, no crash."""
    t = pd.DataFrame({"round": [0], "test_nmse": [np.nan], "status": ["diverged"]})
    u = pd.DataFrame({"round": [0, 1], "test_nmse": [np.nan, np.nan], "status": ["ok", "ok"]})
    best = tables.best_nmse([t, u])
    assert best["nmse"].isna().all() and best["round"].isna().all()


def test_table2_a_split_without_a_measurement_is_not_left_out(school_runs, tmp_path):
    root, paths = school_runs
    t = io.read_table(paths[0])
    t["test_nmse"] = np.nan                       # split 0 of RFedAGS K = 1 measured nothing
    io.write_table(paths[0], t)
    tidy = tables.table2({"experiments": {"3": "school_r3"}, "paper": PAPER}, root / "t2.csv", paths)
    k1 = tidy.set_index("method").loc["RFedAGS-K=1"]
    assert np.isnan(k1["nmse_mean"]) and np.isnan(k1["difference"]) and k1["n_splits"] == 2

"""Table 1 and Table 2 from result files whose answers are known by construction: the best
test NMSE of each run, its round, the mean over splits and the signed difference to the
paper (ours - paper), in the CSV the reproduction report reads and in the displayed tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rfl import io
from rfl.reporting import tables

from rfl.runner import COLUMNS
from rfl.testing.run_files import write_run as write_run_files

METHODS = ["RFedAGS-K=1", "RFedAGS-K=4", "RFedAGS-K=8", "RFedAGS-K=10", "RFedAvg", "RSD", "RCG", "RLBFGS"]
PAPER = {"methods": METHODS,
         "3": {"nmse": [0.509, 0.478, 0.472, 0.47, 0.509, 0.465, 0.46, 0.46],
               "round": [100, 100, 100, 100, 100, 62, 62, 99]}}



# ---- result files (a run table whose excess risk is ``values``, and its metadata) ------------------
def _problem_of(extra) -> str:
    """The problem whose run tables carry the ``extra`` columns (the reports do not read it)."""
    extra = extra or {}
    return "school" if "test_nmse" in extra else "multitask" if "subspace_dist" in extra else "cpesph"


def write_run(root, experiment, values, *, name="rfedags", K=1, participation=None, seed=0,
              diverge_at=None, extra=None):
    """A run table (rounds 0..len(values)-1, excess risk = ``values``) and its metadata. With
    ``diverge_at`` the run stops there as the runner stops one: a last row of status
    "diverged" with no metric. ``extra``: {column: values} (test_nmse, subspace_dist)."""
    rows = []
    for t, v in enumerate(values):
        ok = diverge_at is None or t < diverge_at
        row = {"round": t, "cost": v + 1.0 if ok else np.nan, "excess_risk": v if ok else np.nan,
               "grad_norm": math.sqrt(v) if ok and v >= 0 else np.nan, "dist_to_opt": np.nan,
               "grad_evals": 4 * t, "floats": 10 * t, "wall_time": 0.01 * t,
               "status": "ok" if ok else "diverged"}
        for col, vals in (extra or {}).items():
            row[col] = vals[t] if ok else np.nan
        rows.append(row)
        if not ok:
            break
    table = pd.DataFrame(rows, columns=COLUMNS + list(extra or {}))
    run_id = f"{name}_K{K}_seed{seed}" if K is not None else f"{name}_seed{seed}"
    csv = root / "runs" / experiment / f"{run_id}.csv"
    write_run_files(csv, {c: table[c].to_numpy() for c in table.columns},
                    {"algorithm": {"name": name, "K": K, "batch_size": 1, "participation": participation},
                     "dataset": {"name": experiment, "problem": _problem_of(extra)},
                     "experiment": experiment, "run_id": run_id, "seed": seed, "rounds": len(values) - 1},
                    seed=seed, commit="0" * 40, versions={"python": "3"})
    return str(csv)


def nmse_curve(best, at, T=20):
    """1 at round 0, down to ``best`` at round ``at`` (and again later: the first counts), 0.1
    above it elsewhere."""
    c = np.full(T + 1, best + 0.1)
    c[0] = 1.0
    c[at] = best
    c[T] = best
    return c


def school_extra(best, at, refit_best=None, refit_at=None):
    """The four test NMSE columns of a School run: held out (pooled) best ``best`` at round
    ``at``; its task-mean column 0.02 higher; refit on the test rows (pooled) best
    ``refit_best`` (default best - 0.1) at ``refit_at`` (default at + 1), task mean 0.03 higher."""
    refit_best = best - 0.1 if refit_best is None else refit_best
    refit_at = at + 1 if refit_at is None else refit_at
    return {"test_nmse": nmse_curve(best, at), "test_nmse_taskmean": nmse_curve(best, at) + 0.02,
            "test_nmse_refit": nmse_curve(refit_best, refit_at),
            "test_nmse_refit_taskmean": nmse_curve(refit_best, refit_at) + 0.03}


@pytest.fixture
def school_runs(tmp_path):
    paths = []
    # RFedAGS K = 1: best 0.50 at round 3 and 0.52 at round 5 -> mean 0.51, ours - paper = +0.001
    # (refit: 0.40 at round 4, 0.42 at round 6 -> 0.41, -0.099)
    for seed, (best, at) in enumerate(((0.50, 3), (0.52, 5))):
        paths.append(write_run(tmp_path, "school_r3", np.linspace(1, 0.5, 21), K=1, seed=seed,
                               extra=school_extra(best, at)))
    # RSD: best 0.445 at round 7 in both splits -> ours - paper = -0.020 (we are better);
    # refit 0.475 at round 2 -> +0.010
    for seed in (0, 1):
        paths.append(write_run(tmp_path, "school_r3", np.linspace(1, 0.5, 21), name="rsd", K=None,
                               seed=seed, extra=school_extra(0.445, 7, 0.475, 2)))
    # RFedAGS K = 2 (not in the paper) diverges at round 4; its best before that is 0.6 at round 2
    paths.append(write_run(tmp_path, "school_r3", np.linspace(1, 0.5, 21), K=2, diverge_at=4,
                           extra=school_extra(0.6, 2)))
    return tmp_path, paths


def _cells(tidy, protocol="heldout", normalisation="pooled"):
    return tidy[(tidy["protocol"] == protocol) & (tidy["normalisation"] == normalisation)].set_index("method")


def test_table2_best_nmse_and_signed_difference(school_runs):
    root, paths = school_runs
    spec = {"experiments": {"3": "school_r3"}, "paper": PAPER}
    out = root / "t2.csv"
    full = tables.table2(spec, out, paths)
    assert len(full) == 3 * 2 * 2                        # methods x protocols x normalisations
    tidy = _cells(full)
    k1, rsd, k2 = tidy.loc["RFedAGS-K=1"], tidy.loc["RSD"], tidy.loc["RFedAGS-K=2"]
    assert k1["nmse_mean"] == pytest.approx(0.51) and k1["round_mean"] == 4
    assert k1["nmse_std"] == pytest.approx(np.std([0.50, 0.52], ddof=1))
    assert k1["paper_nmse"] == 0.509 and k1["paper_round"] == 100
    assert k1["difference"] == pytest.approx(+0.001)                  # ours worse: positive
    assert rsd["difference"] == pytest.approx(-0.020)                 # ours better: negative
    assert rsd["round_mean"] == 7 and rsd["n_splits"] == 2
    assert k2["nmse_mean"] == pytest.approx(0.6) and k2["round_mean"] == 2
    assert np.isnan(k2["paper_nmse"]) and np.isnan(k2["difference"]) and np.isnan(k2["nmse_std"])
    # the other protocol and normalisation: their own columns of the same runs
    refit = _cells(full, "refit_on_test")
    assert refit.loc["RFedAGS-K=1", "nmse_mean"] == pytest.approx(0.41)
    assert refit.loc["RFedAGS-K=1", "round_mean"] == 5 and refit.loc["RSD", "round_mean"] == 2
    assert refit.loc["RFedAGS-K=1", "difference"] == pytest.approx(0.41 - 0.509)
    assert refit.loc["RSD", "column"] == "test_nmse_refit"
    assert _cells(full, "heldout", "task_mean").loc["RSD", "nmse_mean"] == pytest.approx(0.465)
    assert _cells(full, "refit_on_test", "task_mean").loc["RSD", "difference"] == pytest.approx(0.04)
    # the file the reproduction report reads, and the displayed table
    back = _cells(io.read_table(out))
    assert back.loc["RSD", "difference"] == pytest.approx(-0.020)
    md = out.with_suffix(".md").read_text()
    assert ("| 3 | RFedAGS-K=1 | heldout | 0.510 ± 0.014 | 4 ± 1 | +0.001 | 0.530 ± 0.014 | 4 ± 1 "
            "| +0.021 | 0.509 | 100 | 2 |") in md
    assert ("| 3 | RSD | refit_on_test | 0.475 ± 0.000 | 2 ± 0 | +0.010 | 0.505 ± 0.000 | 2 ± 0 "
            "| +0.040 | 0.465 | 62 | 2 |") in md
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
    k1 = _cells(tidy).loc["RFedAGS-K=1"]
    assert np.isnan(k1["nmse_mean"]) and np.isnan(k1["difference"]) and k1["n_splits"] == 2
    md = (root / "t2.md").read_text()
    assert "| 3 | RFedAGS-K=1 | heldout | - | - | - | " in md         # no mean: no number shown


def test_table2_sensitivity_groups_runs_by_r_and_step(tmp_path):
    """Runs of two experiments (alpha 1e-6 and 6e-6) at r = 4: the best NMSE per (r, alpha,
    method, protocol) from the runs' metadata, and the K = 1 - K = 10 gap beside the paper's."""
    from rfl.testing.run_files import write_run as write_files

    paper = {"methods": METHODS, "4": {"nmse": [0.438, 0.437, 0.437, 0.437, 0.438, 0.432, 0.439, 0.429],
                                       "round": [100] * 8}}
    paths = []
    # (experiment, alpha, K, seed, best held out) ; refit = held out - 0.1
    cells = [("s_a1", 1e-6, 1, 0, 0.70), ("s_a1", 1e-6, 1, 1, 0.72), ("s_a1", 1e-6, 10, 0, 0.60),
             ("s_a1", 1e-6, 10, 1, 0.62), ("s_a6", 6e-6, 1, 0, 0.61), ("s_a6", 6e-6, 10, 0, 0.60)]
    for exp, alpha, K, seed, best in cells:
        path = tmp_path / "runs" / exp / f"rfedags_K{K}_seed{seed}.csv"
        write_files(path, {"round": np.arange(21), **school_extra(best, 4 + K)},
                    {"algorithm": {"name": "rfedags", "K": K, "batch_size": 18},
                     "dataset": {"name": "school_r4", "problem": "school", "params": {"r": 4}},
                     "step": {"rule": "fixed", "alpha": alpha}, "experiment": exp, "seed": seed})
        paths.append(str(path))
    rsd = tmp_path / "runs" / "s_a1" / "rsd_seed0.csv"          # no step: left out
    write_files(rsd, {"round": np.arange(21), **school_extra(0.3, 4)},
                {"algorithm": {"name": "rsd"}, "step": None, "experiment": "s_a1",
                 "dataset": {"name": "school_r4", "problem": "school", "params": {"r": 4}}})
    t = tables.sensitivity({"paper": paper}, tmp_path / "sens.csv", paths + [str(rsd)])
    assert set(t["method"]) == {"RFedAGS-K=1", "RFedAGS-K=10"}
    h = t[t["protocol"] == "heldout"].set_index(["alpha", "method"])
    assert h.loc[(1e-6, "RFedAGS-K=1"), "nmse_mean"] == pytest.approx(0.71)
    assert h.loc[(1e-6, "RFedAGS-K=1"), "round_mean"] == 5 and h.loc[(1e-6, "RFedAGS-K=10"), "n_splits"] == 2
    assert h.loc[(1e-6, "RFedAGS-K=10"), "K1_minus_K10"] == pytest.approx(0.71 - 0.61)
    assert h.loc[(6e-6, "RFedAGS-K=1"), "K1_minus_K10"] == pytest.approx(0.01)
    assert h.loc[(6e-6, "RFedAGS-K=1"), "paper_K1_minus_K10"] == pytest.approx(0.001)
    r = t[t["protocol"] == "refit_on_test"].set_index(["alpha", "method"])
    assert r.loc[(1e-6, "RFedAGS-K=1"), "nmse_mean"] == pytest.approx(0.61)
    assert r.loc[(1e-6, "RFedAGS-K=1"), "round_mean"] == 6
    md = (tmp_path / "sens.md").read_text()
    assert "| 4 | 6e-06 | RFedAGS-K=1 | heldout | 0.610 | 5 | +0.010 | 0.438 | +0.001 | 1 |" in md


# ---- what a reader of the written tables sees --------------------------------------------------
def test_table1_every_parameter_in_its_named_column(tmp_path):
    p = {"d": 8, "p": 3, "nu": 0.1, "D_W": 2.5, "S": 4, "N": 20}
    spec = {"rows": [{"label": "CPESph", "dataset": {"params": p},
                      "fixed": {"step": {"alpha": 1.0}, "batch_size": 8, "rounds": 10},
                      "decaying": {"step": {"alpha0": 2.0, "beta": 5.0, "dec": 0.5}, "rounds": 30}}]}
    df = tables.table1(spec, tmp_path / "t1.csv")
    want = {"problem": "CPESph", **p, "alpha": 1.0, "alpha0": 2.0, "beta": 5.0, "dec": 0.5, "B": 8,
            "rounds_fixed": 10, "rounds_decaying": 30}
    assert list(df.columns) == list(want) and df.iloc[0].to_dict() == want
    md = (tmp_path / "t1.md").read_text().splitlines()
    assert md[0] == "| " + " | ".join(want) + " |"
    assert md[2] == "| CPESph | 8 | 3 | 0.1 | 2.5 | 4 | 20 | 1 | 2 | 5 | 0.5 | 8 | 10 | 30 |"
    tex = (tmp_path / "t1.tex").read_text()
    assert r"\caption{Parameters of the synthetic problems and of RFedAGS (from the config).}" in tex
    assert r"problem & d & p & nu & D\_W & S & N" in tex


def test_latex_table_layout_and_escapes(tmp_path):
    """The LaTeX tabular: one left-aligned column per column, rules around the header and at the
    end, cells ``&``-separated and ended by ``\\``; _, % and ± escaped; a missing value is -."""
    df = pd.DataFrame({"a_b": ["x%", "1 ± 2"], "c": [0.123456, np.nan]})
    tables.write_latex(tmp_path / "t.tex", df, "cap_1 %")
    assert (tmp_path / "t.tex").read_text() == "\n".join([
        r"\begin{table}[t]", r"\centering", r"\caption{cap\_1 \%}", r"\begin{tabular}{ll}", r"\hline",
        r"a\_b & c \\", r"\hline", r"x\% & 0.1235 \\", r"1 $\pm$ 2 & - \\", r"\hline",
        r"\end{tabular}", r"\end{table}", ""])


def test_best_nmse_refuses_a_table_without_the_protocol_column():
    t = pd.DataFrame({"round": [0], "test_nmse": [0.5], "status": ["ok"]})
    with pytest.raises(ValueError, match=r"a School run table has no column 'test_nmse_refit': it "
                                         r"was written before that protocol was recorded; rerun"):
        tables.best_nmse([t], "test_nmse_refit")


def test_table2_a_split_without_a_measurement_has_no_mean_round(school_runs):
    root, paths = school_runs
    t = io.read_table(paths[0])
    t["test_nmse"] = np.nan
    io.write_table(paths[0], t)
    tidy = tables.table2({"experiments": {"3": "school_r3"}, "paper": PAPER}, root / "t2.csv", paths)
    k1 = _cells(tidy).loc["RFedAGS-K=1"]
    assert np.isnan(k1["round_mean"]) and np.isnan(k1["round_std"])


def test_table2_display_columns_order_and_chosen_protocols(school_runs):
    """Protocols and normalisations from the spec, in the spec's order; the displayed table's
    header, its '-' where the paper has no value, RFedAvg (K = 1) under the paper's name, and an
    r whose experiment has no run left out."""
    root, paths = school_runs
    for seed, best in enumerate((0.49, 0.53)):
        paths.append(write_run(root, "school_r3", np.linspace(1, 0.5, 21), name="rfedavg", K=1,
                               seed=seed, extra=school_extra(best, 6)))
    spec = {"experiments": {"3": "school_r3", "5": "school_r5"}, "paper": PAPER,
            "protocols": ["refit_on_test", "heldout"], "normalisations": ["pooled"]}
    out = root / "t2.csv"
    tidy = tables.table2(spec, out, paths)
    assert list(tidy["protocol"].unique()) == ["refit_on_test", "heldout"]
    assert set(tidy["normalisation"]) == {"pooled"} and set(tidy["r"]) == {3}
    avg = _cells(tidy).loc["RFedAvg"]
    assert avg["nmse_mean"] == pytest.approx(0.51) and avg["paper_nmse"] == 0.509
    assert avg["difference"] == pytest.approx(0.51 - 0.509)
    md = out.with_suffix(".md").read_text().splitlines()
    assert md[0] == ("| r | method | protocol | NMSE, pooled | round, pooled | - paper, pooled | paper "
                     "| paper round | splits |")
    body = md[2:]
    assert [ln.split(" | ")[2] for ln in body] == ["refit_on_test"] * 4 + ["heldout"] * 4
    assert "| 3 | RFedAGS-K=2 | heldout | 0.600 | 2 | - | - | - | 1 |" in body
    assert "| 3 | RFedAvg | heldout | 0.510 ± 0.028 | 6 ± 0 | +0.001 | 0.509 | 100 | 2 |" in body
    tex = out.with_suffix(".tex").read_text()
    for fact in ("\\caption{Best test NMSE on the School data (mean $\\pm$ std over random 80/20 splits) and the "
                 "round where it is reached, per evaluation protocol (heldout: w fitted on the training rows; ",
                 "refit\\_on\\_test: w solved on the test rows, as in the authors' code) and normalisation",
                 "(pooled: the paper's NMSE; task mean: mean of per-task MSEs over the pooled variance), "
                 "beside the paper's Table 2.}"):
        assert fact in tex
    # both normalisations: the task-mean columns follow the pooled ones
    tables.table2({**spec, "normalisations": ["pooled", "task_mean"]}, out, paths)
    assert out.with_suffix(".md").read_text().splitlines()[0] == (
        "| r | method | protocol | NMSE, pooled | round, pooled | - paper, pooled | NMSE, task mean "
        "| round, task mean | - paper, task mean | paper | paper round | splits |")


def test_table2_without_any_run_writes_the_columns(tmp_path):
    tidy = tables.table2({"experiments": {"3": "school_r3"}, "paper": PAPER}, tmp_path / "t2.csv", [])
    assert tidy.empty and list(tidy.columns) == [
        "r", "method", "protocol", "normalisation", "column", "nmse_mean", "nmse_std", "round_mean",
        "round_std", "n_splits", "paper_nmse", "paper_round", "difference"]


def _sensitivity_run(root, exp, alpha, K, seed, best, name="rfedags", r=4):
    from rfl.testing.run_files import write_run as write_files

    path = root / "runs" / exp / f"{name}_K{K}_seed{seed}.csv"
    write_files(path, {"round": np.arange(21), **school_extra(best, 4 + K)},
                {"algorithm": {"name": name, "K": K, "batch_size": 18},
                 "dataset": {"name": f"school_r{r}", "problem": "school", "params": {"r": r}},
                 "step": {"rule": "fixed", "alpha": alpha}, "experiment": exp, "seed": seed})
    return str(path)


def _centralised_run(root, exp):
    from rfl.testing.run_files import write_run as write_files

    path = root / "runs" / exp / "rsd_seed0.csv"
    write_files(path, {"round": np.arange(21), **school_extra(0.3, 4)},
                {"algorithm": {"name": "rsd"}, "step": None, "experiment": exp,
                 "dataset": {"name": "school_r4", "problem": "school", "params": {"r": 4}}})
    return str(path)


def test_sensitivity_without_a_K10_run_or_a_paper_value(tmp_path):
    """Only K = 1 and RFedAvg (K = 1) at r = 6, where the paper has no value: no gap, '-' in the
    displayed table, RFedAvg under the paper's name; the centralised run listed first is skipped,
    not the end of the list; one protocol when the spec names one."""
    paths = [_centralised_run(tmp_path, "s_a1"),
             _sensitivity_run(tmp_path, "s_a1", 1e-6, 1, 0, 0.70, r=6),
             _sensitivity_run(tmp_path, "s_a1", 1e-6, 1, 0, 0.66, name="rfedavg", r=6)]
    t = tables.sensitivity({"paper": PAPER, "protocols": ["heldout"]}, tmp_path / "sens.csv", paths)
    assert list(t["protocol"]) == ["heldout", "heldout"]
    assert sorted(t["method"]) == ["RFedAGS-K=1", "RFedAvg"]
    by = t.set_index("method")
    assert by.loc["RFedAvg", "nmse_mean"] == pytest.approx(0.66) and by.loc["RFedAvg", "round_mean"] == 5
    assert t["paper_nmse"].isna().all() and t["K1_minus_K10"].isna().all()
    md = (tmp_path / "sens.md").read_text().splitlines()
    assert md[0] == ("| r | alpha | method | protocol | best NMSE | round | K=1 - K=10 | paper "
                     "| paper K=1 - K=10 | splits |")
    assert "| 6 | 1e-06 | RFedAGS-K=1 | heldout | 0.700 | 5 | - | - | - | 1 |" in md
    # paper values at r = 4: RFedAvg's is the paper's RFedAvg column
    paths = [_centralised_run(tmp_path / "b", "s_a1"),
             _sensitivity_run(tmp_path / "b", "s_a1", 1e-6, 1, 0, 0.70, name="rfedavg", r=3)]
    t = tables.sensitivity({"paper": PAPER, "protocols": ["heldout"]}, tmp_path / "b.csv", paths)
    assert t.loc[0, "method"] == "RFedAvg" and t.loc[0, "paper_nmse"] == 0.509


def test_sensitivity_of_centralised_runs_only_is_empty(tmp_path):
    t = tables.sensitivity({"paper": PAPER}, tmp_path / "sens.csv", [_centralised_run(tmp_path, "s_a1")])
    assert t.empty and {"r", "alpha", "method", "nmse_mean", "K1_minus_K10"} <= set(t.columns)


def test_table2_writes_the_sensitivity_study_beside_it(school_runs):
    """With ``sensitivity`` (experiments), Table 2 writes table2_sensitivity.csv beside its CSV
    from those experiments' runs only."""
    root, paths = school_runs
    sens = [_sensitivity_run(root, "s_a1", 1e-6, K, 0, best) for K, best in ((1, 0.70), (10, 0.60))]
    sens.append(_sensitivity_run(root, "s_other", 2e-6, 1, 0, 0.9))
    out = root / "tables" / "t2.csv"
    out.parent.mkdir()
    # (an experiment of the study without a run among the tables given adds no row)
    tables.table2({"experiments": {"3": "school_r3"}, "paper": PAPER, "sensitivity": ["s_a1", "s_none"]},
                  out, paths + sens)
    t = io.read_table(root / "tables" / "table2_sensitivity.csv")
    assert set(t["alpha"]) == {1e-6} and set(t["method"]) == {"RFedAGS-K=1", "RFedAGS-K=10"}
    assert t.loc[t["protocol"] == "heldout", "K1_minus_K10"].to_numpy() == pytest.approx([0.1, 0.1])
    tables.table2({"experiments": {"3": "school_r3"}, "paper": PAPER}, root / "u.csv", paths + sens)
    assert not (root / "table2_sensitivity.csv").exists()

"""The rules that turn result files into the verdicts of REPRODUCTION.md.

Every input here is made in the test with a known answer: excess risks that are exactly
r^t (with or without a floor), decaying runs that end a known factor below or above the
fixed ones, FedLSA tables with chosen differences. Each rule is checked on both
sides of each of its thresholds, and on the inputs that could crash it or pass silently:
runs that diverged (after one round or later), runs of one round or none after round 0,
rows without a value. The files have the runner's format (a table with its columns and
``X.meta.json`` beside it), and the report is also written through ``rfl reproduction``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from rfl import cli, io
from rfl.reporting import reproduction as R
from rfl.reporting.reproduction import INSUFFICIENT, NOT, PARTLY, REPRODUCED, Report
from rfl.runner import COLUMNS
from rfl.testing.run_files import write_run as write_run_files


# ---- result files -----------------------------------------------------------------------------
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


def spec_for(root, runs: dict, *, table1=(), figures=None, datasets=None, experiments=None,
             lsa=None, lsa_config=None):
    """The spec ``rfl reproduction`` reads (the keys the Snakefile writes)."""
    config = {"tables": {"table1": {"rows": list(table1)}}, "figures": figures or {},
              "datasets": datasets or {}, "experiments": experiments or {}}
    tables = {"table2": str(root / "none.csv")}
    if lsa is not None:
        path = root / "fedlsa_bias.csv"
        io.write_table(path, lsa)
        tables["lsa"], config["lsa"] = str(path), lsa_config or {"tail": 0.1}
    return {"config": config, "paper": {}, "runs": runs, "tables": tables}


def summary_of(md_path) -> dict:
    """{(where, claim): verdict} from the summary table of a written report."""
    lines = open(md_path).read().split("## Summary", 1)[1].splitlines()
    out = {}
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) in (3, 4) and cells[0] not in ("where", "---"):   # (4: with the size)
            out[(cells[0], cells[1])] = cells[2]
        elif line.startswith("## "):
            break
    return out


def geometric(r, T, floor=0.0, start=1.0):
    return start * r ** np.arange(T + 1) + floor


def verdicts(rep: Report) -> dict:
    return {claim: v for _, claim, v in rep.summary}


# ---- the verdict from counts ------------------------------------------------------------------
@pytest.mark.parametrize("n_ok, n, missing, want", [
    (3, 3, 0, REPRODUCED), (0, 3, 0, NOT), (1, 3, 0, PARTLY), (2, 3, 0, PARTLY),
    (0, 0, 0, INSUFFICIENT),            # no case at all never passes
    (0, 2, 2, INSUFFICIENT), (1, 2, 1, PARTLY), (0, 2, 1, NOT)])
def test_verdict_from_counts(n_ok, n, missing, want):
    assert R._verdict(n_ok, n, missing) == want


# (the claims of Figures 1 and 2 and their curve statistics: tests/test_claim_rules.py)


# ---- FedLSA / SCAFFLSA ------------------------------------------------------------------------
def lsa_table(cells):
    """cells: (setting, N, H, rel_error, window_ratio, scafflsa_factor[, scafflsa_last])."""
    rows = []
    for c in cells:
        setting, N, H, rel, ratio, factor = c[:6]
        last = c[6] if len(c) > 6 else 1e-6
        pred = 2.0 if H > 1 else 0.0
        plateau = pred * (1 + rel) if np.isfinite(rel) else (np.inf if rel == np.inf else np.nan)
        rows.append({"setting": setting, "N": N, "eta": 0.1, "H": H, "oracle": "exact", "batch_size": 1,
                     "rounds": 100, "initial": 10.0, "predicted_bias_sq": pred, "fedlsa_plateau": plateau,
                     "rel_error": rel if H > 1 else np.nan, "fedlsa_window_ratio": ratio,
                     "scafflsa_last": last, "scafflsa_window_ratio": 1.0, "scafflsa_factor": factor,
                     "fedlsa_seeds": 2, "scafflsa_seeds": 2})
    return pd.DataFrame(rows)


def lsa(tmp_path, cells):
    spec = spec_for(tmp_path, {}, lsa=lsa_table(cells))
    rep = Report()
    R.lsa_section(rep, spec)
    return verdicts(rep), "\n".join(rep.lines)


@pytest.mark.parametrize("rel, ratio, want", [
    (0.009, 1.0, REPRODUCED), (0.01, 1.0, REPRODUCED), (0.011, 1.0, NOT),
    (0.0, 1.009, REPRODUCED), (0.0, 1.011, NOT), (0.0, 0.989, NOT), (0.0, 0.991, REPRODUCED)])
def test_fedlsa_plateau_against_the_prediction(tmp_path, rel, ratio, want):
    cells = [("heterogeneous", 10, 2, rel, ratio, 1e6), ("heterogeneous", 10, 1, np.nan, 5.0, 1e6)]
    v, _ = lsa(tmp_path, cells)                  # the H = 1 cell (bias 0) is not judged
    assert v["FedLSA plateau = predicted bias"] == want


def test_fedlsa_partly_and_missing(tmp_path):
    ok, bad = ("heterogeneous", 10, 4, 0.001, 1.0, 1e6), ("homogeneous", 10, 4, 0.5, 1.0, 1e6)
    assert lsa(tmp_path, [ok, bad])[0]["FedLSA plateau = predicted bias"] == PARTLY
    nopred = ("homogeneous", 10, 8, np.nan, 1.0, 1e6)
    assert lsa(tmp_path / "b", [ok, nopred])[0]["FedLSA plateau = predicted bias"] == PARTLY
    assert lsa(tmp_path / "c", [nopred])[0]["FedLSA plateau = predicted bias"] == INSUFFICIENT
    diverged = ("homogeneous", 10, 8, np.inf, 1.0, 1e6)
    assert lsa(tmp_path / "d", [diverged])[0]["FedLSA plateau = predicted bias"] == NOT


@pytest.mark.parametrize("factors, want", [
    ((100.0, 1e4), REPRODUCED), ((99.9, 1e4), PARTLY), ((99.9, 2.0), NOT), ((0.5, 1e3), PARTLY)])
def test_scafflsa_factor(tmp_path, factors, want):
    cells = [("heterogeneous", 10, H, 0.0, 1.0, f) for H, f in zip((2, 8), factors)]
    cells.append(("heterogeneous", 10, 1, np.nan, 1.0, 1e-3))       # H = 1: not judged
    cells.append(("homogeneous", 10, 4, 0.0, 1.0, 1e-3))           # homogeneous: not judged
    v, text = lsa(tmp_path, cells)
    assert v["SCAFFLSA removes the heterogeneity bias"] == want
    if 0.5 in factors:
        assert "SCAFFLSA's error is 2x FedLSA's" in text


def test_scafflsa_without_a_curve_is_no_pass(tmp_path):
    """A cell without SCAFFLSA runs (last value NaN, factor inf in the table) or with a
    diverged FedLSA (plateau inf) shows nothing about SCAFFLSA."""
    nosc = ("heterogeneous", 10, 4, 0.0, 1.0, np.inf, np.nan)
    assert lsa(tmp_path, [nosc])[0]["SCAFFLSA removes the heterogeneity bias"] == INSUFFICIENT
    fed_div = ("heterogeneous", 10, 4, np.inf, 1.0, np.inf)
    v, text = lsa(tmp_path / "b", [fed_div, ("heterogeneous", 10, 8, 0.0, 1.0, 1e4)])
    assert v["SCAFFLSA removes the heterogeneity bias"] == PARTLY
    assert "lack a finite FedLSA plateau" in text
    sc_div = ("heterogeneous", 10, 4, 0.0, 1.0, 0.0, np.inf)
    assert lsa(tmp_path / "c", [sc_div])[0]["SCAFFLSA removes the heterogeneity bias"] == NOT


# ---- heterogeneity: measurements only ---------------------------------------------------------
def test_heterogeneity_section_reports_without_a_verdict(tmp_path):
    rows = [{"problem": "CPESph", "method": m, "participation": s, "K": K, "mean": v, "std": 0.0,
             "seeds": 2, "diverged": d}
            for m, s, K, v, d in (("RFedAGS", 1.0, 1, 1e-3, 0), ("RFedAGS", 1.0, 8, 5e-3, 0),
                                  ("RFedAGS", 0.5, 8, np.nan, 2), ("RFedSVRG", 1.0, 8, 1e-6, 0))]
    path = tmp_path / "het.csv"
    io.write_table(path, pd.DataFrame(rows))
    rep = Report()
    R.heterogeneity_section(rep, {"tables": {"heterogeneity": str(path)}})
    text = "\n".join(rep.lines)
    assert rep.summary == []
    assert "- CPESph, K = 8: RFedAGS 0.005 (K = 1: 0.001), RFedSVRG 1e-06." in text
    assert "K=1: 1: 0.001; K=8: 1: 0.005." in text


# ---- the report through the command line ------------------------------------------------------
def test_rfl_reproduction_end_to_end(tmp_path):
    """FedLSA written by ``rfl reproduction``: the summary carries every verdict (Figures 1 and 2
    through their declared claims: tests/test_claims_core.py; School: tests/test_table2_claims.py)."""
    spec = spec_for(tmp_path, {},
                    lsa=lsa_table([("heterogeneous", 10, 4, 0.001, 1.0, 1e3)]))
    path = tmp_path / "reproduction.json"
    path.write_text(json.dumps(spec))
    out = tmp_path / "REPRODUCTION.md"
    assert cli.main(["reproduction", str(path), str(out)]) == 0
    v = summary_of(out)
    assert v == {
        ("FedLSA / TD(0)", "FedLSA plateau = predicted bias"): REPRODUCED,
        ("SCAFFLSA / TD(0)", "SCAFFLSA removes the heterogeneity bias"): REPRODUCED,
    }
    text = out.read_text()
    assert "- runs: 0 (0 diverged)" in text
    assert "None" not in text and text.count("_Rule: ") == len(v)


# ---- the report's content for each rule (what a reader checks) ---------------------------------


def test_lsa_thresholds_are_inclusive(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "LSA_REL_TOL", 0.25)
    v, _ = lsa(tmp_path, [("heterogeneous", 10, 2, 0.25, 1.25, 1e6)])
    assert v["FedLSA plateau = predicted bias"] == REPRODUCED
    v, _ = lsa(tmp_path / "b", [("heterogeneous", 10, 2, 0.25, 0.75, 1e6)])
    assert v["FedLSA plateau = predicted bias"] == REPRODUCED


def test_lsa_report_lines(tmp_path):
    cells = [("heterogeneous", 10, 2, 0.011, 1.0, 1.0, 1e-20), ("heterogeneous", 10, 4, 0.002, 1.0, 2e3),
             ("heterogeneous", 10, 1, np.nan, 1.0, 1.0)]
    table = lsa_table(cells)
    table.loc[1, "scafflsa_window_ratio"] = 1.5
    spec = spec_for(tmp_path, {}, lsa=table)
    rep = Report()
    R.lsa_section(rep, spec)
    text = "\n".join(rep.lines)
    assert "1 of 2 cells with H > 1 agree; the largest relative error is 1.10e-02 (heterogeneous, N = 10, H = 2" in text
    assert "- H = 1 (heterogeneous, N = 10): the bias is 0" in text
    assert "after 100 rounds (round-off level): SCAFFLSA lowers the error by a factor 1." in text
    assert "(still decreasing at the last round: more rounds would lower it): SCAFFLSA lowers the error by a factor 2e+03" in text
    assert verdicts(rep)["SCAFFLSA removes the heterogeneity bias"] == PARTLY



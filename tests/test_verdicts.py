"""The rules that turn result files into the verdicts of REPRODUCTION.md.

Every input here is made in the test with a known answer: excess risks that are exactly
r^t (with or without a floor), decaying runs that end a known factor below or above the
fixed ones. Each rule is checked on both
sides of each of its thresholds, and on the inputs that could crash it or pass silently:
runs that diverged (after one round or later), runs of one round or none after round 0,
rows without a value. The files have the runner's format (a table with its columns and
``X.meta.json`` beside it), and the report is also written through ``rfl reproduction``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rfl import io
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


def spec_for(root, runs: dict, *, table1=(), figures=None, datasets=None, experiments=None):
    """The spec ``rfl reproduction`` reads (the keys the Snakefile writes)."""
    config = {"tables": {"table1": {"rows": list(table1)}}, "figures": figures or {},
              "datasets": datasets or {}, "experiments": experiments or {}}
    tables = {"table2": str(root / "none.csv")}
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
# ---- the report's content for each rule (what a reader checks) ---------------------------------



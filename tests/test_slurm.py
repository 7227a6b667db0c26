"""A real single-node SLURM (scripts/slurm_cluster.sh): the smoke config through profiles/slurm
gives the local run's results (scripts/slurm_smoke.py), and that script's comparison."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("slurm_smoke", REPO / "scripts" / "slurm_smoke.py")
slurm_smoke = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(slurm_smoke)

HEADER = "round,cost,excess_risk,grad_norm,dist_to_opt,grad_evals,floats,wall_time,status\n"


def _out(root: Path, wall: str, cost: str = "-0.5", claims: str = '[{"id": "c", "verdict": "pass"}]') -> Path:
    run = root / "results" / "runs" / "e" / "rfedags_K1_seed0"
    run.parent.mkdir(parents=True)
    run.with_suffix(".csv").write_text(HEADER + f"0,{cost},0.1,0.2,0.3,0,0,0,ok\n1,{cost},0.1,0.2,0.3,8,16,{wall},ok\n")
    run.with_suffix(".meta.json").write_text(json.dumps({"spec": {"seed": 0}, "status": "ok",
                                                         "rounds_completed": 1, "duration_s": float(wall)}))
    (root / "paper_tables").mkdir()
    (root / "paper_tables" / "claims.json").write_text(claims)
    return root


def test_the_comparison_ignores_the_clock_only(tmp_path):
    local = _out(tmp_path / "a", wall="1.25")
    assert slurm_smoke.compare(local, _out(tmp_path / "b", wall="7.5")) == []
    diffs = slurm_smoke.compare(local, _out(tmp_path / "c", wall="1.25", cost="-0.50000000000000011"))
    assert diffs == ["results/runs/e/rfedags_K1_seed0.csv: row 1, column cost: -0.5 vs -0.50000000000000011"]
    diffs = slurm_smoke.compare(local, _out(tmp_path / "d", wall="1.25", claims='[{"id": "c", "verdict": "fail"}]'))
    assert diffs == ["paper_tables/claims.json: differs (first: c: verdict)"]
    missing = _out(tmp_path / "e", wall="1.25")
    (missing / "results/runs/e/rfedags_K1_seed0.csv").rename(missing / "results/runs/e/other.csv")
    assert slurm_smoke.compare(local, missing)[0].startswith("run tables: only local")


@pytest.mark.parametrize("limit, minutes", [("2:00:00", 120), ("1-00:00:00", 1440), ("30:00", 30),
                                            ("UNLIMITED", 7 * 24 * 60)])
def test_sinfos_time_limits_in_minutes(limit, minutes):
    assert slurm_smoke._minutes(limit) == minutes


def test_slurm_jobs_count_array_tasks(tmp_path):
    log = tmp_path / "slurm.log"
    log.write_text("Job 4 has been submitted with SLURM jobid 154 (log: x/154.log).\n"
                   "Submitted array job with Snakemake IDs 25,18,9 and SLURM job ID 151. The individual task IDs are 1-3.\n"
                   "Submitted array job with Snakemake IDs 32,34 and SLURM job ID 155. The individual task IDs are 1-2.\n"
                   "Job 7 has been submitted with SLURM jobid 157 (log: x/157.log).\n")
    assert slurm_smoke.slurm_jobs(log) == (4, 7)


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("RFL_SLURM_TEST") != "1" or shutil.which("slurmctld") is None
                    or os.geteuid() != 0,
                    reason="RFL_SLURM_TEST=1, root and Debian's SLURM (scripts/slurm_cluster.sh install): "
                           "starts SLURM daemons and runs the smoke config (tens of minutes of CPU)")
def test_the_smoke_config_through_slurm_gives_the_local_runs_results(tmp_path):
    # RFL_SLURM_LOCAL_OUT: a finished local smoke run's .smoke/ to compare against (CI has one)
    local = os.environ.get("RFL_SLURM_LOCAL_OUT")
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "slurm_smoke.py"), str(tmp_path)]
                       + (["--local", local] if local else []), cwd=REPO, capture_output=True, text=True,
                       timeout=4 * 3600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert re.search(r"^slurm_smoke: same: [1-9]\d* run tables", r.stdout, re.M), r.stdout
    assert subprocess.run([str(REPO / "scripts" / "slurm_cluster.sh"), "status"],
                          capture_output=True).returncode != 0          # stopped again

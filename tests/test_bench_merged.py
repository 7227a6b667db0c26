"""The leaderboard drawn from a merged results table equals the one drawn from the runs' own
files (``rfl results`` of two halves of a benchmark's runs, ``rfl merge``, then
``rfl leaderboard --results``), with the run files moved away."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from rfl.bench.plan import BenchPlan

REPO = Path(__file__).resolve().parents[1]
ARGS = dict(methods=[], problems=["cpesph"], size="smoke", out="b/", baselines=["rfedags", "rfedavg"])


def rfl(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"}
    r = subprocess.run([sys.executable, "-m", "rfl", *map(str, args)], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return r


def test_the_leaderboard_from_a_merged_table_is_the_one_from_the_files(tmp_path):
    rfl("bench", "--size", ARGS["size"], "--problems", *ARGS["problems"], "--baselines", *ARGS["baselines"],
        "--out", ARGS["out"], cwd=tmp_path)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        spec = BenchPlan(**ARGS).leaderboard_spec()
    finally:
        os.chdir(cwd)
    tables = list(spec["tables"])
    assert len(tables) >= 4 and all((tmp_path / t).is_file() for t in tables)
    half = len(tables) // 2
    rfl("results", "h1.parquet", *tables[:half], cwd=tmp_path)
    rfl("results", "h2.parquet", *tables[half:], cwd=tmp_path)
    rfl("merge", "h1.parquet", "h2.parquet", "-o", "merged.parquet", cwd=tmp_path)
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    shutil.move(tmp_path / "b" / "results" / "runs", tmp_path / "runs_moved_away")
    rfl("leaderboard", "spec.json", "again/leaderboard.csv", *tables, "--results", "merged.parquet",
        cwd=tmp_path)
    for name in ("leaderboard.csv", "leaderboard.md", "leaderboard.html", "profile.csv"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "b" / "leaderboard" / name).read_bytes(), name

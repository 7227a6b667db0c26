"""Scaling out: every rule declares its resources and a log, and the SLURM profile dry-runs here."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_faults import _directive_blocks, workflow_text  # noqa: E402  (the fault tests' parser)
from _workflow import WORKFLOW, copy_workflow  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = shutil.which("snakemake")


def test_every_rule_declares_threads_resources_and_a_log():
    blocks = list(_directive_blocks(workflow_text()))
    rules = {r for r, _, _ in blocks} - {"all", "bench_all"}   # the default targets (paper, benchmark): no job of their own
    assert len(rules) >= 9, rules
    for directive in ("threads", "resources", "log"):
        have = {r for r, d, _ in blocks if d == directive}
        assert rules <= have, f"rules without {directive}: {sorted(rules - have)}"


@pytest.mark.skipif(SNAKEMAKE is None or importlib.util.find_spec("snakemake_executor_plugin_slurm") is None,
                    reason="snakemake and snakemake-executor-plugin-slurm")
def test_slurm_profile_dry_runs_with_sized_jobs(tmp_path):
    copy_workflow(tmp_path, (*WORKFLOW, "profiles"))
    r = subprocess.run([SNAKEMAKE, "--profile", "profiles/slurm", "-n", "--configfile",
                        "config/smoke.yaml"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, (r.stdout[-3000:] + r.stderr[-3000:])
    out = r.stdout + r.stderr
    jobs = re.findall(r"^rule (\w+):", out, re.M)
    resources = re.findall(r"^\s+resources: (.*)$", out, re.M)
    assert jobs and len(resources) >= len(jobs) - 1          # `all` is a local rule
    # sizes computed from input files show as <TBD> until those files exist (a fresh tree)
    for line in resources:
        assert re.search(r"\bmem_mb=(\d+|<TBD>)", line) and re.search(r"\bruntime=(\d+|<TBD>)", line), line
        assert "slurm_partition=" in line and "slurm_account=" in line, line
    assert any(re.search(r"\bruntime=\d+", line) for line in resources)

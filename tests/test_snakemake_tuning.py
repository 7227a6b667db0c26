"""rfl.snakemake_tuning: what the workflow changes in Snakemake's own process."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from rfl import snakemake_tuning

REPO = Path(__file__).resolve().parents[1]


class _Scheduler:
    """The part of Snakemake's JobScheduler that update_input_sizes touches, counting asks."""

    def __init__(self):
        self._input_sizes = {}
        self.asked = []

    async def update_input_sizes(self, jobs):          # Snakemake's, minus the file system
        paths = {p for job in jobs for p in job.input}
        self.asked += sorted(paths)
        self._input_sizes.update((p, SIZES.get(p)) for p in paths)


SIZES = {"a.csv": 10, "b.csv": 20, "c.csv": 30}


def _job(*inputs):
    return SimpleNamespace(input=list(inputs))


def _tuned():
    return snakemake_tuning.known_sizes_first(_Scheduler.update_input_sizes)


def test_each_input_size_is_asked_once():
    sched = _Scheduler()
    update = _tuned()
    jobs = [_job("a.csv", "b.csv"), _job("b.csv")]
    asyncio.run(update(sched, jobs))
    asyncio.run(update(sched, jobs))                  # the next pass: nothing new to ask
    asyncio.run(update(sched, jobs + [_job("a.csv", "c.csv")]))
    assert sched.asked == ["a.csv", "b.csv", "a.csv", "c.csv"]
    assert sched._input_sizes == SIZES


def test_a_file_absent_when_asked_is_asked_again():
    sched = _Scheduler()
    update = _tuned()
    asyncio.run(update(sched, [_job("late.csv")]))
    assert sched._input_sizes == {"late.csv": None}
    SIZES["late.csv"] = 5
    try:
        asyncio.run(update(sched, [_job("late.csv")]))
    finally:
        del SIZES["late.csv"]
    assert sched.asked == ["late.csv", "late.csv"] and sched._input_sizes == {"late.csv": 5}


def test_tune_changes_this_snakemake_once():
    pytest.importorskip("snakemake")
    code = ("from rfl import snakemake_tuning as t\n"
            "from snakemake import benchmark as b\n"
            "from snakemake.scheduling.job_scheduler import JobScheduler as J\n"
            "first = J.update_input_sizes\n"
            "print(t.tune(), t.tune(), b.BENCHMARK_INTERVAL_SHORT == b.BENCHMARK_INTERVAL,\n"
            "      J.update_input_sizes is not first, getattr(J.update_input_sizes, 'rfl_tuned', False))\n"
            "once = J.update_input_sizes\n"
            "t.tune()\n"
            "print(J.update_input_sizes is once)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=REPO)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    both = ["benchmark sampling", "input sizes"]
    assert lines[0] == f"{both} {both} True True True"
    assert lines[1] == "True"                         # a second tune wraps nothing again


def test_the_workflow_tunes_snakemake():
    text = (REPO / "rules" / "common.smk").read_text()
    assert "tune_snakemake()" in text.split("PLAN = Plan(")[0]

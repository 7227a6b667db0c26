"""rfl.snakemake_tuning: what the workflow changes in Snakemake's own process."""

from __future__ import annotations

import asyncio
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


def test_tune_changes_this_snakemake_once(monkeypatch):
    pytest.importorskip("snakemake")
    from snakemake import benchmark
    from snakemake.scheduling.job_scheduler import JobScheduler
    original = getattr(JobScheduler.update_input_sizes, "rfl_original", JobScheduler.update_input_sizes)
    # each change undone when the test ends (monkeypatch restores what it set)
    monkeypatch.setattr(JobScheduler, "update_input_sizes", original)
    monkeypatch.setattr(benchmark, "BENCHMARK_INTERVAL_SHORT", 0.5)
    assert benchmark.BENCHMARK_INTERVAL != 0.5
    assert snakemake_tuning.tune() == ["benchmark sampling", "input sizes"]
    assert benchmark.BENCHMARK_INTERVAL_SHORT == benchmark.BENCHMARK_INTERVAL
    tuned = JobScheduler.update_input_sizes
    assert tuned is not original and tuned.rfl_tuned and tuned.rfl_original is original
    assert snakemake_tuning.tune() == ["benchmark sampling", "input sizes"]
    assert JobScheduler.update_input_sizes is tuned            # a second tune wraps nothing again
    # the tuned method asks Snakemake's own for the jobs with an unknown size only
    sched = _Scheduler()
    monkeypatch.setattr(JobScheduler, "update_input_sizes", _Scheduler.update_input_sizes)
    assert snakemake_tuning.tune() == ["benchmark sampling", "input sizes"]
    asyncio.run(JobScheduler.update_input_sizes(sched, [_job("a.csv")]))
    asyncio.run(JobScheduler.update_input_sizes(sched, [_job("a.csv")]))
    assert sched.asked == ["a.csv"]


def test_another_snakemake_is_left_as_it_is(monkeypatch):
    """Without what a change alters (another version), tune skips it and says so."""
    pytest.importorskip("snakemake")
    from snakemake import benchmark
    from snakemake.scheduling.job_scheduler import JobScheduler
    monkeypatch.delattr(benchmark, "BENCHMARK_INTERVAL")
    monkeypatch.delattr(JobScheduler, "update_input_sizes")
    assert snakemake_tuning.tune() == []
    assert not hasattr(JobScheduler, "update_input_sizes")


def test_the_workflow_tunes_snakemake():
    text = (REPO / "rules" / "common.smk").read_text()
    assert "tune_snakemake()" in text.split("PLAN = Plan(")[0]

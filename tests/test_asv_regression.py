"""The CI regression check (scripts/asv_regression.py): which way round it compares, and what
counts as a regression, on asv results written here with known samples (no timing)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("asv")
from asv.benchmarks import Benchmarks  # noqa: E402
from asv.config import Config  # noqa: E402
from asv.results import Results  # noqa: E402
from asv.runner import BenchmarkResult  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import asv_regression as reg  # noqa: E402

BASE, HEAD = "a" * 40, "b" * 40
MACHINE = "testbox"
NAMES = ["bench.slower3x", "bench.slower1_3x", "bench.fails_on_head", "bench.fails_on_base"]


def _benchmark(name):
    return {"name": name, "type": "time", "unit": "seconds", "params": [], "param_names": [],
            "version": "1", "code": "", "number": 0, "repeat": 0, "rounds": 2, "min_run_count": 2,
            "sample_time": 0.01, "warmup_time": -1, "timeout": 60}


def _write(tmp_path, samples: dict[str, dict[str, list[float] | None]]) -> Path:
    """asv.conf.json and results of BASE and HEAD: samples[commit][benchmark] (None: failed)."""
    config = tmp_path / "asv.conf.json"
    config.write_text(json.dumps({"version": 1, "project": "x", "repo": ".", "results_dir": str(tmp_path / "results"),
                                  "html_dir": str(tmp_path / "html"), "env_dir": str(tmp_path / "env"),
                                  "benchmark_dir": str(tmp_path / "benchmarks")}))
    conf = Config.load(str(config))
    benchmarks = {n: _benchmark(n) for n in NAMES}
    Benchmarks(conf, list(benchmarks.values())).save()
    (Path(conf.results_dir) / MACHINE).mkdir(parents=True)
    (Path(conf.results_dir) / MACHINE / "machine.json").write_text(json.dumps({"machine": MACHINE, "version": 1}))
    for commit, values in samples.items():
        res = Results({"machine": MACHINE, "python": "3.11"}, {}, commit, 0, "3.11", "virtualenv-py3.11", {})
        for name, s in values.items():
            if s is None:
                out = BenchmarkResult(result=[None], samples=[None], number=[None], errcode=1, stderr="", profile=None)
            else:
                out = BenchmarkResult(result=[min(s)], samples=[s], number=[1], errcode=0, stderr="", profile=None)
            res.add_result(benchmarks[name], out, record_samples=True)
        res.save(conf.results_dir)
    return config


def _samples(center, n=10):
    """n samples spread +-2 % around ``center``: disjoint from another centre 1.3x away."""
    return [center * (1 + 0.04 * (i / (n - 1) - 0.5)) for i in range(n)]


BASE_SAMPLES = {"bench.slower3x": _samples(1e-3), "bench.slower1_3x": _samples(1e-3),
                "bench.fails_on_head": _samples(1e-3), "bench.fails_on_base": None}


@pytest.mark.parametrize("changed, worse", [
    ({"bench.slower3x": _samples(3e-3)}, True),            # 3x slower, samples far apart: beyond factor 2
    ({"bench.slower1_3x": _samples(1.3e-3)}, False),        # significant but within factor 2
    ({"bench.fails_on_head": None}, True),                   # a failure introduced counts as worse
    ({"bench.fails_on_base": _samples(1e-3)}, False),       # HEAD's benchmark needs what BASE lacks
    ({}, False),
], ids=["3x", "1.3x", "fails-on-head", "fails-on-base", "same"])
def test_a_regression_is_head_slower_than_base_beyond_the_factor(tmp_path, changed, worse):
    head = {**BASE_SAMPLES, "bench.fails_on_base": _samples(1e-3), **changed}
    config = _write(tmp_path, {BASE: BASE_SAMPLES, HEAD: head})
    assert reg.compare(BASE, HEAD, 2.0, config, MACHINE) is worse


def test_the_comparison_runs_base_to_head_not_the_reverse(tmp_path):
    """HEAD 3x faster than BASE is an improvement, not a regression."""
    head = {**BASE_SAMPLES, "bench.fails_on_base": _samples(1e-3), "bench.slower3x": _samples(1e-3 / 3)}
    config = _write(tmp_path, {BASE: BASE_SAMPLES, HEAD: head})
    assert reg.compare(BASE, HEAD, 2.0, config, MACHINE) is False
    assert reg.compare(HEAD, BASE, 2.0, config, MACHINE) is True


@pytest.mark.parametrize("argv, needle", [(["--factor", "1"], "--factor"), (["--head", "no-such-rev"], "no-such-rev")])
def test_bad_arguments_are_one_line_exit_2(argv, needle, capsys):
    assert reg.main(argv + ["--no-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


@pytest.mark.parametrize("verdicts, runs, status", [
    ([False], 1, 0),                 # nothing worse: one run
    ([True, False], 2, 0),           # worse once, not when measured again: a burst of load
    ([True, True], 2, 1),            # worse twice in a row: a regression
])
def test_a_regression_fails_only_when_a_second_run_confirms_it(monkeypatch, verdicts, runs, status):
    calls = []
    monkeypatch.setattr(reg, "run", lambda base, head, regex: calls.append((base, head)) or 0)
    answers = iter(verdicts)
    monkeypatch.setattr(reg, "compare", lambda base, head, factor: next(answers))
    assert reg.main(["--base", "HEAD~1", "--head", "HEAD"]) == status
    assert len(calls) == runs
    assert all(b != h for b, h in calls)

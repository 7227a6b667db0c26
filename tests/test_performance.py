"""The performance table through the ``rfl`` CLI (``rfl performance``, ``rfl perf-table``) and
the CPU record each ``rfl`` process prints; the table's arithmetic is checked in-process in
tests/test_performance_rows.py, whose result tree these tests share."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest
from test_performance_rows import BENCH_HEADER, REPO, _perf_csv, make_tree

from rfl import config as rflconfig
from rfl import io
from rfl.cli import CPU_RECORD_PREFIX as CLI_PREFIX
from rfl.reporting import performance as perf
from rfl.workflow import Plan


@pytest.fixture
def tree(tmp_path):
    return make_tree(tmp_path)


def _rfl(*args, env=None, cwd=REPO):
    env = dict(os.environ, **(env or {}))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "rfl", *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120, check=False)


def test_cli_writes_the_table_as_csv_and_markdown(tree):
    spec = tree / "perf.json"
    spec.write_text(json.dumps({"benchmarks": str(tree / "results/benchmarks"), "logs": str(tree / "logs"),
                                "runs": str(tree / "results/runs")}))
    out = tree / "tables/performance.csv"
    r = _rfl("performance", spec, out)
    assert r.returncode == 0, r.stderr
    rows = perf.read_performance_csv(out)
    assert [row["name"] for row in rows] == ["runs", "data", "reproduction", "expA", "expB", "all jobs"]
    assert rows[-1]["cpu_s"] == 12.5 and rows[-1]["machine"] == perf.machine()
    assert rows[-1]["config"] == "-"             # the spec names no config file
    md = out.with_suffix(".md").read_text().splitlines()
    table = [line for line in md if line.startswith("|")]
    assert table[0] == "| " + " | ".join(perf.COLUMNS) + " |"
    assert len(table) == 2 + len(rows)
    assert "| total | all jobs | 4 | 12.5 | 1.9 | 15% |" in md[-1]


def test_cli_names_a_bad_spec_or_benchmark(tree):
    spec = tree / "perf.json"
    spec.write_text(json.dumps({"benchmarks": str(tree), "logs": str(tree / "logs")}))
    r = _rfl("performance", spec, tree / "p.csv")
    assert r.returncode == 2 and "key 'runs' is missing" in r.stderr
    (tree / "empty.tsv").write_text(BENCH_HEADER)
    spec.write_text(json.dumps({"benchmarks": str(tree), "logs": str(tree / "logs"), "runs": str(tree)}))
    r = _rfl("performance", spec, tree / "p.csv", tree / "empty.tsv")
    assert r.returncode == 2 and "empty.tsv: an empty benchmark record" in r.stderr


def test_every_job_prints_its_own_cpu_seconds(tmp_path):
    smoke = rflconfig.load(REPO / "config" / "smoke.yaml")
    spec = tmp_path / "table1.json"
    io.write_json(spec, Plan(smoke, io.read_yaml(REPO / "config" / "paper_values.yaml")).table_spec("table1"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = _rfl("table1", spec, tmp_path / "t1.csv", env={"RFL_CPU_RECORD": "1"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert r.returncode == 0, r.stderr
    last = r.stderr.splitlines()[-1]
    assert last.startswith(CLI_PREFIX)
    record = json.loads(last[len(CLI_PREFIX):])
    child = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # the record is taken just before the process exits: at most what the OS counted in all
    assert 0 < record["startup_s"] < record["cpu_s"] <= child + 0.02
    assert record["cpu_s"] > 0.5 * child
    # without the variable (a user's shell), no record line
    r = _rfl("table1", spec, tmp_path / "t1.csv", env={"RFL_CPU_RECORD": "0"})
    assert r.returncode == 0 and CLI_PREFIX not in r.stderr


def test_perf_table_cli_checks_and_updates_a_readme(tree, tmp_path):
    csv_path = _perf_csv(tree)
    readme = tmp_path / "README.md"
    readme.write_text(f"{perf.README_BEGIN}\nstale\n{perf.README_END}\n")
    r = _rfl("perf-table", csv_path, "--readme", readme, "--check")
    assert r.returncode == 1 and "differs" in r.stderr
    r = _rfl("perf-table", csv_path, "--readme", readme)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / perf.README_INPUT).read_text() == csv_path.read_text()   # kept beside    r = _rfl("perf-table", csv_path, "--readme", readme, "--check")
    assert r.returncode == 0, r.stderr
    r = _rfl("perf-table", csv_path)
    assert r.stdout == perf.readme_table(readme)
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    r = _rfl("perf-table", bad)
    assert r.returncode == 2 and "not a performance table" in r.stderr


_ENTRY = """
import atexit, sys, threading, time
from pathlib import Path
out = Path(sys.argv[1])
class Teardown:                      # finalised when the interpreter clears __main__ at exit
    def __del__(self):
        (out / "teardown").write_text("ran")
keep = Teardown()
atexit.register(lambda: (out / "atexit").write_text("ran"))
import rfl.cli
returned = threading.Event()            # set once main has returned: the thread outlives it
main = rfl.cli.main
def main_then_signal(argv=None):
    try:
        return main(argv)
    finally:
        returned.set()
rfl.cli.main = main_then_signal
def late():
    returned.wait(60)
    time.sleep(0.2)
    (out / "thread").write_text("ran")
threading.Thread(target=late).start()
sys.argv = ["rfl", *sys.argv[2:]]
rfl.cli.entry()
"""


@pytest.mark.parametrize("record", ["1", "0"])
def test_a_workflow_job_exits_with_its_status_after_threads_and_atexit_without_teardown(tmp_path, record):
    """``rfl.cli.entry``: the exit status is main's (0, and 2 for a bad spec), a non-daemon
    thread still finishes and the atexit handlers run; a workflow job (RFL_CPU_RECORD=1) skips
    the interpreter's teardown (a finaliser of __main__ does not run), a user's shell keeps it."""
    script = tmp_path / "entry.py"
    script.write_text(_ENTRY)
    env = dict(os.environ, RFL_CPU_RECORD=record)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    spec = tmp_path / "table1.json"
    smoke = rflconfig.load(REPO / "config" / "smoke.yaml")
    io.write_json(spec, Plan(smoke, io.read_yaml(REPO / "config" / "paper_values.yaml")).table_spec("table1"))
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    for args, status in (([spec], 0), ([bad], 2)):
        args = ["table1", *map(str, args), str(tmp_path / "out" / "t1.csv")]
        for name in ("thread", "atexit", "teardown"):
            (tmp_path / name).unlink(missing_ok=True)
        r = subprocess.run([sys.executable, str(script), str(tmp_path), *args], capture_output=True,
                           text=True, env=env, timeout=120, check=False)
        assert r.returncode == status, r.stderr
        assert (tmp_path / "thread").read_text() == "ran"
        assert (tmp_path / "atexit").read_text() == "ran"
        assert (tmp_path / "teardown").exists() == (record == "0")

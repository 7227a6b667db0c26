"""The performance table (rfl/reporting/performance.py): each job's CPU record, the sums and
shares per rule kind and experiment, and the README's generated table."""

from __future__ import annotations

import csv
import json
import math
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from rfl import config as rflconfig
from rfl import io
from rfl.cli import CPU_RECORD_PREFIX as CLI_PREFIX
from rfl.reporting import performance as perf
from rfl.workflow import Plan

REPO = Path(__file__).resolve().parents[1]
BENCH_HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def _bench(path: Path, s: float, max_rss, end: float) -> None:
    """A Snakemake benchmark record (its header and one row) whose job ended at ``end``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(BENCH_HEADER + f"{s}\t0:00:0{int(s) % 10}\t{max_rss}\t1\t1\t1\t0\t0\t50\t0.5\n")


def _log(path: Path, end: float, *records: dict, noise: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = noise + "".join(CLI_PREFIX + json.dumps(r) + "\n" for r in records)
    path.write_text(text)
    os.utime(path, (end, end))


def _run_table(path: Path, walls: list[float]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"{t},1.0,0.1,0.1,0.1,0,0,{w},ok\n" for t, w in enumerate([0.0] + walls))
    path.write_text("round,cost,excess_risk,grad_norm,dist_to_opt,grad_evals,floats,wall_time,status\n"
                    + rows)


@pytest.fixture
def tree(tmp_path):
    """Four jobs: two run jobs (experiments expA, expB), one data job, the report (whose log
    lacks a record); known CPU seconds, start-up, rounds and times."""
    b, logs, runs = tmp_path / "results/benchmarks", tmp_path / "logs", tmp_path / "results/runs"
    jobs = {  # name: (wall s, max_rss MB, end time, record or None)
        "runs/expA": (10.0, 100, 1112.0, {"cpu_s": 8.0, "startup_s": 1.0, "wall_s": 9.9}),
        "runs/expB": (4.0, 300, 1106.0, {"cpu_s": 3.0, "startup_s": 0.5, "wall_s": 3.9}),
        "data/ds/fixed": (2.0, 50, 1100.0, {"cpu_s": 1.5, "startup_s": 0.4, "wall_s": 1.9}),
        "reproduction": (1.0, "NA", 1113.0, None),
    }
    for name, (s, rss, end, record) in jobs.items():
        _bench(b / f"{name}.tsv", s, rss, end)
        # a stale record above the last one (a rerun appended to the log) must not count
        stale = {"cpu_s": 99.0, "startup_s": 9.0, "wall_s": 99.0}
        _log(logs / f"{name}.log", end, *([stale, record] if record else []), noise="a line\n")
    _run_table(runs / "expA/m_K1_seed0.csv", [1.0, 3.0])        # rounds: 3 s
    _run_table(runs / "expA/m_K1_seed1.csv", [2.0])             # 2 s
    _run_table(runs / "expB/x_seed0.csv", [0.25, 1.0])          # 1 s
    return tmp_path


def test_cpu_record_is_the_last_record_line(tmp_path):
    log = tmp_path / "a.log"
    _log(log, 0, {"cpu_s": 1.0, "startup_s": 0.1, "wall_s": 2}, {"cpu_s": 2.0, "startup_s": 0.2, "wall_s": 3},
         noise="Traceback? no: a progress line\n")
    assert perf.read_cpu_record(log) == {"cpu_s": 2.0, "startup_s": 0.2, "wall_s": 3}
    log.write_text("no record here\n")
    assert perf.read_cpu_record(log) is None
    assert perf.read_cpu_record(tmp_path / "missing.log") is None
    assert perf.CPU_RECORD_PREFIX == CLI_PREFIX


def test_rows_sum_the_jobs_per_kind_and_experiment(tree):
    records = perf.job_records(tree / "results/benchmarks", tree / "logs", tree / "results/runs")
    assert sorted(r["job"] for r in records) == ["data/ds/fixed", "reproduction", "runs/expA", "runs/expB"]
    rows = {(r["scope"], r["name"]): r for r in perf.performance_rows(records)}
    runs = rows[("kind", "runs")]
    assert runs["jobs"] == 2 and runs["cpu_s"] == 11.0 and runs["startup_s"] == 1.5
    assert runs["startup_share"] == pytest.approx(1.5 / 11)
    assert runs["rounds_s"] == 6.0 and runs["outside_rounds_share"] == pytest.approx(1 - 6 / 14)
    assert runs["wall_s"] == 14.0 and runs["max_rss_mb"] == 300
    a = rows[("experiment", "expA")]
    assert (a["jobs"], a["cpu_s"], a["rounds_s"]) == (1, 8.0, 5.0)
    assert a["outside_rounds_share"] == pytest.approx(1 - 5 / 10)     # of its 10 wall seconds
    data = rows[("kind", "data")]
    assert (data["cpu_s"], data["startup_s"], data["wall_s"]) == (1.5, 0.4, 2.0)
    assert math.isnan(data["rounds_s"]) and math.isnan(data["outside_rounds_share"])
    report = rows[("kind", "reproduction")]           # no CPU record: no CPU seconds, still a job
    assert report["jobs"] == 1 and math.isnan(report["cpu_s"]) and math.isnan(report["max_rss_mb"])
    total = rows[("total", "all jobs")]
    assert total["jobs"] == 4 and total["cpu_s"] == 12.5 and total["startup_s"] == 1.9
    # span: the data job started first (1100 - 2), the report ended last (1113)
    assert total["wall_s"] == pytest.approx(1113 - 1098)
    # order: runs first, then the other kinds, the experiments, the total
    order = [(r["scope"], r["name"]) for r in perf.performance_rows(records)]
    assert order == [("kind", "runs"), ("kind", "data"), ("kind", "reproduction"),
                     ("experiment", "expA"), ("experiment", "expB"), ("total", "all jobs")]


def test_rounds_of_one_setting_skip_settings_sharing_its_prefix(tmp_path):
    _run_table(tmp_path / "e/a_K1_seed0.csv", [2.0])
    _run_table(tmp_path / "e/a_K10_seed0.csv", [5.0])
    _run_table(tmp_path / "e/a_K1_s2_seed0.csv", [7.0])
    assert perf.rounds_seconds(tmp_path, "e", "a_K1") == 2.0
    assert perf.rounds_seconds(tmp_path, "e") == 14.0


def test_only_the_given_benchmark_files_count(tree):
    b = tree / "results/benchmarks"
    records = perf.job_records(b, tree / "logs", tree / "results/runs", files=[b / "runs/expB.tsv"])
    assert [r["job"] for r in records] == ["runs/expB"]
    with pytest.raises(ValueError, match="not a benchmark record under"):
        perf.job_records(b, tree / "logs", tree / "results/runs", files=[tree / "logs/reproduction.log"])


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


# ---- the README's table -------------------------------------------------------------------
def _perf_csv(tree) -> Path:
    out = tree / "performance.csv"
    perf.write_performance({"benchmarks": tree / "results/benchmarks", "logs": tree / "logs",
                            "runs": tree / "results/runs", "configfiles": ["config/x.yaml"]}, out)
    return out


def test_perf_table_reports_the_totals_with_the_machine(tree):
    table = perf.perf_table(_perf_csv(tree))
    lines = table.splitlines()
    assert lines[0] == f"Measured on {perf.machine()}; workflow config config/x.yaml."
    assert "| workflow: jobs; wall time (first job start to last job end) | 4; 15 s |" in lines
    assert "| workflow: CPU seconds (user + system) of all jobs | 12 s |" in lines   # 12.5 -> 12
    assert "| workflow: start-up (interpreter, imports) share of the CPU seconds | 15.2% (2 s) |" in lines
    assert f"| runs: share of their wall time outside the rounds | {100 * (1 - 6 / 14):.1f}% |" in lines
    assert "| CPU seconds: runs (2 jobs) | 11.0 s |" in lines
    assert all(line.count("|") == 3 for line in lines[2:])


def test_readme_block_is_replaced_between_the_markers_only(tree, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# T\n\nbefore\n{perf.README_BEGIN}\nold table\n{perf.README_END}\nafter\n")
    table = perf.perf_table(_perf_csv(tree))
    assert perf.update_readme(readme, table, check=True) is True
    assert "old table" in readme.read_text()                  # --check writes nothing
    assert perf.update_readme(readme, table) is True
    text = readme.read_text()
    assert text == f"# T\n\nbefore\n{perf.README_BEGIN}\n{table}{perf.README_END}\nafter\n"
    assert perf.readme_table(readme) == table
    assert perf.update_readme(readme, table) is False
    readme.write_text("no markers\n")
    with pytest.raises(perf.PerfInputError, match="no performance-table markers"):
        perf.update_readme(readme, table)


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


def test_asv_tracks_expand_the_parameters_with_units(tmp_path):
    machine_dir = tmp_path / "results" / "vm"
    machine_dir.mkdir(parents=True)
    (tmp_path / "results" / "benchmarks.json").write_text(json.dumps(
        {"bench_speedup.Speedup.track_speedup": {"unit": "x (loop / vectorised)"}, "version": 2}))
    result = {"result_columns": ["result", "params", "version"],
              "params": {"cpu": "AMD EPYC", "num_cpu": "2", "os": "Linux"},
              "results": {"bench_speedup.Speedup.track_speedup": [[5.71, None, 30.4], [["'a'", "'b'", "'c'"]], "v"],
                          "bench_rounds.Round.time_round": [[0.1], [["'x'"]], "v"],
                          "bench_accuracy.Accuracy.track_excess_risk_cpesph": [2.5e-5, [], "v"]}}
    path = machine_dir / "abc-env.json"
    path.write_text(json.dumps(result))
    machine, tracks = perf.asv_tracks(path)
    assert machine == "AMD EPYC, 2, Linux"
    assert tracks == [("Accuracy.track_excess_risk_cpesph", "2.5e-05"),
                      ("Speedup.track_speedup (a)", "5.71 x (loop / vectorised)"),
                      ("Speedup.track_speedup (c)", "30.4 x (loop / vectorised)")]


def test_kept_asv_input_carries_its_units(tmp_path):
    """The README's asv rows are regenerated from the copy kept beside it, away from the
    results directory's benchmarks.json: the copy must keep the units."""
    results = tmp_path / "asv" / "results"
    (results / "vm").mkdir(parents=True)
    (results / "benchmarks.json").write_text(json.dumps(
        {"bench_flower.FlowerRound.track_seconds_per_round": {"unit": "seconds"}, "version": 2}))
    src = results / "vm" / "abc-env.json"
    src.write_text(json.dumps({"result_columns": ["result", "params"], "params": {"cpu": "X"},
                               "results": {"bench_flower.FlowerRound.track_seconds_per_round":
                                           [[0.1, 0.7], [["'flower'"], ["10", "100"]]]}}))
    readme = tmp_path / "README.md"
    readme.write_text("x\n")
    perf_csv = tmp_path / "p.csv"
    perf_csv.write_text("")
    perf.keep_readme_inputs(readme, perf_csv, src)
    kept = tmp_path / perf.README_ASV_INPUT
    assert perf.asv_tracks(kept) == perf.asv_tracks(src)
    assert perf.asv_tracks(kept)[1][0] == ("FlowerRound.track_seconds_per_round (flower, 10)", "0.1 seconds")


def test_readme_has_the_generated_table():
    readme = REPO / "README.md"
    block = perf.readme_table(readme)
    lines = block.splitlines()
    assert lines[0].startswith("Measured on ") and lines[2:4] == ["| measure | value |", "|---|---|"]
    assert all(line.startswith("| ") and line.count("|") == 3 for line in lines[4:])
    source, asv = REPO / perf.README_INPUT, REPO / perf.README_ASV_INPUT
    assert block == perf.perf_table(source, asv if asv.is_file() else None), \
        "regenerate: rfl perf-table paper_tables/performance.csv --readme README.md"
    rows = {r["name"]: r for r in csv.DictReader(source.open())}
    assert float(rows["all jobs"]["cpu_s"]) > 0

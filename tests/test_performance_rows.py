"""The performance table (rfl/reporting/performance.py) in-process: each job's CPU record, the
sums and shares per rule kind and experiment, the CSV and Markdown it is written as, and the
README's generated table with its units. Every expected number is summed in the test from the
records made here. (tests/test_performance.py runs the same through the ``rfl`` CLI.)"""

from __future__ import annotations

import csv
import json
import math
import os
import platform
from pathlib import Path

import numpy as np
import pytest

from rfl.cli import CPU_RECORD_PREFIX as CLI_PREFIX
from rfl.reporting import performance as perf

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
    return make_tree(tmp_path)


def make_tree(tmp_path):
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
    _run_table(tmp_path / "e/a_K1_seed0.csv", [0.5, 1.0, 2.0])      # the last wall_time counts
    _run_table(tmp_path / "e/a_K10_seed0.csv", [5.0])
    _run_table(tmp_path / "e/a_K1_s2_seed0.csv", [7.0])
    _run_table(tmp_path / "e/zzzz_seed3.csv", [100.0])                # another setting, same length
    assert perf.rounds_seconds(tmp_path, "e", "a_K1") == 2.0
    assert perf.rounds_seconds(tmp_path, "e") == 114.0
    # a setting named "<setting>_seed..." (sorted first) is skipped, not the end of the list
    _run_table(tmp_path / "f/s_seed-x_seed1.csv", [9.0])
    _run_table(tmp_path / "f/s_seed0.csv", [4.0])
    assert perf.rounds_seconds(tmp_path, "f", "s") == 4.0


def test_rounds_of_tables_without_rows_or_wall_time(tmp_path):
    (tmp_path / "e").mkdir()
    (tmp_path / "e/a_seed0.csv").write_text("round,wall_time,status\n")          # header only
    (tmp_path / "e/a_seed1.csv").write_text("round,wall_time,status\n0,1.5,ok\n1,,ok\n")
    _run_table(tmp_path / "e/a_seed2.csv", [3.0])
    (tmp_path / "e/a_seed3.csv").write_text("round,wall_time,status\n0,0,ok\n1,,ok\n2,2.5,ok\n")  # the last row's
    assert perf.rounds_seconds(tmp_path, "e", "a") == 3.0 + 2.5


def test_only_the_given_benchmark_files_count(tree):
    b = tree / "results/benchmarks"
    records = perf.job_records(b, tree / "logs", tree / "results/runs", files=[b / "runs/expB.tsv"])
    assert [r["job"] for r in records] == ["runs/expB"]
    with pytest.raises(ValueError, match="not a benchmark record under"):
        perf.job_records(b, tree / "logs", tree / "results/runs", files=[tree / "logs/reproduction.log"])


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


# ---- records, sums and shares -----------------------------------------------------------------
def test_a_benchmark_record_reads_na_as_nan_and_an_empty_one_is_refused(tmp_path):
    tsv = tmp_path / "b.tsv"
    _bench(tsv, 7.5, "NA", 0)
    rec = perf.read_benchmark(tsv)
    assert rec["s"] == 7.5 and rec["mean_load"] == 50 and rec["cpu_time"] == 0.5
    assert math.isnan(rec["max_rss"]) and math.isnan(rec["h:m:s"])     # not a number either
    tsv.write_text(BENCH_HEADER)
    with pytest.raises(ValueError, match="b.tsv: an empty benchmark record"):
        perf.read_benchmark(tsv)


def test_a_log_is_read_past_undecodable_bytes(tmp_path):
    log = tmp_path / "a.log"
    log.write_bytes(b"\xff\xfe progress\n" + (CLI_PREFIX + json.dumps({"cpu_s": 4.0})).encode() + b"\n")
    assert perf.read_cpu_record(log) == {"cpu_s": 4.0}


def test_job_records_per_setting_jobs_excluded_kinds_and_missing_parts(tmp_path):
    """A run job per setting counts that setting's rounds only; the performance job itself is
    left out by default; a record without start-up, a job without a log (its end: the
    benchmark's time) and a data job (no experiment, no rounds)."""
    b, logs, runs = tmp_path / "b", tmp_path / "logs", tmp_path / "runs"
    _bench(b / "runs/expC/m_K2.tsv", 6.0, 80, 0)
    _log(logs / "runs/expC/m_K2.log", 2000.0, {"cpu_s": 5.0, "startup_s": None})
    _run_table(runs / "expC/m_K2_seed0.csv", [1.0, 2.5])
    _run_table(runs / "expC/m_K2_seed1.csv", [0.5])
    _run_table(runs / "expC/other_seed0.csv", [40.0])             # another setting: not this job's
    _bench(b / "performance.tsv", 1.0, 10, 0)
    _log(logs / "performance.log", 2100.0, {"cpu_s": 0.7, "startup_s": 0.1})
    _bench(b / "data/ds/x.tsv", 3.0, 20, 0)                       # no log at all
    os.utime(b / "data/ds/x.tsv", (1500.0, 1500.0))
    records = {r["job"]: r for r in perf.job_records(b, logs, runs)}
    assert sorted(records) == ["data/ds/x", "runs/expC/m_K2"]
    run = records["runs/expC/m_K2"]
    assert (run["kind"], run["experiment"], run["cpu_s"], run["rounds_s"]) == ("runs", "expC", 5.0, 3.0)
    assert math.isnan(run["startup_s"]) and run["wall_s"] == 6.0 and run["max_rss_mb"] == 80
    assert run["end"] == 2000.0                                   # the log's modification time
    data = records["data/ds/x"]
    assert data["experiment"] is None and data["kind"] == "data"
    assert math.isnan(data["cpu_s"]) and math.isnan(data["startup_s"]) and math.isnan(data["rounds_s"])
    assert data["end"] == 1500.0                                  # no log: the benchmark file's time
    everything = {r["job"] for r in perf.job_records(b, logs, runs, exclude=())}
    assert "performance" in everything


def test_shares_and_sums_when_values_are_missing():
    nan = math.nan
    job = {"job": "j", "kind": "data", "experiment": None, "rounds_s": nan, "end": 0.0}
    none = perf._row("kind", "data", [dict(job, cpu_s=nan, startup_s=nan, wall_s=nan, max_rss_mb=nan)])
    assert none["jobs"] == 1 and all(math.isnan(none[c]) for c in
                                     ("cpu_s", "startup_s", "startup_share", "wall_s", "max_rss_mb"))
    zero = perf._row("kind", "data", [dict(job, cpu_s=0.0, startup_s=0.0, wall_s=1.0, max_rss_mb=5.0)])
    assert math.isnan(zero["startup_share"])                      # no CPU seconds: no share
    two = perf._row("kind", "data", [dict(job, cpu_s=2.0, startup_s=nan, wall_s=1.0, max_rss_mb=5.0),
                                     dict(job, cpu_s=6.0, startup_s=1.0, wall_s=nan, max_rss_mb=9.0)])
    assert (two["cpu_s"], two["startup_s"], two["wall_s"], two["max_rss_mb"]) == (8.0, 1.0, 1.0, 9.0)
    assert two["startup_share"] == 1.0 / 8.0
    # a run job whose wall time is missing: no share outside the rounds
    run = dict(job, kind="runs", experiment="e", cpu_s=1.0, startup_s=0.5, rounds_s=2.0, wall_s=nan,
               max_rss_mb=1.0)
    r = perf._row("experiment", "e", [run])
    assert r["rounds_s"] == 2.0 and math.isnan(r["outside_rounds_share"])
    rows = perf.performance_rows([])
    assert len(rows) == 1 and rows[0]["scope"] == "total" and rows[0]["jobs"] == 0
    assert math.isnan(rows[0]["wall_s"])


def test_total_span_counts_a_job_without_wall_time_from_its_end(tmp_path):
    nan = math.nan
    base = {"kind": "data", "experiment": None, "cpu_s": 1.0, "startup_s": 0.1, "rounds_s": nan,
            "max_rss_mb": 1.0}
    recs = [dict(base, job="a", wall_s=5.0, end=110.0), dict(base, job="b", wall_s=nan, end=103.0),
            dict(base, job="c", wall_s=2.0, end=120.0)]
    total = perf.performance_rows(recs)[-1]
    assert total["wall_s"] == 120.0 - 103.0             # b started (and ended) at 103, before 110 - 5
    assert total["jobs"] == 3 and total["cpu_s"] == 3.0


# ---- the CSV and Markdown files ---------------------------------------------------------------
def test_markdown_units_and_the_written_files(tree):
    out = tree / "tables" / "performance.csv"
    spec = {"benchmarks": tree / "results/benchmarks", "logs": tree / "logs", "runs": tree / "results/runs",
            "configfiles": ["config/a.yaml", "config/b.yaml"]}
    rows = perf.write_performance(spec, out)
    back = perf.read_performance_csv(out)
    assert [r["name"] for r in back] == [r["name"] for r in rows]
    assert back[-1]["config"] == "config/a.yaml config/b.yaml" and back[-1]["machine"] == perf.machine()
    for r, b in zip(rows, back):
        for c in perf.COLUMNS[2:]:
            assert (math.isnan(b[c]) and math.isnan(r[c])) or b[c] == pytest.approx(r[c], rel=1e-5), c
    with open(out, newline="") as fh:
        raw = list(csv.DictReader(fh))
    assert list(raw[0]) == perf.CSV_COLUMNS
    assert raw[0]["startup_share"] == f"{1.5 / 11:.6g}" and raw[0]["jobs"] == "2"
    md = out.with_suffix(".md").read_text()
    assert "with config config/a.yaml config/b.yaml, on " + perf.machine() in md
    lines = md.splitlines()
    table = [ln for ln in lines if ln.startswith("|")]
    assert table[0] == "| " + " | ".join(perf.COLUMNS) + " |" and table[1] == "|" + "---|" * len(perf.COLUMNS)
    cells = {ln.split(" | ")[1]: ln.strip("| ").split(" | ") for ln in table[2:]}
    # runs: 2 jobs, 11 CPU s, 1.5 s start-up (14%), 6 s in rounds, 1 - 6/14 = 57% outside, 14 s, 300 MB
    assert cells["runs"] == ["kind", "runs", "2", "11.0", "1.5", f"{100 * 1.5 / 11:.0f}%", "6.0",
                             f"{100 * (1 - 6 / 14):.0f}%", "14.0", "300"]
    assert cells["reproduction"] == ["kind", "reproduction", "1", "-", "-", "-", "-", "-", "1.0", "-"]
    assert cells["all jobs"][2:6] == ["4", "12.5", "1.9", f"{100 * 1.9 / 12.5:.0f}%"]
    assert perf._fmt("max_rss_mb", 299.6) == "300" and perf._fmt("startup_share", 0.125) == "12%"
    assert perf._fmt("jobs", 3) == "3" and perf._fmt("cpu_s", 2.25) == "2.2"


def test_machine_names_the_cpu_cores_and_versions():
    line = perf.machine()
    assert f", {os.cpu_count()} cores, {platform.system()}, Python {platform.python_version()}, " \
           f"numpy {np.__version__}" in line
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        model = next((ln.split(":", 1)[1].strip() for ln in cpuinfo.read_text().splitlines()
                      if ln.startswith("model name")), None)
        if model:
            assert line.startswith(model + ", ")


@pytest.mark.parametrize("text", [
    "",                                                              # nothing
    "scope,name\nkind,runs\n",                                      # columns missing
    ",".join(perf.CSV_COLUMNS) + "\nkind,runs,1,1,1,1,1,1,1,1,m,c\n",   # the total not last
    ",".join(perf.CSV_COLUMNS) + "\ntotal,all jobs,x,1,1,1,1,1,1,1,m,c\n",   # not a number
])
def test_a_file_that_is_not_a_performance_table_is_refused(tmp_path, text):
    path = tmp_path / "p.csv"
    path.write_text(text)
    with pytest.raises(perf.PerfInputError, match="p.csv: not a performance table of `rfl performance`"):
        perf.read_performance_csv(path)


def test_a_performance_table_reads_empty_and_nan_cells_as_nan(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text(",".join(perf.CSV_COLUMNS) + "\ntotal,all jobs,3,,nan,0.5,1,0.25,61,7,m,c\n")
    row, = perf.read_performance_csv(path)
    assert row["jobs"] == 3.0 and math.isnan(row["cpu_s"]) and math.isnan(row["startup_s"])
    assert (row["startup_share"], row["wall_s"], row["max_rss_mb"]) == (0.5, 61.0, 7.0)
    assert row["machine"] == "m" and row["config"] == "c"


# ---- the README's table: units and pieces ------------------------------------------------------
def test_durations_in_minutes_and_seconds():
    assert perf._duration(59.4) == "59 s"
    assert perf._duration(60) == "1 min 00 s"
    assert perf._duration(3725.2) == "62 min 05 s"


def _perf_rows(tmp_path, kinds):
    """A performance.csv with the given (name, jobs, cpu_s) kinds and a total."""
    path = tmp_path / "perf.csv"
    lines = [",".join(perf.CSV_COLUMNS)]
    lines += [f"kind,{n},{j},{c},0.5,0.1,,{share},10,1,," for n, j, c, share in kinds]
    lines.append("total,all jobs,5,30.4,4.56,0.15,,,185,9,Box,cfg.yaml")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_perf_table_lines_with_and_without_a_runs_kind(tmp_path):
    table = perf.perf_table(_perf_rows(tmp_path, [("data", 3, 12.34, "")]))
    lines = table.splitlines()
    assert lines[:4] == ["Measured on Box; workflow config cfg.yaml.", "", "| measure | value |", "|---|---|"]
    assert "| workflow: jobs; wall time (first job start to last job end) | 5; 3 min 05 s |" in lines
    assert "| workflow: CPU seconds (user + system) of all jobs | 30 s |" in lines
    assert "| workflow: start-up (interpreter, imports) share of the CPU seconds | 15.0% (5 s) |" in lines
    assert "| CPU seconds: data (3 jobs) | 12.3 s |" in lines
    assert not any(ln.startswith("| runs:") for ln in lines)
    assert table.endswith("|\n")
    with_runs = perf.perf_table(_perf_rows(tmp_path, [("runs", 2, 20.0, "0.625"), ("data", 3, 10.4, "")]))
    lines = with_runs.splitlines()
    assert "| runs: share of their wall time outside the rounds | 62.5% |" in lines
    assert lines[-2:] == ["| CPU seconds: runs (2 jobs) | 20.0 s |", "| CPU seconds: data (3 jobs) | 10.4 s |"]


def _asv(tmp_path, results, params=None, units=None, bench_json=None):
    d = tmp_path / "results" / "vm"
    d.mkdir(parents=True, exist_ok=True)
    data = {"result_columns": ["result", "params"], "results": results}
    if params is not None:
        data["params"] = params
    if units is not None:
        data["units"] = units
    if bench_json is not None:
        (tmp_path / "results" / "benchmarks.json").write_text(json.dumps(bench_json))
    path = d / "r.json"
    path.write_text(json.dumps(data))
    return path


def test_asv_rows_skip_what_has_no_value_and_name_their_units(tmp_path):
    path = _asv(tmp_path, {
        "b.A.track_one": [3.14159, []],                       # one value, no parameters
        "b.A.time_x": [[1.0], [["'p'"]]],                     # not a tracked benchmark
        "b.A.track_none": [None, []],                         # never ran
        "b.A.track_nan": [[float("nan"), 2.0], [["'u'", "'v'"]]],
        "b.A.track_two": [[1.0, 2.0, 3.0, 4.0], [["'a'", "'b'"], ["1", "2"]]],
        "track_bare": [5.0, []]}, params={"cpu": "Chip", "num_cpu": "", "os": "Linux"},
        units={"b.A.track_one": "ratio", "b.A.track_two": "s"})
    machine, rows = perf.asv_tracks(path)
    assert machine == "Chip, Linux"                           # an empty field is left out
    assert rows == [("A.track_nan (v)", "2"), ("A.track_one", "3.14 ratio"),
                    ("A.track_two (a, 1)", "1 s"), ("A.track_two (a, 2)", "2 s"),
                    ("A.track_two (b, 1)", "3 s"), ("A.track_two (b, 2)", "4 s")]   # not track_bare


def test_asv_units_from_the_file_then_benchmarks_json_then_none(tmp_path):
    kept = _asv(tmp_path / "k", {}, units={"x.track": "s"}, bench_json={"x.track": {"unit": "ms"}})
    assert perf.asv_units(kept) == {"x.track": "s"}
    beside = _asv(tmp_path / "b", {}, bench_json={"x.track": {"unit": "ms"}, "y.track": {}, "version": 2})
    assert perf.asv_units(beside) == {"x.track": "ms", "y.track": ""}
    assert perf.asv_units(_asv(tmp_path / "n", {})) == {}
    assert perf.asv_units(tmp_path / "missing.json") == {}
    assert perf.asv_tracks(_asv(tmp_path / "m", {"a.track_t": [1.0, []]}))[0] == ""


@pytest.mark.parametrize("text", ["not json", "[]", json.dumps({"results": {}}),
                                  json.dumps({"result_columns": []})])
def test_a_file_that_is_not_an_asv_result_is_refused(tmp_path, text):
    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(perf.PerfInputError, match="r.json: not an asv result file"):
        perf.asv_tracks(path)


def test_perf_table_appends_the_asv_rows_with_their_machine(tmp_path):
    csv_path = _perf_rows(tmp_path, [])
    path = _asv(tmp_path, {"b.A.track_one": [2.0, []]}, params={"cpu": "Chip"}, units={"b.A.track_one": "x"})
    lines = perf.perf_table(csv_path, path).splitlines()
    assert lines[-1] == "| asv on Chip: A.track_one | 2 x |"
    bare = _asv(tmp_path / "bare", {"b.A.track_one": [2.0, []]})
    assert perf.perf_table(csv_path, bare).splitlines()[-1] == "| asv: A.track_one | 2 |"


def test_kept_inputs_are_copied_and_a_stale_asv_copy_removed(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("x\n")
    (tmp_path / "src").mkdir()
    perf_csv = _perf_rows(tmp_path / "src", [])
    asv = _asv(tmp_path / "asv", {"b.A.track_one": [2.0, []]}, bench_json={"b.A.track_one": {"unit": "x"}})
    perf.keep_readme_inputs(readme, perf_csv, asv)
    assert (tmp_path / perf.README_INPUT).read_text() == perf_csv.read_text()
    kept_text = (tmp_path / perf.README_ASV_INPUT).read_text()
    assert kept_text.count("\n") > 3 and kept_text.endswith("}\n")     # indented, diff-friendly
    kept = json.loads(kept_text)
    assert kept["units"] == {"b.A.track_one": "x"} and kept["results"] == {"b.A.track_one": [2.0, []]}
    # the kept copy given again as its own source: left as it is
    perf.keep_readme_inputs(readme, tmp_path / perf.README_INPUT, tmp_path / perf.README_ASV_INPUT)
    assert json.loads((tmp_path / perf.README_ASV_INPUT).read_text()) == kept
    perf.keep_readme_inputs(readme, perf_csv, None)
    assert not (tmp_path / perf.README_ASV_INPUT).exists()
    assert (tmp_path / perf.README_INPUT).is_file()


def test_readme_table_needs_both_markers_in_order(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"{perf.README_END}\nx\n{perf.README_BEGIN}\n")
    with pytest.raises(perf.PerfInputError, match="no performance-table markers"):
        perf.readme_table(readme)
    with pytest.raises(perf.PerfInputError, match="no performance-table markers"):
        perf.update_readme(readme, "t\n")
    readme.write_text(f"a\n{perf.README_BEGIN}\nrow 1\nrow 2\n{perf.README_END}\nb\n")
    assert perf.readme_table(readme) == "row 1\nrow 2\n"


def test_a_benchmark_without_time_or_memory_columns(tmp_path):
    b, logs = tmp_path / "b", tmp_path / "logs"
    b.mkdir()
    (b / "table1.tsv").write_text("h:m:s\tmean_load\n0:00:01\t3\n")
    rec, = perf.job_records(b, logs, tmp_path / "runs")
    assert math.isnan(rec["wall_s"]) and math.isnan(rec["max_rss_mb"])
    total = perf.performance_rows([rec])[-1]
    assert math.isnan(total["max_rss_mb"]) and total["jobs"] == 1


def test_a_run_job_of_zero_wall_seconds_has_no_outside_share():
    job = {"job": "runs/e", "kind": "runs", "experiment": "e", "cpu_s": 1.0, "startup_s": 0.5,
           "rounds_s": 0.0, "wall_s": 0.0, "max_rss_mb": 1.0, "end": 0.0}
    assert math.isnan(perf._row("kind", "runs", [job])["outside_rounds_share"])


def test_machine_without_cpuinfo_names_the_platform(monkeypatch):
    class NoCpuinfo(type(Path())):
        def read_text(self, *a, **k):
            raise OSError("no /proc")
    monkeypatch.setattr(perf, "Path", NoCpuinfo)
    monkeypatch.setattr(platform, "processor", lambda: "")
    monkeypatch.setattr(platform, "machine", lambda: "testarch")
    assert perf.machine().startswith("testarch, ")
    monkeypatch.setattr(platform, "processor", lambda: "testproc")
    assert perf.machine().startswith("testproc, ")

    class Cpuinfo(type(Path())):
        def read_text(self, *a, **k):
            return "processor\t: 0\nmodel name\t: Chip: rev 2 \nflags\t: x\n"
    monkeypatch.setattr(perf, "Path", Cpuinfo)
    assert perf.machine().startswith("Chip: rev 2, ")            # the whole name, colon and all


def test_written_table_details(tree):
    b = tree / "results/benchmarks"
    out = tree / "p.csv"
    rows = perf.write_performance({"benchmarks": b, "logs": tree / "logs", "runs": tree / "results/runs"},
                                  out, files=[b / "runs/expB.tsv"])
    assert [r["name"] for r in rows] == ["runs", "expB", "all jobs"]      # only the given job
    assert rows[-1]["config"] == "-"                                     # no config files named
    raw = out.read_bytes()
    assert b"\r" not in raw and raw.endswith(b"\n")
    with open(out, newline="") as fh:
        cells = list(csv.DictReader(fh))
    assert cells[0]["machine"] == "" and cells[0]["config"] == ""          # on the total row only
    assert "with config -, on" in perf.markdown(rows, "M")


def test_a_bad_performance_table_error_names_the_columns(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(perf.PerfInputError) as err:
        perf.read_performance_csv(path)
    assert "(columns " + ", ".join(perf.CSV_COLUMNS) + "; the total last)" in str(err.value)


def test_readme_block_is_the_first_begin_to_the_first_end(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"{perf.README_BEGIN}\nold\n{perf.README_END}\nmiddle {perf.README_END}\n"
                      f"docs mention {perf.README_BEGIN}\n")
    assert perf.readme_table(readme) == "old\n"
    assert perf.update_readme(readme, "new\n") is True
    assert readme.read_text() == (f"{perf.README_BEGIN}\nnew\n{perf.README_END}\nmiddle {perf.README_END}\n"
                                  f"docs mention {perf.README_BEGIN}\n")


def test_keeping_no_asv_input_when_there_is_none_is_fine(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("x\n")
    (tmp_path / "src").mkdir()
    perf_csv = _perf_rows(tmp_path / "src", [])
    perf.keep_readme_inputs(readme, perf_csv, None)                # no stale copy to remove
    perf.keep_readme_inputs(readme, perf_csv, None)                # the folder exists already
    assert (tmp_path / perf.README_INPUT).read_text() == perf_csv.read_text()
    assert not (tmp_path / perf.README_ASV_INPUT).exists()


def test_a_jobs_own_peak_memory_wins_over_the_sampled_one(tmp_path):
    """The CPU record's max_rss_mb (the kernel's exact high-water mark) is the job's peak; a log
    without it (older rfl, or a job that is not rfl's) keeps Snakemake's sampled max_rss."""
    b, logs = tmp_path / "results/benchmarks", tmp_path / "logs"
    _bench(b / "data/ds/fixed.tsv", 2.0, 7, 1100.0)                 # sampled at the start: 7 MB
    _log(logs / "data/ds/fixed.log", 1100.0, {"cpu_s": 1.5, "startup_s": 0.4, "wall_s": 1.9,
                                              "max_rss_mb": 412.5})
    _bench(b / "figures/f.tsv", 1.0, 90, 1101.0)
    _log(logs / "figures/f.log", 1101.0, {"cpu_s": 0.5, "startup_s": 0.3, "wall_s": 0.9})
    got = {r["job"]: r["max_rss_mb"] for r in perf.job_records(b, logs, tmp_path / "results/runs")}
    assert got == {"data/ds/fixed": 412.5, "figures/f": 90.0}


def test_the_cli_cpu_record_holds_the_processes_peak_memory(tmp_path):
    """rfl's CPU record states the process's peak resident memory: at least the ~2 x 80 MB a
    step allocated and touched (numpy's ones), in MiB."""
    import subprocess
    import sys
    code = ("import numpy as np, sys\n"
            "from rfl import cli\n"
            "a = np.ones(10_000_000); b = np.ones(10_000_000)\n"
            "cli._print_cpu_record(0.0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    line = [x for x in out.stderr.splitlines() if x.startswith(CLI_PREFIX)][-1]
    record = json.loads(line[len(CLI_PREFIX):])
    assert 2 * 80_000_000 / 2 ** 20 <= record["max_rss_mb"] < 4096

"""Where the workflow's CPU time goes: CPU seconds per rule kind and per experiment.

Reads result files only:
  * Snakemake's benchmark record of every job, ``results/benchmarks/<job>.tsv`` (wall seconds
    ``s``, peak resident memory ``max_rss`` in MB), where ``<job>`` is the name of the job's
    log, ``logs/<job>.log``: ``runs/<experiment>``, ``data/<dataset>`` (on a cluster
    ``data/<dataset>/<instance>``), ``figures/<figure>`` (a full run: ``figures/batch<k>``,
    several figures), ``table1``, ...
    (rfl.workflow.Plan.benchmark);
  * the last line of that log, the record the ``rfl`` process writes when it exits
    (rfl.cli, ``RFL_CPU_RECORD=1``): its exact user + system CPU seconds and the CPU seconds
    it had spent when the step's work began (interpreter start-up, imports, argument checks);
  * for run jobs, the run tables the job wrote (``results/runs/<experiment>/<setting>_seed*.csv``):
    the last ``wall_time`` of each is the time inside the algorithm's rounds.

Snakemake samples a job's CPU time (every 0.5 s, then every 30 s) and so misses up to a sample
interval per job, a large part of a short job; the CPU seconds here are the process's own.

Columns of the table (one row per rule kind, one per experiment, and the total):
  scope, name        "kind" (runs, data, figures, ...), "experiment", or "total"
  jobs               jobs with a record
  cpu_s              user + system CPU seconds of those jobs
  startup_s          CPU seconds before the step's work began (per job, summed)
  startup_share      startup_s / cpu_s
  rounds_s           seconds inside the rounds of the runs (wall clock; runs only)
  outside_rounds_share  1 - rounds_s / wall_s (runs only): the share of the run jobs' time
                     spent outside the rounds (start-up, loading data and numba's cache, the
                     metrics of each round, writing the files); both are wall clock, measured
                     in the same process, so a loaded machine slows both alike
  wall_s             wall seconds of the jobs, summed (Snakemake's benchmark ``s``)
  max_rss_mb         the largest peak resident memory of one job
"""

from __future__ import annotations

import csv
import json
import math
import os
import platform
from pathlib import Path

CPU_RECORD_PREFIX = "rfl: cpu-record "   # rfl.cli writes it; repeated here to avoid importing the CLI
COLUMNS = ["scope", "name", "jobs", "cpu_s", "startup_s", "startup_share", "rounds_s",
           "outside_rounds_share", "wall_s", "max_rss_mb"]
# the total row names the machine and the workflow's config files
CSV_COLUMNS = COLUMNS + ["machine", "config"]


def read_cpu_record(log_path) -> dict | None:
    """The CPU record of one job's log (its last record line), or None (no log, or a job that
    ran without ``RFL_CPU_RECORD=1``)."""
    try:
        lines = Path(log_path).read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return None
    for line in reversed(lines):
        if line.startswith(CPU_RECORD_PREFIX):
            return json.loads(line[len(CPU_RECORD_PREFIX):])
    return None


def read_benchmark(tsv_path) -> dict:
    """The first record of a Snakemake benchmark TSV as floats (``NA`` -> nan)."""
    with open(tsv_path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    if not rows:
        raise ValueError(f"{tsv_path}: an empty benchmark record")

    def num(v):
        try:
            return float(v)
        except (TypeError, ValueError):
            return math.nan
    return {k: num(v) for k, v in rows[0].items()}


def rounds_seconds(runs_dir, experiment: str, setting: str | None = None) -> float:
    """Seconds inside the rounds of the runs of one experiment (or of one of its settings,
    ``<setting>_seed<n>.csv``): the last ``wall_time`` of each run table, summed."""
    total = 0.0
    for table in sorted(Path(runs_dir, experiment).glob(f"{setting}_seed*.csv" if setting else "*.csv")):
        if setting and not table.name[len(setting) + len("_seed"):-len(".csv")].isdigit():
            continue                       # another setting whose name starts with this one
        with open(table, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        if rows and rows[-1].get("wall_time") not in (None, ""):
            total += float(rows[-1]["wall_time"])
    return total


def job_records(benchmarks_dir, logs_dir, runs_dir, files=None, exclude=("performance",)) -> list[dict]:
    """One record per job: of the benchmark ``files`` (default: every ``*.tsv`` under
    ``benchmarks_dir``), each named by its path under ``benchmarks_dir``. A record holds job,
    kind, experiment (runs only), cpu_s, startup_s (nan without a CPU record), rounds_s, wall_s,
    max_rss_mb, and end (the log's modification time, for the workflow's span)."""
    benchmarks_dir = Path(benchmarks_dir).resolve()
    files = sorted(benchmarks_dir.rglob("*.tsv")) if files is None else [Path(f) for f in files]
    out = []
    for tsv in files:
        try:
            job = tsv.resolve().relative_to(benchmarks_dir).with_suffix("").as_posix()
        except ValueError:
            raise ValueError(f"{tsv}: not a benchmark record under {benchmarks_dir}") from None
        kind = job.split("/")[0]
        if kind in exclude:
            continue
        bench = read_benchmark(tsv)
        log = Path(logs_dir, job + ".log")
        cpu = read_cpu_record(log)
        parts = job.split("/")
        # runs/<experiment> (one job per experiment) or runs/<experiment>/<setting>
        experiment = parts[1] if kind == "runs" and len(parts) in (2, 3) else None
        out.append({
            "job": job, "kind": kind, "experiment": experiment,
            "cpu_s": cpu["cpu_s"] if cpu else math.nan,
            "startup_s": cpu["startup_s"] if cpu and cpu.get("startup_s") is not None else math.nan,
            "rounds_s": (rounds_seconds(runs_dir, *parts[1:]) if experiment else math.nan),
            "wall_s": bench.get("s", math.nan),
            # the job's own peak (exact) where its log has one; Snakemake's record samples
            # the job's memory every 30 s (Snakefile), so it can miss a short job's peak
            "max_rss_mb": (cpu["max_rss_mb"] if cpu and cpu.get("max_rss_mb") is not None
                           else bench.get("max_rss", math.nan)),
            "end": log.stat().st_mtime if log.is_file() else tsv.stat().st_mtime,
        })
    return out


def _nansum(values) -> float:
    vals = [v for v in values if not math.isnan(v)]
    return sum(vals) if vals else math.nan


def _row(scope: str, name: str, jobs: list[dict]) -> dict:
    cpu = _nansum(j["cpu_s"] for j in jobs)
    startup = _nansum(j["startup_s"] for j in jobs)
    runs = [j for j in jobs if j["experiment"]]
    rounds = _nansum(j["rounds_s"] for j in runs)          # (no run job: nan)
    runs_wall = _nansum(j["wall_s"] for j in runs)
    return {"scope": scope, "name": name, "jobs": len(jobs), "cpu_s": cpu, "startup_s": startup,
            "startup_share": startup / cpu if cpu else math.nan, "rounds_s": rounds,
            "outside_rounds_share": 1 - rounds / runs_wall if runs_wall else math.nan,
            "wall_s": _nansum(j["wall_s"] for j in jobs),
            "max_rss_mb": max((j["max_rss_mb"] for j in jobs if not math.isnan(j["max_rss_mb"])),
                              default=math.nan)}


def performance_rows(records: list[dict]) -> list[dict]:
    """The table's rows: per rule kind (in order of first appearance, runs first), per
    experiment (sorted), and the total, whose wall_s is the span from the first job's start to
    the last job's end (the workflow's wall time when its jobs ran in one go)."""
    kinds = sorted({r["kind"] for r in records}, key=lambda k: (k != "runs", k))
    rows = [_row("kind", k, [r for r in records if r["kind"] == k]) for k in kinds]
    experiments = sorted({r["experiment"] for r in records if r["experiment"]})
    rows += [_row("experiment", e, [r for r in records if r["experiment"] == e]) for e in experiments]
    total = _row("total", "all jobs", records)
    if records:
        start = min(r["end"] - (0 if math.isnan(r["wall_s"]) else r["wall_s"]) for r in records)
        total["wall_s"] = max(r["end"] for r in records) - start
    rows.append(total)
    return rows


def machine() -> str:
    """The machine, in one line: CPU model, cores, Python and numpy versions."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numpy as np
    return (f"{model}, {os.cpu_count()} cores, {platform.system()}, Python "
            f"{platform.python_version()}, numpy {np.__version__}")


def _fmt(column: str, v) -> str:
    if isinstance(v, float) and math.isnan(v):
        return "-"
    if column.endswith("_share"):
        return f"{100 * v:.0f}%"
    if column == "max_rss_mb":
        return f"{v:.0f}"
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


def markdown(rows: list[dict], machine_line: str, config: str = "-") -> str:
    head = ("| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS) + "\n")
    body = "".join("| " + " | ".join(_fmt(c, r[c]) for c in COLUMNS) + " |\n" for r in rows)
    return (f"CPU seconds (user + system) of the jobs of the workflow with config {config}, on "
            f"{machine_line}. The total's wall_s is the span of the jobs.\n\n" + head + body)


def write_performance(spec: dict, out_csv, files=None) -> list[dict]:
    """paper_tables/performance.csv and .md from the benchmark ``files`` (default: all) under
    ``spec``'s directories (``benchmarks``, ``logs``, ``runs``)."""
    from rfl import io

    rows = performance_rows(job_records(spec["benchmarks"], spec["logs"], spec["runs"], files))
    rows[-1]["machine"] = machine()
    rows[-1]["config"] = " ".join(str(f) for f in spec.get("configfiles", [])) or "-"
    out_csv = Path(out_csv)
    with io.atomic_path(out_csv) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({c: (f"{r[c]:.6g}" if isinstance(r.get(c), float) else r.get(c))   # None: ""
                        for c in CSV_COLUMNS})
    with io.atomic_path(out_csv.with_suffix(".md")) as tmp:
        tmp.write_text(markdown(rows, rows[-1]["machine"], rows[-1]["config"]), encoding="utf-8")
    return rows


# ---- the README's performance table -----------------------------------------------------------
README_BEGIN = "<!-- performance-table: generated by `rfl perf-table`; edit the generator, not the table -->"
README_END = "<!-- /performance-table -->"
# The inputs of the README's table, kept beside it (relative to the README's directory) so that
# tests/test_performance.py can check the table is what the generator makes of them.
README_INPUT = "benchmarks/performance.csv"
README_ASV_INPUT = "benchmarks/asv-result.json"


class PerfInputError(ValueError):
    """A performance.csv or asv result file that the README's table cannot be made from."""


def read_performance_csv(path) -> list[dict]:
    """The rows of a performance.csv written by ``write_performance``, numbers as floats."""
    what = (f"{path}: not a performance table of `rfl performance` (columns "
            f"{', '.join(CSV_COLUMNS)}; the total last)")
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        if not rows or any(c not in rows[0] for c in CSV_COLUMNS) or rows[-1]["scope"] != "total":
            raise PerfInputError(what)
        for r in rows:
            for c in COLUMNS[2:]:
                r[c] = float(r[c]) if r[c] != "" else math.nan      # (float("nan") is nan)
    except (UnicodeDecodeError, ValueError, TypeError, csv.Error) as exc:
        if isinstance(exc, PerfInputError):
            raise
        raise PerfInputError(what) from None
    return rows


def _duration(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


def asv_units(result_json) -> dict:
    """{benchmark: unit}: from the result file itself when it carries them (the copy kept
    beside the README, ``keep_readme_inputs``), else from ``benchmarks.json`` of its asv
    results directory."""
    path = Path(result_json)
    try:
        kept = json.loads(path.read_text(encoding="utf-8")).get("units")
        if isinstance(kept, dict):
            return kept
    except (OSError, ValueError, AttributeError):
        pass
    bench_json = path.parent.parent / "benchmarks.json"
    if bench_json.is_file():
        return {k: v.get("unit", "") for k, v in json.loads(bench_json.read_text()).items()
                if isinstance(v, dict)}
    return {}


def asv_tracks(result_json) -> tuple[str, list[tuple[str, str]]]:
    """(machine, [(benchmark and parameters, value with unit)]) of the ``track_*`` benchmarks of
    one asv result file; units from ``benchmarks.json`` of the results directory when present."""
    import itertools

    path = Path(result_json)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        columns = data["result_columns"]
        results = data["results"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PerfInputError(f"{path}: not an asv result file ({exc})") from None
    units = asv_units(path)
    p = data.get("params", {})
    machine_line = ", ".join(str(p[k]) for k in ("cpu", "num_cpu", "os") if p.get(k))
    rows = []
    for name in sorted(results):
        if ".track_" not in name:
            continue
        entry = dict(zip(columns, results[name]))
        values, params = entry.get("result"), entry.get("params") or []
        if values is None:
            continue
        combos = list(itertools.product(*params))       # no parameters: [()]
        values = values if isinstance(values, list) else [values]
        short = name.split(".", 1)[1]          # a ".track_" name has a module part
        for combo, value in zip(combos, values):
            if value is None or (isinstance(value, float) and math.isnan(value)):
                continue
            label = short + (f" ({', '.join(str(c).strip(chr(39)) for c in combo)})" if combo else "")
            rows.append((label, f"{value:.3g} {units.get(name, '')}".strip()))
    return machine_line, rows


def perf_table(perf_csv, asv_json=None) -> str:
    """The README's performance table (Markdown, ending in a newline): the full workflow's CPU
    seconds from ``perf_csv`` (paper_tables/performance.csv of a full run) and, given an asv
    result file, its tracked ratios. Current numbers only, with the machine named."""
    rows = read_performance_csv(perf_csv)
    total = rows[-1]
    kinds = [r for r in rows if r["scope"] == "kind"]
    runs = next((r for r in kinds if r["name"] == "runs"), None)
    out = [f"Measured on {total['machine']}; workflow config {total['config']}.", "", "| measure | value |", "|---|---|",
           (f"| workflow: jobs; wall time (first job start to last job end) | "
            f"{int(total['jobs'])}; {_duration(total['wall_s'])} |"),
           f"| workflow: CPU seconds (user + system) of all jobs | {total['cpu_s']:.0f} s |",
           (f"| workflow: start-up (interpreter, imports) share of the CPU seconds | "
            f"{100 * total['startup_share']:.1f}% ({total['startup_s']:.0f} s) |")]
    if runs is not None:
        out.append(f"| runs: share of their wall time outside the rounds | "
                   f"{100 * runs['outside_rounds_share']:.1f}% |")
    out += [f"| CPU seconds: {r['name']} ({int(r['jobs'])} jobs) | {r['cpu_s']:.1f} s |" for r in kinds]
    if asv_json is not None:
        asv_machine, tracks = asv_tracks(asv_json)
        where = f" on {asv_machine}" if asv_machine else ""
        out += [f"| asv{where}: {label} | {value} |" for label, value in tracks]
    return "\n".join(out) + "\n"


def update_readme(readme, table: str, check: bool = False,
                  markers: tuple[str, str] = (README_BEGIN, README_END)) -> bool:
    """Put ``table`` between the ``markers`` (default: the performance table's) of ``readme``;
    True when the block changed (with ``check``, nothing is written)."""
    path = Path(readme)
    text = path.read_text(encoding="utf-8")
    (open_, close), name = markers, markers[0].removeprefix("<!-- ").split(":")[0]
    begin, end = text.find(open_), text.find(close)
    if begin < 0 or end < begin:
        raise PerfInputError(f"{path}: no {name} markers ({open_} ... {close})")
    head = text[:begin + len(open_)] + "\n"
    new = head + table + text[end:]
    if new == text:
        return False
    if not check:
        path.write_text(new, encoding="utf-8")
    return True


def keep_readme_inputs(readme, perf_csv, asv_json=None) -> None:
    """Copy the table's inputs to README_INPUT (and README_ASV_INPUT, or remove a stale one)."""
    import shutil

    root = Path(readme).resolve().parent
    for src, name in ((perf_csv, README_INPUT), (asv_json, README_ASV_INPUT)):
        dst = root / name
        if src is None:
            dst.unlink(missing_ok=True)
        elif Path(src).resolve() != dst:
            dst.parent.mkdir(exist_ok=True)
            if name == README_ASV_INPUT:       # keep the units, which live beside the result
                data = json.loads(Path(src).read_text(encoding="utf-8"))
                data["units"] = asv_units(src)
                dst.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
            else:
                shutil.copyfile(src, dst)


def readme_table(readme) -> str:
    """The text between the README's performance-table markers."""
    text = Path(readme).read_text(encoding="utf-8")
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        raise PerfInputError(f"{readme}: no performance-table markers")
    return text[begin + len(README_BEGIN) + 1:end]

"""Run jobs sized for a scheduler: experiments packed into batches, one cluster job each.

On a cluster (the ``cluster`` settings the SLURM profile passes with ``--config``) the
workflow's run jobs are batches of experiments instead of one job per experiment: each batch's
estimated wall time (its experiments' estimated CPU seconds, ``Plan.run_cpu_seconds``, laid out
longest first on its cores) is at least a floor (default 10 minutes, so no job is mostly queueing
and status polling) and its time request fits the partition's limit. A batch job runs its
experiments side by side on its cores, each as the ``rfl runs`` process a local run job runs,
with that job's log and benchmark record; its outputs are the same files. Without ``cluster``
nothing of this is used: the workflow is one job per experiment.
"""

from __future__ import annotations

import heapq
import json
import math
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

#: the cluster settings and their defaults (profiles/slurm/config.yaml passes them)
DEFAULTS = {
    "batch_minutes": 10,            # the floor: a batch's estimated wall time, minutes
    "time_limit_minutes": 1440,     # the partition's time limit (a site value)
    "cores": 1,                     # cores of one batch job (its experiments run side by side)
    "margin": 3.0,                  # a batch asks for margin x its estimate (+ ALLOWANCE_MIN)
}
#: minutes every batch's time request adds to margin x its estimate (start-up, file system)
ALLOWANCE_MIN = 10


class BatchError(ValueError):
    """Bad cluster settings (one line naming the key and what is allowed)."""


def cluster_settings(raw) -> dict:
    """The cluster settings ``raw`` (``--config cluster={...}``: Snakemake gives strings) with
    defaults filled in and checked: numbers > 0, cores and time limit integers, margin >= 1,
    and a limit that holds two floors (``pack``: every batch stays under the limit)."""
    if not isinstance(raw, dict):
        raise BatchError(f"config key cluster: must be a mapping with keys {', '.join(DEFAULTS)}; "
                         f"got {raw!r}")
    unknown = sorted(set(raw) - set(DEFAULTS))
    if unknown:
        raise BatchError(f"config key cluster.{unknown[0]}: unknown; allowed: {', '.join(DEFAULTS)}")
    out = {}
    for key, default in DEFAULTS.items():
        value = raw.get(key, default)
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        integer = key in ("cores", "time_limit_minutes")
        if not number > 0 or not math.isfinite(number) or (integer and number != int(number)) \
                or (key == "margin" and number < 1):
            what = "an integer >= 1" if integer else ("a number >= 1" if key == "margin" else "a number > 0")
            raise BatchError(f"config key cluster.{key}: {value!r} is not {what}")
        out[key] = int(number) if integer else number
    if limit_seconds(out) < 2 * out["batch_minutes"] * 60:
        raise BatchError(f"config key cluster.time_limit_minutes: {out['time_limit_minutes']} holds no two "
                         f"batches of cluster.batch_minutes {out['batch_minutes']:g} at margin "
                         f"{out['margin']:g}; allowed: >= {ALLOWANCE_MIN} + 2 x margin x batch_minutes "
                         f"= {ALLOWANCE_MIN + 2 * out['margin'] * out['batch_minutes']:g}")
    return out


def limit_seconds(settings: dict) -> float:
    """The largest estimated wall time (s) of a batch whose request (``request_minutes``) fits
    the time limit."""
    return (settings["time_limit_minutes"] - ALLOWANCE_MIN) * 60 / settings["margin"]


def request_minutes(estimate_s: float, settings: dict) -> int:
    """The time a batch of estimated wall time ``estimate_s`` asks for: ALLOWANCE_MIN + margin x
    the estimate, at most the time limit (an experiment above the limit alone asks for the limit)."""
    return min(settings["time_limit_minutes"],
               ALLOWANCE_MIN + math.ceil(settings["margin"] * estimate_s / 60))


def makespan(costs, cores: int) -> float:
    """Wall time of ``costs`` (seconds, one per experiment) run longest first, each on the core
    that frees up first (LPT list scheduling; what ``run_batch``'s pool of ``cores`` does)."""
    loads = [0.0] * max(1, min(cores, len(costs)))
    for c in sorted(costs, reverse=True):
        heapq.heapreplace(loads, loads[0] + c)
    return max(loads)


def pack(costs: dict, floor: float, limit: float, cores: int = 1) -> list[list[str]]:
    """Batches of the names of ``costs`` (name -> estimated seconds): every name in exactly one
    batch; each batch's ``makespan`` on ``cores`` at least ``floor``, except one remainder (the
    small names left at the end, merged into the last batch when that stays within ``limit``);
    none above ``limit`` unless it is one name that alone exceeds it. Names are taken longest
    first (ties by name), so the result depends only on the costs. Needs limit >= 2 floor: a
    batch below the floor holds names below the floor, so one more keeps it under 2 floor."""
    if limit < 2 * floor:
        raise BatchError(f"limit {limit:g} s is below two floors ({floor:g} s)")
    out: list[list[str]] = []
    current: list[str] = []
    for name in sorted(costs, key=lambda n: (-costs[n], n)):
        current.append(name)
        if makespan([costs[n] for n in current], cores) >= floor:
            out.append(current)
            current = []
    if current:
        if out and makespan([costs[n] for n in out[-1] + current], cores) <= limit:
            out[-1] += current
        else:
            out.append(current)
    return out


# ---- running one batch (rfl batch SPEC) -------------------------------------------------------
#: the environment of every experiment's process: that of a local run job (rfl/workflow.py PIN
#: with threads: 1)
CHILD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
             "RFL_PROGRESS": "0", "RFL_CPU_RECORD": "1"}
#: Snakemake's benchmark record columns (rfl.reporting.performance reads s and max_rss)
BENCHMARK_COLUMNS = ["s", "h:m:s", "max_rss", "max_vms", "max_uss", "max_pss", "io_in", "io_out",
                     "mean_load", "cpu_time"]


def runs_command(experiment: dict) -> list[str]:
    """The ``rfl runs`` command line of one experiment of a batch spec (the local run job's)."""
    cmd = [sys.executable, "-m", "rfl", "runs"]
    for key in ("specs", "data", "references", "tables", "metas"):
        cmd += [f"--{key}", *experiment[key]]
    return cmd


def _run_one(experiment: dict) -> tuple[str, int]:
    """Run one experiment's ``rfl runs`` with its log; write its benchmark record (wall
    seconds, peak RSS in MB, CPU seconds of the process). Returns (name, exit status)."""
    Path(experiment["log"]).parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with open(experiment["log"], "w", encoding="utf-8") as log:
        proc = subprocess.Popen(runs_command(experiment), stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, **CHILD_ENV})
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode == 0:
        bench = Path(experiment["benchmark"])
        bench.parent.mkdir(parents=True, exist_ok=True)
        hms = time.strftime("%H:%M:%S", time.gmtime(wall))
        values = [f"{wall:.4f}", hms, f"{usage.ru_maxrss / 1024:.2f}"] + ["NA"] * 6 \
            + [f"{usage.ru_utime + usage.ru_stime:.2f}"]
        bench.write_text("\t".join(BENCHMARK_COLUMNS) + "\n" + "\t".join(values) + "\n", encoding="utf-8")
    return experiment["name"], proc.returncode


def run_batch(spec: dict) -> int:
    """Run the experiments of a batch ``spec`` (``Plan.batch_spec``) on ``spec["cores"]``
    processes at a time, in the spec's order (longest estimate first). A failed experiment stops
    the start of others; returns 0, or 1 naming every failed experiment and its log on stderr."""
    failed = []
    stop = threading.Event()

    def job(experiment):
        if stop.is_set():
            return experiment["name"], None
        name, status = _run_one(experiment)
        if status != 0:
            stop.set()
        return name, status

    with ThreadPoolExecutor(max_workers=max(1, int(spec["cores"]))) as pool:
        for (name, status), experiment in zip(pool.map(job, spec["experiments"]), spec["experiments"]):
            print(f"rfl batch: {name}: " + ("not started (an earlier experiment failed)" if status is None
                                          else f"exit status {status}"), file=sys.stderr)
            if status:
                failed.append(f"{name} (log: {experiment['log']})")
    if failed:
        print(f"rfl: error: batch: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def read_batch_spec(path) -> dict:
    """A batch spec (JSON) with its keys checked (one line naming the file and key otherwise)."""
    try:
        spec = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BatchError(f"{path}: not valid JSON ({exc})") from None
    keys = ("name", "specs", "data", "references", "tables", "metas", "log", "benchmark")
    if not isinstance(spec, dict) or not isinstance(spec.get("experiments"), list) \
            or not isinstance(spec.get("cores"), int):
        raise BatchError(f"{path}: a batch spec needs 'cores' (an integer) and 'experiments' (a list)")
    for i, e in enumerate(spec["experiments"]):
        missing = [k for k in keys if k not in e]
        if missing:
            raise BatchError(f"{path}: experiments[{i}] lacks key {missing[0]!r}; allowed: {', '.join(keys)}")
    return spec

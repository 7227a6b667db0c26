#!/usr/bin/env python3
"""The smoke config through a real SLURM (profiles/slurm) against a local run: same outputs.

Usage:  scripts/slurm_smoke.py WORKDIR [--local OUT] [--unbatched] [--keep-cluster]
  WORKDIR        where the two copies of the work tree run (WORKDIR/slurm, WORKDIR/local)
  --local OUT    compare against this finished local run's output folder (e.g. a CI smoke run's
                 .smoke/) instead of running the smoke config locally again
  --unbatched    one SLURM job per experiment (the profile without its cluster settings)
  --keep-cluster leave the cluster running (else stopped if this script started it)
Run as root on a Debian machine (scripts/slurm_cluster.sh install once). Environment as for the
workflow (RFL_SCHOOL_MIRROR, RFL_ANCHORS_MIRROR; snakemake and rfl on PATH).

The profile is profiles/slurm with the site values of this cluster: the partition and its time
limit from sinfo, no account and squeue for job states (no accounting here), batch cores = the
node's CPUs. Compared, and the exit status 1 on any difference:
  * the run tables (results/runs/<experiment>/<run>.csv): the same files, the same columns, and
    every cell but wall_time textually equal (byte for byte; wall_time is the clock);
  * each run's metadata: its spec, status and rounds completed (the rest is when and where);
  * paper_tables/claims.json: byte for byte (every claim's verdict and the numbers behind it).
Prints the wall time of the SLURM run and the SLURM jobs it submitted (jobs, array tasks).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLUSTER = REPO / "scripts" / "slurm_cluster.sh"
OUT = ".smoke"                      # config/smoke.yaml's output_dir
TIMING_COLUMNS = ("wall_time",)


def copy_tree(dst: Path) -> None:
    """The tracked files of the work tree (as they are now) in ``dst``."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, check=True, capture_output=True).stdout
    for name in filter(None, files.decode().split("\0")):
        src = REPO / name
        if src.is_file():
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / name)


def site_profile(dst: Path, batched: bool) -> None:
    """profiles/slurm with this cluster's site values, in ``dst``."""
    part = subprocess.run(["sinfo", "-h", "-o", "%P %l %c"], check=True, capture_output=True,
                          text=True).stdout.split()
    partition, limit, cpus = part[0].rstrip("*"), part[1], int(part[2])
    minutes = _minutes(limit)
    text = (REPO / "profiles" / "slurm" / "config.yaml").read_text(encoding="utf-8")
    text = re.sub(r'^  slurm_account: .*\n', "", text, flags=re.M)
    text = text.replace('slurm_partition: "your_partition"', f'slurm_partition: "{partition}"')
    text = text.replace("# slurm-no-account: true", "slurm-no-account: true")
    text = text.replace("# slurm-status-command: squeue", "slurm-status-command: squeue")
    text = re.sub(r"time_limit_minutes: \d+", f"time_limit_minutes: {minutes}", text)
    text = re.sub(r"cores: \d+", f"cores: {cpus}", text)
    if not batched:
        text = re.sub(r'^config:\n  - "cluster=.*"\n', "", text, flags=re.M)
    (dst / "config.yaml").parent.mkdir(parents=True, exist_ok=True)
    (dst / "config.yaml").write_text(text, encoding="utf-8")


def _minutes(limit: str) -> int:
    """sinfo's time limit ([days-]hours:minutes:seconds, or UNLIMITED) in minutes."""
    if limit in ("UNLIMITED", "infinite"):
        return 7 * 24 * 60
    days, _, rest = limit.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    return int(days or 0) * 1440 + parts[0] * 60 + parts[1]


def snakemake(cwd: Path, *args: str, log: Path) -> float:
    """Run snakemake in ``cwd`` (output in ``log``); its wall seconds, or exit on failure."""
    start = time.perf_counter()
    with open(log, "w", encoding="utf-8") as fh:
        r = subprocess.run(["snakemake", *args, "--configfile", "config/smoke.yaml"], cwd=cwd,
                           stdout=fh, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(cwd)})
    if r.returncode != 0:
        sys.exit(f"slurm_smoke: snakemake {' '.join(args)} failed in {cwd}; see {log}")
    return time.perf_counter() - start


def slurm_jobs(log: Path) -> tuple[int, int]:
    """(sbatch submissions, SLURM jobs counting each array task) from snakemake's log: the
    plugin's "submitted with SLURM jobid N" (one job) and "Submitted array job ... SLURM job ID
    N. The individual task IDs are A-B" lines."""
    text = log.read_text(encoding="utf-8")
    single = set(re.findall(r"submitted with SLURM jobid (\d+)\b", text))
    arrays = {j: int(b) - int(a) + 1 for j, a, b in
              re.findall(r"SLURM job ID (\d+)\. The individual task IDs are (\d+)-(\d+)", text)}
    return len(single) + len(arrays), len(single) + sum(arrays.values())


def compare(local: Path, slurm: Path) -> list[str]:
    """The differences between two output folders (empty: the same results)."""
    diffs = []
    a_runs = {p.relative_to(local).as_posix() for p in (local / "results" / "runs").rglob("*.csv")}
    b_runs = {p.relative_to(slurm).as_posix() for p in (slurm / "results" / "runs").rglob("*.csv")}
    if a_runs != b_runs:
        diffs.append(f"run tables: only local {sorted(a_runs - b_runs)[:5]}, only SLURM {sorted(b_runs - a_runs)[:5]}")
    if not a_runs:
        diffs.append(f"no run tables under {local}/results/runs")
    for name in sorted(a_runs & b_runs):
        a, b = _rows(local / name), _rows(slurm / name)
        if a[0] != b[0] or len(a) != len(b):
            diffs.append(f"{name}: columns or rows differ")
            continue
        keep = [i for i, c in enumerate(a[0]) if c not in TIMING_COLUMNS]
        for r, (ra, rb) in enumerate(zip(a, b)):
            if [ra[i] for i in keep] != [rb[i] for i in keep]:
                col = next(a[0][i] for i in keep if ra[i] != rb[i])
                diffs.append(f"{name}: row {r}, column {col}: {ra[a[0].index(col)]} vs {rb[a[0].index(col)]}")
                break
        meta_a, meta_b = (json.loads(Path(p / name).with_suffix(".meta.json").read_text(encoding="utf-8"))
                          for p in (local, slurm))
        for key in ("spec", "status", "rounds_completed"):
            if meta_a.get(key) != meta_b.get(key):
                diffs.append(f"{name[:-4]}.meta.json: {key} differs")
    claims = "paper_tables/claims.json"
    ca, cb = (local / claims).read_bytes(), (slurm / claims).read_bytes()
    if ca != cb:
        ja, jb = json.loads(ca), json.loads(cb)
        first = next((f"{x.get('id')}: {k}" for x, y in zip(ja, jb) for k in x if x.get(k) != y.get(k)),
                     "the number of claims")
        diffs.append(f"{claims}: differs (first: {first})")
    return diffs


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("workdir", type=Path)
    p.add_argument("--local", type=Path, default=None)
    p.add_argument("--unbatched", action="store_true")
    p.add_argument("--keep-cluster", action="store_true")
    args = p.parse_args(argv)
    work = args.workdir.resolve()
    started = subprocess.run([str(CLUSTER), "status"], capture_output=True).returncode != 0
    if started:
        subprocess.run([str(CLUSTER), "start"], check=True)
    conf = subprocess.run([str(CLUSTER), "env"], check=True, capture_output=True, text=True).stdout
    os.environ["SLURM_CONF"] = conf.strip().split("=", 1)[1]
    try:
        slurm = work / "slurm"
        if slurm.exists():
            shutil.rmtree(slurm)
        copy_tree(slurm)
        site_profile(work / "profile", batched=not args.unbatched)
        wall = snakemake(slurm, "--profile", str(work / "profile"), log=work / "slurm.log")
        submissions, jobs = slurm_jobs(work / "slurm.log")
        print(f"slurm_smoke: SLURM run {wall:.0f} s wall, {submissions} sbatch submissions, {jobs} SLURM jobs "
              f"(array tasks counted){'' if not args.unbatched else ', unbatched'}")
        local_out = args.local
        if local_out is None:
            local = work / "local"
            if local.exists():
                shutil.rmtree(local)
            copy_tree(local)
            lwall = snakemake(local, "--cores", str(os.cpu_count()), log=work / "local.log")
            print(f"slurm_smoke: local run {lwall:.0f} s wall")
            local_out = local / OUT
        diffs = compare(local_out.resolve(), slurm / OUT)
    finally:
        if started and not args.keep_cluster:
            subprocess.run([str(CLUSTER), "stop"], check=False)
    for d in diffs:
        print(f"slurm_smoke: {d}", file=sys.stderr)
    n = len({p for p in (slurm / OUT / "results" / "runs").rglob("*.csv")})
    print(f"slurm_smoke: {'DIFFERENT' if diffs else 'same'}: {n} run tables (all but wall_time), "
          f"their metadata's specs, claims.json")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())

"""Faults: interrupted jobs, reruns, determinism across --cores, bad downloads, unsafe code,
bad command lines, and the permissions of finished outputs.

The workflow tests run the smoke config (config/smoke.yaml) in temporary copies of the
workflow (Snakefile, rules/, envs/) and config/ (never in the repository's own output directories), with the School
data from the mirror ($RFL_SCHOOL_MIRROR, else ../shared/datasets/school beside the repo).
Both run one snapshot of the workflow, config/ and the rfl package taken at the first of them
(the jobs import rfl from it), so that edits and commits made meanwhile in the repository
cannot make the two trees differ. RFL_SKIP_WORKFLOW=1 skips them (about 1.5 minutes on an
idle 2-core machine, 4-6 minutes when another workflow is running).

* ``test_sigkill_mid_run_then_rerun_incomplete_finishes``: ``snakemake --cores 2`` is killed
  (SIGKILL to its whole process group) as soon as the first run table appears; every file left
  under the output tree must be complete (parses, full header, all rounds) or a hidden
  temporary file that no rule output can match; then ``--rerun-incomplete`` (after
  ``--unlock`` if Snakemake reports the stale lock of the killed process, as a user would do)
  must finish the DAG.
* ``test_cores_1_and_cores_2_give_identical_results``: a clean ``--cores 1`` run (up to the
  run tables: ``--until run_<experiment>...``) against the ``--cores 2`` tree of the test above (or a fresh
  ``--cores 2`` run when that test did not run): the same result files, run tables identical
  but for ``wall_time``, metadata but for ``start_time``/``duration_s``, data/reference arrays
  bit for bit (the reference's measured ``seconds`` aside; the .npz files themselves differ
  in their zip timestamps), specs and ILEA567.DAT byte for byte.

The other tests kill ``rfl run`` directly, check the permissions of finished outputs, run
``rfl fetch-school`` offline against empty/corrupted mirrors, scan the package and the
Snakefile for unsafe constructs, and feed every subcommand bad arguments.
"""

from __future__ import annotations

import ast
import atexit
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from rfl import cli, io, runner
from rfl import config as rflconfig
from rfl.data import school as sch
from rfl.data.sources import SOURCES
from rfl.runner import COLUMNS

from _workflow import copy_workflow  # noqa: E402  (what a copy of the workflow needs)

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "config" / "smoke.yaml"
SNAKEMAKE = shutil.which("snakemake")
RFL = shutil.which("rfl")          # the workflow's rules call `rfl`; the tests call RFL_CMD
RFL_CMD = [sys.executable, "-m", "rfl"]   # this interpreter's rfl, with or without a venv on PATH
TIMEOUT = 900                      # seconds for one smoke workflow (the machine may be busy)
TEMP = re.compile(r"^\..+\.tmp")   # io.atomic_path: .<name>.<random>.tmp<suffix>
FINISHED: dict[str, Path] = {}     # trees of finished workflows, shared between tests


def workflow_text() -> str:
    """The Snakefile and its rules files (rules/*.smk), as one text."""
    return "\n".join(p.read_text() for p in [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))])


def _mirror() -> Path | None:
    env = os.environ.get(sch.MIRROR_ENV, "").strip()
    d = Path(env) if env else REPO.parent / "shared" / "datasets" / "school"
    return d if any((d / p).is_file() for p in (sch.ILEA_FILENAME, "raw/" + sch.ILEA_FILENAME)) else None


def _anchors_mirror() -> bool:
    """Whether $RFL_ANCHORS_MIRROR holds every pinned source (the smoke workflow's WordNet and
    MNIST datasets read them; offline, nothing else can)."""
    from rfl.data import sources

    return all(sources.find_in_mirror(name) is not None for name, src in sources.SOURCES.items()
               if src.sha256 is not None)         # the mirror's files (the others: internet only)


needs_workflow = pytest.mark.skipif(
    SNAKEMAKE is None or RFL is None or _mirror() is None or not _anchors_mirror()
    or bool(os.environ.get("RFL_SKIP_WORKFLOW")),
    reason="needs snakemake and rfl on PATH, the School data (set RFL_SCHOOL_MIRROR to a "
           "directory holding ILEA567.DAT) and the WordNet and MNIST files (set "
           "RFL_ANCHORS_MIRROR to a copy of the anchors' data/ folder); "
           "RFL_SKIP_WORKFLOW=1 skips the workflow runs (several minutes on a busy machine)")


# ---- running the workflow in a copy ---------------------------------------------------------
_SNAPSHOT: list[Path] = []


def _snapshot() -> Path:
    """One copy per session of the workflow, config/ and the rfl package.

    Other people edit and commit in the repository while these tests run; the workflows of
    one session must all run the same code and config, so they run this snapshot (the jobs
    import rfl from it through PYTHONPATH, ahead of the editable install).
    """
    if not _SNAPSHOT:
        import tempfile

        snap = Path(tempfile.mkdtemp(prefix="rfl-workflow-"))
        atexit.register(shutil.rmtree, snap, ignore_errors=True)
        copy_workflow(snap)
        shutil.copytree(REPO / "rfl", snap / "rfl", ignore=shutil.ignore_patterns("__pycache__"))
        _SNAPSHOT.append(snap)
    return _SNAPSHOT[0]


def _copy_workflow(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    copy_workflow(dest, src=_snapshot())
    return dest


def _env() -> dict:
    path = os.pathsep.join(p for p in (str(_snapshot()), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, RFL_SCHOOL_MIRROR=str(_mirror()), MPLBACKEND="Agg", PYTHONPATH=path)
    env.pop("SNAKEMAKE_PROFILE", None)
    return env


def _snakemake(cwd: Path, *args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run([SNAKEMAKE, "--configfile", "config/smoke.yaml", *args], cwd=cwd,
                          env=_env(), capture_output=True, text=True, timeout=timeout)


def _out(tree: Path) -> Path:
    return tree / yaml.safe_load((tree / "config" / "smoke.yaml").read_text()).get("output_dir", "")


def _tail(proc) -> str:
    return (proc.stdout[-3000:] + "\n" + proc.stderr[-3000:]).strip()


# ---- auditing an output tree ------------------------------------------------------------------
NAME = r"[A-Za-z0-9_]+"
OUTPUT_PATTERNS = [re.compile(p) for p in (
    rf"results/specs/(school|anchors|(datasets|runs)/{NAME}/{NAME}|figures/{NAME}|figure_batches/{NAME}|tables/{NAME}"
    rf"|sweeps/{NAME})\.json",
    rf"results/(data|reference)/{NAME}/(fixed|seed[0-9]+)\.npz",
    rf"results/runs/{NAME}/{NAME}\.(csv|meta\.json)",
    rf"figures/{NAME}\.(pdf|png)",
    rf"paper_tables/{NAME}\.(csv|md|tex)|paper_tables/REPRODUCTION\.(md|html)|paper_tables/claims\.json",
    r"paper_tables/summary\.rst",
    r"results/results\.(parquet|csv)",
    r"paper_tables/claims/[a-z0-9_-]+\.html",
    rf"datasets/school/{sch.ILEA_FILENAME}",
    rf"logs/({NAME}/)*{NAME}\.log",
    "|".join(rf"datasets/anchors/{re.escape(s.subpath)}|logs/anchors_raw/{re.escape(s.subpath)}\.log"
             rf"|results/benchmarks/anchors_raw/{re.escape(s.subpath)}\.tsv"
             for s in SOURCES.values()),
    rf"results/benchmarks/({NAME}/)*{NAME}\.tsv",
)]


def _check_run_table(path: Path, problems: list, root: Path) -> None:
    """A run table is complete: whole lines, full header, every round the run made."""
    rel = path.relative_to(root)
    if not path.read_bytes().endswith(b"\n"):
        problems.append(f"{rel}: truncated (no final newline)")
        return
    table = pd.read_csv(path)
    if list(table.columns[:len(COLUMNS)]) != COLUMNS:
        problems.append(f"{rel}: header {list(table.columns)}")
        return
    spec = io.read_json(root / "results" / "specs" / "runs" / path.relative_to(root / "results" / "runs")
                        .with_suffix(".json"))
    rounds, status = table["round"].tolist(), table["status"].tolist()
    if rounds != list(range(len(rounds))) or not set(status) <= {"ok", "diverged"}:
        problems.append(f"{rel}: damaged rows, rounds {rounds[:3]}..{rounds[-3:]}, status {set(status)}")
        return
    if spec["step"] is not None:      # federated: every round, unless it diverged
        finished = len(rounds) == spec["rounds"] + 1 or status[-1] == "diverged"
    else:                             # centralised solvers may stop early by their own criteria
        finished = 1 <= len(rounds) <= spec["rounds"] + 1
    meta = path.with_name(path.name[:-len(".csv")] + ".meta.json")
    if meta.is_file():
        m = io.read_json(meta)
        finished = finished and m["rounds_completed"] == rounds[-1] and \
            m["status"] == ("diverged" if "diverged" in status else "ok")
    if not finished:
        problems.append(f"{rel}: partial table, rounds {rounds[:3]}..{rounds[-3:]} of {spec['rounds']}")


def audit(root: Path) -> tuple[list[str], list[Path]]:
    """(problems, hidden temporary files) of an output tree left by an interrupted workflow."""
    problems, temps = [], []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if TEMP.match(path.name):
            temps.append(path)
            if any(p.fullmatch(rel) for p in OUTPUT_PATTERNS):
                problems.append(f"{rel}: a temporary file matches an output pattern")
            continue
        if not any(p.fullmatch(rel) for p in OUTPUT_PATTERNS):
            problems.append(f"{rel}: not an output of any rule")
            continue
        try:
            data = path.read_bytes()
            if path.suffix == ".csv":
                if rel.startswith("results/runs/"):
                    _check_run_table(path, problems, root)
                else:
                    assert len(pd.read_csv(path).columns) > 1
            elif path.suffix == ".json":
                obj = json.loads(data)
                if rel.endswith(".meta.json"):
                    assert obj["status"] in ("ok", "diverged") and "spec" in obj, "incomplete metadata"
            elif path.suffix == ".npz":
                arrays = io.read_arrays(path)          # reads every member: zip CRCs checked
                assert arrays, "empty archive"
            elif path.suffix == ".pdf":
                assert data.startswith(b"%PDF") and b"%%EOF" in data[-1024:], "truncated PDF"
            elif path.suffix == ".parquet":
                assert data[:4] == b"PAR1" and data[-4:] == b"PAR1", "truncated Parquet"
            elif path.suffix == ".rst":
                assert data.strip(), "empty"
            elif path.suffix == ".png":
                assert data.startswith(b"\x89PNG\r\n\x1a\n") and data.endswith(b"IEND\xaeB`\x82"), \
                    "truncated PNG"
            elif path.suffix == ".html":
                assert data.rstrip().endswith(b"</html>"), "truncated HTML"
            elif path.suffix in (".md", ".tex"):
                assert data.strip(), "empty"
            elif path.name == sch.ILEA_FILENAME:
                assert hashlib.sha256(data).hexdigest() == sch.ILEA_SHA256, "wrong sha256"
            elif rel.startswith("datasets/anchors/"):
                src = next(s for s in SOURCES.values() if rel.endswith(s.subpath))
                from rfl.data.checksums import digests, mismatches
                assert not mismatches(digests(path), src.pins), "wrong checksum"
        except Exception as exc:  # noqa: BLE001 -- every kind of damage is a finding
            problems.append(f"{rel}: {type(exc).__name__}: {exc}")
    return problems, temps


def _first_run_table(out: Path) -> Path | None:
    runs = out / "results" / "runs"
    if not runs.is_dir():
        return None
    return next((p for p in runs.glob("*/*.csv") if not p.name.startswith(".")), None)


# ---- 1. SIGKILL in the middle of the workflow, then --rerun-incomplete -----------------------
@needs_workflow
def test_sigkill_mid_run_then_rerun_incomplete_finishes(tmp_path):
    tree = _copy_workflow(tmp_path / "cores2")
    out = _out(tree)
    log = open(tmp_path / "killed.log", "w")
    proc = subprocess.Popen([SNAKEMAKE, "--cores", "2", "--configfile", "config/smoke.yaml"],
                            cwd=tree, env=_env(), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while _first_run_table(out) is None:
            assert proc.poll() is None, f"snakemake ended before any run table: {proc.returncode}"
            assert time.monotonic() < deadline, "no run table appeared"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)        # snakemake and every job it started
        proc.wait()
        log.close()
    assert proc.returncode == -signal.SIGKILL

    problems, temps = audit(out)
    assert not problems, "\n".join(problems)
    runs_done = sorted(p for p in (out / "results" / "runs").glob("*/*.csv") if not p.name.startswith("."))
    assert runs_done, "the workflow was killed before any run finished"

    r = _snakemake(tree, "--cores", "2", "--rerun-incomplete")
    unlocked = False
    if r.returncode != 0 and "cannot be locked" in r.stdout + r.stderr:
        # The killed Snakemake left its lock; a user runs --unlock (documented by Snakemake).
        u = _snakemake(tree, "--unlock")
        assert u.returncode == 0, _tail(u)
        unlocked = True
        r = _snakemake(tree, "--cores", "2", "--rerun-incomplete")
    assert r.returncode == 0, _tail(r)
    print(f"\nkilled with {len(runs_done)} run tables done, {len(temps)} temporary files left; "
          f"--unlock needed: {unlocked}")

    # the whole DAG is there: every figure and table of the smoke config, and nothing to do
    cfg = rflconfig.validate(yaml.safe_load((tree / "config" / "smoke.yaml").read_text()))
    from rfl.workflow import absent_data
    skipped = absent_data(cfg)                    # data absent here: no figure, one line said so
    expected = [out / "figures" / f"{f}.{ext}" for f, fig in cfg["figures"].items()
                if fig["experiment"] not in skipped for ext in ("pdf", "png")]
    expected += [out / "paper_tables" / f"{name}.{ext}" for key, name in
                 (("table1", "table1_parameters"), ("table2", "table2_school_nmse"))
                 if key in cfg.get("tables", {}) for ext in ("csv", "md", "tex")]
    expected.append(out / "paper_tables" / "REPRODUCTION.md")
    missing = [str(p.relative_to(tree)) for p in expected if not p.is_file()]
    assert not missing, missing
    n = _snakemake(tree, "-n", "--cores", "2")
    assert n.returncode == 0 and "Nothing to be done" in n.stdout + n.stderr, _tail(n)
    problems, _ = audit(out)
    assert not problems, "\n".join(problems)
    for run in (p for p in (out / "results" / "runs").glob("*/*.csv") if not p.name.startswith(".")):
        assert run.with_name(run.name[:-4] + ".meta.json").is_file(), run
    FINISHED["cores2"] = tree


# ---- 2. determinism across --cores ------------------------------------------------------------
TIMING_META = ("start_time", "duration_s")


def _compare_trees(a: Path, b: Path) -> list[str]:
    """Differences between the run results of two output trees (b may hold more than a).
    The jobs' benchmark records (results/benchmarks) are timings, like wall_time: not compared."""
    diffs = []
    files = sorted(p.relative_to(a) for p in (a / "results").rglob("*")
                   if p.is_file() and not p.name.startswith(".") and p.relative_to(a).parts[1] != "benchmarks")
    others = sorted(p.relative_to(b) for p in (b / "results").rglob("*")
                    if p.is_file() and not p.name.startswith(".") and p.relative_to(b).parts[1] != "benchmarks")
    if set(files) - set(others):                      # b may hold more (a full run's outputs)
        diffs.append(f"result files only in {a}: {sorted(set(files) - set(others))}")
    runs = [f for f in files if f.parts[1] == "runs" and f.suffix == ".csv"]
    assert runs, f"no run tables under {a}"
    for rel in files:
        pa, pb = a / rel, b / rel
        if not pb.is_file():
            diffs.append(f"{rel}: missing in {b}")
        elif rel.suffix == ".csv":
            ta, tb = pd.read_csv(pa), pd.read_csv(pb)
            try:
                pd.testing.assert_frame_equal(ta.drop(columns="wall_time"), tb.drop(columns="wall_time"),
                                              check_exact=True)
            except AssertionError as exc:
                diffs.append(f"{rel}: {exc}")
        elif rel.name.endswith(".meta.json"):
            ma, mb = io.read_json(pa), io.read_json(pb)
            for m in (ma, mb):
                for k in TIMING_META:
                    m.pop(k)
            if ma != mb:
                diffs.append(f"{rel}: {sorted(k for k in ma if ma[k] != mb.get(k))} differ")
        elif rel.suffix == ".npz":
            xa, xb = io.read_arrays(pa), io.read_arrays(pb)
            if rel.parts[1] == "reference":            # the measured solve time, like wall_time
                xa.pop("seconds", None), xb.pop("seconds", None)
            if xa.keys() != xb.keys():
                diffs.append(f"{rel}: keys {sorted(xa)} vs {sorted(xb)}")
            for k in xa.keys() & xb.keys():
                u, v = xa[k], xb[k]
                if u.dtype != v.dtype or u.shape != v.shape or u.tobytes() != v.tobytes():
                    diffs.append(f"{rel}[{k}]: not bit-identical")
        elif pa.read_bytes() != pb.read_bytes():     # specs (JSON), ILEA567.DAT
            diffs.append(f"{rel}: bytes differ")
    return diffs


@needs_workflow
def test_cores_1_and_cores_2_give_identical_results(tmp_path):
    one = _copy_workflow(tmp_path / "cores1")
    from rfl.workflow import absent_data
    smoke = rflconfig.load(SMOKE)
    runs = [f"run_{e}" for e in smoke["experiments"] if e not in absent_data(smoke)]  # one rule each
    r = _snakemake(one, "--cores", "1", "--until", *runs)
    assert r.returncode == 0, _tail(r)
    two = FINISHED.get("cores2")
    if two is None:                                   # the interruption test did not run
        two = _copy_workflow(tmp_path / "cores2")
        r = _snakemake(two, "--cores", "2")
        assert r.returncode == 0, _tail(r)
    diffs = _compare_trees(_out(one), _out(two))
    assert not diffs, "\n".join(diffs[:40])


# ---- 3. killing `rfl run` directly --------------------------------------------------------------
@pytest.fixture(scope="module")
def run_inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("rflrun")
    cfg = rflconfig.load(SMOKE)
    spec = next(s for s in rflconfig.expand_runs(cfg) if s["dataset"]["problem"] == "cpesph"
                and s["algorithm"]["name"] == "rfedags")
    runner.generate_data(spec["dataset"], d / "data.npz")
    runner.compute_reference(spec["dataset"], d / "data.npz", d / "ref.npz")
    return d, spec


def _rfl_run(d: Path, spec: dict, name: str, env=None) -> tuple[subprocess.Popen, Path, Path]:
    (d / f"{name}.json").write_text(json.dumps(spec))
    out = d / name
    out.mkdir(exist_ok=True)
    table, meta = out / "run.csv", out / "run.meta.json"
    proc = subprocess.Popen([*RFL_CMD, "run", str(d / f"{name}.json"), str(d / "data.npz"),
                             str(d / "ref.npz"), str(table), str(meta)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)
    return proc, table, meta


def _kill(proc):
    if proc.poll() is not None:
        raise RuntimeError(f"rfl run had already ended ({proc.returncode}): the kill came too late")
    os.killpg(proc.pid, signal.SIGKILL)              # rfl run and any child (git)
    proc.communicate()


def test_rfl_run_killed_right_after_start_leaves_nothing(run_inputs):
    d, spec = run_inputs
    proc, table, meta = _rfl_run(d, spec, "early")
    time.sleep(0.3)
    _kill(proc)
    assert not table.exists() and not meta.exists()
    assert [p.name for p in table.parent.iterdir() if not TEMP.match(p.name)] == []


def test_rfl_run_killed_while_writing_its_table_leaves_no_output(run_inputs):
    d, spec = run_inputs
    big = dict(spec, rounds=15000)                    # a table that takes a while to write
    proc, table, meta = _rfl_run(d, big, "midwrite")
    deadline = time.monotonic() + 300
    temps = []
    while not temps:
        temps = [p for p in table.parent.iterdir()
                 if TEMP.match(p.name) and p.name.startswith(".run.csv.")]
        assert not table.exists(), "missed the write: the table appeared before its temporary file"
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline
        time.sleep(0.0005)
    _kill(proc)
    assert not table.exists(), "a killed writer left a file under the output's name"
    # rfl run writes the metadata before the table (the result comes last), so the metadata
    # may be complete here; what must never exist is a table, and no temporary file is an output
    left = sorted(p.name for p in table.parent.iterdir() if p.name != meta.name)
    assert left and all(TEMP.match(n) and n.startswith(".run.csv.") for n in left), left
    # the run then finishes, beside the stale hidden temporary file (which nothing reads)
    proc, table, meta = _rfl_run(d, spec, "midwrite")
    assert proc.wait(timeout=300) == 0, proc.communicate()[1][-2000:]
    assert len(pd.read_csv(table)) == spec["rounds"] + 1 and io.read_json(meta)["status"] == "ok"
    assert sorted(p.name for p in table.parent.iterdir() if TEMP.match(p.name)) == left


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git on PATH")
def test_rfl_run_killed_between_table_and_metadata(run_inputs, tmp_path):
    d, spec = run_inputs
    # a slow `git` (first on PATH) widens the window so the kill lands in it every time
    real_git = shutil.which("git")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text(f"#!/bin/sh\nsleep 5\nexec {real_git} \"$@\"\n")
    (fake / "git").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    proc, table, meta = _rfl_run(d, spec, "between", env=env)
    deadline = time.monotonic() + 120
    while not table.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"rfl run ended or hung: {proc.communicate()[1][-2000:]}")
        time.sleep(0.001)
    _kill(proc)
    assert not (table.exists() and not meta.exists()), "a run table without its metadata"


# ---- 4. permissions of finished outputs (rfl/io.py) -----------------------------------------------
@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_outputs_get_the_usual_permissions(tmp_path, umask):
    old = os.umask(umask)
    try:
        io.write_json(tmp_path / "a.json", {"a": 1})
        io.sync_json(tmp_path / "b.json", {"b": 1})
        io.write_table(tmp_path / "c.csv", pd.DataFrame({"x": [1.0]}))
        io.write_arrays(tmp_path / "d.npz", {"x": np.arange(3)})
        with io.atomic_path(tmp_path / "sub" / "e.txt") as tmp:
            tmp.write_text("e")
        with open(tmp_path / "reference.txt", "w") as fh:     # what any other writer gets
            fh.write("r")
    finally:
        os.umask(old)
    want = 0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "reference.txt").stat().st_mode) == want
    for name in ("a.json", "b.json", "c.csv", "d.npz", "sub/e.txt"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == want, name
    assert sorted(p.name for p in tmp_path.rglob(".*")) == []


def test_atomic_path_leaves_nothing_when_the_writer_fails(tmp_path):
    target = tmp_path / "x.csv"
    with pytest.raises(RuntimeError):
        with io.atomic_path(target) as tmp:
            assert tmp.parent == tmp_path and TEMP.match(tmp.name) and tmp.name.endswith(".csv")
            tmp.write_text("partial")
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


# ---- 5. School download through the `rfl fetch-school` command ---------------------------------
OFFLINE = {"HTTPS_PROXY": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
           "HTTP_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9",
           "NO_PROXY": "", "no_proxy": ""}


def _fetch(tmp_path, mirror: Path, spec=None):
    (tmp_path / "school.json").write_text(json.dumps(spec or {"mirror": None}))
    out = tmp_path / "cache" / sch.ILEA_FILENAME
    env = dict(os.environ, **OFFLINE, **{sch.MIRROR_ENV: str(mirror)})
    r = subprocess.run([sys.executable, "-m", "rfl.cli", "fetch-school", str(tmp_path / "school.json"),
                        str(out)], capture_output=True, text=True, env=env, timeout=120)
    return r, out


def _one_clear_line(r):
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rfl: error: "), r.stderr
    assert "Traceback" not in r.stderr


def test_fetch_school_offline_with_an_empty_mirror(tmp_path):
    (tmp_path / "mirror").mkdir()
    t0 = time.monotonic()
    r, out = _fetch(tmp_path, tmp_path / "mirror")
    assert time.monotonic() - t0 < 60, "the failing download must fail fast"
    assert r.returncode != 0
    _one_clear_line(r)
    assert sch.MIRROR_ENV in r.stderr and sch.ILEA_SHA256 in r.stderr
    assert not out.exists() and list(out.parent.iterdir()) == []


def test_fetch_school_rejects_a_corrupted_mirror_copy(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / sch.ILEA_FILENAME).write_bytes(b"1 1 70 8 3 0 1 1 1 1\r\n" * 100)
    r, out = _fetch(tmp_path, mirror)
    assert r.returncode != 0
    _one_clear_line(r)
    assert "sha256" in r.stderr and "deleted" in r.stderr
    assert not out.exists() and list(out.parent.iterdir()) == [], "the bad copy must not stay"
    assert (mirror / sch.ILEA_FILENAME).is_file(), "the mirror itself is left alone"


@pytest.mark.skipif(_mirror() is None, reason=f"needs the School data: set {sch.MIRROR_ENV} to a directory holding {sch.ILEA_FILENAME}")
def test_fetch_school_replaces_a_stale_copy_from_the_mirror(tmp_path):
    out = tmp_path / "cache" / sch.ILEA_FILENAME
    out.parent.mkdir()
    out.write_bytes(b"stale")
    r, out = _fetch(tmp_path, _mirror())
    assert r.returncode == 0, r.stderr
    assert hashlib.sha256(out.read_bytes()).hexdigest() == sch.ILEA_SHA256
    assert "deleted" in r.stderr and "Traceback" not in r.stderr
    assert [p.name for p in out.parent.iterdir()] == [sch.ILEA_FILENAME]


# ---- 6. static safety scan ------------------------------------------------------------------------
PACKAGE = REPO / "rfl"


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


def _calls(tree):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)]


def _dotted(node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return _dotted(node.value) + "." + node.attr
    return "?"


#: the one module that reads pickles: CIFAR-10's python batches, through an Unpickler whose
#: find_class resolves only numpy's array names (tests/test_cifar10.py refuses a tampered one)
PICKLE_READERS = {"rfl/data/cifar10.py": "SafeUnpickler"}
#: the one module that writes them (pickle.dumps only; a load is still a finding): the CIFAR-10
#: batches of the generated fixture the smoke config reads
PICKLE_WRITERS = {"rfl/data/generated.py"}


def test_package_source_has_no_pickle_and_no_shell():
    found = []
    for path in _modules():
        tree = ast.parse(path.read_text(), str(path))
        rel = path.relative_to(REPO)
        reader = PICKLE_READERS.get(rel.as_posix())
        restricted = reader is not None and any(
            isinstance(n, ast.ClassDef) and n.name == reader
            and any(isinstance(f, ast.FunctionDef) and f.name == "find_class" for f in n.body)
            for n in ast.walk(tree))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
                bad = [n for n in names if n and n.split(".")[0] in ("pickle", "cPickle", "dill",
                                                                     "cloudpickle", "joblib", "shelve")
                       and not ((restricted or rel.as_posix() in PICKLE_WRITERS) and n == "pickle")]
                if bad:
                    found.append(f"{rel}:{node.lineno}: imports {bad}")
        for call in _calls(tree):
            name = _dotted(call.func)
            kw = {k.arg: k.value for k in call.keywords}
            if name.split(".")[-1] == "load" and name.split(".")[0] in ("np", "numpy"):
                v = kw.get("allow_pickle")
                if not (isinstance(v, ast.Constant) and v.value is False):
                    found.append(f"{rel}:{call.lineno}: {name} without allow_pickle=False")
            if "shell" in kw and not (isinstance(kw["shell"], ast.Constant) and kw["shell"].value is False):
                found.append(f"{rel}:{call.lineno}: {name}(shell=...)")
            if name in ("os.system", "os.popen", "eval", "exec", "pickle.load", "pickle.loads") \
                    or name.endswith(("read_pickle", "to_pickle")):
                found.append(f"{rel}:{call.lineno}: {name}()")
    assert not found, "\n".join(found)


def _directive_blocks(text: str):
    """(rule name, directive, source text) for every directive of every rule of a Snakefile."""
    lines = text.splitlines()
    rule, i = None, 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^\s*(rule|checkpoint)\s*(\w*)\s*:\s*$", line)
        if m:                     # `rule NAME:`, or `rule:` with a `name:` directive (rules in a loop)
            rule = m.group(2) or "?"
            if not m.group(2):
                for following in lines[i + 1:i + 4]:
                    n = re.match(r"^\s+name:\s*(.+)$", following)
                    if n:
                        rule = n.group(1).strip()
                        break
        elif re.match(r"^\S", line):
            rule = None
        d = re.match(r"^(\s+)(\w+):(.*)$", line)
        if rule and d and d.group(2) in ("input", "output", "shell", "threads", "log", "params",
                                          "wildcard_constraints", "resources", "run"):
            indent, body = len(d.group(1)), [d.group(3)]
            i += 1
            while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                body.append(lines[i])
                i += 1
            yield rule, d.group(2), "\n".join(body).strip()
            continue
        i += 1


def _parse_args(source: str) -> ast.Call:
    return ast.parse(f"_(\n{source}\n)", mode="eval").body


def _constants(text: str) -> dict[str, str]:
    """Module-level string constants of the Snakefile (e.g. PIN)."""
    out = {}
    for node in ast.parse("\n".join(l for l in text.splitlines()
                                    if re.match(r"^[A-Z_]+ = [\"']", l))).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            out[node.targets[0].id] = node.value.value
    return out


def test_snakefile_shell_commands_interpolate_only_inputs_outputs_threads_and_log():
    from rfl.workflow import pinned

    text = workflow_text()
    consts = {**_constants(text), "pinned": pinned}
    shells = [(rule, src) for rule, directive, src in _directive_blocks(text) if directive == "shell"]
    assert len(shells) >= 8, shells
    allowed = re.compile(r"(input|output|log)(\.\w+|\[\d+\])?|threads")
    bad = []
    for rule, src in shells:
        cmd = eval(compile(ast.Expression(ast.parse(src, mode="eval").body), rule, "eval"),
                   {"__builtins__": {}}, consts)
        assert isinstance(cmd, str), (rule, src)
        for field in re.findall(r"(?<!\{)\{([^{}]*)\}(?!\})", cmd):
            if not allowed.fullmatch(field):
                bad.append(f"rule {rule}: {{{field}}} in {cmd!r}")
    assert not bad, "\n".join(bad)
    assert not [r for r, d, _ in _directive_blocks(text) if d == "run"], "run: blocks bypass the rule"


def test_snakefile_wildcard_constraints_cover_every_output_wildcard():
    text = workflow_text()
    block = re.search(r"^wildcard_constraints:\n((?:[ \t]+.*\n|\n)+)", text, re.M).group(1)
    constraints = {k.arg: k.value for k in _parse_args(block).keywords}
    uncovered = []
    for rule, directive, src in _directive_blocks(text):
        if directive != "output":
            continue
        for node in _walk_outside_expand(_parse_args(src)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for name in re.findall(r"(?<!\{)\{(\w+)(,[^}]*)?\}", node.value):
                    if name[0] not in constraints and not name[1]:
                        uncovered.append(f"rule {rule}: {{{name[0]}}}")
    assert not uncovered, uncovered
    # the literal constraints never match a hidden (temporary) name or a path
    for name, value in constraints.items():
        if isinstance(value, ast.Constant):
            for probe in (".run.csv.ab12.tmp", "a/b", "x.tmp.csv"):
                assert not re.fullmatch(value.value, probe), (name, probe)


def _walk_outside_expand(node):
    """ast.walk, but not into expand(...) calls (their braces are expand's own fields)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Call) and _dotted(child.func) == "expand":
            continue
        yield from _walk_outside_expand(child)


# ---- 7. the `rfl` command line: bad arguments, one line, status 2 -------------------------------
@pytest.fixture(scope="module")
def cli_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    (d / "notjson.json").write_text("{'spec': 1,")
    (d / "list.json").write_text("[1, 2]")
    (d / "empty.json").write_text("{}")
    (d / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    (d / "notnpz.npz").write_text("not an archive")
    (d / "run.csv").write_text("round,cost\n0,1\n")                  # no run.meta.json beside it
    (d / "good.csv").write_text("round,cost\n0,1\n")
    (d / "good.meta.json").write_text("{}")
    (d / "bad.yaml").write_text("datasets: {a: [1, 2}\n")
    cfg = rflconfig.load(SMOKE)
    spec = rflconfig.expand_runs(cfg)[0]
    runner.generate_data(spec["dataset"], d / "data.npz")
    runner.compute_reference(spec["dataset"], d / "data.npz", d / "ref.npz")
    for name, obj in {
        "run_no_dataset.json": {k: v for k, v in spec.items() if k != "dataset"},
        "run_no_params.json": dict(spec, dataset={k: v for k, v in spec["dataset"].items() if k != "params"}),
        "run_rounds_str.json": dict(spec, rounds="ten"),
        "run_no_K.json": dict(spec, algorithm={"name": spec["algorithm"]["name"]}),
        "run_bad_alg.json": dict(spec, algorithm={"name": "sgd"}),
        "data_bad_problem.json": dict(spec["dataset"], problem="mnist"),
        "data_no_seed.json": {k: v for k, v in spec["dataset"].items() if k != "seed"},
        "ref_no_reference.json": {k: v for k, v in spec["dataset"].items() if k != "reference"},
        "school_dataset.json": dict(spec["dataset"], problem="school"),
        "fetch_bad_mirror.json": {"mirror": [1]},
        "figure_spec.json": {"title": "t"},
        "figures_not_mappings.json": {"figures": [1]},
        "figures_bad_spec.json": {"figures": [{"spec": str(d / "empty.json"), "pdf": str(d / "o.pdf"),
                                               "runs": [str(d / "good.csv")]}]},
        "figures_no_meta.json": {"figures": [{"spec": str(d / "figure_spec.json"), "pdf": str(d / "o.pdf"),
                                              "runs": [str(d / "run.csv")]}]},
    }.items():
        (d / name).write_text(json.dumps(obj))
    return d


COMMANDS = {      # positional arguments of each subcommand, with valid-looking placeholders
    "validate": ["{SMOKE}"],
    "data": ["{d}/empty.json", "{d}/out.npz"],
    "reference": ["{d}/empty.json", "{d}/data.npz", "{d}/out.npz"],
    "run": ["{d}/empty.json", "{d}/data.npz", "{d}/ref.npz", "{d}/o.csv", "{d}/o.meta.json"],
    "figure": ["{d}/empty.json", "{d}/o.pdf", "{d}/good.csv"],
    "figures": ["{d}/empty.json"],
    "fetch-school": ["{d}/empty.json", "{d}/ILEA567.DAT"],
    "fetch-source": ["{d}/empty.json", "{d}/hsp_le/features.xlsx"],
    "table1": ["{d}/empty.json", "{d}/t1.csv"],
    "table2": ["{d}/empty.json", "{d}/t2.csv", "{d}/good.csv"],
    "heterogeneity": ["{d}/empty.json", "{d}/h.pdf", "{d}/h.csv", "{d}/good.csv"],
    "lsa": ["{d}/empty.json", "{d}/l.csv", "{d}/good.csv", "--figures", "{d}/l.pdf"],
    "sweep": ["{d}/empty.json", "{d}/s.pdf", "{d}/s.csv", "{d}/good.csv"],
    "reproduction": ["{d}/empty.json", "{d}/r.md"],
    "flower": ["{d}/empty.json", "{d}/data.npz", "{d}/ref.npz", "{d}/o.csv", "{d}/o.meta.json"],
    "performance": ["{d}/empty.json", "{d}/p.csv", "{d}/good.csv"],
    "perf-table": ["{d}/good.csv"],
    "calibrate": ["{SMOKE}", "--experiments", "no_such_experiment"],
    "cost-check": ["{d}/good.csv"],
    "batch": ["{d}/empty.json"],
    "bench-table": ["{d}/empty.json"],
    "leaderboard": ["{d}/empty.json", "{d}/lb.csv", "{d}/good.csv"],
    "results": ["{d}/o.parquet", "{d}/good.csv"],
    "merge": ["{d}/good.csv", "-o", "{d}/o.parquet"],
    "compare": ["{d}/empty.json", "{d}/list.json"],
    "source-size": ["record", "{d}/empty.json", "--paper", "{SMOKE}"],
}
VARIADIC = {"data", "figure", "table2", "heterogeneity", "lsa", "performance", "sweep", "leaderboard"}


def _cases(d: Path):
    sub = lambda args: [a.format(d=d, SMOKE=SMOKE) for a in args]  # noqa: E731
    choices = cli.build_parser()._subparsers._group_actions[0].choices
    # `runs` and `bench-runs` take options, `list` no file, `bench` runs the benchmark without
    # arguments: cases below
    covered = set(COMMANDS) | {"runs", "datasets", "list", "bench", "bench-runs"}
    assert set(choices) <= covered, f"subcommands without bad-argument cases: {set(choices) - covered}"
    commands = {c: a for c, a in COMMANDS.items() if c in choices}
    cases = []
    for cmd, args in commands.items():
        args = sub(args)
        cases.append((cmd, "no arguments", [cmd]))
        cases.append((cmd, "missing file", [cmd, str(d / "missing.json")] + args[1:]))
        if len(args) > 1:
            cases.append((cmd, "too few arguments", [cmd] + args[:-1]))
        if cmd not in VARIADIC:
            cases.append((cmd, "too many arguments", [cmd] + args + ["extra"]))
        cases.append((cmd, "unknown option", [cmd, "--frobnicate"] + args))
        if cmd != "validate":
            for spec in ("notjson.json", "list.json", "binary.json"):
                cases.append((cmd, f"spec {spec}", [cmd, str(d / spec)] + args[1:]))
    cases += [
        ("validate", "malformed YAML", ["validate", str(d / "bad.yaml")]),
        ("validate", "binary file", ["validate", str(d / "binary.json")]),
        ("reference", "data not an npz", ["reference", str(d / "empty.json"), str(d / "notnpz.npz"), str(d / "o.npz")]),
        ("run", "reference not an npz", ["run", str(d / "run_no_dataset.json"), str(d / "data.npz"),
                                         str(d / "notnpz.npz"), str(d / "o.csv"), str(d / "o.meta.json")]),
        ("figure", "run table without metadata", ["figure", str(d / "empty.json"), str(d / "o.pdf"), str(d / "run.csv")]),
        ("figure", "run file not a table", ["figure", str(d / "empty.json"), str(d / "o.pdf"), str(d / "data.npz")]),
        ("table2", "run table without metadata", ["table2", str(d / "empty.json"), str(d / "o.csv"), str(d / "run.csv")]),
        ("figures", "an item not a mapping", ["figures", str(d / "figures_not_mappings.json")]),
        ("figures", "a figure spec without its keys", ["figures", str(d / "figures_bad_spec.json")]),
        ("figures", "run table without metadata", ["figures", str(d / "figures_no_meta.json")]),
        ("list", "unknown kind", ["list", "optimisers"]),
        ("list", "too many arguments", ["list", "algorithms", "extra"]),
        ("list", "unknown option", ["list", "--frobnicate"]),
        ("source-size", "unknown action", ["source-size", "frobnicate"]),
        ("source-size", "unknown experiment", ["source-size", "subset", "no_such_experiment", "-o",
                                               str(d / "o.yaml"), "--paper", str(SMOKE)]),
        ("source-size", "record not a claims.json", ["source-size", "record", str(d / "list.json"),
                                                     "--paper", str(SMOKE)]),
        ("", "unknown command", ["frobnicate"]),
        ("", "option only", ["--frobnicate"]),
    ]
    run_args = [str(d / "data.npz"), str(d / "ref.npz"), str(d / "o.csv"), str(d / "o.meta.json")]
    for spec in ("empty.json", "run_no_dataset.json", "run_no_params.json", "run_rounds_str.json",
                 "run_no_K.json", "run_bad_alg.json"):
        cases.append(("run", f"spec {spec}", ["run", str(d / spec)] + run_args))
    for spec in ("empty.json", "data_bad_problem.json", "data_no_seed.json", "school_dataset.json"):
        cases.append(("data", f"spec {spec}", ["data", str(d / spec), str(d / "o.npz")]))
    cases.append(("reference", "spec without reference", ["reference", str(d / "ref_no_reference.json"),
                                                         str(d / "data.npz"), str(d / "o.npz")]))
    cases.append(("fetch-school", "mirror not a string", ["fetch-school", str(d / "fetch_bad_mirror.json"),
                                                         str(d / "ILEA567.DAT")]))
    cases.append(("fetch-source", "mirror not a string", ["fetch-source", str(d / "fetch_bad_mirror.json"),
                                                         str(d / "hsp_le/features.xlsx")]))
    cases.append(("fetch-source", "not a source's path", ["fetch-source", str(d / "empty.json"),
                                                         str(d / "features.xlsx")]))

    def runs(spec="run_no_dataset.json", data="data.npz", n_out=1, *extra):
        outs = ["o"] + [f"o{i}" for i in range(1, n_out)]     # o.csv, o1.csv, ...
        return ["runs", "--specs", str(d / spec), "--data", str(d / data), "--references",
                str(d / "ref.npz"), "--tables", *[str(d / f"{o}.csv") for o in outs],
                "--metas", *[str(d / f"{o}.meta.json") for o in outs], *extra]

    cases += [
        ("runs", "no arguments", ["runs"]),
        ("runs", "lists of different lengths", runs("empty.json", "data.npz", 2)),
        ("runs", "missing spec", runs("missing.json")),
        ("runs", "data not an npz", runs("empty.json", "notnpz.npz")),
        ("runs", "unknown option", runs("empty.json", "data.npz", 1, "--frobnicate")),
    ] + [("runs", f"spec {spec}", runs(spec)) for spec in
         ("empty.json", "notjson.json", "list.json", "binary.json", "run_no_K.json", "run_bad_alg.json")]

    def datasets(spec="data_bad_problem.json", n_out=1, *extra):
        return ["datasets", "--specs", str(d / spec), "--data", *[str(d / f"o{i}.npz") for i in range(n_out)],
                "--references", str(d / "r0.npz"), *extra]

    cases += [
        ("datasets", "no arguments", ["datasets"]),
        ("datasets", "lists of different lengths", datasets("empty.json", 2)),
        ("datasets", "missing spec", datasets("missing.json")),
        ("datasets", "unknown option", datasets("empty.json", 1, "--frobnicate")),
        ("datasets", "output not an npz", ["datasets", "--specs", str(d / "empty.json"), "--data",
                                           str(d / "o.csv"), "--references", str(d / "r0.npz")]),
        ("datasets", "raw file the problem does not read", datasets("school_dataset.json", 1, "--raw",
                                                                    str(d / "empty.json"))),
    ] + [("datasets", f"spec {spec}", datasets(spec)) for spec in
         ("empty.json", "notjson.json", "list.json", "binary.json", "data_bad_problem.json", "data_no_seed.json")]
    out = str(d / "o.bench")
    cases += [
        ("bench", "unknown method", ["bench", "nosuch", "--out", out]),
        ("bench", "bad option", ["bench", "rfedprox:mu=-1", "--out", out]),
        ("bench", "unknown problem", ["bench", "--problems", "nosuch", "--out", out]),
        ("bench", "unknown size", ["bench", "--size", "huge", "--out", out]),
        ("bench", "unknown baseline", ["bench", "--baselines", "sgd", "--out", out]),
        ("bench", "unknown option", ["bench", "--frobnicate", "--out", out]),
        ("bench-runs", "no arguments", ["bench-runs"]),
        ("bench-runs", "lists of different lengths", ["bench-runs", "--steps", str(d / "o.json")] + runs("empty.json", "data.npz", 2)[1:]),
        ("bench-runs", "unknown option", ["bench-runs", "--frobnicate", "--steps", str(d / "o.json")] + runs()[1:]),
        ("bench-runs", "tuning table without metadata", ["bench-runs", "--steps", str(d / "o.json"), "--tuning",
                                                          str(d / "run.csv")] + runs()[1:]),
    ] + [("bench-runs", f"spec {spec}", ["bench-runs", "--steps", str(d / "o.json")] + runs(spec)[1:])
         for spec in ("empty.json", "notjson.json", "run_bad_alg.json")]
    for cmd in ("figure", "figures", "table1", "table2", "reproduction", "heterogeneity", "lsa", "performance", "perf-table",
                "leaderboard"):
        if cmd in commands:
            cases.append((cmd, "spec {}", [cmd] + sub(COMMANDS[cmd])))
    return cases


def test_every_subcommand_refuses_bad_arguments_with_one_line(cli_files, capsys):
    failures, n = [], 0
    for cmd, what, argv in _cases(cli_files):
        n += 1
        try:
            status = cli.main(argv)
        except SystemExit as exc:
            status = exc.code
        except Exception as exc:  # noqa: BLE001 -- this is the traceback a user would see
            failures.append(f"{cmd} ({what}): {type(exc).__name__}: {exc}")
            capsys.readouterr()
            continue
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        if status != 2 or len(lines) != 1 or not lines[0].startswith("rfl: error: "):
            failures.append(f"{cmd} ({what}): status {status}, stderr {err!r}")
    assert n >= 60
    assert not failures, "\n".join(failures)
    assert not list(cli_files.glob("o.*")) and not list(cli_files.glob(".*")), "no output on error"


def test_validate_reports_config_errors_without_a_traceback(tmp_path):
    cfg = yaml.safe_load(SMOKE.read_text())
    cfg["experiments"]["cpesph_fixed"]["rounds"] = "ten"
    cfg["experiments"]["cpesph_fixed"]["methods"][0]["algorithm"] = "sgd"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    r = subprocess.run([sys.executable, "-m", "rfl.cli", "validate", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("rfl: error: ")
    assert "config key experiments.cpesph_fixed.rounds" in r.stderr
    assert "config key experiments.cpesph_fixed.methods.0.algorithm" in r.stderr


@pytest.mark.parametrize("argv", [
    ["run", "{d}/notjson.json", "{d}/data.npz", "{d}/ref.npz", "{d}/o.csv", "{d}/o.meta.json"],
    ["data", "{d}/run_no_params.json", "{d}/o.npz"],
    ["figure", "{d}/empty.json", "{d}/o.pdf", "{d}/run.csv"],
    ["validate", "{d}/bad.yaml"],
], ids=["run-spec-not-json", "data-spec-missing-key", "figure-run-without-meta", "validate-bad-yaml"])
def test_rfl_process_exits_2_with_one_line(cli_files, argv):
    r = subprocess.run(RFL_CMD + [a.format(d=cli_files) for a in argv], capture_output=True,
                       text=True)
    assert r.returncode == 2, r.stderr
    _one_clear_line(r)

"""Jobs sized for a scheduler (rfl/batches.py): packing experiments into batches, the cluster
settings, the batch runner, and the workflow with and without the SLURM profile's settings."""

from __future__ import annotations

import importlib.util
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rfl import config as rflconfig
from rfl import io
from rfl.batches import (ALLOWANCE_MIN, BatchError, cluster_settings, limit_seconds, makespan, pack,
                         request_minutes, run_batch)
from rfl.reporting.performance import read_benchmark
from rfl.workflow import Plan

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _workflow import WORKFLOW  # noqa: E402  (what a copy of the workflow needs)

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = shutil.which("snakemake")
SMOKE = rflconfig.load(REPO / "config" / "smoke.yaml")
PAPER = io.read_yaml(REPO / "config" / "paper_values.yaml")


# ---- makespan: the wall time of a batch on its cores -----------------------------------------
@given(st.lists(st.floats(0, 1e4), min_size=1, max_size=30), st.integers(1, 8))
def test_makespan_lies_within_grahams_bounds(costs, cores):
    # any list schedule: max(sum/m, max) <= makespan <= sum/m + max (Graham 1966)
    lower = max(sum(costs) / cores, max(costs))
    got = makespan(costs, cores)
    assert lower * (1 - 1e-12) <= got <= sum(costs) / cores + max(costs) + 1e-9


def test_makespan_of_one_core_is_the_sum_and_of_many_cores_the_longest():
    assert makespan([3.0, 1.0, 2.0], 1) == 6.0
    assert makespan([3.0, 1.0, 2.0], 3) == 3.0 == makespan([3.0, 1.0, 2.0], 10)
    # longest first onto the least loaded core: 5 | 4 then 3 -> 4+3 = 7 | 5, then 2 -> 5+2 = 7
    assert makespan([2.0, 3.0, 4.0, 5.0], 2) == 7.0


# ---- pack ----------------------------------------------------------------------------------
names = st.text("abcdefgh", min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(names, st.floats(0.0, 3000.0), min_size=1, max_size=40),
       st.floats(1.0, 900.0), st.floats(2.0, 6.0), st.integers(1, 6))
def test_every_name_in_one_batch_each_at_least_the_floor_none_above_the_limit(costs, floor, ratio, cores):
    limit = ratio * floor
    batches = pack(costs, floor, limit, cores)
    flat = [n for b in batches for n in b]
    assert sorted(flat) == sorted(costs) and len(flat) == len(set(flat))        # a partition
    spans = [makespan([costs[n] for n in b], cores) for b in batches]
    below = [i for i, s in enumerate(spans) if s < floor]
    assert len(below) <= 1 and (not below or below == [len(batches) - 1])      # the remainder only
    for b, s in zip(batches, spans):
        assert s <= limit or (len(b) == 1 and costs[b[0]] > limit), (b, s, limit)
    if below and len(batches) > 1:              # the remainder stands alone only when merging it would break the limit
        merged = makespan([costs[n] for n in batches[-2] + batches[-1]], cores)
        assert merged > limit


@given(st.dictionaries(names, st.floats(0.0, 3000.0), min_size=1, max_size=20), st.randoms())
def test_packing_depends_on_the_costs_only(costs, rnd):
    keys = list(costs)
    rnd.shuffle(keys)
    assert pack({k: costs[k] for k in keys}, 600, 3000, 2) == pack(costs, 600, 3000, 2)


def test_pack_closes_a_batch_when_it_reaches_the_floor_exactly():
    # 600 s reaches a 600 s floor on its own: a batch of its own (a '>' would keep filling it)
    assert pack({"a": 600.0, "b": 500.0, "c": 200.0}, 600, 1300, 1) == [["a"], ["b", "c"]]


def test_pack_keeps_a_remainder_apart_when_merging_it_exceeds_the_limit():
    # 9 + 9 = 18 >= 10 closes the first batch; the 3 s left over would make it 21 > 20
    assert pack({"a": 9.0, "b": 9.0, "c": 3.0}, 10, 20, 1) == [["a", "b"], ["c"]]
    # with a limit of 21 it joins
    assert pack({"a": 9.0, "b": 9.0, "c": 3.0}, 10, 21, 1) == [["a", "b", "c"]]


def test_pack_refuses_a_limit_below_two_floors():
    with pytest.raises(BatchError, match="two floors"):
        pack({"a": 1.0}, 10, 19, 1)


# ---- cluster settings and time requests ------------------------------------------------------
def test_cluster_settings_take_snakemakes_strings_and_fill_defaults():
    got = cluster_settings({"batch_minutes": "5", "time_limit_minutes": "240", "cores": "8"})
    assert got == {"batch_minutes": 5.0, "time_limit_minutes": 240, "cores": 8, "margin": 3.0}
    assert cluster_settings({})["batch_minutes"] == 10


@pytest.mark.parametrize("raw, key", [({"cores": "0"}, "cores"), ({"cores": "2.5"}, "cores"),
                                      ({"batch_minutes": "-1"}, "batch_minutes"),
                                      ({"margin": "0.5"}, "margin"), ({"speed": "1"}, "speed"),
                                      ({"time_limit_minutes": "60"}, "time_limit_minutes")])
def test_bad_cluster_settings_name_the_key(raw, key):
    # 60 minutes: 10 + 2 x 3 x 10 = 70 needed for two batches of 10 minutes at margin 3
    with pytest.raises(BatchError, match=rf"cluster\.{key}"):
        cluster_settings(raw)


def test_a_batch_asks_for_margin_times_its_estimate_plus_the_allowance_within_the_limit():
    s = cluster_settings({"time_limit_minutes": "120", "margin": "2"})
    assert request_minutes(600, s) == ALLOWANCE_MIN + 20
    assert request_minutes(601, s) == ALLOWANCE_MIN + 21                      # rounded up
    assert request_minutes(1e6, s) == 120
    # the largest batch the packing allows asks for exactly the limit
    assert request_minutes(limit_seconds(s), s) == 120


# ---- the workflow's plan with and without the cluster settings -------------------------------
@pytest.fixture(scope="module")
def plans():
    cluster = cluster_settings({"batch_minutes": "0.01", "time_limit_minutes": "60", "cores": "2"})
    return Plan(SMOKE, PAPER), Plan(SMOKE, PAPER, cluster=cluster)


def test_batches_hold_every_run_file_once_and_change_no_other_spec(plans):
    local, cluster = plans
    assert local.batches == []
    assert sorted(e for b in cluster.batches for e in b) == sorted(cluster.run_experiments())
    assert len(cluster.batches) > 1                   # a floor of 0.6 s splits the smoke config
    for kind in ("csv", "meta.json", "specs"):
        assert sorted(f for k in range(len(cluster.batches)) for f in cluster.batch_files(k, kind)) == \
            sorted(f for e in local.run_experiments() for f in local.run_files(e, kind))
    # every spec but the batches' is the local one: the same runs, tables and report
    specs = cluster.specs()
    assert {p: s for p, s in specs.items() if "/specs/batches/" not in p} == local.specs()
    spec = specs[cluster.spec("batches/batch0")]
    assert spec["cores"] == cluster.batch_cores(0) <= 2
    first = spec["experiments"][0]
    assert first["log"] == local.log(f"runs/{first['name']}")
    assert first["benchmark"] == local.benchmark(f"runs/{first['name']}")
    assert [e["estimate_s"] for e in spec["experiments"]] == sorted((e["estimate_s"] for e in spec["experiments"]),
                                                                     reverse=True)


def test_on_a_cluster_every_data_job_asks_what_the_largest_needs(plans):
    local, cluster = plans
    datasets = sorted({s["dataset"]["name"] for s in local.runs.values()})
    mems = [local.data_mem_mb(d) for d in datasets]
    assert len(set(mems)) > 1                       # the smoke config's data jobs differ locally
    assert {cluster.data_mem_mb(d) for d in datasets} == {max(mems)}
    assert all(cluster.reference_runtime(d) <= 60 for d in datasets)


def test_a_closed_form_optimum_asks_no_solver_time(plans):
    from rfl.registry import PROBLEMS
    local, _ = plans
    # every problem declaring closed_form gives x* without a solver; those that do not, none
    from rfl.testing.problem import ProblemCase, build
    for name in PROBLEMS.names():
        cls = PROBLEMS[name]
        if not cls.test_params or cls.raw_inputs_for(cls.test_params):
            continue
        _, problem = build(ProblemCase(cls, dict(cls.test_params)))
        assert (problem.closed_form_optimum() is not None) == cls.closed_form, name
    cifar = next(d for d, ds in SMOKE["datasets"].items() if ds["problem"] == "pca_stiefel_cifar10")
    assert local.reference_runtime(cifar) == 10


# ---- the batch runner ------------------------------------------------------------------------
def _fake(tmp_path, name, code):
    return {"name": name, "specs": [], "data": [], "references": [], "tables": [], "metas": [],
            "log": str(tmp_path / f"logs/{name}.log"), "benchmark": str(tmp_path / f"bench/{name}.tsv"),
            "code": code}


def test_a_batch_runs_each_experiment_with_its_log_and_benchmark_and_names_a_failure(tmp_path, monkeypatch, capsys):
    import rfl.batches as batches
    monkeypatch.setattr(batches, "runs_command",
                        lambda e: [sys.executable, "-c", e["code"]])
    ok = "import os; print('ok', os.environ['OPENBLAS_NUM_THREADS'], os.environ['RFL_CPU_RECORD'])"
    spec = {"cores": 2, "experiments": [_fake(tmp_path, "a", ok), _fake(tmp_path, "b", "raise SystemExit(3)")]}
    assert run_batch(spec) == 1
    err = capsys.readouterr().err
    assert "failed: b (log: " in err and "a:" in err
    assert (tmp_path / "logs/a.log").read_text() == "ok 1 1\n"                # one BLAS thread, CPU record on
    bench = read_benchmark(tmp_path / "bench/a.tsv")
    assert bench["s"] > 0 and bench["max_rss"] > 0
    assert not (tmp_path / "bench/b.tsv").exists()      # a failed experiment leaves no record
    assert run_batch({"cores": 1, "experiments": [_fake(tmp_path, "a", ok)]}) == 0


# ---- the workflow, dry run ---------------------------------------------------------------------
def _copy(tmp_path):
    for item in (*WORKFLOW, "profiles"):
        src = REPO / item
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, tmp_path / item)


def _rules(out: str) -> list[str]:
    return re.findall(r"^rule (\w+):", out, re.M)


@pytest.mark.skipif(SNAKEMAKE is None or importlib.util.find_spec("snakemake_executor_plugin_slurm") is None,
                    reason="snakemake and snakemake-executor-plugin-slurm")
def test_the_slurm_profile_dry_run_shows_batches_and_the_local_one_does_not(tmp_path):
    _copy(tmp_path)
    runs = {}
    for name, args in (("slurm", ["--profile", "profiles/slurm"]), ("local", ["--cores", "2"])):
        r = subprocess.run([SNAKEMAKE, "-n", *args, "--configfile", "config/smoke.yaml"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, (r.stdout[-3000:] + r.stderr[-3000:])
        runs[name] = r.stdout + r.stderr
    local = _rules(runs["local"])
    experiments = [r[len("run_"):] for r in local if r.startswith("run_")]       # one job per experiment
    assert experiments and set(experiments) <= set(Plan(SMOKE, PAPER).run_experiments())
    assert "batches (" not in runs["local"]
    for name in ("slurm",):
        rules = _rules(runs[name])
        batches = sorted(r for r in rules if r.startswith("run_"))
        assert batches and all(re.fullmatch(r"run_batch\d+", r) for r in batches)
        # the other jobs are the local run's, but the data jobs: one per instance (one SLURM
        # array), where the local run has one per dataset, each generating all its instances
        assert sorted(r for r in rules if not r.startswith(("run_", "data"))) \
            == sorted(r for r in local if not r.startswith(("run_", "data")))
        instances = Plan(SMOKE, PAPER).data_instances()      # (some skipped: data absent here)
        datasets = [r[len("data_"):] for r in local if r.startswith("data")]
        assert datasets and set(datasets) <= set(instances) and "data" not in local
        assert rules.count("data") == sum(len(instances[d]) for d in datasets)
        listed = re.findall(r"^  run_batch\d+: (\d+) experiments", runs[name], re.M)
        assert len(listed) == len(batches) and sum(map(int, listed)) == len(experiments)
    # the smoke config's estimate is far below the profile's 10-minute floor: one batch, on the
    # profile's 4 cores, asking for the memory of its 4 largest experiments side by side
    assert re.search(r"^  run_batch0: \d+ experiments, estimate [\d.]+ min on 4 cores", runs["slurm"], re.M)
    block = runs["slurm"].split("rule run_batch0:", 1)[1].split("\nrule ", 1)[0]
    assert re.search(r"resources: .*\bmem_mb=4000\b", block)          # 4 x 1000 MB


def test_a_bad_cluster_setting_is_one_line_and_exit_2(tmp_path):
    if SNAKEMAKE is None:
        pytest.skip("snakemake")
    _copy(tmp_path)
    r = subprocess.run([SNAKEMAKE, "-n", "--cores", "1", "--configfile", "config/smoke.yaml", "--config",
                        "cluster={cores: 0}"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "rfl: error: config key cluster.cores: '0' is not an integer >= 1" in r.stderr
    assert "Traceback" not in r.stderr

"""Experiments whose data are absent (rfl/workflow.py: absent_data, Plan(skipped=...)): left out
of the workflow with one line each naming the file and how to get it, their claims reported as
"not run: data absent" (rfl/claims/judge.py), never refuted."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from rfl import config as rflconfig
from rfl import io
from rfl.claims.judge import judge_claim
from rfl.claims.verdicts import NOT_RUN
from rfl.data import sources
from rfl.reporting.reproduction import provenance
from rfl.workflow import OFFLINE_ENV, Plan, absent_data
from _workflow import copy_workflow  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CIFAR_LINE = ("skipped pca_stiefel_cifar10: cifar-10-python.tar.gz not found; "
              "set RFL_CIFAR10_MIRROR=<dir> or run with internet")
RI_LINE = "skipped cfmspd_pathmnist: RI.mat not found; set RFL_ANCHORS_MIRROR=<dir> or run with internet"


@pytest.fixture
def cfg(tmp_path, monkeypatch):
    """Three experiments: CIFAR-10, PathMNIST and a synthetic one; an empty cache; no mirrors."""
    for var in (sources.MIRROR_ENV, sources.CIFAR10_MIRROR_ENV, OFFLINE_ENV):
        monkeypatch.delenv(var, raising=False)
    return {"anchors": {"cache_dir": str(tmp_path / "cache"), "mirror": None},
            "datasets": {"cifar10_pca": {"problem": "pca_stiefel_cifar10"},
                         "pathmnist_fm": {"problem": "cfmspd_pathmnist"},
                         "cpesph": {"problem": "cpesph"}},
            "experiments": {"pca_stiefel_cifar10": {"dataset": "cifar10_pca"},
                            "cfmspd_pathmnist": {"dataset": "pathmnist_fm"},
                            "cpesph_fixed": {"dataset": "cpesph"}}}


def never(name):
    raise AssertionError(f"probed {name}: the network must not be asked")


def test_offline_and_absent_one_line_each(cfg):
    assert absent_data(cfg, offline=True, probe=never) == {"pca_stiefel_cifar10": CIFAR_LINE,
                                                           "cfmspd_pathmnist": RI_LINE}


def test_the_environment_says_offline(cfg, monkeypatch):
    monkeypatch.setenv(OFFLINE_ENV, "1")
    assert set(absent_data(cfg, probe=never)) == {"pca_stiefel_cifar10", "cfmspd_pathmnist"}
    monkeypatch.setenv(OFFLINE_ENV, "0")            # online: the fetch jobs download
    assert absent_data(cfg, probe=never) == {}


def test_a_copy_in_the_cache_or_a_mirror_is_enough(cfg, tmp_path, monkeypatch):
    cached = Path(cfg["anchors"]["cache_dir"]) / "cifar10" / "cifar-10-python.tar.gz"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"x")
    assert absent_data(cfg, offline=True, probe=never) == {"cfmspd_pathmnist": RI_LINE}
    mirror = tmp_path / "anchors"
    (mirror / "pathmnist").mkdir(parents=True)
    (mirror / "pathmnist" / "RI.mat").write_bytes(b"x")
    monkeypatch.setenv(sources.MIRROR_ENV, str(mirror))
    assert absent_data(cfg, offline=True, probe=never) == {}
    monkeypatch.delenv(sources.MIRROR_ENV)
    cfg["anchors"]["mirror"] = str(mirror)           # the config key, too
    assert absent_data(cfg, offline=True, probe=never) == {}


def test_unknown_connectivity_probes_each_source_once(cfg):
    asked = []

    def probe(name):
        asked.append(name)
        return name == "pathmnist_ri"                # GitHub reachable, Toronto not
    cfg["experiments"]["second_cifar"] = {"dataset": "cifar10_pca"}
    out = absent_data(cfg, probe=probe)
    assert out == {"pca_stiefel_cifar10": CIFAR_LINE,
                   "second_cifar": CIFAR_LINE.replace("pca_stiefel_cifar10", "second_cifar")}
    assert sorted(asked) == ["cifar10_python", "pathmnist_ri"]


def test_the_plan_leaves_out_runs_and_figures_and_tells_the_report():
    config = rflconfig.load(REPO / "config" / "config.yaml")
    paper = io.read_yaml(REPO / "config" / "paper_values.yaml")
    full = Plan(config, paper)
    plan = Plan(config, paper, skipped={"pca_stiefel_cifar10": CIFAR_LINE})
    assert any(e == "pca_stiefel_cifar10" for e, _ in full.runs)
    assert not any(e == "pca_stiefel_cifar10" for e, _ in plan.runs)
    assert any(e == "cfmspd_pathmnist" for e, _ in plan.runs)
    assert "fig_pca_stiefel_cifar10" in full.figures and "fig_pca_stiefel_cifar10" not in plan.figures
    assert "runs/pca_stiefel_cifar10" in full.jobs() and "runs/pca_stiefel_cifar10" not in plan.jobs()
    assert "anchors_raw/cifar10/cifar-10-python.tar.gz" not in plan.jobs()
    assert not any("fig_pca_stiefel_cifar10" in t for t in plan.targets())
    spec = plan.table_spec("reproduction")
    assert spec["skipped"] == {"pca_stiefel_cifar10": CIFAR_LINE}
    assert spec["runs"]["pca_stiefel_cifar10"] == []
    assert "pca_stiefel_cifar10" in spec["config"]["experiments"]     # its claims stay declared


def test_claims_of_a_skipped_experiment_are_not_run_not_refuted():
    config = rflconfig.load(REPO / "config" / "config.yaml")
    spec = {"config": config, "runs": {}, "skipped": {"pca_stiefel_cifar10": CIFAR_LINE}}
    for cid in ("cifar10_converges", "cifar10_linear"):
        r = judge_claim(spec, cid, config["claims"][cid])
        assert r["verdict"] == NOT_RUN, cid
        assert r["notes"] == [f"Not run: {CIFAR_LINE}."]
        assert "RFL_CIFAR10_MIRROR" in r["decide"]
    measurement = {"section": "s", "statement": "x", "rule": "final_values",
                   "experiments": ["pca_stiefel_cifar10"]}
    assert judge_claim(spec, "m", measurement)["verdict"] is None
    # without the skip, the same empty runs are "undecided", not "not run"
    assert judge_claim({**spec, "skipped": {}}, "cifar10_converges",
                       config["claims"]["cifar10_converges"])["verdict"] != NOT_RUN


def test_the_report_header_lists_the_skipped_experiments():
    spec = {"config": {"output_dir": "x/"}, "runs": {}, "skipped": {"pca_stiefel_cifar10": CIFAR_LINE}}
    lines = provenance(spec)
    assert ("- not run (data absent): pca_stiefel_cifar10 (cifar-10-python.tar.gz not found; set "
            "RFL_CIFAR10_MIRROR=<dir> or run with internet)") in lines
    assert not any("not run" in line for line in provenance({**spec, "skipped": {}}))


@pytest.mark.skipif(shutil.which("snakemake") is None, reason="needs snakemake")
def test_the_workflow_prints_one_line_per_skipped_experiment(tmp_path):
    """A dry run of the smoke config plus the CIFAR-10 experiment, offline, without its file:
    exactly one skip line, and no job of it."""
    copy_workflow(tmp_path)
    main = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    smoke = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    smoke["datasets"]["cifar10_pca"] = main["datasets"]["cifar10_pca"]
    smoke["experiments"]["pca_stiefel_cifar10"] = main["experiments"]["pca_stiefel_cifar10"]
    smoke["figures"]["fig_pca_stiefel_cifar10"] = main["figures"]["fig_pca_stiefel_cifar10"]
    (tmp_path / "config" / "with_cifar.yaml").write_text(yaml.safe_dump(smoke, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if k not in (sources.CIFAR10_MIRROR_ENV, "SNAKEMAKE_PROFILE")}
    env.update(PYTHONPATH=str(REPO), **{OFFLINE_ENV: "1"})
    r = subprocess.run(["snakemake", "-n", "--quiet", "rules", "--cores", "1", "--configfile",
                        "config/with_cifar.yaml"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout + r.stderr
    # (without $RFL_ANCHORS_MIRROR the smoke config's WordNet and MNIST experiments are
    # skipped too, each on its own line)
    assert [line for line in out.splitlines() if line.startswith("skipped pca_stiefel_cifar10")] \
        == [CIFAR_LINE]
    # (the smoke config's run_pca_stiefel_cifar10_generated reads a generated tarball: it runs)
    assert not re.search(r"\brun_pca_stiefel_cifar10\b", out) and out.count("cifar-10-python") == 1
    assert re.search(r"\brun_pca_stiefel_cifar10_generated\b", out)

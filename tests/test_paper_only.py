"""Experiments the default config leaves to config/paper.yaml (``paper_only: <why>``,
rfl/workflow.py ``paper_only``): no runs and no figure here, the report header names them, and
their claims are judged without them or, when nothing else is read, undecided with
config/paper.yaml as what decides them (rfl/claims/judge.py) -- never "not run: data absent",
never refuted."""

from __future__ import annotations

from pathlib import Path

import pytest

from rfl import config as rflconfig
from rfl import io
from rfl.claims.judge import judge_claim
from rfl.claims.verdicts import NOT_RUN, UNDECIDED
from rfl.reporting.reproduction import provenance
from rfl.workflow import Plan, paper_only

REPO = Path(__file__).resolve().parents[1]
WHY = "a seed costs 220 CPU-s"


@pytest.fixture(scope="module")
def default():
    return rflconfig.load(REPO / "config" / "config.yaml")


@pytest.fixture(scope="module")
def paper():
    return rflconfig.load(REPO / "config" / "paper.yaml")


def _with_paper_only(config: dict, *names: str) -> dict:
    """``config`` with exactly ``names`` left to config/paper.yaml."""
    out = {**config, "experiments": {e: {k: v for k, v in exp.items() if k != "paper_only"}
                                     for e, exp in config["experiments"].items()}}
    for name in names:
        out["experiments"][name] = {**config["experiments"][name], "paper_only": WHY}
    return out


def test_paper_only_reads_the_key_and_nothing_else(default):
    assert paper_only(_with_paper_only(default)) == {}
    assert paper_only(_with_paper_only(default, "cpesph_fixed")) == {"cpesph_fixed": WHY}


def test_the_paper_config_runs_every_experiment_the_default_leaves_to_it(default, paper):
    left = paper_only(default)
    assert not paper_only(paper)
    for name in left:
        assert name in paper["experiments"]
        exp = paper["experiments"][name]
        # a sample of at least 3: seeds, or the replicas that are the rule's sample
        assert len(exp["seeds"]) >= 3 or exp.get("replicas", 0) >= 3, name


def test_the_plan_leaves_out_runs_and_figures_and_tells_the_report(default):
    values = io.read_yaml(REPO / "config" / "paper_values.yaml")
    config = _with_paper_only(default, "participation_mnist_pca_rho0p3")
    full, plan = Plan(_with_paper_only(default), values), Plan(config, values)
    name, fig = "participation_mnist_pca_rho0p3", "fig_participation_mnist_pca_rho0p3"
    assert any(e == name for e, _ in full.runs) and not any(e == name for e, _ in plan.runs)
    assert fig in full.figures and fig not in plan.figures
    assert f"runs/{name}" in full.jobs() and f"runs/{name}" not in plan.jobs()
    spec = plan.table_spec("reproduction")
    assert spec["paper_only"] == {name: WHY} and spec["skipped"] == {}
    assert spec["runs"][name] == []
    assert name in spec["config"]["experiments"]          # its claims stay declared


def test_a_claim_reading_only_paper_only_experiments_is_undecided_with_its_decider(default):
    spec = {"config": default, "runs": {}, "skipped": {},
            "paper_only": {"mnist_pca_fixed": WHY}}
    r = judge_claim(spec, "mnist_linear", default["claims"]["mnist_linear"])
    assert r["verdict"] == UNDECIDED
    assert r["decide"] == "config/paper.yaml, which runs mnist_pca_fixed"
    assert r["notes"] == [f"Not run here: mnist_pca_fixed, it runs in config/paper.yaml only ({WHY})."]
    measurement = {"section": "s", "statement": "x", "rule": "final_values",
                   "experiments": ["mnist_pca_fixed"]}
    assert judge_claim(spec, "m", measurement)["verdict"] is None


def test_data_absence_wins_over_paper_only_when_nothing_is_left(default):
    line = "skipped mnist_pca_decaying: x.mat not found; set RFL_ANCHORS_MIRROR=<dir>"
    spec = {"config": default, "runs": {}, "skipped": {"mnist_pca_decaying": line},
            "paper_only": {"mnist_pca_fixed": WHY}}
    r = judge_claim(spec, "mnist_decaying", default["claims"]["mnist_decaying"])
    assert r["verdict"] == NOT_RUN
    assert r["decide"] == "its data files: x.mat not found; set RFL_ANCHORS_MIRROR=<dir>"


def test_a_claim_with_other_experiments_is_judged_without_the_paper_only_ones(default):
    claim = default["claims"]["participation_full_lowest"]
    names = claim["experiments"]
    left = [e for e in names if e.startswith("participation_mnist")]
    assert left and len(left) < len(names)
    spec = {"config": default, "runs": {}, "skipped": {}, "paper_only": {e: WHY for e in left}}
    r = judge_claim(spec, "participation_full_lowest", claim)
    for e in left:
        assert f"Judged without {e}, not run: it runs in config/paper.yaml only ({WHY})." in r["notes"]
    assert r["verdict"] != NOT_RUN


def test_the_report_header_lists_them():
    spec = {"config": {"output_dir": "x/"}, "runs": {}, "skipped": {}, "paper_only": {"a": WHY}}
    assert f"- run in `config/paper.yaml` only: a ({WHY})" in provenance(spec)
    assert not any("paper.yaml` only" in line for line in provenance({**spec, "paper_only": {}}))


def test_the_config_refuses_an_empty_reason_naming_the_key(default):
    name = "cpesph_fixed"
    config = {**default, "experiments": {**default["experiments"],
                                         name: {**default["experiments"][name], "paper_only": ""}}}
    with pytest.raises(rflconfig.ConfigError, match=f"experiments.{name}.paper_only"):
        rflconfig.validate(config)

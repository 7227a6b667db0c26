"""Parameter sweeps (rfl/sweeps.py): a list for an option, the batch size, a step parameter or
participation expands into one run per value of the cross product, with distinct, readable
run ids and legend labels; a run's numbers do not depend on the other runs of the sweep; the
claims are judged per setting; the sweep job tabulates the final metric against each swept
parameter. Bad sweep lists are refused with one ``rfl: error:`` naming the key."""

from __future__ import annotations

import contextlib
import copy
import io as _io
import itertools
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from rfl import cli, runner, sweeps
from rfl import config as rflconfig
from rfl.claims.judge import judge_all
from rfl.reporting.triage import summary_lines
from rfl.claims.rule import Evidence
from rfl.reporting import figures
from rfl.reporting import sweep as sweep_report
from rfl.testing.run_files import write_run

REPO = Path(__file__).resolve().parents[1]
SMOKE = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
SWEEP = "cpesph_rfedproj_sweep"
SERVER_STEPS, ALPHAS = [0.5, 1.0, 1.5], [1.0, 2.0]
#: characters of a run id: a file name on every system, no Snakemake wildcard braces
SAFE_ID = re.compile(r"[A-Za-z0-9_]+")


def _sweep_config(**changes) -> dict:
    """The smoke config with only its sweep experiment (and its dataset), no figures or claims."""
    cfg = copy.deepcopy(SMOKE)
    exp = copy.deepcopy(cfg["experiments"][SWEEP])
    exp.update(changes)
    for key in ("figures", "tables", "heterogeneity", "lsa", "claims"):
        cfg.pop(key, None)
    cfg["figures"] = {}
    cfg["experiments"] = {SWEEP: exp}
    cfg["datasets"] = {exp["dataset"]: cfg["datasets"][exp["dataset"]]}
    return cfg


def _call(argv) -> tuple[int, str, str]:
    out, err = _io.StringIO(), _io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            status = cli.main([str(a) for a in argv])
        except SystemExit as exc:
            status = exc.code
    return status, out.getvalue(), err.getvalue()


def _validate(cfg) -> tuple[int, str, str]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "c.yaml"
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        return _call(["validate", path])


# ---- expansion -----------------------------------------------------------------------------
def test_three_options_times_two_steps_give_six_runs_per_seed_with_the_values_in_spec_and_id():
    runs = rflconfig.expand_runs(rflconfig.validate(_sweep_config()))
    seeds = SMOKE["experiments"][SWEEP]["seeds"]
    assert len(runs) == 6 * len(seeds)
    got = {(r["algorithm"]["server_step"], r["step"]["alpha"], r["seed"]) for r in runs}
    assert got == set(itertools.product(SERVER_STEPS, ALPHAS, seeds))
    for r in runs:
        eta, alpha = r["algorithm"]["server_step"], r["step"]["alpha"]
        assert r["sweep"] == [["server_step", eta], ["alpha", alpha]]
        # the ids written out by hand for these values
        assert r["run_id"] == f"rfedproj_K2_server_step{ {0.5: '0p5', 1.0: '1', 1.5: '1p5'}[eta]}" \
                              f"_alpha{ {1.0: '1', 2.0: '2'}[alpha]}_seed{r['seed']}"
    assert len({r["run_id"] for r in runs}) == len(runs)


def test_batch_size_participation_and_a_decaying_step_sweep_too():
    cfg = _sweep_config(batch_size=[2, 4], step={"rule": "decaying", "alpha0": [1.0, 0.5],
                                                 "beta": 0.1, "dec": [2, 3]})
    cfg["experiments"][SWEEP]["methods"] = [
        {"algorithm": "rfedags", "K": [1, 2], "participation": [None, 2]}]
    runs = rflconfig.expand_runs(rflconfig.validate(cfg))
    assert len(runs) == 2 * 2 * 2 * 2 * 2 * 2          # participation, K, B, alpha0, dec, seeds
    for r in runs:
        a, step = r["algorithm"], r["step"]
        assert r["sweep"] == [["batch_size", a["batch_size"]], ["alpha0", step["alpha0"]],
                              ["dec", step["dec"]]]
        assert step["beta"] == 0.1 and isinstance(step["dec"], int)
        part = "" if a["participation"] is None else f"_s{a['participation']}"
        alpha0 = "1" if step["alpha0"] == 1.0 else "0p5"
        assert r["run_id"] == (f"rfedags_K{a['K']}{part}_B{a['batch_size']}_alpha0{alpha0}"
                               f"_dec{step['dec']}_seed{r['seed']}")
    assert len({r["run_id"] for r in runs}) == len(runs)


def test_a_centralised_method_in_a_swept_experiment_runs_once_per_seed():
    cfg = _sweep_config()
    cfg["experiments"][SWEEP]["methods"].append({"algorithm": "rlbfgs"})
    runs = [r for r in rflconfig.expand_runs(rflconfig.validate(cfg)) if r["algorithm"]["name"] == "rlbfgs"]
    assert [r["run_id"] for r in runs] == ["rlbfgs_seed0", "rlbfgs_seed1"]
    assert all("sweep" not in r and r["step"] is None for r in runs)


def test_configs_without_lists_keep_their_run_ids_and_specs():
    """The default config's unswept experiments: no ``sweep`` in any spec, and the ids written
    by hand for the kinds of participation it runs."""
    config = rflconfig.load(REPO / "config" / "config.yaml")
    runs = rflconfig.expand_runs(config)
    swept = {e for e, x in config["experiments"].items() if rflconfig.is_swept(x)}
    assert swept == {SWEEP, "lima_kpca_label"}          # the latter sweeps RFedProx's mu
    ids = {(r["experiment"], r["run_id"]) for r in runs}
    for expected in [("cpesph_fixed", "rfedags_K5_seed0"), ("cpesph_fixed", "rfedavg_K30_seed4"),
                     ("cpesph_het", "rfedags_K5_s5_seed0")]:
        assert expected in ids, expected
    for r in runs:
        if r["experiment"] not in swept:
            assert "sweep" not in r
            a = r["algorithm"]
            assert r["run_id"] == rflconfig.run_id(a["name"], a.get("K"), r["seed"], a.get("participation"))


# ---- ids: readable, file-name safe, never the same for two settings -------------------------
def test_number_texts_are_the_shortest_exact_forms():
    assert [sweeps.number_text(v) for v in (1e-3, 0.001, 0.0010, 3e-3, 0.5, 1.0, 1, 2.5e-7, 1e20, 123.25)] == \
        ["1e-3", "1e-3", "1e-3", "3e-3", "0.5", "1", "1", "2.5e-7", "1e20", "123.25"]
    assert sweeps.number_text(0.1 + 0.2) == "0.30000000000000004"       # exact, not rounded


def test_value_texts_are_readable_and_keep_strings_numbers_and_bools_apart():
    assert [sweeps.value_text(v) for v in (0.003, 1e-5, -2, 0.5, 1.0, 2.5e-7, "sgd", "all_agents", True)] == \
        ["0p003", "1em5", "m2", "0p5", "1", "2p5em7", "sgd", "all_agents", "true"]
    values = (1, "1", 0.5, "0.5", "0p5", True, "true", None, "null", "a_b", "a-b", "aX2Db", "-1", -1,
              "m1", [1], "H" + sweeps.value_text([1])[1:], "x y", "x/y", "", "X", 1e-5, "1em5")
    texts = [sweeps.value_text(v) for v in values]
    assert len(set(texts)) == len(values), texts
    assert all(SAFE_ID.fullmatch(t) for t in texts), texts


SCALARS = (st.floats(allow_nan=False, allow_infinity=False) | st.integers(-10**20, 10**20)
           | st.booleans() | st.text(max_size=8) | st.none())


@settings(max_examples=300, deadline=None)
@given(st.lists(SCALARS, min_size=2, max_size=6))
def test_value_text_is_injective(values):
    """Two values that differ (as numbers: 1 and 1.0 are one value) never share a text."""
    for a, b in itertools.combinations(values, 2):
        same = (type(a) is bool) == (type(b) is bool) and a == b
        if not same and not (isinstance(a, float) and isinstance(b, float) and a == b):
            assert sweeps.value_text(a) != sweeps.value_text(b), (a, b)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(1e-9, 1e9), min_size=1, max_size=4, unique=True),
       st.lists(st.floats(1e-9, 1e3), min_size=1, max_size=3, unique=True),
       st.lists(st.integers(1, 4), min_size=1, max_size=2, unique=True))
def test_ids_are_injective_over_any_expansion(etas, alphas, batches):
    cfg = _sweep_config(batch_size=batches, step={"rule": "fixed", "alpha": alphas})
    cfg["experiments"][SWEEP]["methods"] = [
        {"algorithm": "rfedproj", "K": [1, 2], "server_step": etas, "participation": [None, 2]},
        {"algorithm": "rfedags", "K": [2], "local_method": ["sgd", "rsvrg"]}]
    runs = rflconfig.expand_runs(rflconfig.validate(cfg))
    ids = [r["run_id"] for r in runs]
    assert len(ids) == len(set(ids)) == 2 * 2 * len(etas) * len(alphas) * len(batches) * 2 + 2 * len(
        alphas) * len(batches) * 2
    assert all(SAFE_ID.fullmatch(i) for i in ids)
    # the id holds each swept value: read back, it gives the run's spec values
    for r in runs:
        assert f"_alpha{sweeps.value_text(r['step']['alpha'])}_" in r["run_id"]


def test_an_option_swept_in_one_method_and_fixed_in_another_may_share_nothing():
    """A method that sweeps server_step and one that runs the same value unswept write
    different files; the same setting twice (a list with 1 and 1.0) is refused."""
    cfg = _sweep_config()
    cfg["experiments"][SWEEP]["methods"].append({"algorithm": "rfedproj", "K": [2], "server_step": 1.0})
    ids = [r["run_id"] for r in rflconfig.expand_runs(rflconfig.validate(cfg))]
    assert len(ids) == len(set(ids))
    cfg["experiments"][SWEEP]["methods"][0]["server_step"] = [1, 1.0]
    status, _, err = _validate(cfg)
    assert status == 2 and "methods.0.server_step" in err and "more than once" in err


# ---- labels --------------------------------------------------------------------------------
def test_legend_labels_name_the_method_and_the_setting():
    key = figures.method_key({"name": "rfedproj", "K": 5, "participation": None},
                             [["server_step", 0.5], ["alpha", 0.003]])
    assert key == ("rfedproj", 5, None, (("server_step", 0.5), ("alpha", 0.003)))
    assert figures.method_label(key) == "RFedProj-K=5, server_step=0.5, alpha=3e-3"
    assert figures.method_label(figures.method_key({"name": "rfedags", "K": 5, "participation": 3},
                                                   [["batch_size", 8]])) == "RFedAGS-K=5, s=3, B=8"
    assert figures.method_key({"name": "rfedags", "K": 5, "participation": None}) == ("rfedags", 5, None)


# ---- determinism ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sweep_data(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    cfg = rflconfig.validate(_sweep_config())
    ds = rflconfig.dataset_spec(cfg, "cpesph", "fixed")
    runner.generate_data(ds, d / "d.npz")
    runner.compute_reference(ds, d / "d.npz", d / "r.npz")
    return cfg, d


def _table(spec, d):
    problem = runner.load_problem(spec["dataset"], d / "d.npz", spec.get("geometry"))
    ref = np.load(d / "r.npz")
    return runner.execute(spec, problem, ref["x_star"], float(ref["F_star"])).drop(columns="wall_time")


def test_a_run_of_a_sweep_is_the_run_of_the_config_without_lists(sweep_data):
    """The run (server_step 1.5, alpha 2, seed 1) inside the sweep, run after the others of the
    sweep, is number for number the run of the config that sets those values without lists;
    and the sweep's runs differ from each other (the swept values are used)."""
    cfg, d = sweep_data
    runs = rflconfig.expand_runs(cfg)
    tables = [_table(s, d) for s in runs]                                # the whole sweep, in order
    inside = next(t for s, t in zip(runs, tables)
                  if s["run_id"] == "rfedproj_K2_server_step1p5_alpha2_seed1")
    alone_cfg = _sweep_config(step={"rule": "fixed", "alpha": 2.0})
    alone_cfg["experiments"][SWEEP]["methods"][0]["server_step"] = 1.5
    alone = [s for s in rflconfig.expand_runs(rflconfig.validate(alone_cfg)) if s["seed"] == 1]
    assert [s["run_id"] for s in alone] == ["rfedproj_K2_seed1"]
    pd.testing.assert_frame_equal(_table(alone[0], d), inside)
    finals = {s["run_id"]: t["excess_risk"].iloc[-1] for s, t in zip(runs, tables)}
    assert len(set(finals.values())) == len(finals)


# ---- validation ----------------------------------------------------------------------------
def _bad(mutate):
    cfg = _sweep_config()
    mutate(cfg["experiments"][SWEEP])
    return cfg


BAD = {
    "a list where none is allowed": (lambda e: e.update(rounds=[4, 5]), "experiments.cpesph_rfedproj_sweep.rounds"),
    "a list for the step rule": (lambda e: e["step"].update(rule=["fixed"]), "step"),
    "an empty option list": (lambda e: e["methods"][0].update(server_step=[]), "methods.0.server_step"),
    "an empty step list": (lambda e: e["step"].update(alpha=[]), "step.alpha"),
    "an empty batch list": (lambda e: e.update(batch_size=[]), "batch_size"),
    "an option twice": (lambda e: e["methods"][0].update(server_step=[0.5, 1.0, 0.5]), "methods.0.server_step"),
    "a step twice (1e-3 and 0.001)": (lambda e: e["step"].update(alpha=[1e-3, 0.001]), "step.alpha"),
    "a batch size twice": (lambda e: e.update(batch_size=[2, 2]), "batch_size"),
    "NaN in an option list": (lambda e: e["methods"][0].update(server_step=[0.5, math.nan]), "methods.0.server_step.1"),
    "NaN in a step list": (lambda e: e["step"].update(alpha=[1.0, math.nan]), "step.alpha"),
    "a bad value in an option list": (lambda e: e["methods"][0].update(server_step=[0.5, -1]), "methods.0.server_step.1"),
    "a batch size too large": (lambda e: e.update(batch_size=[4, 21]), "batch_size.1"),
    "one participation twice": (lambda e: e["methods"][0].update(participation=[2, {"scheme": "uniform", "s": 2}]),
                                "methods.0"),
    "participation larger than S": (lambda e: e["methods"][0].update(participation=[None, 9]), "methods.0.participation.1"),
    "a list of lists for an option": (lambda e: e["methods"][0].update(server_step=[[0.5]]), "methods.0.server_step.0"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_sweep_lists_are_refused_naming_the_key(case):
    mutate, key = BAD[case]
    status, out, err = _validate(_bad(mutate))
    lines = err.rstrip("\n").splitlines()
    assert status == 2, (case, out, err)
    assert "Traceback" not in err
    assert lines[0] == "rfl: error: invalid configuration:", err
    assert all(line.startswith("  config key ") and "allowed" in line for line in lines[1:]), err
    assert any(f"config key experiments.{SWEEP}.{key}" in line or f"config key {key}" in line
               for line in lines[1:]), (case, err)


ODD_LISTS = [[], [1], [1, 1.0], [0.5, math.nan], [math.inf], [0.1, "0.1"], [[0.5]], [None], [True, 1],
             [1e-3, 0.001], [0.5, 1.5], [1, 2, 3], ["sgd", "rsvrg"], ["x"], [{}], [None, 2],
             [{"scheme": "uniform", "s": 2}, 2], [-1, 1], [10**30], [5e-324, 1e-300], [0.3, 0.30000000000000004]]
WHERE = st.sampled_from(["server_step", "local_method", "correction", "participation", "K", "batch_size",
                         "alpha", "alpha0", "beta", "dec", "rounds", "seeds"])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(SMOKE["experiments"])), WHERE, st.sampled_from(ODD_LISTS), st.integers(0, 5))
def test_odd_lists_anywhere_are_refused_naming_a_key_or_expand_into_valid_distinct_runs(ename, key, value, i):
    """A list put where a sweep may stand or not, in any experiment of the smoke config: refused
    in one message naming a key, or accepted with every run's K, batch size, participation and
    step scalar and valid, and every run id distinct."""
    from rfl.registry import ALGORITHMS
    from rfl.schema import Validator

    cfg = copy.deepcopy(SMOKE)
    exp = cfg["experiments"][ename]
    if key in ("alpha", "alpha0", "beta", "dec"):
        if key not in exp.get("step", {}):
            return
        exp["step"][key] = copy.deepcopy(value)
    elif key in ("rounds", "seeds", "batch_size"):
        exp[key] = copy.deepcopy(value)
    else:
        exp["methods"][i % len(exp["methods"])][key] = copy.deepcopy(value)
    try:
        valid = rflconfig.validate(cfg)
    except rflconfig.ConfigError as exc:
        assert "config key " in str(exc) and "allowed" in str(exc), str(exc)
        return
    runs = rflconfig.expand_runs(valid)
    ids = [(r["experiment"], r["run_id"]) for r in runs]
    assert len(ids) == len(set(ids)) and all(SAFE_ID.fullmatch(r) for _, r in ids)
    for r in runs:
        a, step = r["algorithm"], r["step"] or {}
        assert a.get("K") is None or (type(a["K"]) is int and a["K"] >= 1)
        assert a.get("batch_size") is None or (type(a["batch_size"]) is int and a["batch_size"] >= 1)
        assert not isinstance(a.get("participation"), list)
        assert all(not isinstance(v, list) and (not isinstance(v, float) or math.isfinite(v))
                   for v in step.values())
        for k, sub in ALGORITHMS[a["name"]].options.items():
            assert k not in a or not list(Validator(sub).iter_errors(a[k])), (k, a[k])


def test_the_command_line_refuses_a_duplicated_sweep_value_in_one_line(tmp_path):
    cfg = _bad(lambda e: e["methods"][0].update(server_step=[0.5, 0.5]))
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    r = subprocess.run([sys.executable, "-m", "rfl.cli", "validate", str(path)], cwd=REPO,
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.splitlines() == [
        "rfl: error: invalid configuration:",
        f"  config key experiments.{SWEEP}.methods.0.server_step: 0.5 more than once; allowed: a "
        f"list of distinct values (a sweep runs each once)"]


def test_the_paper_tables_refuse_a_swept_experiment():
    cfg = copy.deepcopy(SMOKE)
    cfg["tables"]["table1"]["rows"][0]["fixed"] = SWEEP
    status, _, err = _validate(cfg)
    assert status == 2 and "tables.table1.rows.0.fixed" in err and "sweeps" in err
    cfg = copy.deepcopy(SMOKE)
    cfg["heterogeneity"]["experiments"]["CPESph"] = SWEEP
    status, _, err = _validate(cfg)
    assert status == 2 and "heterogeneity.experiments.CPESph" in err


def test_the_smoke_and_default_configs_with_their_sweeps_are_valid():
    for name in ("smoke.yaml", "config.yaml"):
        assert _validate(yaml.safe_load((REPO / "config" / name).read_text()))[0] == 0


# ---- claims, per setting -------------------------------------------------------------------
def _swept_runs(root, finals_by_setting, seeds=(0, 1), rounds=20, extra=(), diverged=()):
    """Run files of a swept experiment "e": per setting, excess risk r^t (r from ``finals_by_
    setting``: the value after ``rounds`` rounds), or a constant 1 for r = None; ``extra``:
    unswept run files (algorithm, K) with r = 0.5; ``diverged``: (setting, seed) of runs whose
    last row is the runner's "diverged" row."""
    paths = []
    for setting, r in finals_by_setting.items():
        for seed in seeds:
            t = np.arange(rounds + 1, dtype=float)
            er = np.ones_like(t) if r is None else r ** t
            status = np.array(["ok"] * len(t), dtype=object)
            if (setting, seed) in diverged:
                er[-1], status[-1] = np.nan, "diverged"
            rid = rflconfig.run_id("rfedproj", 2, seed, None, setting)
            path = root / f"{rid}.csv"
            write_run(path, {"excess_risk": er, "status": status}, {"experiment": "e", "run_id": rid, "seed": seed,
                                                  "algorithm": {"name": "rfedproj", "K": 2, "participation": None},
                                                  "sweep": [list(p) for p in setting]})
            paths.append(str(path))
    for alg, K in extra:
        for seed in seeds:
            rid = rflconfig.run_id(alg, K, seed)
            path = root / f"{rid}.csv"
            write_run(path, {"excess_risk": 0.5 ** np.arange(rounds + 1.0)},
                      {"experiment": "e", "run_id": rid, "seed": seed,
                       "algorithm": {"name": alg, "K": K, "participation": None}})
            paths.append(str(path))
    return paths


A = (("server_step", 0.5), ("alpha", 1.0))
B = (("server_step", 1.5), ("alpha", 1.0))


def _spec(paths, claim):
    exp = {"dataset": "d", "step": {"rule": "fixed", "alpha": [1.0]}, "methods": [
        {"algorithm": "rfedproj", "K": [2], "server_step": [0.5, 1.5]}, {"algorithm": "rfedags", "K": [2]}]}
    config = {"experiments": {"e": exp}, "datasets": {"d": {"problem": "cpesph", "params": {}}},
              "claims": {"c": claim}}
    return {"config": config, "runs": {"e": paths}, "tables": {}}


def test_a_claim_on_a_swept_experiment_is_judged_once_per_setting(tmp_path):
    """converges (factor 1e-2): setting A falls by 0.5^20 ~ 1e-6 (reproduced), setting B stays
    at 1 and has levelled off (fails); the unswept RFedAGS runs (0.5^t) are in both, so setting
    B is partly reproduced (one method of two fails)."""
    paths = _swept_runs(tmp_path, {A: 0.5, B: None}, extra=[("rfedags", 2)])
    claim = {"section": "S", "statement": "converges", "rule": "converges", "params": {"factor": 1e-2},
             "experiments": ["e"]}
    results = judge_all(_spec(paths, claim))
    assert [r["setting"] for r in results] == ["server_step=0.5, alpha=1", "server_step=1.5, alpha=1"]
    assert [r["verdict"] for r in results] == ["reproduced", "partly reproduced"]
    assert [[row["method"] for row in r["rows"]] for r in results] == [["RFedAGS-K=2", "RFedProj-K=2"]] * 2
    assert results[0]["rows"][1]["excess risk, last"] == pytest.approx(0.5 ** 20)
    # the summary lists the settings in the sweeps' group, the failing setting with its reason
    md = summary_lines(_spec(paths, claim)["config"], results)
    lines = md[md.index("### Sweeps: claims judged once per setting") + 4:][:2]
    assert [ln.split(" | ")[:3] for ln in lines] == [
        ["| S", "[converges \\[setting server_step=0.5, alpha=1\\]](claims/section-s.html#c-server-step-0-5-alpha-1)",
         "reproduced"],
        ["| ", "[converges \\[setting server_step=1.5, alpha=1\\]](claims/section-s.html#c-server-step-1-5-alpha-1)",
         "partly reproduced"]]
    assert lines[1].split(" | ")[3] == "RFedProj-K=2: last / round 0 1, claim <= 0.01 (median over 2 seeds)"  # why


def test_evidence_of_one_setting_keys_its_runs_as_an_unswept_experiment(tmp_path):
    """by_k of one setting sees that setting's runs only (not the last setting's, as a
    key without the setting would)."""
    paths = _swept_runs(tmp_path, {A: 0.5, B: 0.9})
    spec = _spec(paths, {})
    ev_a, ev_b = Evidence(spec, ["e"], A), Evidence(spec, ["e"], B)
    assert Evidence(spec, ["e"]).settings() == [A, B]
    for ev, r in ((ev_a, 0.5), (ev_b, 0.9)):
        (K, runs), = ev.by_k("e", "rfedproj").items()
        assert K == 2 and len(runs) == 2
        assert runs[0]["excess_risk"].iloc[-1] == pytest.approx(r ** 20)
    assert set(Evidence(spec, ["e"]).runs("e")) == {("rfedproj", 2, None, A), ("rfedproj", 2, None, B)}


def test_a_claim_without_a_sweep_is_judged_once_as_before(tmp_path):
    paths = _swept_runs(tmp_path, {}, extra=[("rfedags", 2)])
    claim = {"section": "S", "statement": "converges", "rule": "converges", "experiments": ["e"]}
    spec = _spec(paths, claim)
    spec["config"]["experiments"]["e"]["methods"] = [{"algorithm": "rfedags", "K": [2]}]
    (result,) = judge_all(spec)
    assert "setting" not in result and result["verdict"] == "reproduced"


# ---- the sweep's table and figure ----------------------------------------------------------
@pytest.fixture
def captured(monkeypatch):
    """The figures drawn (captured at save_figure, which still writes the files)."""
    drawn = []
    real = figures.save_figure

    def keep(fig, out_pdf):
        drawn.append([[(line.get_label(), line.get_xdata(), line.get_ydata()) for line in ax.get_lines()]
                      for ax in fig.axes])
        real(fig, out_pdf)
    monkeypatch.setattr(figures, "save_figure", keep)
    monkeypatch.setattr(sweep_report, "save_figure", keep)
    return drawn


def test_the_sweep_table_and_figure_give_the_median_final_value_per_setting(tmp_path, captured):
    settings_ = {(("server_step", e), ("alpha", a)): r
                 for (e, a), r in zip(itertools.product(SERVER_STEPS, ALPHAS), (0.5, 0.6, 0.7, 0.8, 0.9, 0.95))}
    paths = _swept_runs(tmp_path, settings_, seeds=(0, 1, 2), rounds=10)
    # seed 2 of the last setting diverges: its final value counts as +inf in the median
    table = sweep_report.write_sweep({"title": "t", "metrics": ["excess_risk"]}, tmp_path / "f.pdf",
                                     tmp_path / "s.csv", paths)
    assert list(table.columns) == ["method", "server_step", "alpha", "excess_risk", "seeds", "diverged"]
    assert list(zip(table["server_step"], table["alpha"])) == list(itertools.product(SERVER_STEPS, ALPHAS))
    np.testing.assert_allclose(table["excess_risk"], [r ** 10 for r in settings_.values()], rtol=1e-12)
    assert (table["seeds"] == 3).all() and (table["diverged"] == 0).all()
    assert (tmp_path / "s.md").read_text().splitlines()[2] == "| RFedProj-K=2 | 0.5 | 1 | 0.0009766 | 3 | 0 |"
    (panels,) = captured
    by_eta, by_alpha = panels
    assert [lab for lab, *_ in by_eta] == ["RFedProj-K=2, alpha=1", "RFedProj-K=2, alpha=2"]
    assert [lab for lab, *_ in by_alpha] == [f"RFedProj-K=2, server_step={e:g}" for e in SERVER_STEPS]
    _, x, y = by_eta[1]                                                 # alpha = 2
    np.testing.assert_allclose(x, SERVER_STEPS)
    np.testing.assert_allclose(y, [0.6 ** 10, 0.8 ** 10, 0.95 ** 10], rtol=1e-12)


def test_a_diverged_seed_counts_as_infinity(tmp_path):
    paths = _swept_runs(tmp_path, {A: 0.5}, seeds=(0, 1, 2), rounds=4, diverged={(A, 2)})
    (row,) = sweep_report.sweep_table(paths, ["excess_risk"]).to_dict("records")
    assert row["diverged"] == 1 and row["excess_risk"] == 0.5 ** 4     # median of (x, x, inf)
    (tmp_path / "one").mkdir()                    # one seed, diverged: the median is +inf
    paths = _swept_runs(tmp_path / "one", {A: 0.5}, seeds=(0,), rounds=4, diverged={(A, 0)})
    assert sweep_report.sweep_table(paths, ["excess_risk"])["excess_risk"].iloc[0] == math.inf


# ---- end to end ----------------------------------------------------------------------------
SNAKEMAKE = shutil.which("snakemake")


@pytest.mark.skipif(SNAKEMAKE is None, reason="needs snakemake")
def test_snakemake_runs_a_six_run_sweep_into_six_labelled_curves_a_table_and_verdicts(tmp_path, captured):
    out = tmp_path / "out"
    for d in ("school", "anchors"):
        (out / "datasets" / d).mkdir(parents=True)
    cfg = _sweep_config(seeds=[0])
    cfg.update(output_dir=f"{out}/", school={"mirror": None, "cache_dir": str(out / "datasets/school")},
               anchors={"mirror": None, "cache_dir": str(out / "datasets/anchors")})
    cfg["figures"] = {"fig_demo": {"experiment": SWEEP, "title": "demo"}}
    cfg["claims"] = copy.deepcopy({"c": SMOKE["claims"]["rfedproj_sweep_converges"]})
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"}
    r = subprocess.run([SNAKEMAKE, "--cores", "1", "--configfile", str(path), "--quiet", "rules"],
                       cwd=REPO, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    tables = sorted((out / "results" / "runs" / SWEEP).glob("*.csv"))
    assert [p.stem for p in tables] == sorted(
        f"rfedproj_K2_server_step{sweeps.value_text(e)}_alpha{sweeps.value_text(a)}_seed0"
        for e, a in itertools.product(SERVER_STEPS, ALPHAS))
    sweep_table = pd.read_csv(out / "paper_tables" / f"sweep_{SWEEP}.csv")
    assert len(sweep_table) == 6
    assert (out / "figures" / f"fig_sweep_{SWEEP}.png").is_file()
    assert (out / "figures" / "fig_demo.png").is_file()
    # the sweep table's final values are the run tables' last rows
    finals = {p.stem: pd.read_csv(p)["excess_risk"].iloc[-1] for p in tables}
    for row in sweep_table.itertuples():
        rid = f"rfedproj_K2_server_step{sweeps.value_text(row.server_step)}_alpha{sweeps.value_text(row.alpha)}_seed0"
        assert row.excess_risk == finals[rid]
    report = (out / "paper_tables" / "REPRODUCTION.md").read_text()
    assert sum("[setting server_step=" in line for line in report.splitlines() if line.startswith("| ")) == 6
    # the experiment's figure, drawn from the workflow's run tables: six labelled curves
    figures.experiment_figure({"title": "demo"}, [str(p) for p in tables], tmp_path / "f.pdf")
    (panels,) = captured
    labels = [lab for lab, *_ in panels[0]]
    assert sorted(labels) == sorted(f"RFedProj-K=2, server_step={sweeps.number_text(e)}, alpha={sweeps.number_text(a)}"
                                    for e, a in itertools.product(SERVER_STEPS, ALPHAS))
    plt.close("all")


def test_a_swept_participation_is_a_method_of_its_own_for_the_rules():
    """level_vs_share reads each participation of a list as a method (key and scheme)."""
    from rfl.claims.rules.level_vs_share import participations

    bern = {"scheme": "bernoulli", "rho": 0.3}
    config = {"experiments": {"e": {"methods": [{"algorithm": "rfedags", "K": [5], "participation": [None, 2, bern]}]}}}
    got = participations(Evidence({"config": config}, ["e"]), "e")
    assert got == {("rfedags", 5, None): None, ("rfedags", 5, 2): 2, ("rfedags", 5, "bernoulli rho=0.3"): bern}

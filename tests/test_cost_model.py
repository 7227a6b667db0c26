"""The cost model of a run job (rfl/cost_model.py), its fit (rfl/calibrate.py) and the check
against measured jobs (rfl cost-check): the arithmetic against the model's formula written out
by hand, the fit against measurements constructed from known coefficients, a bad model file
against the one-line error, the check's table against ratios computed here."""

from __future__ import annotations

import copy
import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from rfl import calibrate, cost_model
from rfl import config as rflconfig
from rfl.reporting.performance import CSV_COLUMNS

REPO = Path(__file__).resolve().parents[1]
SMOKE = rflconfig.load(REPO / "config" / "smoke.yaml")
CPESPH = {"d": 25, "nu": 1e-3, "S": 10, "N": 80}
COEF = {"run_s": 0.02, "run_replica_s": 3e-4, "round_s": 1e-3, "replica_round_s": 2e-6,
        "agent_round_s": 4e-5, "step_s": 5e-6, "sample_s": 7e-8}


def _spec(rounds=150, K=10, B=64, participation=None, replicas=None, name="cpesph",
          instance="fixed", params=CPESPH, algorithm="rfedags"):
    spec = {"experiment": "e", "run_id": "r", "seed": 0, "rounds": rounds,
            "dataset": {"name": name, "instance": instance, "problem": "cpesph", "params": dict(params),
                        "seed": 2024, "resample": False},
            "algorithm": {"name": algorithm, "K": K, "batch_size": B, "participation": participation}}
    if replicas:
        spec["replicas"] = replicas
    return spec


def _model(**over):
    model = {"format": cost_model.FORMAT, "version": cost_model.VERSION, "commit": "abc123",
             "machine": "a test machine", "startup_s": 0.5,
             "datasets": [{"name": "cpesph", "problem": "cpesph", "params": dict(CPESPH),
                           "load_first_s": 0.25, "load_next_s": 0.125, "first_run_s": 0.0625}],
             "pairs": [{"dataset": "cpesph", "problem": "cpesph", "params": dict(CPESPH),
                        "algorithm": "rfedags", "coefficients": dict(COEF), "warmup_s": 0.75}]}
    model.update(over)
    return model


# ---- arithmetic ------------------------------------------------------------------------------
def test_a_run_costs_the_formula_of_its_rounds_steps_samples_and_replicas():
    c = COEF
    # all agents (S = 10) take part; no replicas
    T, K, B, P, R = 150, 10, 64, 10, 1
    want = (c["run_s"] + c["run_replica_s"] * R
            + T * (c["round_s"] + c["replica_round_s"] * R + c["agent_round_s"] * P * R
                   + c["step_s"] * K * P * R + c["sample_s"] * K * B * P * R))
    got, basis = cost_model.run_seconds(_spec(), _model())
    assert basis == "measured" and got == pytest.approx(want, rel=1e-12)
    # rho = 0.3 of 10 agents: 3 expected participants; 8 replicas
    T, K, B, P, R = 40, 5, 16, 3.0, 8
    want = (c["run_s"] + c["run_replica_s"] * R
            + T * (c["round_s"] + c["replica_round_s"] * R + c["agent_round_s"] * P * R
                   + c["step_s"] * K * P * R + c["sample_s"] * K * B * P * R))
    spec = _spec(rounds=40, K=5, B=16, participation={"scheme": "bernoulli", "rho": 0.3,
                                                       "probabilities": None}, replicas=8)
    assert cost_model.run_seconds(spec, _model())[0] == pytest.approx(want, rel=1e-12)


def test_a_centralized_run_costs_its_rounds_only():
    spec = _spec(rounds=30, algorithm="rlbfgs")
    spec["algorithm"] = {"name": "rlbfgs"}
    pair = dict(_model()["pairs"][0], algorithm="rlbfgs")
    c = COEF
    want = c["run_s"] + c["run_replica_s"] + 30 * (c["round_s"] + c["replica_round_s"] + c["agent_round_s"]
                                                   + c["step_s"] + c["sample_s"])
    assert cost_model.run_seconds(spec, _model(pairs=[pair]))[0] == pytest.approx(want, rel=1e-12)


def test_a_job_adds_startup_each_load_one_warmup_per_algorithm_and_its_runs():
    model = _model()
    a = _spec(rounds=100)
    b = _spec(rounds=100, K=20)
    other_instance = _spec(rounds=50, instance="seed1")     # a second data instance: load_next
    specs = [a, b, other_instance]
    runs = sum(cost_model.run_seconds(s, model)[0] for s in specs)
    # start-up, the first and the next load, the dataset's first run and rfedags' warm-up
    want = 0.5 + 0.25 + 0.125 + 0.0625 + 0.75 + runs
    est = cost_model.job_estimate(specs, model)
    assert est["cpu_s"] == pytest.approx(want, rel=1e-12)
    assert cost_model.job_cpu_seconds(specs, model) == est["cpu_s"]
    assert (est["startup_s"], est["load_s"], est["warmup_s"]) == pytest.approx((0.5, 0.375, 0.8125))


def test_another_size_of_the_same_problem_is_scaled_by_its_data_bytes():
    bigger = dict(CPESPH, S=40)              # 4x the data (S N (d + 1) floats)
    spec = _spec(params=bigger)
    got, basis = cost_model.run_seconds(spec, _model())
    c = {k: v * (4 if k in ("round_s", "replica_round_s", "sample_s") else 1) for k, v in COEF.items()}
    T, K, B, P = 150, 10, 64, 40
    want = c["run_s"] + c["run_replica_s"] + T * (c["round_s"] + c["replica_round_s"] + c["agent_round_s"] * P
                                                   + c["step_s"] * K * P + c["sample_s"] * K * B * P)
    assert basis == "scaled" and got == pytest.approx(want, rel=1e-12)


def test_without_a_pair_the_rule_of_thumb_applies():
    spec = _spec(algorithm="rfedavg")
    got, basis = cost_model.run_seconds(spec, _model())
    assert basis == "rule of thumb"
    assert got == pytest.approx(150 * 10 * 64 * 10 * cost_model.FALLBACK_SAMPLE_S)
    assert cost_model.job_estimate([spec], None)["cpu_s"] == pytest.approx(cost_model.FALLBACK_JOB_S + got)


# ---- the fit -------------------------------------------------------------------------------------
def _measure(T, K, B, P, R, c=COEF):
    """A run's CPU seconds written out from the module docstring of rfl.cost_model."""
    return (c["run_s"] + c["run_replica_s"] * R
            + T * (c["round_s"] + c["replica_round_s"] * R + c["agent_round_s"] * P * R
                   + c["step_s"] * K * P * R + c["sample_s"] * K * B * P * R))


def test_the_fit_recovers_the_coefficients_of_constructed_measurements():
    design = [(50, 10, 64, 10, 4), (150, 10, 64, 10, 4), (50, 20, 64, 10, 4), (50, 10, 16, 10, 4),
              (150, 10, 64, 10, 1), (50, 10, 64, 10, 16), (50, 10, 64, 3, 4)]
    points = [{"factors": dict(zip("TKBPR", f)), "cpu_s": _measure(*f)} for f in design]
    got = calibrate.fit(points)
    assert got == pytest.approx(COEF, rel=1e-6)
    assert calibrate.fit_error(points, got) < 1e-6


@pytest.mark.parametrize("planted", ["agent_round_s", "replica_round_s", "run_replica_s"])
def test_a_planted_per_agent_or_per_replica_cost_is_recovered_alone(planted):
    # the costs the previous model lacked (a round's per-agent part, whatever K) or lost
    # (replicas at the config's large R with few rounds): only that coefficient and run_s
    # planted, in the shapes a calibration measures: participation 30 and 100 of 100 agents
    # at K = 1 and 10; the replica experiments' R = 256 and 4096, each at two T
    c = dict.fromkeys(COEF, 0.0)
    c.update(run_s=0.01, **{planted: 2e-5})
    design = ([(2, 1, 10, 100, 1), (8, 1, 10, 100, 1), (210, 1, 10, 100, 1), (630, 1, 10, 100, 1),
               (19, 10, 10, 100, 1), (60, 1, 10, 30, 1), (180, 1, 10, 30, 1)] if planted == "agent_round_s" else
              [(2, 2, 1, 2, 256), (128, 2, 1, 2, 256), (384, 2, 1, 2, 256), (2, 2, 1, 2, 4096),
               (90, 2, 1, 2, 4096), (270, 2, 1, 2, 4096)])
    points = [{"factors": dict(zip("TKBPR", f)), "cpu_s": _measure(*f, c=c)} for f in design]
    got = calibrate.fit(points)
    assert got == pytest.approx(c, rel=1e-6, abs=1e-12)


def test_a_cost_the_features_lack_is_a_large_fit_error():
    # a round whose cost grows with the round index (T^2 in all: no feature has it): the fit
    # leaves more than FIT_WARN of some probe unexplained, and calibrate names the pair
    design = [(2, 10, 64, 10, 1), (8, 10, 64, 10, 1), (50, 10, 64, 10, 1), (150, 10, 64, 10, 1),
              (50, 20, 64, 10, 1), (600, 10, 16, 10, 1)]
    points = [{"factors": dict(zip("TKBPR", f)), "cpu_s": _measure(*f) + 1e-5 * f[0] ** 2} for f in design]
    got = calibrate.fit(points)
    assert calibrate.fit_error(points, got) > calibrate.FIT_WARN
    exact = [{"factors": p["factors"], "cpu_s": _measure(*f)} for p, f in zip(points, design)]
    assert calibrate.fit_error(exact, calibrate.fit(exact)) < 1e-6


def test_the_fit_error_of_a_probe_under_the_target_is_its_error_over_the_target():
    # a 5 ms probe predicted at 8 ms: 3 ms over TARGET_S (the clock's and machine's noise
    # there), not 60 %; a probe above the target: its relative error
    coef = dict.fromkeys(COEF, 0.0)
    coef["run_s"] = 0.008
    small = {"factors": dict(zip("TKBPR", (2, 1, 1, 1, 1))), "cpu_s": 0.005}
    assert calibrate.fit_error([small], coef) == pytest.approx(0.003 / cost_model.TARGET_S)
    large = {"factors": dict(zip("TKBPR", (2, 1, 1, 1, 1))), "cpu_s": 4 * cost_model.TARGET_S}
    assert calibrate.fit_error([large], coef) == pytest.approx(1 - 0.008 / (4 * cost_model.TARGET_S))


def test_a_design_run_spends_its_rounds_on_the_target_or_half_the_fixed_part():
    # 2 rounds cost c2 = fixed + 2 r, T rounds fixed + T r: T0 rounds cost TARGET_S when the
    # fixed part is small, half the fixed part when that is more, ROUNDS_CAP_S at most
    r = 2e-3
    for fixed, want_s in ((0.01, cost_model.TARGET_S), (0.4, 0.2), (5.0, calibrate.ROUNDS_CAP_S)):
        T0 = calibrate.first_rounds(fixed + 2 * r, 128, fixed + 128 * r)
        assert T0 == pytest.approx(want_s / r, abs=1)
    assert calibrate.first_rounds(0.01, 8, 0.5) == 3                   # at least 3 rounds
    assert calibrate.first_rounds(0.01, 8, 0.01 + 6e-12) == calibrate.MAX_ROUNDS


def test_the_fit_leaves_a_feature_the_design_did_not_vary_at_zero():
    # no replicas and every agent: R = 1 and P = 10 throughout, so run_replica_s,
    # replica_round_s and agent_round_s cannot be told from run_s and round_s; the sums are
    # recovered and the predictions of these shapes exact
    design = [(50, 10, 64, 10, 1), (150, 10, 64, 10, 1), (50, 20, 64, 10, 1), (50, 10, 16, 10, 1)]
    points = [{"factors": dict(zip("TKBPR", f)), "cpu_s": _measure(*f)} for f in design]
    got = calibrate.fit(points)
    assert got["run_replica_s"] == 0 and got["replica_round_s"] == 0 and got["agent_round_s"] == 0
    assert got["run_s"] == pytest.approx(COEF["run_s"] + COEF["run_replica_s"], rel=1e-6)
    assert got["round_s"] == pytest.approx(COEF["round_s"] + COEF["replica_round_s"] + 10 * COEF["agent_round_s"],
                                           rel=1e-6)
    new = (400, 30, 8, 10, 1)                       # a shape not measured
    spec = _spec(rounds=400, K=30, B=8)
    pair = dict(_model()["pairs"][0], coefficients=got)
    assert cost_model.run_seconds(spec, _model(pairs=[pair]))[0] == pytest.approx(_measure(*new), rel=1e-6)


def test_calibration_measures_the_smallest_and_largest_shape_of_a_pair_first():
    specs = [_spec(K=k) for k in (10, 1, 1000, 100, 30, 10)]
    shapes = calibrate.shapes_of(specs)
    assert [s["K"] for s in shapes][:2] == [1, 1000]
    assert len(shapes) == calibrate.MAX_SHAPES and len({s["K"] for s in shapes}) == len(shapes)
    runs = calibrate.design(specs[0], shapes)
    # the first shape twice (once at 3 T0), then each other shape once (its T0 probes are
    # its other measurements)
    assert [r["algorithm"]["K"] for r in runs] == [1, 1, 1000] + [s["K"] for s in shapes[2:]]
    assert [r["_times"] for r in runs] == [1, 3] + [1] * (len(shapes) - 1)
    one = calibrate.design(specs[0], calibrate.shapes_of([_spec(K=10, B=64, replicas=16)]))
    changed = [(r["algorithm"]["K"], r["algorithm"]["batch_size"], r["replicas"]) for r in one[2:]]
    # one shape: 2K, then 4B unless it exceeds the smallest agent's 80 samples (B / 4), then R / 4
    assert changed == [(20, 64, 16), (10, 16, 16), (10, 64, 4)]


def test_calibration_compiles_every_pair_before_it_measures_any(tmp_path, monkeypatch):
    """rfl's bytecode is written first (the probes import rfl as a workflow job does), then a
    first pass runs each dataset's pairs unmeasured (numba's cache filled), then the measured
    probes; a warm-only probe runs one round of each pair and measures nothing."""
    import rfl.workflow
    from rfl.workflow import Plan
    cfg = copy.deepcopy(SMOKE)
    experiments = ["cpesph_fixed", "cfmspd_fixed"]
    plan = Plan(cfg, {})
    calls = []
    monkeypatch.setattr(rfl.workflow, "compile_package", lambda: calls.append(("compiled", None)))

    def fake_run(cmd, input, **kw):                      # noqa: A002
        request = json.loads(input)
        calls.append((request["specs"][0]["dataset"]["name"], bool(request.get("warm_only"))))
        if request.get("warm_only"):
            return subprocess.CompletedProcess(cmd, 0, stdout="{}\n", stderr="")
        pairs = [{"algorithm": s["algorithm"]["name"], "warm_s": 0.5,
                  "warm_factors": dict(cost_model.run_factors(s), T=1),
                  "points": [{"factors": dict(cost_model.run_factors(s), T=t), "cpu_s": 0.1 + 0.01 * t}
                             for t in (2, 8, 32)]} for s in request["specs"]]
        out = {"startup_s": 0.3, "load_first_s": 0.01, "load_next_s": 0.001, "pairs": pairs}
        return subprocess.CompletedProcess(cmd, 0, stdout=json.dumps(out) + "\n", stderr="")

    from types import SimpleNamespace
    monkeypatch.setattr(calibrate, "subprocess", SimpleNamespace(run=fake_run))
    model = calibrate.calibrate(cfg, plan, experiments=experiments, log=lambda *a: None, jobs=2)
    assert calls.pop(0) == ("compiled", None) and ("compiled", None) not in calls
    datasets = sorted({d for d, _ in calls})
    assert datasets == sorted({cfg["experiments"][e]["dataset"] for e in experiments})
    warm = [d for d, w in calls if w]
    assert sorted(warm) == datasets and calls[:len(datasets)] == [(d, True) for d in warm]
    assert sorted(d for d, w in calls if not w) == datasets
    assert {d["name"] for d in model["datasets"]} == set(datasets)


def _spec_and_data(tmp_path, experiment="cpesph_fixed", config=None, **params):
    """The first run spec of ``experiment`` (of the smoke config unless ``config``), its
    dataset's params updated with ``params``, and that dataset generated into tmp_path."""
    from rfl import runner
    spec = next(s for s in rflconfig.expand_runs(config or SMOKE) if s["experiment"] == experiment)
    if params:
        spec = dict(spec, dataset=dict(spec["dataset"], params=dict(spec["dataset"]["params"], **params)))
    data = tmp_path / "d.npz"
    runner.generate_data(spec["dataset"], data)
    return spec, data


def _rounds_asked(monkeypatch) -> list:
    """The rounds of every run ``runner.run`` is asked for from now on (it still runs them)."""
    from rfl import runner
    asked, real = [], runner.run

    def counted(s, *a, **kw):
        asked.append(s["rounds"])
        return real(s, *a, **kw)

    monkeypatch.setattr(runner, "run", counted)
    return asked


def test_a_warm_only_probe_runs_one_round_of_each_pair_and_measures_nothing(tmp_path, monkeypatch):
    spec, data = _spec_and_data(tmp_path)
    rounds = _rounds_asked(monkeypatch)
    out = calibrate.probe({"data_npz": str(data), "specs": [spec, dict(spec, algorithm=dict(spec["algorithm"], name="rfedavg"))],
                           "shapes": [[], []], "warm_only": True})
    assert rounds == [1, 1] and out["pairs"] == []


def test_a_probe_runs_as_a_job_does_without_pandas(tmp_path):
    """The probe measures what a run job pays: a job never imports pandas (``run_setting``),
    so neither may a probe's first run, which is stored as the dataset's first_run_s."""
    spec, data = _spec_and_data(tmp_path)
    request = {"data_npz": str(data), "specs": [spec], "shapes": [calibrate.shapes_of([spec])]}
    code = ("import json, sys\nfrom rfl import calibrate\n"
            "out = calibrate.probe(json.loads(sys.stdin.read()))\n"
            "print(json.dumps({'pandas': 'pandas' in sys.modules, 'pairs': out['pairs']}))")
    r = subprocess.run([sys.executable, "-c", code], input=json.dumps(request), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["pandas"] is False
    points = out["pairs"][0]["points"]
    assert points and all(p["factors"]["T"] >= 1 for p in points)      # the rounds each run completed
    assert {p["factors"]["T"] for p in points} >= {2}                   # the design's T = 2 run


def test_a_probe_measures_each_shape_at_growing_rounds_in_process(tmp_path):
    # the same probe in this process (mutation testing follows the calls): every shape of the
    # design is measured, its T0 probes at T = 2, 8, ... and each measurement's rounds are the
    # rounds its run completed; the warm-up run is one round of the pair's own spec
    spec, data = _spec_and_data(tmp_path)
    shapes = calibrate.shapes_of([spec])
    out = calibrate.probe({"data_npz": str(data), "specs": [spec], "shapes": [shapes]})
    (pair,) = out["pairs"]
    assert pair["algorithm"] == spec["algorithm"]["name"] and pair["warm_factors"]["T"] == 1
    Ts = [p["factors"]["T"] for p in pair["points"]]
    assert Ts[0] == 2 and Ts[1] == 8 and all(p["cpu_s"] > 0 for p in pair["points"])
    designed = calibrate.design(spec, shapes)
    assert len(pair["points"]) >= len(designed) + 1                 # each design run, T0 probes beside
    assert {p["factors"]["K"] for p in pair["points"]} == {s["algorithm"]["K"] for s in designed}


def test_a_probe_of_a_stream_problem_asks_for_no_more_rounds_than_its_horizon(tmp_path, monkeypatch):
    # the dynamic Frechet means hold T steps of data: a run of more rounds fails (IndexError),
    # so the probe's runs stop at T, and its points record the rounds they completed
    spec, data = _spec_and_data(tmp_path, "frechet_h2_fixed_t5",
                                rflconfig.load(REPO / "config" / "config.yaml"), T=12)
    asked = _rounds_asked(monkeypatch)
    monkeypatch.setattr(cost_model, "TARGET_S", 10.0)        # a target that 12 rounds cannot reach
    out = calibrate.probe({"data_npz": str(data), "specs": [spec], "shapes": [calibrate.shapes_of([spec])]})
    assert max(asked) == 12 and 8 in asked
    assert {p["factors"]["T"] for p in out["pairs"][0]["points"]} <= set(range(1, 13))


# ---- the model file ------------------------------------------------------------------------------
@pytest.mark.parametrize("edit, says", [
    (lambda m: m.update(format="other"), "not a cost model"),
    (lambda m: m.update(version=99), "version 99"),
    (lambda m: m.pop("machine"), "'machine'"),
    (lambda m: m.update(startup_s=-1), "startup_s"),
    (lambda m: m["pairs"][0]["coefficients"].update(step_s=float("nan")), "pairs[0].coefficients.step_s"),
    (lambda m: m["pairs"][0]["coefficients"].update(per_hour=1.0), "per_hour"),
    (lambda m: m["datasets"][0].pop("load_next_s"), "datasets[0].load_next_s"),
    (lambda m: m["pairs"][0]["coefficients"].pop("agent_round_s"), "pairs[0].coefficients.agent_round_s"),
    (lambda m: m["pairs"][0].update(fit_error=-0.5), "pairs[0].fit_error"),
])
def test_a_bad_model_file_is_one_line_naming_the_file_and_the_key(tmp_path, edit, says):
    model = copy.deepcopy(_model())
    edit(model)
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    with pytest.raises(cost_model.CostModelError) as err:
        cost_model.read(path)
    assert str(path) in str(err.value) and says in str(err.value) and "\n" not in str(err.value)


def test_a_model_file_that_is_not_json_is_refused(tmp_path):
    path = tmp_path / "model.json"
    path.write_text("{not json")
    with pytest.raises(cost_model.CostModelError, match="not valid JSON"):
        cost_model.read(path)


def test_the_written_model_reads_back(tmp_path):
    model = _model()
    calibrate.write(model, tmp_path / "m.json")
    assert cost_model.read(tmp_path / "m.json") == model


def test_the_stored_model_is_valid_and_names_where_it_was_measured():
    model = cost_model.read(cost_model.MODEL_PATH)
    assert model["commit"] and model["machine"] and model["pairs"]


# ---- the check -----------------------------------------------------------------------------------
def test_check_rows_compare_estimate_and_measurement():
    estimates = {"a": {"cpu_s": 12.5, "basis": "measured"}, "b": {"cpu_s": 12.6, "basis": "measured"},
                 "c": {"cpu_s": 7.5, "basis": "scaled"}, "d": {"cpu_s": 1.0, "basis": "measured"}}
    measured = {"a": 10.0, "b": 10.0, "c": 10.0, "e": 3.0}      # d: not measured, e: not estimated
    rows = cost_model.check_rows(estimates, measured)
    assert [(r["experiment"], r["ratio"], r["within"]) for r in rows] == [
        ("a", pytest.approx(1.25), True), ("b", pytest.approx(1.26), False), ("c", pytest.approx(0.75), True)]
    text = cost_model.check_table(rows)
    assert "2 of 3 run jobs (67 %)" in text and "total estimate 32.6 s, measured 30.0 s" in text


def test_check_rows_tell_jobs_that_started_on_a_busier_machine():
    # start-ups 1, 1, 1.2 and 2 s: median 1.1; the 2-s job (1.82x) ran on a busier machine
    estimates = {e: {"cpu_s": 10.0, "basis": "measured"} for e in "abcd"}
    measured = {"a": 10.0, "b": 10.0, "c": 20.0, "d": 20.0}
    rows = cost_model.check_rows(estimates, measured, {"a": 1.0, "b": 1.0, "c": 1.2, "d": 2.0})
    assert [r["startup_x"] for r in rows] == pytest.approx([1 / 1.1, 1 / 1.1, 1.2 / 1.1, 2 / 1.1])
    text = cost_model.check_table(rows)
    assert "over 1.25x the median (a busier machine then): 0 of 1 within 25 %; the other jobs: 2 of 3" in text
    assert all(math.isnan(r["startup_x"]) for r in cost_model.check_rows(estimates, measured))
    assert "busier" not in cost_model.check_table(cost_model.check_rows(estimates, measured))


def _perf_csv(path, measured: dict[str, float]):
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        w.writeheader()
        for name, cpu in measured.items():
            w.writerow({"scope": "experiment", "name": name, "jobs": 1, "cpu_s": cpu, "startup_s": 0.5,
                        "startup_share": 0.1, "rounds_s": 1, "outside_rounds_share": 0.1, "wall_s": cpu,
                        "max_rss_mb": 100, "machine": "", "config": ""})
        w.writerow({"scope": "total", "name": "all jobs", "jobs": len(measured), "cpu_s": sum(measured.values()),
                    "startup_s": 1, "startup_share": 0.1, "rounds_s": 1, "outside_rounds_share": 0.1,
                    "wall_s": 1, "max_rss_mb": 100, "machine": "m", "config": "c"})


def _rfl(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "rfl", *args], capture_output=True, text=True, cwd=cwd)


def test_cost_check_prints_each_job_and_the_share_within_25_percent(tmp_path):
    specs = cost_model.experiment_specs(SMOKE)
    model = _model(datasets=[], pairs=[])                 # the rule of thumb for every run
    estimate = {e: cost_model.job_cpu_seconds(specs[e], model) for e in ("cpesph_fixed", "cfmspd_fixed")}
    _perf_csv(tmp_path / "perf.csv", {"cpesph_fixed": estimate["cpesph_fixed"] / 1.2,
                                      "cfmspd_fixed": estimate["cfmspd_fixed"] * 2, "not_in_config": 3.0})
    (tmp_path / "m.json").write_text(json.dumps(model))
    r = _rfl("cost-check", str(tmp_path / "perf.csv"), "--config", "config/smoke.yaml",
             "--model", str(tmp_path / "m.json"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    row = {ln.split()[0]: ln.split() for ln in lines[2:-1]}
    assert set(row) == {"cpesph_fixed", "cfmspd_fixed"}
    assert float(row["cpesph_fixed"][3]) == pytest.approx(1.2, abs=0.005) and row["cpesph_fixed"][4] == "yes"
    assert float(row["cfmspd_fixed"][3]) == pytest.approx(0.5, abs=0.005) and row["cfmspd_fixed"][4] == "no"
    assert lines[-1].startswith("within 25 %: 1 of 2 run jobs (50 %)")


def test_cost_check_with_a_bad_model_file_exits_2_naming_it(tmp_path):
    _perf_csv(tmp_path / "perf.csv", {"cpesph_fixed": 1.0})
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_model(version=0)))
    r = _rfl("cost-check", str(tmp_path / "perf.csv"), "--config", "config/smoke.yaml", "--model", str(bad))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and str(bad) in r.stderr and "version 0" in r.stderr
    assert "Traceback" not in r.stderr


def test_calibrate_measures_every_pair_of_the_experiments_it_is_given(tmp_path):
    # one short calibration of the smoke config's partbias_fixed (exp geometry, a weighted
    # objective): the written model reads back, and every run of the experiment is costed
    # from a pair measured at its own dataset and variant
    out = tmp_path / "model.json"
    r = _rfl("calibrate", "config/smoke.yaml", "--experiments", "partbias_fixed", "--out", str(out))
    assert r.returncode == 0, r.stderr
    model = cost_model.read(out)
    specs = cost_model.experiment_specs(SMOKE)["partbias_fixed"]
    assert {cost_model.pair_key(s) for s in specs} == {
        (p["dataset"], p["algorithm"], json.dumps(p["variant"], sort_keys=True)) for p in model["pairs"]}
    est = cost_model.job_estimate(specs, model)
    assert est["basis"] == "measured" and est["cpu_s"] > model["startup_s"] > 0


def test_added_measurements_replace_what_both_measure_and_keep_the_rest():
    old = _model()
    other = dict(_model()["pairs"][0], algorithm="rfedavg")
    old["pairs"].append(other)
    new = _model(commit="def456", startup_s=0.25)
    new["pairs"][0]["coefficients"] = dict(COEF, run_s=0.5)
    bigger = {"name": "big", "problem": "cpesph", "params": dict(CPESPH, S=40), "load_first_s": 1.0,
              "load_next_s": 0.5, "first_run_s": 0.0}
    new["datasets"].append(bigger)
    old["calibration_cpu_s"], new["calibration_cpu_s"] = 12.5, 3.25
    got = calibrate.merged(old, new)
    assert got["calibration_cpu_s"] == 15.75                        # the probes of both
    # start-up: 1 dataset measured at 0.5 s, 2 at 0.25 s
    assert got["commit"] == "abc123; def456" and got["startup_s"] == pytest.approx((0.5 + 2 * 0.25) / 3)
    assert [(p["algorithm"], p["coefficients"]["run_s"]) for p in got["pairs"]] == [("rfedavg", COEF["run_s"]),
                                                                                   ("rfedags", 0.5)]
    assert got["datasets"] == new["datasets"]

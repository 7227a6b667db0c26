"""The reweighted objective's reference (closed form against the generic solver and against
its definition), the simulated-time column on a hand-computed schedule, and the config keys
``weighted_objective`` / ``time`` (one-line errors naming the key)."""

import copy

import numpy as np
import pytest
import yaml

from rfl import config as rflconfig
from rfl import runner, simtime
from rfl.algorithms import sampling
from rfl.algorithms.rlbfgs import RLBFGS
from rfl.participation.biased import pi_tilde
from rfl.problems.base import Reweighted
from rfl.problems.cpesph import CPESph


def _problem(seed=0, S=4, N=10, n=6):
    rng = np.random.default_rng(seed)
    scale = np.linspace(0.5, 3.0, S)[:, None, None]
    Z = rng.standard_normal((S, N, n)) * scale + rng.standard_normal((S, 1, n)) * scale
    return CPESph(Z, retraction="normalize", transport="parallel")


def test_cpesph_reweighted_is_the_weighted_sum_of_the_local_costs():
    problem = _problem()
    w = np.array([0.1, 0.2, 0.3, 0.4])
    pw = problem.reweighted(w)
    x = problem.initial_point(np.random.default_rng(3))
    by_hand = sum(w[j] * -np.mean((problem.Z[j] @ x) ** 2) for j in range(4))
    assert pw.cost(x) == pytest.approx(by_hand, rel=1e-13)
    assert problem.cost(x) == pytest.approx(np.mean([-np.mean((problem.Z[j] @ x) ** 2) for j in range(4)]),
                                            rel=1e-13)          # F itself is untouched
    # the generic Reweighted gives the same cost and gradient
    gen = Reweighted(problem, w)
    assert gen.cost(x) == pytest.approx(pw.cost(x), rel=1e-13)
    np.testing.assert_allclose(gen.egrad(x), pw.egrad(x), rtol=1e-12)


def test_cpesph_reweighted_without_the_local_covariances():
    """With 2 N < n CPESph keeps no C_j (MNIST's size): C~ from the samples themselves."""
    problem = _problem(S=3, N=2, n=6)
    assert problem._local_cov is None
    w = np.array([0.5, 0.2, 0.3])
    by_hand = sum(w[j] * problem.Z[j].T @ problem.Z[j] / 2 for j in range(3))
    np.testing.assert_allclose(problem.reweighted(w).C, by_hand, rtol=1e-13, atol=1e-15)
    x = problem.initial_point(np.random.default_rng(3))
    gen = Reweighted(problem, w)
    assert gen.cost(x) == pytest.approx(problem.reweighted(w).cost(x), rel=1e-13)


def test_closed_form_reweighted_optimum_matches_a_solver_on_the_generic_objective():
    problem = _problem(1)
    w = pi_tilde([0.9, 0.1, 0.5, 0.3])
    w = w / w.sum()
    x_cf = problem.reweighted(w).closed_form_optimum()
    gen = Reweighted(problem, w)
    assert gen.closed_form_optimum() is None
    best = min((RLBFGS(gen, tolerance=1e-11, max_iterations=500).solve(gen.initial_point(np.random.default_rng(s)))[0]
                for s in range(3)), key=gen.cost)
    assert gen.cost(best) == pytest.approx(gen.cost(x_cf), abs=1e-11)
    assert min(np.linalg.norm(best - x_cf), np.linalg.norm(best + x_cf)) < 1e-5
    # and it is not F's optimum: heterogeneous agents, unequal weights
    assert problem.cost(x_cf) - problem.cost(problem.closed_form_optimum()) > 1e-4


def test_weighted_reference_gaps():
    problem = _problem(2)
    ds = {"name": "t", "instance": "fixed", "seed": 0, "reference": {"starts": 1, "tolerance": 1e-10,
                                                                     "max_iterations": 100}}
    p = [0.9, 0.2, 0.6, 0.4]
    ref = runner.weighted_reference(ds, problem, {"scheme": "biased", "probabilities": p})
    w = pi_tilde(p) / pi_tilde(p).sum()
    np.testing.assert_allclose(ref["weights"], w, rtol=1e-13)
    C = np.einsum("s,snm->nm", w, problem._local_cov)
    assert ref["F_star"] == pytest.approx(-np.linalg.eigvalsh(C)[-1], rel=1e-12)
    lam = np.linalg.eigvalsh(problem.C)[-1]
    assert ref["gap_F"] == pytest.approx(problem.cost(ref["x_star"]) + lam, rel=1e-12)
    assert ref["gap_F"] > 0 and ref["gap_weighted"] > 0
    # an unbiased scheme's objective is F: both gaps 0
    ref_u = runner.weighted_reference(ds, problem, {"scheme": "bernoulli", "probabilities": p})
    assert abs(ref_u["gap_F"]) < 1e-12 and abs(ref_u["gap_weighted"]) < 1e-12


# ---- simulated time -------------------------------------------------------------------
class ScriptedRng:
    def __init__(self, uniforms):
        self.uniforms = list(uniforms)

    def random(self, size):
        return np.asarray(self.uniforms.pop(0), dtype=float)

    def integers(self, n, high=None, dtype=None):
        return np.int64(12345) if high is not None else 0


def test_clock_on_a_hand_computed_schedule():
    spec = {"cost": {"default": 2.0, "stragglers": {"agents": [0, 2], "factor": 10}}, "round": "max"}
    np.testing.assert_allclose(simtime.agent_costs(spec, 4), [20, 2, 20, 2])
    clock = simtime.Clock(spec, 4)
    assert [clock.tick(a) for a in ([1, 3], [0, 1], [3], [1, 2, 3])] == [2, 22, 24, 44]
    clock = simtime.Clock({**spec, "round": "sum"}, 4)
    assert [clock.tick(a) for a in ([1, 3], [0, 1], [3], [1, 2, 3])] == [4, 26, 28, 52]
    assert simtime.agent_costs({"round": "max"}, 3).tolist() == [1, 1, 1]


def test_time_column_of_a_run(monkeypatch):
    """A Bernoulli run with scripted joins: rounds {1, 2}, {0, 3}, {2}; stragglers 0 at 10x,
    round = sum: time 0, 2, 13, 14."""
    problem = _problem(4)
    p = [0.5] * 4
    uniforms = [[0.9, 0.1, 0.1, 0.9], [0.1, 0.9, 0.9, 0.1], [0.9, 0.9, 0.1, 0.9]]
    monkeypatch.setattr(sampling, "stream", lambda *keys: ScriptedRng(uniforms) if "participation" in keys
                        else np.random.default_rng(0))
    spec = {"experiment": "e", "run_id": "r", "seed": 0, "dataset": {"name": "t"},
            "algorithm": {"name": "rfedags", "K": 1, "batch_size": 10,
                          "participation": {"scheme": "bernoulli", "probabilities": p}},
            "step": {"rule": "fixed", "alpha": 0.01}, "rounds": 3,
            "time": {"cost": {"stragglers": {"agents": [0], "factor": 10}}, "round": "sum"}}
    table = runner.execute(spec, problem, problem.closed_form_optimum(), problem.cost(problem.closed_form_optimum()))
    assert table["time"].tolist() == [0, 2, 13, 14]
    assert "excess_risk_weighted" not in table
    spec["time"]["round"] = "max"
    table = runner.execute(spec, problem, problem.closed_form_optimum(), 0.0)
    assert table["time"].tolist() == [0, 1, 11, 12]


# ---- config keys -------------------------------------------------------------------------
def _config():
    with open("config/smoke.yaml") as fh:
        return yaml.safe_load(fh)


def _errors(raw):
    with pytest.raises(rflconfig.ConfigError) as e:
        rflconfig.validate(raw)
    return str(e.value)


@pytest.mark.parametrize("key,value,text", [
    ("time", {"round": "min"}, "time.round"),
    ("time", {"round": "max", "cost": {"stragglers": {"agents": [0, 9], "factor": 10}}},
     "time.cost.stragglers.agents: agent 9 does not exist"),
    ("time", {"round": "max", "cost": {"default": -1}}, "time.cost.default"),
    ("weighted_objective", {"scheme": "nope"}, "weighted_objective.scheme"),
    ("weighted_objective", {"scheme": "biased", "probabilities": [0.5, 0.5]}, "weighted_objective.probabilities"),
])
def test_bad_keys_are_refused_naming_the_key(key, value, text):
    raw = _config()
    name = next(e for e, x in raw["experiments"].items() if x["dataset"] == "cpesph_het")
    raw["experiments"][name][key] = value
    msg = _errors(raw)
    assert any(text in line and line.strip().startswith("config key") for line in msg.splitlines())


def test_declared_keys_reach_the_run_specs_and_only_there():
    raw = _config()
    name = next(e for e, x in raw["experiments"].items() if x["dataset"] == "cpesph_het")
    before = {(r["experiment"], r["run_id"]): r for r in rflconfig.expand_runs(rflconfig.validate(copy.deepcopy(raw)))}
    raw["experiments"][name]["time"] = {"round": "sum"}
    raw["experiments"][name]["weighted_objective"] = {"scheme": "biased", "rho": 0.3}
    after = {(r["experiment"], r["run_id"]): r for r in rflconfig.expand_runs(rflconfig.validate(raw))}
    assert before.keys() == after.keys()
    for k, spec in after.items():
        if k[0] == name:
            assert spec["time"] == {"round": "sum"}
            assert spec["weighted_objective"] == {"scheme": "biased", "rho": 0.3, "probabilities": None}
        else:
            assert spec == before[k]

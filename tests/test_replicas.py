"""Replicas (``rfl.algorithms.replicas``) against a plain loop oracle: replica r of a vectorised
run is the existing, non-vectorised strategy run on its own draws Draws(seed, experiment,
"replica", r); replicas draw different batches; methods and steps share them; the runner
records the replicas' means and each replica's window mean; the config refuses what replicas
cannot do."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from rfl import config as rflconfig
from rfl import runner
from rfl.algorithms import replicas
from rfl.algorithms.fedavg import FedAvg
from rfl.algorithms.fedrr import FedRR
from rfl.algorithms.sampling import AgentSampler, Draws
from rfl.algorithms.scaffold import Scaffold
from rfl.algorithms.stepsize import Fixed
from rfl.problems.logistic import FederatedLogistic

R, ROUNDS = 5, 12


def problem(n=30):
    params = {"source": "synthetic", "n_agents": 3, "dim": 2, "n": n}
    return FederatedLogistic.from_arrays(FederatedLogistic.generate(np.random.default_rng(4), **params))


def plain(cls, p, draws, x0, alpha=0.3, **options):
    """The oracle: the existing strategy's own ``iterate`` on one replica's draws."""
    alg = cls(p, Fixed(alpha), 3, 4, None, **options)
    return np.array([x.copy() for _, x, _ in alg.iterate(x0, ROUNDS, draws)])


def vectorised(cls, p, draws, x0, alpha=0.3, **options):
    alg = cls(replicas.ReplicatedProblem(p, R), Fixed(alpha), 3, 4, None, **options)
    X0 = np.repeat(x0[None], R, axis=0)
    return np.array([X.copy() for _, X, _ in replicas.iterate(alg, X0, ROUNDS, draws)])  # (T, R, d)


@pytest.mark.parametrize("cls,options", [(FedAvg, {}), (Scaffold, {}), (Scaffold, {"server_step": 0.7}),
                                         (FedRR, {"burn_in": 4}), (FedAvg, {"average_after": 5})])
def test_each_replica_is_the_plain_run_on_its_own_draws(cls, options):
    p = problem()
    x0 = np.array([0.5, -1.0])
    draws = replicas.replica_draws(Draws(3, "exp"), R)
    got = vectorised(cls, p, draws, x0, **options)
    for r in range(R):
        want = plain(cls, p, draws[r], x0, **options)
        # the same operations on the same numbers; only the BLAS kernel of the weighted sum over
        # agents may differ between an (s, d) and an (s, R d) product: rounding, not a draw
        np.testing.assert_allclose(got[:, r], want, rtol=1e-13, atol=1e-15)


def test_replica_draws_are_the_keyed_streams_and_differ_between_replicas():
    draws = replicas.replica_draws(Draws(3, "exp"), 3)
    assert [d.names for d in draws] == [("exp", "replica", str(r)) for r in range(3)]
    sizes = np.full(3, 30)
    rs = replicas.ReplicaSampler(draws, sizes, 4)
    rs.participants()
    agents = np.arange(3)
    got = np.asarray(rs.batches(agents, 2, 1)).reshape(3, 3, 4)          # (agent, replica, B)
    for r, d in enumerate(draws):
        one = AgentSampler(d, sizes, 4)
        one.participants()
        np.testing.assert_array_equal(got[:, r], np.asarray(one.batches(agents, 2, 1)))
    # independent replicas: at least two replicas differ at every agent (3 subsets of 4 among 30)
    for j in range(3):
        assert len({tuple(got[j, r]) for r in range(3)}) > 1


def test_methods_and_steps_share_a_replicas_batches():
    """FedAvg at two steps and Scaffold, on the same replica draws, ask for the same batches."""
    p = problem()
    seen = []
    batches = replicas.ReplicaSampler.batches

    def spy(self, agents, t=None, k=None):
        out = batches(self, agents, t, k)
        seen[-1][(t, k)] = np.asarray(out).copy()
        return out

    x0 = np.array([0.5, -1.0])
    mp = pytest.MonkeyPatch()
    mp.setattr(replicas.ReplicaSampler, "batches", spy)
    try:
        for cls, alpha in ((FedAvg, 0.3), (FedAvg, 0.1), (Scaffold, 0.3)):
            seen.append({})
            vectorised(cls, p, replicas.replica_draws(Draws(3, "exp"), R), x0, alpha=alpha)
    finally:
        mp.undo()
    assert seen[0].keys() == seen[1].keys() == seen[2].keys() and len(seen[0]) == ROUNDS * 3
    for key in seen[0]:
        np.testing.assert_array_equal(seen[0][key], seen[1][key])
        np.testing.assert_array_equal(seen[0][key], seen[2][key])


def test_metrics_are_the_problems_own_per_replica():
    p = problem()
    rng = np.random.default_rng(0)
    X = p.theta_star + rng.standard_normal((4, 2))
    F = p.cost(p.theta_star)
    got = replicas.metrics(p, X, p.theta_star, F)
    for r in range(4):
        assert got["cost"][r] == pytest.approx(p.cost(X[r]), rel=1e-13)
        assert got["grad_norm"][r] == pytest.approx(p.grad_norm(X[r]), rel=1e-12)
        assert got["dist_to_opt"][r] == pytest.approx(p.distance_to_optimum(X[r], p.theta_star), rel=1e-15)
        for m, v in p.extra_metrics(X[r]).items():
            assert got[m][r] == v
    few = replicas.metrics(p, X, p.theta_star, F, costly=2)          # the costly ones: replicas 0, 1
    np.testing.assert_array_equal(few["cost"], got["cost"][:2])
    np.testing.assert_array_equal(few["dist_to_opt"], got["dist_to_opt"])


def spec(R_=R, rounds=ROUNDS, **extra):
    return {"experiment": "exp", "run_id": "fedavg_K3_seed3", "seed": 3, "rounds": rounds,
            "dataset": {"name": "d", "problem": "logistic"}, "geometry": {},
            "algorithm": {"name": "fedavg", "K": 3, "batch_size": 4, "participation": None},
            "step": {"rule": "fixed", "alpha": 0.3}, "replicas": R_, **extra}


def test_the_runner_records_the_replicas_means_and_their_window_sample():
    p = problem()
    x_star, F = p.theta_star, p.cost(p.theta_star)
    table = runner.execute(spec(), p, x_star, F)
    x0 = p.initial_point(runner.stream(3, "init", "d"))
    draws = replicas.replica_draws(Draws(3, "exp"), R)
    runs = np.array([np.vstack([x0, plain(FedAvg, p, d, x0)]) for d in draws])     # (R, T+1, d)
    err = runs - x_star
    np.testing.assert_allclose(table["err_1"], err[:, :, 0].mean(axis=0), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(table["dist_to_opt"], np.linalg.norm(err, axis=2).mean(axis=0), rtol=1e-12)
    rep = table.attrs["replicas"]
    start = replicas.window_start(ROUNDS)
    assert start == ROUNDS + 1 - int(np.ceil(0.5 * (ROUNDS + 1))) and rep["window_rounds"] == ROUNDS + 1 - start
    want = err[:, start:, :].mean(axis=1)                                          # (R, d)
    np.testing.assert_allclose(np.asarray(rep["err_mean"])[:, :2], want, rtol=1e-12, atol=1e-15)
    assert table["floats"].iloc[1] == 2 * 3 * 2                                    # one replica's


@pytest.mark.parametrize("change,needle", [
    (lambda e: e["methods"].append({"algorithm": "rfedags", "K": [2]}), "allow fedavg, fedrr, scaffold"),
    (lambda e: e["methods"][0].update(participation=1), "every agent"),
    (lambda e: e["methods"].append({"algorithm": "fedrr", "K": [2], "shared_stream": False}), "shared stream"),
    (lambda e: e.update(replicas=1), "replicas"),
    # a decentralised strategy (its own per-agent stacks; no replica axis)
    (lambda e: e["methods"].append({"algorithm": "drsgd", "K": [1], "graph": "ring"}), "'drsgd'; replicas allow"),
])
def test_the_config_refuses_what_replicas_cannot_do(change, needle):
    exp = {"dataset": "lg", "rounds": 5, "batch_size": 1, "seeds": [0], "replicas": 4,
           "step": {"rule": "fixed", "alpha": 0.1}, "methods": [{"algorithm": "fedavg", "K": [2]}]}
    cfg = {"datasets": {"lg": {"problem": "logistic", "seed": 1,
                               "params": {"source": "synthetic", "n_agents": 2, "dim": 1, "n": 20}}},
           "experiments": {"e": exp}, "figures": {}}
    rflconfig.validate(copy.deepcopy(cfg))                                         # accepted as is
    change(exp)
    with pytest.raises(rflconfig.ConfigError, match="replicas") as err:
        rflconfig.validate(cfg)
    assert needle in str(err.value)


# ---- the replicas as the bias rules' sample (rfl.claims.bias) ---------------------------------
def replica_table(means, rounds=9, column=None, start=None):
    """A run table with replicas whose window means of err_1 are ``means`` (err_2..4: 0) and
    whose replicas' mean column is ``column`` (default: constant at mean(means))."""
    import pandas as pd
    from rfl.problems._error_coordinates import COORDINATES
    col = np.full(rounds + 1, np.mean(means)) if column is None else np.asarray(column, float)
    t = pd.DataFrame({"round": np.arange(rounds + 1), "dist_to_opt": np.abs(col), "status": "ok",
                      **{c: (col if c == "err_1" else np.zeros(rounds + 1)) for c in COORDINATES}})
    err = np.zeros((len(means), len(COORDINATES)))
    err[:, 0] = means
    t.attrs["replicas"] = {"count": len(means), "columns": list(COORDINATES), "window_rounds": 5,
                           "window_start": replicas.window_start(rounds) if start is None else start,
                           "err_mean": err.tolist()}
    return t


def test_the_bias_estimate_reads_the_replicas_standard_error_not_the_time_series():
    """Replicas at 1 and 3 (seed 1) and 2, 2 (seed 2): mean 2, se = std([1, 3, 2, 2]) / 2."""
    from rfl.claims.bias import estimate
    b = estimate([replica_table([1.0, 3.0]), replica_table([2.0, 2.0])], 0.5)
    assert b.source == "replicas" and b.replicas == 4 and b.seeds == 2
    assert b.value == pytest.approx(2.0)
    assert b.uncertainty == pytest.approx(np.std([1, 3, 2, 2], ddof=1) / 2)


def test_the_replicas_estimate_keeps_the_drift_and_the_window():
    from rfl.claims.bias import estimate
    col = np.r_[np.zeros(5), np.full(3, 1.0), np.full(2, 3.0)]          # window rows 5..9: halves 1 and 2.2
    b = estimate([replica_table([2.0, 2.0], column=col)], 0.5)
    assert b.uncertainty == pytest.approx(abs(np.mean([1.0, 3, 3]) - np.mean([1.0, 1])) / 2)
    # another window than the replicas': their sample does not apply, the time series does
    assert estimate([replica_table([2.0, 2.0], start=3)], 0.5).source == "coordinates"
    assert estimate([replica_table([2.0, 2.0])], 0.3).source == "coordinates"


def test_fedavg_bias_expansion_measures_on_the_replicas():
    from rfl.claims.rules.fedavg_bias_expansion import measure
    m, se, n, _ = measure([replica_table([1.0, 3.0, 2.0, 2.0])], 0.5)
    assert m[0] == pytest.approx(2.0) and n == 4
    assert se == pytest.approx(np.std([1, 3, 2, 2], ddof=1) / 2)


# ---- federated LSA (a linear field): FedLSA = fedavg, and SCAFFLSA ----------------------------
def lsa_problem():
    from rfl.data.garnet import generate
    from rfl.problems.lsa import FederatedLSA
    arrays = generate(np.random.default_rng(1), 3, "heterogeneous", n_states=6, n_actions=2,
                      branching=2, n_features=3, gamma=0.9, perturbation=0.05, pool=40)
    return FederatedLSA.from_arrays(arrays)


@pytest.mark.parametrize("name", ["fedavg", "scafflsa"])
def test_each_lsa_replica_is_the_plain_run_on_its_own_draws(name):
    from rfl.algorithms.scafflsa import SCAFFLSA
    cls = {"fedavg": FedAvg, "scafflsa": SCAFFLSA}[name]
    p = lsa_problem()
    x0 = np.zeros(p.theta_star.shape)
    draws = replicas.replica_draws(Draws(3, "exp"), R)
    got = vectorised(cls, p, draws, x0, alpha=0.5)
    for r in range(R):
        np.testing.assert_allclose(got[:, r], plain(cls, p, draws[r], x0, alpha=0.5), rtol=1e-13, atol=1e-15)


def test_lsa_metrics_are_its_own_cost_and_mean_field_not_the_agents_mean_cost():
    """On a linear field the cost is ||x - theta*||^2 (F* = 0) and grad_norm ||A_bar x - b_bar||;
    the agents' mean of ||x - theta*_c||^2 would differ by the spread of the theta*_c."""
    p = lsa_problem()
    X = p.theta_star + np.random.default_rng(0).standard_normal((4, p.theta_star.shape[0]))
    got = replicas.metrics(p, X, p.theta_star, 0.0)
    for r in range(4):
        assert got["cost"][r] == pytest.approx(float(((X[r] - p.theta_star) ** 2).sum()), rel=1e-13)
        assert got["excess_risk"][r] == got["cost"][r]
        assert got["grad_norm"][r] == pytest.approx(float(np.linalg.norm(p.A_bar @ X[r] - p.b_bar)), rel=1e-12)


def test_the_runner_records_each_replicas_window_mean_of_the_squared_error():
    p = lsa_problem()
    s = spec(dataset={"name": "d", "problem": "lsa"}, step={"rule": "fixed", "alpha": 0.5})
    table = runner.execute(s, p, p.theta_star, 0.0)
    x0 = p.initial_point(runner.stream(3, "init", "d"))
    draws = replicas.replica_draws(Draws(3, "exp"), R)
    runs = np.array([np.vstack([x0, plain(FedAvg, p, d, x0, alpha=0.5)]) for d in draws])   # (R, T+1, d)
    sq = ((runs - p.theta_star) ** 2).sum(axis=2)                                        # (R, T+1)
    start = replicas.window_start(ROUNDS)
    np.testing.assert_allclose(table.attrs["replicas"]["sq_dist_mean"], sq[:, start:].mean(axis=1), rtol=1e-12)
    np.testing.assert_allclose(table["excess_risk"], sq.mean(axis=0), rtol=1e-12)

"""The decentralised strategies (DRSGD, DRGTA: Chen, Garcia, Hong, Shahrampour, ICML 2021) and
their framework: the strategy contract with their options, one round by hand, the tracking
identity, the consensus primitives, communication counts, the runner's columns, and refusals
(bad K, participation, graph, matrix file, a manifold without the consensus capability)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from rfl.algorithms import Fixed
from rfl.algorithms import consensus as cons
from rfl.algorithms.sampling import Draws
from rfl.manifolds import Grassmann, Sphere, Stiefel
from rfl.registry import ALGORITHMS, MANIFOLDS
from rfl.testing.strategy import StrategyContract

REPO = Path(__file__).resolve().parents[1]


class TestDecentralisedContract(StrategyContract):
    """The contract with the defaults (ring, Metropolis-Hastings, t = 1), named: a missing
    reference loop or problem fails instead of skipping."""

    strategies = ["drsgd", "drgta"]


class TestDecentralisedContractOptions(StrategyContract):
    """Another graph and weight rule, t = 3, the authors' 1/sqrt(k) step rule and alpha != 1."""

    strategies = ["drsgd", "drgta"]
    options = {"graph": {"name": "k_ring", "k": 2}, "weights": "lazy_metropolis", "consensus_steps": 3,
               "consensus_step": 0.7, "beta": 0.3, "beta_rule": "1/sqrtk"}


def pca(S=6, N=12, d=5, r=2, seed=0):
    from rfl.problems.pca_eigengap import PCAEigengap
    return PCAEigengap.from_arrays(PCAEigengap.generate(np.random.default_rng(seed), d=d, r=r, S=S,
                                                        N=N, eigengap=0.7), {})


def polar(a):
    u, _, vt = np.linalg.svd(a, full_matrices=False)
    return u @ vt


def tangent(x, g):
    """P_x(g) on the Stiefel manifold: g - x sym(x^T g)."""
    s = x.T @ g
    return g - x @ (s + s.T) / 2


def ring_mh(S):
    """Metropolis-Hastings on a ring: 1/3 to each neighbour and to oneself."""
    W = np.eye(S) / 3
    for i in range(S):
        W[i, (i + 1) % S] = W[i, (i - 1) % S] = 1 / 3
    return W


def test_one_drsgd_round_by_hand_per_agent():
    problem = pca()
    S, B = problem.n_agents, problem.local_sizes[0]           # full batches: no draw involved
    x0 = problem.initial_point(np.random.default_rng(1))
    alg = ALGORITHMS["drsgd"](problem, Fixed(0.2), 1, int(B), None, consensus_step=0.9, spread=0.5)
    sampler = alg.sampler(np.random.default_rng(4))
    alg.reset(x0)
    X = alg.X.copy()
    assert np.abs(X - x0).max() > 1e-2                         # spread: the agents start apart
    alg.round(x0, 0, sampler)
    W = ring_mh(S)
    for i in range(S):
        mixed = sum(W[i, j] * X[j] for j in range(S))
        A = problem.Z[i].T @ problem.Z[i] / B                   # f_i = -1/2 tr(X^T A_i X)
        want = polar(X[i] + 0.9 * tangent(X[i], mixed - X[i]) - 0.2 * tangent(X[i], -A @ X[i]))
        np.testing.assert_allclose(alg.X[i], want, atol=1e-12)


def test_drgta_tracks_the_average_gradient():
    # with a doubly stochastic W, sum_i y_i = sum_i g_i(x_i) after every round (tracking)
    problem = pca()
    x0 = problem.initial_point(np.random.default_rng(2))
    alg = ALGORITHMS["drgta"](problem, Fixed(0.1), 1, 4, None, consensus_steps=2)
    sampler = alg.sampler(np.random.default_rng(5))
    alg.reset(x0)
    for t in range(6):
        alg.round(x0, t, sampler)
        np.testing.assert_allclose(alg.Y.sum(axis=0), alg.G.sum(axis=0), atol=1e-12)
    assert np.abs(alg.Y - alg.G).max() > 1e-6                 # y_i itself is not agent i's gradient


def test_drgta_converges_exactly_where_drsgd_stalls():
    problem = pca(S=6, N=20, d=6, r=2)
    x0 = problem.initial_point(np.random.default_rng(3))
    F = problem.cost(problem.closed_form_optimum())
    last = {}
    for name in ("drsgd", "drgta"):
        alg = ALGORITHMS[name](problem, Fixed(0.1), 1, 20, None)
        for _, x, c in alg.iterate(x0, 1500, np.random.default_rng(0)):
            pass
        last[name] = (problem.cost(x) - F, c.metrics["consensus_error"])
    assert last["drgta"][0] < 1e-12 and last["drgta"][1] < 1e-8
    assert last["drsgd"][0] > 1e-9 and last["drsgd"][1] > 1e-5     # a floor: local gradients disagree


@pytest.mark.parametrize("name, stacks", [("drsgd", 1), ("drgta", 2)])
def test_floats_are_t_times_directed_edges_times_point_size(name, stacks):
    problem = pca(S=8)
    x0 = problem.initial_point(np.random.default_rng(0))
    alg = ALGORITHMS[name](problem, Fixed(0.1), 1, 3, None, graph="hypercube", consensus_steps=4)
    counts = [(c.floats, c.grad_evals) for _, _, c in alg.iterate(x0, 3, np.random.default_rng(0))]
    per_round = stacks * 4 * (8 * 3) * (5 * 2)       # t x directed edges (3-cube: 8 x 3) x d r
    assert [f for f, _ in counts] == [per_round * (t + 1) for t in range(3)]
    assert [g for _, g in counts] == [8 * 3 * (t + 1) for t in range(3)]


def test_consensus_alone_contracts_at_sigma2_to_the_power_t():
    problem = pca(S=8)
    x0 = problem.initial_point(np.random.default_rng(0))
    alg = ALGORITHMS["drsgd"](problem, Fixed(0.1), 1, 3, None, beta=0, spread=1.0, consensus_steps=2)
    errors = [alg.start_metrics(x0, np.random.default_rng(0))["consensus_error"]]
    for _, _, c in alg.iterate(x0, 40, np.random.default_rng(0)):
        errors.append(c.metrics["consensus_error"])
        assert c.grad_evals == 0
    sigma2 = 1 / 3 + 2 / 3 * np.cos(2 * np.pi / 8)            # ring of 8, Metropolis-Hastings
    assert c.metrics["sigma2"] == pytest.approx(sigma2) and c.metrics["sigma2_t"] == pytest.approx(sigma2 ** 2)
    assert errors[0] > 0.3
    assert (errors[30] / errors[20]) ** 0.1 == pytest.approx(sigma2 ** 2, rel=1e-3)


def test_the_graph_is_one_draw_per_seed_and_experiment_whatever_the_method():
    problem = pca(S=8)
    g = {"name": "erdos_renyi", "p": 0.4}
    Ws = {}
    for name, seed in (("drsgd", 0), ("drgta", 0), ("drsgd", 1)):
        alg = ALGORITHMS[name](problem, Fixed(0.1), 1, 3, None, graph=g)
        Ws[name, seed] = alg.make_mixing(Draws(seed, "exp")).W
    np.testing.assert_array_equal(Ws["drsgd", 0], Ws["drgta", 0])
    assert not np.array_equal(Ws["drsgd", 0], Ws["drsgd", 1])


# ---- the consensus primitives -----------------------------------------------------------------
def test_ambient_direction_is_tangent_and_the_mixing_difference_projected():
    m = Stiefel(6, 2)
    rng = np.random.default_rng(0)
    X = m.random_point(rng, 5)
    W = ring_mh(5)
    D = cons.ambient_direction(m, X, W)
    for i in range(5):
        np.testing.assert_allclose(D[i], tangent(X[i], sum(W[i, j] * X[j] for j in range(5)) - X[i]), atol=1e-14)
        np.testing.assert_allclose(X[i].T @ D[i] + D[i].T @ X[i], 0, atol=1e-14)


def test_frechet_direction_is_the_weighted_sum_of_logs():
    m = Sphere(4)
    X = m.random_point(np.random.default_rng(1), 5)
    W = ring_mh(5)
    D = cons.frechet_direction(m, X, W)
    for i in range(5):
        want = sum(W[i, j] * m.log(X[i][None], X[j][None])[0] for j in range(5) if j != i)
        np.testing.assert_allclose(D[i], want, atol=1e-14)


def test_karcher_mean_is_a_zero_of_the_mean_log_and_projected_mean_the_polar_factor():
    m = Sphere(3)
    rng = np.random.default_rng(2)
    x = m.random_point(rng, 1)
    X = m.retraction(np.repeat(x, 6, axis=0), 0.4 * m.random_tangent(rng, np.repeat(x, 6, axis=0)))
    y = cons.karcher_mean(m, X)
    np.testing.assert_allclose(m.log(np.repeat(y[None], 6, axis=0), X).mean(axis=0), 0, atol=1e-11)
    st = Stiefel(5, 2)
    Y = st.random_point(rng, 4)
    np.testing.assert_allclose(cons.projected_mean(st, Y), polar(Y.mean(axis=0)), atol=1e-13)
    same = np.repeat(Y[:1], 4, axis=0)
    assert cons.consensus_error(st, same, cons.projected_mean(st, same), "ambient_consensus") < 1e-14


def test_capabilities_of_the_manifolds():
    assert Stiefel.offers("ambient_consensus") and Sphere.offers("ambient_consensus")
    # Gr(n, p) mixes orthonormal representatives and projects them by the polar factor (its
    # nearest_point), as the diffusion code's DRSGD_pca baseline does; SPD has no such projection
    assert Grassmann.offers("ambient_consensus") and not MANIFOLDS["spd"].offers("ambient_consensus")
    assert Grassmann.offers("frechet_consensus") and MANIFOLDS["lorentz"].offers("frechet_consensus")
    assert not Stiefel.offers("frechet_consensus")


# ---- refusals ----------------------------------------------------------------------------------
def test_strategies_refuse_local_steps_and_partial_participation():
    problem = pca()
    with pytest.raises(ValueError, match="^K: 2"):
        ALGORITHMS["drsgd"](problem, Fixed(0.1), 2, 3, None)
    with pytest.raises(ValueError, match="^participation: 3"):
        ALGORITHMS["drgta"](problem, Fixed(0.1), 1, 3, 3)
    with pytest.raises(ValueError, match="cannot run on spd"):
        from rfl.data.cfmspd import generate
        from rfl.problems.cfmspd import CFMSPD
        ALGORITHMS["drsgd"](CFMSPD.from_arrays(generate(np.random.default_rng(0), d=2, D_W=1.0, S=3, N=5)),
                            Fixed(0.1), 1, 2, None)


def _config(tmp_path, method):
    cfg = {"output_dir": "out/", "datasets": {
               "dpca": {"problem": "pca_eigengap", "seed": 1, "params": {"d": 6, "r": 2, "S": 6, "N": 10, "eigengap": 0.8}},
               "spd": {"problem": "cfmspd", "seed": 1, "params": {"d": 2, "D_W": 1.0, "S": 6, "N": 10}}},
           "experiments": {"e": {"dataset": "dpca", "rounds": 5, "batch_size": 5, "seeds": [0],
                                 "step": {"rule": "fixed", "alpha": 0.1}, "methods": [method]}},
           "figures": {}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.mark.parametrize("method, key, text", [
    ({"algorithm": "drsgd", "K": [1], "graph": "torus"}, "methods.0.graph", "not a known graph"),
    ({"algorithm": "drsgd", "K": [1], "graph": {"name": "k_ring", "k": -1}}, "methods.0.graph.k", "-1"),
    ({"algorithm": "drgta", "K": [1], "weights": "fancy"}, "methods.0.weights", "not a known weight rule"),
    ({"algorithm": "drgta", "K": [2]}, "methods.0.K", "allowed: [1]"),
    ({"algorithm": "drgta", "K": [1], "participation": 3}, "methods.0.participation", "allowed: null"),
    ({"algorithm": "drsgd", "K": [1], "graph": ["ring", "hypercube"]}, "methods.0.graph.1", "power of 2"),
])
def test_a_bad_method_is_refused_in_one_line_naming_the_key(tmp_path, method, key, text):
    line = next(ln for ln in config_errors(_config(tmp_path, method)) if f"experiments.e.{key}:" in ln)
    assert text in line


def config_errors(path) -> list[str]:
    """The lines of the ConfigError ``rfl validate`` prints for the config at ``path``."""
    from rfl import config as C
    with pytest.raises(C.ConfigError) as err:
        C.validate(C.load(path))
    return str(err.value).splitlines()


def test_rfl_validate_exits_2_with_the_key_and_no_traceback(tmp_path):
    path = _config(tmp_path, {"algorithm": "drsgd", "K": [1], "graph": "torus"})
    r = subprocess.run([sys.executable, "-m", "rfl", "validate", str(path)], capture_output=True, text=True,
                       cwd=REPO)
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.startswith("rfl: error: ")
    assert "config key experiments.e.methods.0.graph: 'torus' is not a known graph" in r.stderr


def test_a_non_stochastic_matrix_file_is_refused_naming_the_key(tmp_path):
    bad = tmp_path / "w.csv"
    np.savetxt(bad, np.full((6, 6), 0.2), delimiter=",")                # rows sum to 1.2
    method = {"algorithm": "drsgd", "K": [1], "graph": {"name": "file", "path": str(bad)}, "weights": "given"}
    line = next(ln for ln in config_errors(_config(tmp_path, method)) if "experiments.e.methods.0.graph.path:" in ln)
    assert "not doubly-stochastic" in line and "row 0" in line


def test_a_strategy_on_a_manifold_without_its_capability_is_refused(tmp_path):
    path = _config(tmp_path, {"algorithm": "drsgd", "K": [1]})
    cfg = yaml.safe_load(path.read_text())
    cfg["experiments"]["e"]["dataset"] = "spd"
    path.write_text(yaml.safe_dump(cfg))
    line = next(ln for ln in config_errors(path) if "experiments.e.methods.0.algorithm:" in ln)
    assert "ambient consensus" in line and "spd" in line


# ---- the runner's columns -----------------------------------------------------------------------
def test_runner_records_the_network_mean_and_the_decentralised_columns(tmp_path):
    from rfl import config as C
    from rfl import io, runner
    cfg = C.validate(yaml.safe_load(_config(tmp_path, {"algorithm": "drgta", "K": [1], "spread": 0.3}).read_text()))
    spec = C.expand_runs(cfg)[0]
    data, ref = tmp_path / "d.npz", tmp_path / "r.npz"
    runner.generate_data(spec["dataset"], data)
    runner.compute_reference(spec["dataset"], data, ref)
    table = runner.run(spec, data, ref, tmp_path / "t.csv", tmp_path / "t.meta.json")
    assert {"consensus_error", "sigma2", "sigma2_t"} <= set(table.columns)
    assert table["consensus_error"].iloc[0] > 0 and table["consensus_error"].notna().all()
    assert (table["floats"].diff().dropna() == 2 * 12 * 12).all()       # x and y, ring of 6, d r = 12
    meta = io.read_json(tmp_path / "t.meta.json")
    assert "consensus_error" in meta["metric_definitions"]
    # the row of round t is the network mean's: its cost is F at the projected mean
    problem = runner.load_problem(spec["dataset"], data)
    alg = runner.make_algorithm(spec, problem)
    x0 = problem.initial_point(__import__("rfl.random", fromlist=["stream"]).stream(0, "init", "dpca"))
    for t, x, _ in alg.iterate(x0, 2, Draws(0, "e")):
        assert problem.cost(x) == pytest.approx(table["cost"].iloc[t + 1], abs=1e-14)
        np.testing.assert_allclose(x, polar(alg.X.mean(axis=0)), atol=1e-13)

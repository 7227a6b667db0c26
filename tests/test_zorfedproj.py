"""ZO-RFedProj (arXiv 2507.22855; the authors' ZORFedProj_.m): the projection-based zeroth-order
estimator against the Riemannian gradient (mean, mu -> 0) and against its variance formula,
the strategy against the per-agent reference loop (the strategy contract on the sphere and on
St(d, r)), its cost counter, the per-sample costs it needs, and the config refusing it where a
problem has none.

Statistical tests: fixed seeds; each tolerance is stated with its reason beside it."""

from pathlib import Path

import numpy as np
import pytest
import yaml

from rfl import config as rflconfig
from rfl.algorithms import Fixed
from rfl.algorithms.zorfedproj import ZORFedProj, directions, zo_gradient
from rfl.problems.cpesph import CPESph
from rfl.problems.pca_stiefel import PCAStiefelSynthetic
from rfl.testing.strategy import CONTRACT_PROBLEMS, ContractProblem, StrategyContract

REPO = Path(__file__).resolve().parents[1]


def _pca(d=6, r=2, S=3, N=8, seed=0, **geometry):
    arrays = PCAStiefelSynthetic.generate(np.random.default_rng(seed), d=d, r=r, S=S, N=N, block=4,
                                          n_blocks=S * N // 4)
    return PCAStiefelSynthetic.from_arrays(arrays, {"r": r}, **geometry)


def _unit_directions(rng, shape):
    u = rng.standard_normal(shape)
    k = len(shape) - 2                                    # trailing point axes: (d, r)
    return u / np.sqrt((u ** 2).sum(axis=tuple(range(-k, 0)), keepdims=True))


def _sample_rgrads(problem, x, agent, samples):
    """grad f(x; z_i) of each sample i of ``agent`` at one point: (b, d, r)."""
    out = []
    for i in samples:
        g = problem.minibatch_egrad(x[None], np.array([agent]), np.array([[i]]))[0]
        out.append(problem.manifold.euclidean_to_riemannian_gradient(x[None], g[None])[0])
    return np.array(out)


# ---- the estimator ---------------------------------------------------------------------
def test_mean_of_many_directions_is_the_riemannian_gradient():
    """mu -> 0 (1e-5) and m = 200 000 directions over four samples: the estimator is the mean of
    m terms whose spread is E||term - G_b||^2 = (n - 1) ||G_b||^2 (n = d r = 12), so its error
    has E||err||^2 = (n - 1) mean_b ||G_b||^2 / m; tolerance 4 times that root (a chance
    excess of 16 times the mean square). A factor dim M = 9 instead of n, the Euclidean gradient
    or a sign flip each miss by more than 3 tolerances (asserted)."""
    problem = _pca()
    rng = np.random.default_rng(2026)
    x = problem.manifold.random_point(rng, 1)[0]
    samples = np.array([0, 3, 5, 6])
    m = 200_000
    batch = np.tile(samples, m // 4)[None]                                # (1, m)
    u = _unit_directions(rng, (1, m, 6, 2))
    est = zo_gradient(problem, x[None], np.array([1]), batch, u, 1e-5)[0]
    G = _sample_rgrads(problem, x, 1, samples)
    target = G.mean(axis=0)
    n = 12
    tol = 4 * np.sqrt((n - 1) * np.mean((G ** 2).sum(axis=(1, 2))) / m)
    assert np.linalg.norm(est - target) < tol
    # what the test tells apart: the manifold's dimension as factor, the Euclidean gradient
    dim_m = 6 * 2 - 2 * 3 // 2
    assert np.linalg.norm(dim_m / n * est - target) > 3 * tol
    egrad = np.mean([problem.minibatch_egrad(x[None], np.array([1]), np.array([[i]]))[0] for i in samples], axis=0)
    assert np.linalg.norm(egrad - target) > 3 * tol
    assert np.linalg.norm(-est - target) > 3 * tol


def test_a_large_mu_biases_the_mean():
    """mu = 0.5: the forward difference along P_M(x + mu u) is no longer the directional
    derivative; with the same directions as above the mean misses the gradient by more than
    the mu = 1e-5 tolerance (the O(mu) bias the mu -> 0 limit removes)."""
    problem = _pca()
    rng = np.random.default_rng(2026)
    x = problem.manifold.random_point(rng, 1)[0]
    m = 200_000
    batch = np.full((1, m), 3)
    u = _unit_directions(rng, (1, m, 6, 2))
    G = _sample_rgrads(problem, x, 1, [3])[0]
    tol = 4 * np.sqrt(11 * (G ** 2).sum() / m)
    assert np.linalg.norm(zo_gradient(problem, x[None], np.array([1]), batch, u, 1e-5)[0] - G) < tol
    assert np.linalg.norm(zo_gradient(problem, x[None], np.array([1]), batch, u, 0.5)[0] - G) > 3 * tol


@pytest.mark.parametrize("d, r, b", [(6, 2, 1), (6, 2, 4), (12, 3, 1), (12, 3, 4)])
def test_variance_is_n_minus_1_over_b_squared_sum_of_squared_gradients(d, r, b):
    """For a fixed batch of b samples and fresh directions, E||G_mu - mean_b G_b||^2 =
    (n - 1)/b^2 sum_b ||G_b||^2, n = d r (module docstring of rfl.algorithms.zorfedproj),
    measured over R = 20 000 draws: one draw's squared error has a relative spread of about
    1.2, so the mean's relative standard error is about 0.9 %; tolerance 5 %."""
    problem = _pca(d=d, r=r)
    rng = np.random.default_rng(7 + d + b)
    x = problem.manifold.random_point(rng, 1)[0]
    samples = np.arange(b) * 2
    R = 20_000
    batch = np.tile(samples, (R, 1))
    u = _unit_directions(rng, (R, b, d, r))
    est = zo_gradient(problem, np.broadcast_to(x, (R, d, r)), np.zeros(R, dtype=int), batch, u, 1e-5)
    G = _sample_rgrads(problem, x, 0, samples)
    err = ((est - G.mean(axis=0)) ** 2).sum(axis=(1, 2)).mean()
    n = d * r
    predicted = (n - 1) / b ** 2 * (G ** 2).sum()
    assert abs(err / predicted - 1) < 0.05


def test_directions_are_unit_per_agent_and_reproducible():
    u = directions(123, 4, 2, 5, (6, 2))
    assert u.shape == (5, 6, 2)
    np.testing.assert_allclose(np.linalg.norm(u.reshape(5, -1), axis=1), 1.0, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(u, directions(123, 4, 2, 5, (6, 2)))
    for other in (directions(124, 4, 2, 5, (6, 2)), directions(123, 5, 2, 5, (6, 2)),
                  directions(123, 4, 3, 5, (6, 2))):
        assert np.abs(other - u).max() > 0.1


# ---- per-sample costs ---------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: _pca(), lambda: CPESph(np.random.default_rng(3).standard_normal((3, 7, 6)))])
def test_sample_costs_average_to_the_local_cost(make):
    """The mean of the N per-sample costs of agent j at one point is f_j (``local_cost``, from
    the agent's Gram matrix: another computation)."""
    problem = make()
    rng = np.random.default_rng(1)
    S, N = problem.n_agents, int(problem.local_sizes[0])
    x = problem.manifold.random_point(rng, S)
    pts = np.broadcast_to(x[:, None], (S, N) + x.shape[1:])
    costs = problem.sample_costs(pts, np.arange(S), np.tile(np.arange(N), (S, 1)))
    np.testing.assert_allclose(costs.mean(axis=1), problem.local_cost(x, np.arange(S)), rtol=1e-12, atol=0)


def test_sample_cost_of_pca_by_hand():
    """f(X; z) = -1/2 ||X^T z||^2: z = (1, 2, 0), X = [e1 e2] gives -1/2 (1 + 4) = -2.5."""
    problem = PCAStiefelSynthetic(np.array([[[1.0, 2.0, 0.0]]]), 2)
    x = np.eye(3)[:, :2]
    assert problem.sample_costs(x[None, None], np.array([0]), np.array([[0]]))[0, 0] == -2.5


# ---- the strategy ---------------------------------------------------------------------
def _pca_contract(**geometry):
    return _pca(d=5, r=2, S=4, N=10, seed=4, **geometry)


class TestZORFedProjContract(StrategyContract):
    """The strategy contract (vectorised == the per-agent reference loop, counters, determinism,
    iterates on the manifold) on the sphere and on St(5, 2) with the polar projection."""

    strategies = ["zorfedproj"]
    problems = CONTRACT_PROBLEMS + [ContractProblem("pca_stiefel", _pca_contract, 0.1,
                                                    {"retraction": "polar", "transport": "projection"})]


def test_cost_counter_is_two_cost_evaluations_per_sample_per_step():
    problem = _pca_contract()
    alg = ZORFedProj(problem, Fixed(0.1), 3, 4, 2)
    x0 = problem.initial_point(np.random.default_rng(0))
    counts = [c.grad_evals for _, _, c in alg.iterate(x0, 4, np.random.default_rng(1))]
    assert counts == [2 * 2 * 3 * 4 * (t + 1) for t in range(4)]


def test_zo_round_follows_the_gradient_round_in_the_mean():
    """With K = 1, every agent and full batches, one ZO-RFedProj round from x moves x_bar by
    -eta (1/S) sum_j G_mu,j (the corrections are 0 in the first round), whose mean over the
    directions is -eta grad F(x). Over 1600 runs (seeds): the mean of the moves / -eta is
    grad F(x) within 4 standard errors of that mean (estimated from the runs)."""
    problem = _pca(d=5, r=2, S=4, N=10, seed=4)
    x0 = problem.initial_point(np.random.default_rng(0))
    eta = 1e-4
    runs = 1600
    moves = []
    for seed in range(runs):
        alg = ZORFedProj(problem, Fixed(eta), 1, 10)
        alg.reset(x0)
        alg.round(x0, 0, alg.sampler(np.random.default_rng(seed)))
        moves.append((alg.x_bar - x0) / -eta)
    moves = np.array(moves)
    grad = problem.grad(x0)
    se = np.sqrt(((moves - moves.mean(axis=0)) ** 2).sum(axis=(1, 2)).mean() / runs)
    assert np.linalg.norm(moves.mean(axis=0) - grad) < 4 * se
    assert np.linalg.norm(grad) > 5 * se                   # the test can tell a move from none
    assert np.linalg.norm(-moves.mean(axis=0) - grad) > 4 * se   # nor the opposite move


# ---- configuration -------------------------------------------------------------------------
def _smoke_with(algorithm_dataset: str) -> dict:
    smoke = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    exp = {**smoke["experiments"][f"{algorithm_dataset}_fixed"], "seeds": [0],
           "methods": [{"algorithm": "zorfedproj", "K": [2]}]}
    exp.pop("source", None)          # it names the settings of the methods replaced here
    return {"output_dir": "out/", "datasets": {algorithm_dataset: smoke["datasets"][algorithm_dataset]},
            "experiments": {"e": exp}, "figures": {"f": {"experiment": "e", "title": "t"}}}


def test_config_refuses_zorfedproj_on_a_problem_without_sample_costs():
    with pytest.raises(rflconfig.ConfigError) as exc:
        rflconfig.validate(_smoke_with("mbcfsti"))
    msg = str(exc.value)
    assert "experiments.e.methods.0.algorithm" in msg and "zorfedproj" in msg
    assert "sample_costs" in msg and "'mbcfsti'" in msg
    rflconfig.validate(_smoke_with("cpesph"))             # cpesph offers them: accepted

"""The dynamic Fréchet mean problems (rfl/problems/dynamic_frechet.py): the shared problem
contract, the generators' statistics (H^2's Riemannian normal radius against its CDF by
quadrature, its directions uniform; SPD's tangent draws' variances), the regimes (abrupt data
held for T0 steps, the published H^2 loop never drifting, drift_from switching), and the
regret metric (zero at the step's Karcher mean, which is stationary)."""

import numpy as np
import pytest
import scipy.integrate
import scipy.stats

from rfl.manifolds import SPD, Lorentz
from rfl.manifolds.frechet import tangent_mean
from rfl.problems.dynamic_frechet import DynamicFrechetH2, DynamicFrechetSPD
from rfl.testing.problem import ProblemCase, ProblemContract

#: significance of the distribution tests, fixed before any run
ALPHA = 1e-3


class TestDynamicFrechetContract(ProblemContract):
    def problem_cases(self):
        return [ProblemCase(DynamicFrechetH2, dict(DynamicFrechetH2.test_params)),
                ProblemCase(DynamicFrechetSPD, dict(DynamicFrechetSPD.test_params), seed=1)]


def _radius_cdf_by_quadrature(sigma):
    f = lambda r: np.exp(-r ** 2 / (2 * sigma ** 2)) * np.sinh(r)   # noqa: E731 (d = 2)
    c = scipy.integrate.quad(f, 0, 20)[0]
    return lambda r: np.array([scipy.integrate.quad(f, 0, ri)[0] for ri in np.atleast_1d(r)]) / c


@pytest.mark.parametrize("sigma", [0.25, 1.0])
def test_h2_riemannian_normal_radius_and_direction(sigma):
    M = Lorentz(2)
    rng = np.random.default_rng(11)
    base = np.repeat(np.array([[3.0, 2.0, 2.0]]), 3000, 0)
    z = DynamicFrechetH2._draw(M, rng, base, sigma)
    assert np.max(M.distance_from_manifold(z)) < 1e-9
    r = M.dist(base, z)
    assert scipy.stats.kstest(r, _radius_cdf_by_quadrature(sigma)).pvalue > ALPHA
    # the direction, carried back to the origin (an isometry), is uniform on the circle
    u = M.transport_parallel(base, M.origin(len(r)), M.log(base, z))
    theta = np.mod(np.arctan2(u[:, 2], u[:, 1]), 2 * np.pi)
    assert scipy.stats.kstest(theta / (2 * np.pi), "uniform").pvalue > ALPHA


def test_spd_draw_is_exp_of_symmetric_gaussian():
    """Log_B(draw) = sym(G), G entries N(0, r^2): diagonal variance r^2, off-diagonal r^2 / 2,
    each within 4 standard errors (se of a variance estimate: v sqrt(2 / n))."""
    M = SPD(3)
    rng = np.random.default_rng(12)
    n, rad = 4000, 0.1
    base = np.repeat((3.0 * np.eye(3))[None], n, 0)
    V = M.log(base, DynamicFrechetSPD._draw(M, rng, base, rad))
    for (i, j), v in [((0, 0), rad ** 2), ((1, 2), rad ** 2 / 2)]:
        assert abs(np.var(V[:, i, j]) - v) < 4 * v * np.sqrt(2 / n)


def test_published_h2_loop_never_drifts_and_holds_data_for_T0_steps():
    arrays = DynamicFrechetH2.generate(np.random.default_rng(0), S=3, K=4, T=10, T0=3)
    p = DynamicFrechetH2.from_arrays(arrays, {"K": 4})
    assert not arrays["regime"].any()
    for t in range(1, 10):
        same = np.array_equal(p.step_points(t), p.step_points(t - 1))
        assert same == (t % 3 != 0), t
    # blocks alternate between the bases o and (3, 2, 2): the step means sit near them
    o, b = np.array([[1.0, 0, 0]]), np.array([[3.0, 2, 2]])
    M = p.manifold
    assert M.dist(p.x_star[0:1], o)[0] < M.dist(p.x_star[0:1], b)[0]
    assert M.dist(p.x_star[3:4], b)[0] < M.dist(p.x_star[3:4], o)[0]


def test_drift_from_switches_to_new_data_every_step():
    arrays = DynamicFrechetSPD.generate(np.random.default_rng(0), S=2, K=3, T=8, T0=4, drift_from=4)
    p = DynamicFrechetSPD.from_arrays(arrays, {"K": 3})
    np.testing.assert_array_equal(arrays["regime"], [0, 0, 0, 0, 1, 1, 1, 1])
    for t in range(5, 8):
        assert not np.array_equal(p.step_points(t), p.step_points(t - 1))
    # the drift bases (1 + 2 r / T0) I: r = 0..3 -> scale 1, 1.5, 2, 2.5 on the diagonal
    scale = [np.trace(p.x_star[t]) / 3 for t in range(4, 8)]
    assert np.all(np.diff(scale) > 0)


@pytest.mark.parametrize("cls", [DynamicFrechetH2, DynamicFrechetSPD])
def test_regret_is_zero_at_the_step_mean_and_positive_elsewhere(cls):
    arrays = cls.generate(np.random.default_rng(2), **cls.test_params)
    p = cls.from_arrays(arrays, dict(cls.test_params))
    M = p.manifold
    for t in (0, p.horizon - 1):
        star = np.repeat(p.x_star[t][None], p.n_agents, 0)
        pts = p.step_points(t)
        g = tangent_mean(M, p.x_star[t][None], pts[None], np.full(len(pts), 1 / len(pts)))
        assert M.norm(p.x_star[t][None], g)[0] < 1e-10
        assert abs(p.agent_metrics(star, t)["regret"]) < 1e-12 * max(1.0, p.f_star[t])
        other = M.random_point(np.random.default_rng(t), p.n_agents)
        assert p.agent_metrics(other, t)["regret"] > 0


def test_initial_stacks_are_the_notebooks():
    """H^2: each agent's own Fréchet mean of its step-0 points; SPD: its first point."""
    a = DynamicFrechetH2.generate(np.random.default_rng(3), S=2, K=5, T=2, T0=1)
    p = DynamicFrechetH2.from_arrays(a, {"K": 5})
    M = p.manifold
    for i in range(2):
        pts = p.Z[i, :5]
        g = tangent_mean(M, p.init[i:i + 1], pts[None], np.full(5, 0.2))
        assert M.norm(p.init[i:i + 1], g)[0] < 1e-10
    b = DynamicFrechetSPD.generate(np.random.default_rng(3), S=2, K=5, T=2, T0=1)
    np.testing.assert_array_equal(b["init"], b["Z"][:, 0])


@pytest.mark.parametrize("cls,params", [
    (DynamicFrechetH2, {"S": 3, "K": 4, "T": 12, "T0": 3, "drift_from": 7}),
    (DynamicFrechetSPD, {"S": 2, "K": 3, "T": 9, "T0": 4, "drift_from": 5}),
    (DynamicFrechetH2, {"S": 2, "K": 2, "T": 5, "T0": 1})])
def test_static_cost_and_gradient_are_the_plain_means_over_every_step(cls, params):
    """local_cost / local_egrad sum the distinct draws with weights (held data counted once per
    step it is held): against the plain mean over all T K rows, one row at a time."""
    p = cls.from_arrays(cls.generate(np.random.default_rng(3), **params), params)
    M = p.manifold
    S, N = p.Z.shape[:2]
    held = params["T"] - (len(p._rows) // params["K"])
    assert held == sum(1 for t in range(1, params["T"])
                       if t < params.get("drift_from", params["T"]) and t % params["T0"])
    x = M.exp(p.init, 0.3 * M.log(p.init, p.init[::-1]))
    cost = np.zeros(S)
    rgrad = np.zeros_like(x)
    for i in range(S):
        for n in range(N):
            cost[i] += 0.5 * M.dist(x[i:i + 1], p.Z[i, n:n + 1])[0] ** 2 / N
            rgrad[i] -= M.log(x[i:i + 1], p.Z[i, n:n + 1])[0] / N
    agents = np.arange(S)
    np.testing.assert_allclose(p.local_cost(x, agents), cost, rtol=1e-12)
    got = M.euclidean_to_riemannian_gradient(x, p.local_egrad(x, agents))
    np.testing.assert_allclose(got, rgrad, rtol=1e-10, atol=1e-12 * np.abs(rgrad).max())

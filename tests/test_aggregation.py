"""Server aggregation (rfl.algorithms.aggregation) against the mathematics it implements."""

import numpy as np
import pytest

from rfl.algorithms import AgentSampler
from rfl.algorithms.aggregation import retract_weighted_stream, tangent_mean, weighted_mean
from rfl.manifolds import Euclidean, Sphere, Stiefel

TOL = 1e-13


def _weights(rng, s):
    w = rng.random(s) + 0.1
    return w / w.sum()


@pytest.mark.parametrize("shape", [(3,), (4, 2), (2, 3, 2)])
def test_weighted_mean_is_the_weighted_sum_over_agents(shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5,) + shape)
    w = _weights(rng, 5)
    expected = sum(w[j] * x[j] for j in range(5))
    got = weighted_mean(w, x)
    assert got.shape == shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=TOL)


def test_weighted_mean_of_equal_points_is_the_point():
    rng = np.random.default_rng(1)
    y = rng.standard_normal((3, 2))
    np.testing.assert_allclose(weighted_mean(_weights(rng, 4), np.repeat(y[None], 4, 0)), y,
                               rtol=0, atol=TOL)


def test_euclidean_tangent_mean_is_the_arithmetic_mean():
    """Exp_x(u) = x + u, Log_x(y) = y - x: x + sum_j p_j (y_j - x) = sum_j p_j y_j (sum p_j = 1)."""
    rng = np.random.default_rng(2)
    M = Euclidean(6)
    x_t, points = rng.standard_normal(6), rng.standard_normal((4, 6))
    w = _weights(rng, 4)
    np.testing.assert_allclose(tangent_mean(M, x_t, points, w), w @ points, rtol=0, atol=TOL)
    np.testing.assert_allclose(tangent_mean(M, x_t, points, np.full(4, 0.25)), points.mean(axis=0),
                               rtol=0, atol=TOL)


def test_weights_renormalised_over_the_participants():
    """The sampler's p_j over a subset of agents are N_j / sum of the subset's N_j: the
    Euclidean tangent mean over that subset is the N_j-weighted mean of its points alone."""
    sizes = np.array([3, 10, 5, 7, 2])
    agents = np.array([1, 3, 4])
    w = AgentSampler.weights(sizes, agents)
    assert w.sum() == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose(w, sizes[agents] / sizes[agents].sum(), rtol=0, atol=1e-15)
    rng = np.random.default_rng(3)
    points = rng.standard_normal((3, 4))
    np.testing.assert_allclose(tangent_mean(Euclidean(4), np.zeros(4), points, w),
                               (sizes[agents, None] * points).sum(0) / 19, rtol=0, atol=TOL)


@pytest.mark.parametrize("angle", [0.3, 1.2])
def test_sphere_mean_of_points_symmetric_about_x_t_is_x_t(angle):
    """y_pm = cos(a) x + sin(a) (pm v), |v| = 1, v orthogonal to x: Log_x(y_pm) = pm a v cancel."""
    rng = np.random.default_rng(4)
    M = Sphere(5)
    x = M.random_point(rng, 1)[0]
    v = M.random_tangent(rng, x[None])[0]
    v /= np.linalg.norm(v)
    points = np.stack([np.cos(angle) * x + np.sin(angle) * v, np.cos(angle) * x - np.sin(angle) * v])
    np.testing.assert_allclose(tangent_mean(M, x, points, np.array([0.5, 0.5])), x, rtol=0, atol=1e-12)


def test_sphere_mean_moves_along_the_geodesic_by_the_weighted_angle():
    """Two points on one great circle through x at angles a and -b: the tangent mean is at angle
    p a - (1 - p) b on that circle."""
    rng = np.random.default_rng(5)
    M = Sphere(4)
    x = M.random_point(rng, 1)[0]
    v = M.random_tangent(rng, x[None])[0]
    v /= np.linalg.norm(v)
    a, b, p = 0.9, 0.4, 0.3
    points = np.stack([np.cos(a) * x + np.sin(a) * v, np.cos(b) * x - np.sin(b) * v])
    theta = p * a - (1 - p) * b
    np.testing.assert_allclose(tangent_mean(M, x, points, np.array([p, 1 - p])),
                               np.cos(theta) * x + np.sin(theta) * v, rtol=0, atol=1e-12)


@pytest.mark.parametrize("manifold", [Sphere(6), Stiefel(7, 2, retraction="polar")])
def test_tangent_mean_of_one_point_is_that_point(manifold):
    """Exp_x(Log_x(y)) = y (Stiefel: the polar retraction and its inverse)."""
    rng = np.random.default_rng(6)
    x = manifold.random_point(rng, 1)[0]
    y = manifold.retraction(x[None], 0.3 * manifold.random_tangent(rng, x[None]))[0]
    np.testing.assert_allclose(tangent_mean(manifold, x, y[None], np.ones(1)), y, rtol=0, atol=1e-12)
    np.testing.assert_allclose(tangent_mean(manifold, x, np.repeat(y[None], 3, 0), np.full(3, 1 / 3)),
                               y, rtol=0, atol=1e-12)


def test_rfedags_stream_on_euclidean_space_is_the_weighted_mean_of_displacements():
    """R_x(u) = x + u: x_t + sum_j p_j zeta^j = sum_j p_j (x_t + zeta^j)."""
    rng = np.random.default_rng(7)
    x_t, zeta = rng.standard_normal(5), rng.standard_normal((3, 5))
    w = _weights(rng, 3)
    got = retract_weighted_stream(Euclidean(5), x_t, zeta, w)
    np.testing.assert_allclose(got, x_t + sum(w[j] * zeta[j] for j in range(3)), rtol=0, atol=TOL)
    np.testing.assert_allclose(got, w @ (x_t[None] + zeta), rtol=0, atol=TOL)


def test_rfedags_stream_on_the_sphere_normalises_x_plus_the_mean_stream():
    """The normalize retraction: R_x(u) = (x + u)/|x + u|; a zero stream leaves x_t in place."""
    rng = np.random.default_rng(8)
    M = Sphere(5, retraction="normalize")
    x = M.random_point(rng, 1)[0]
    zeta = M.random_tangent(rng, np.repeat(x[None], 4, 0))
    w = _weights(rng, 4)
    d = sum(w[j] * zeta[j] for j in range(4))
    np.testing.assert_allclose(retract_weighted_stream(M, x, zeta, w), (x + d) / np.linalg.norm(x + d),
                               rtol=0, atol=TOL)
    np.testing.assert_allclose(retract_weighted_stream(M, x, np.zeros_like(zeta), w), x, rtol=0, atol=TOL)


def test_anchored_mean_is_the_anchor_plus_the_weighted_displacements():
    """Weights that do not sum to 1 (Bernoulli schemes): x_t + sum_j w_j (x^j - x_t), written
    out per agent; not the plain weighted sum of the points."""
    from rfl.algorithms.aggregation import anchored_mean
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 3, 2))
    anchor = rng.standard_normal((3, 2))
    for w in ([0.5, 0.2, 0.0, 0.1], [0.9, 0.6, 0.3, 0.4], [1, 0, 1, 0]):
        want = anchor.copy()
        for j in range(4):
            want = want + w[j] * (x[j] - anchor)
        got = anchored_mean(w, x, anchor)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-14)
        assert np.abs(got - sum(wj * xj for wj, xj in zip(w, x))).max() > 1e-3


def test_anchored_mean_with_normalised_weights_is_the_weighted_mean_bit_for_bit():
    """Weights summing to 1 (to 1e-12): exactly weighted_mean(w, x), whatever the anchor, so
    the runs of the normalised schemes are unchanged to the last bit."""
    from rfl.algorithms.aggregation import anchored_mean, weighted_mean
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 6)) * 1e3
    anchor = rng.standard_normal(6) * 1e3
    w = rng.random(5)
    w /= w.sum()
    for weights in (w, np.append(w[:-1], 1.0 - w[:-1].sum() + 5e-13)):
        np.testing.assert_array_equal(anchored_mean(weights, x, anchor), weighted_mean(weights, x))
    off = np.append(w[:-1], 1.0 - w[:-1].sum() + 1e-9)                # not normalised: anchored
    np.testing.assert_allclose(anchored_mean(off, x, anchor), anchor + weighted_mean(off, x - anchor[None]),
                               rtol=0, atol=1e-9)
    assert not np.array_equal(anchored_mean(off, x, anchor), weighted_mean(off, x))

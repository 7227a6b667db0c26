"""Sphere geometry against its mathematics (paper Appendix E) and against pymanopt."""

import numpy as np
import pytest
from pymanopt.manifolds import Sphere as PSphere

from rfl.manifolds import Euclidean, Sphere

N, S = 6, 5


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def pts(rng):
    m = Sphere(N)
    x = m.random_point(rng, S)
    u = 1.3 * m.random_tangent(rng, x)            # |u| = 1.3 < pi: inside the injectivity radius
    return m, x, u, m.exp(x, u)


@pytest.mark.parametrize("transport", ["parallel", "projection"])
def test_transport_is_linear_and_lands_in_tangent_space(rng, pts, transport):
    m, x, _, y = pts
    m = Sphere(N, transport=transport)
    a, b = m.random_tangent(rng, x), m.random_tangent(rng, x)
    ta, tb, tab = m.transport(x, y, a), m.transport(x, y, b), m.transport(x, y, 2.0 * a - 3.0 * b)
    np.testing.assert_allclose(tab, 2.0 * ta - 3.0 * tb, atol=1e-13)
    np.testing.assert_allclose(np.einsum("si,si->s", y, ta), 0.0, atol=1e-13)


def test_parallel_transport_is_isometric(rng, pts):
    m, x, _, y = pts
    a, b = m.random_tangent(rng, x), 0.7 * m.random_tangent(rng, x)
    ta, tb = m.transport(x, y, a), m.transport(x, y, b)
    np.testing.assert_allclose(m.inner(y, ta, tb), m.inner(x, a, b), atol=1e-13)


def test_parallel_transport_carries_the_geodesic_velocity(pts):
    """Along gamma(t) = Exp_x(t v) the velocity is parallel: Gamma(v) = gamma'(1) = -Log_y(x)."""
    m, x, u, y = pts
    np.testing.assert_allclose(m.transport(x, y, u), -m.log(y, x), atol=1e-12)


def test_parallel_transport_back_and_forth_is_identity(rng, pts):
    m, x, _, y = pts
    a = m.random_tangent(rng, x)
    np.testing.assert_allclose(m.transport(y, x, m.transport(x, y, a)), a, atol=1e-12)


def test_exp_log_are_inverse(rng, pts):
    m, x, u, y = pts
    np.testing.assert_allclose(m.log(x, y), u, atol=1e-12)
    z = m.random_point(rng, S)
    np.testing.assert_allclose(m.exp(x, m.log(x, z)), z, atol=1e-12)
    np.testing.assert_allclose(m.dist(x, y), m.norm(x, u), atol=1e-12)


def test_retractions_are_first_order(rng, pts):
    m, x, u, _ = pts
    for name in Sphere.RETRACTIONS:
        r = Sphere(N, retraction=name)
        np.testing.assert_allclose(r.retraction(x, 0 * u), x, atol=1e-15)
        h = 1e-6
        d = (r.retraction(x, h * u) - r.retraction(x, -h * u)) / (2 * h)
        np.testing.assert_allclose(d, u, atol=1e-8)


def test_agrees_with_pymanopt(rng, pts):
    m, x, u, y = pts
    p = PSphere(N)
    g = rng.standard_normal(x.shape)
    for j in range(S):
        np.testing.assert_allclose(m.projection(x, g)[j], p.projection(x[j], g[j]), atol=1e-14)
        np.testing.assert_allclose(m.exp(x, u)[j], p.exp(x[j], u[j]), atol=1e-14)
        np.testing.assert_allclose(m.log(x, y)[j], p.log(x[j], y[j]), atol=1e-12)
        np.testing.assert_allclose(m.dist(x, y)[j], p.dist(x[j], y[j]), atol=1e-12)
        np.testing.assert_allclose(m.retraction(x, u)[j], p.retraction(x[j], u[j]), atol=1e-14)
        np.testing.assert_allclose(Sphere(N, transport="projection").transport(x, y, u)[j],
                                   p.transport(x[j], y[j], u[j]), atol=1e-14)
        np.testing.assert_allclose(m.inner(x, u, g)[j], p.inner_product(x[j], u[j], g[j]), atol=1e-14)


def test_batched_equals_per_agent(rng, pts):
    m, x, u, y = pts
    for f in (m.exp, m.retraction, m.log, m.transport_parallel):
        args = (x, u) if f in (m.exp, m.retraction) else (x, y)
        if f == m.transport_parallel:
            args = (x, y, u)
        batched = f(*args)
        for j in range(S):
            np.testing.assert_allclose(batched[j], f(*(a[j:j + 1] for a in args))[0], atol=1e-15)


def test_points_stay_on_sphere_after_many_retractions(rng):
    m = Sphere(N)
    x = m.random_point(rng, 3)
    for _ in range(20000):
        x = m.retraction(x, 0.1 * m.random_tangent(rng, x))
    assert m.distance_from_manifold(x).max() < 1e-12


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="allowed: normalize, exp"):
        Sphere(3, retraction="qr")
    with pytest.raises(ValueError, match="transport='parallelization'.*allowed: identity"):
        Euclidean(3, transport="parallelization")

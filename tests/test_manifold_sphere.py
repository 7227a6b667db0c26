"""Sphere geometry: what is specific to S^{n-1} (paper Appendix E) and agreement with pymanopt.
The identities every manifold satisfies are in rfl.testing.manifold (test_manifold_contract)."""

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


def test_parallel_transport_carries_the_geodesic_velocity(pts):
    """Along gamma(t) = Exp_x(t v) the velocity is parallel: Gamma(v) = gamma'(1) = -Log_y(x)."""
    m, x, u, y = pts
    np.testing.assert_allclose(m.transport(x, y, u), -m.log(y, x), atol=1e-12)


def test_parallel_transport_back_and_forth_is_identity(rng, pts):
    m, x, _, y = pts
    a = m.random_tangent(rng, x)
    np.testing.assert_allclose(m.transport(y, x, m.transport(x, y, a)), a, atol=1e-12)


def test_exp_log_at_far_points(rng, pts):
    """Exp_x(Log_x(z)) = z for random z (angles up to pi), where the algorithms' iterates start."""
    m, x, _, _ = pts
    z = m.random_point(rng, S)
    np.testing.assert_allclose(m.exp(x, m.log(x, z)), z, atol=1e-12)


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


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="allowed: normalize, exp"):
        Sphere(3, retraction="qr")
    with pytest.raises(ValueError, match="transport='parallelization'.*allowed: identity"):
        Euclidean(3, transport="parallelization")

"""Hyperbolic space in the Lorentz model: the shared manifold contract, and the identities of
H^d checked against closed forms (distances along geodesics, the Poincaré ball)."""

import numpy as np
import pytest

from rfl.manifolds import Lorentz
from rfl.manifolds.lorentz import lorentz_to_poincare, minkowski, poincare_to_lorentz
from rfl.testing.manifold import ManifoldContract


class TestLorentzContract(ManifoldContract):
    manifolds = [Lorentz(2), Lorentz(7)]


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def unit_tangent(M, rng, x):
    return M.random_tangent(rng, x)


@pytest.mark.parametrize("d", [2, 6])
def test_points_stay_on_hyperboloid_at_distance_5(d):
    """1000 Exp steps of length 5, alternately out from a base point b in a random direction
    and back along Log to b: every point stays on the hyperboloid to 1e-12 relative to x_0
    (re-normalised, no drift), the out-step lands at distance 5 from b, and the way back
    returns to b. Tolerance: at a point with x_0 ~ cosh r the coordinates of a tangent vector
    of length t are O(t x_0), so rounding leaves a normal component O(eps t x_0^2) that Exp
    amplifies by sinh(t) ~ x_0: O(eps t x_0^3), ~5e-9 at r = t = 5 (the Lorentz model's known
    ill-conditioning far from the origin)."""
    M = Lorentz(d)
    rng = np.random.default_rng(0)
    base = M.random_point(rng)
    for _ in range(500):
        out = M.exp(base, 5.0 * M.random_tangent(rng, base))
        tol = 100 * np.finfo(float).eps * 5.0 * out[0, 0] ** 3
        assert abs(M.dist(base, out)[0] - 5.0) < tol
        back = M.exp(out, M.log(out, base))
        assert M.dist(base, back)[0] < tol
        for x in (out, back):
            assert M.distance_from_manifold(x)[0] <= 1e-12 * x[0, 0]
            assert abs(minkowski(x, x)[0] + 1.0) <= 1e-12 * x[0, 0] ** 2
            assert x[0, 0] > 0
        base = back


def test_exp_distance_equals_tangent_norm(rng):
    """d(x, Exp_x(v)) = ||v||_L for lengths from 1e-8 to 8 (arccosh and its small-distance
    form both)."""
    M = Lorentz(3)
    x = M.random_point(rng, 6)
    u = M.random_tangent(rng, x)
    for t in (1e-8, 1e-3, 0.3, 1.0, 3.0, 8.0):
        y = M.exp(x, t * u)
        np.testing.assert_allclose(M.dist(x, y), t, rtol=1e-10, atol=1e-15)


def test_log_exp_round_trip_far(rng):
    """Log_x(Exp_x(v)) = v up to distance 6 (relative to ||v||)."""
    M = Lorentz(4)
    x = M.random_point(rng, 5)
    u = M.random_tangent(rng, x)
    for t in (0.01, 1.0, 6.0):
        np.testing.assert_allclose(M.log(x, M.exp(x, t * u)), t * u, atol=1e-9 * t * np.cosh(t))


def test_distance_closed_form_on_h1():
    """On H^1 the point at signed distance a from the origin is (cosh a, sinh a):
    d((cosh a, sinh a), (cosh b, sinh b)) = |a - b|."""
    M = Lorentz(1)
    a, b = np.array([0.3, -2.0, 4.0]), np.array([1.1, 1.5, -1.0])
    pa = np.stack([np.cosh(a), np.sinh(a)], axis=1)
    pb = np.stack([np.cosh(b), np.sinh(b)], axis=1)
    np.testing.assert_allclose(M.dist(pa, pb), np.abs(a - b), rtol=1e-12)


def test_transport_is_an_isometry_far(rng):
    """Parallel transport keeps inner products between points 4 apart and is undone by the
    transport back."""
    M = Lorentz(3)
    x = M.random_point(rng, 4)
    y = M.exp(x, 4.0 * M.random_tangent(rng, x))
    u, w = M.random_tangent(rng, x), M.random_tangent(rng, x)
    tu, tw = M.transport(x, y, u), M.transport(x, y, w)
    np.testing.assert_allclose(M.inner(y, tu, tw), M.inner(x, u, w), atol=1e-10)
    np.testing.assert_allclose(minkowski(y, tu), 0.0, atol=1e-10)
    np.testing.assert_allclose(M.transport(y, x, tu), u, atol=1e-10)
    # the geodesic's own velocity is transported to the velocity at the end point
    v = M.log(x, y)
    np.testing.assert_allclose(M.transport(x, y, v), -M.log(y, x), atol=1e-9)


def test_poincare_lorentz_round_trip(rng):
    """Poincaré ball <-> hyperboloid are inverse; the Poincaré distance
    arccosh(1 + 2||p - q||^2 / ((1 - ||p||^2)(1 - ||q||^2))) equals the Lorentz one."""
    p = rng.uniform(-1, 1, (50, 2))
    p *= (rng.uniform(0, 0.99, 50) / np.linalg.norm(p, axis=1))[:, None]
    q = p[::-1].copy()
    x, y = poincare_to_lorentz(p), poincare_to_lorentz(q)
    M = Lorentz(2)
    assert np.all(M.distance_from_manifold(x) < 1e-12 * x[:, 0])
    np.testing.assert_allclose(lorentz_to_poincare(x), p, atol=1e-13)
    np.testing.assert_allclose(M.to_poincare(M.from_poincare(p)), p, atol=1e-13)
    xr = M.random_point(rng, 10)
    np.testing.assert_allclose(poincare_to_lorentz(lorentz_to_poincare(xr)), xr, atol=1e-12)
    sp, sq = (p * p).sum(1), (q * q).sum(1)
    dp = np.arccosh(1 + 2 * ((p - q) ** 2).sum(1) / ((1 - sp) * (1 - sq)))
    np.testing.assert_allclose(M.dist(x, y), dp, rtol=1e-8, atol=1e-8)
    with pytest.raises(ValueError, match="open unit ball"):
        poincare_to_lorentz(np.array([[1.0, 0.0]]))


def test_riemannian_gradient_of_squared_distance(rng):
    """grad_x d^2(x, y) = -2 Log_x(y) (Boumal 2023, Prop. 10.23 on a Hadamard manifold); with
    the Euclidean gradient of the extension arccosh(-<x, y>_L)^2 the conversion must give it."""
    M = Lorentz(2)
    x, y = M.random_point(rng, 5), M.random_point(rng, 5)
    c = -minkowski(x, y)
    d = np.arccosh(c)
    # d/dx arccosh(-<x,y>_L)^2 = 2 d / sqrt(c^2 - 1) * (-J y), J = diag(-1, 1, ...)
    Jy = y.copy()
    Jy[:, 0] *= -1
    egrad = (2 * d / np.sqrt(c * c - 1))[:, None] * (-Jy)
    np.testing.assert_allclose(M.euclidean_to_riemannian_gradient(x, egrad), -2 * M.log(x, y),
                               atol=1e-10)


def test_bad_dimension():
    with pytest.raises(ValueError, match="d >= 1"):
        Lorentz(0)

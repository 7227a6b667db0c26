"""SPD manifold with the affine-invariant metric: checks against the mathematics
(closed forms in special cases, defining identities, finite differences) and
against pymanopt's SymmetricPositiveDefinite."""

import numpy as np
import pytest
import scipy.linalg

from manifold_cases import assert_batched_equals_per_agent
from rfl.manifolds import MANIFOLDS, SPD

S, N = 4, 3
TOL = 1e-12
# Central differences: error O(h^2) + O(eps / h); h = 1e-5 gives ~1e-10.
H, FD_TOL = 1e-5, 1e-8


def close(a, b, tol=TOL):
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def sym(a):
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def inv(a):
    return np.linalg.inv(a)


def msqrt(a):
    """Principal square root of one SPD matrix, through scipy (independent of the code)."""
    return np.real(scipy.linalg.sqrtm(a))


@pytest.fixture
def M():
    return SPD(N)


@pytest.fixture
def rng():
    return np.random.default_rng(20240601)


def tangent(M, rng, x, scale=1.0):
    """Random tangent vectors with ||u||_x = scale: ``(S, N, N)``."""
    return scale * M.random_tangent(rng, x)


# ---- construction --------------------------------------------------------------
def test_registered_and_names():
    assert MANIFOLDS["spd"] is SPD
    M = SPD(N)
    assert M.name == "spd" and M.point_shape == (N, N) and M.dim == N * (N + 1) // 2
    assert M.retraction_name == "exp" and M.transport_name == "parallel"
    with pytest.raises(ValueError):
        SPD(N, retraction="qr")
    with pytest.raises(ValueError):
        SPD(N, transport="projection")


def test_random_point_on_manifold(M, rng):
    x = M.random_point(rng, S)
    assert x.shape == (S, N, N)
    assert np.all(x == np.swapaxes(x, -1, -2))
    assert np.all(np.linalg.eigvalsh(x) > 0)
    assert np.all(M.distance_from_manifold(x) < TOL)
    # the check sees a symmetry defect and a negative eigenvalue
    bad = x.copy()
    bad[0, 0, 1] += 1e-3
    bad[1] = -bad[1]
    d = M.distance_from_manifold(bad)
    assert d[0] > 1e-4 and d[1] > 0.1 and np.all(d[2:] < TOL)


# ---- metric and tangent space -------------------------------------------------
def test_inner_is_affine_invariant_metric(M, rng):
    x = M.random_point(rng, S)
    u, v = sym(rng.standard_normal((2, S, N, N)))
    want = [np.trace(inv(x[j]) @ u[j] @ inv(x[j]) @ v[j]) for j in range(S)]
    close(M.inner(x, u, v), want)
    close(M.inner(x, u, v), M.inner(x, v, u))
    assert np.all(M.inner(x, u, u) > 0)
    # at X = I the metric is the Frobenius inner product
    eye = np.broadcast_to(np.eye(N), x.shape)
    close(M.inner(eye, u, v), np.einsum("sij,sij->s", u, v))
    # invariance under congruence X -> A X A^T, U -> A U A^T
    a = rng.standard_normal((S, N, N))
    at = np.swapaxes(a, -1, -2)
    close(M.inner(a @ x @ at, a @ u @ at, a @ v @ at), M.inner(x, u, v))


def test_proj_is_symmetrisation(M, rng):
    x = M.random_point(rng, S)
    g = rng.standard_normal((S, N, N))
    p = M.projection(x, g)
    close(p, (g + np.swapaxes(g, -1, -2)) / 2)
    close(M.projection(x, p), p)


def test_egrad2rgrad_finite_difference(M, rng):
    """<grad f(X), U>_X = d/dt f(Exp_X(t U)) for f(X) = tr(A X) + ||X||_F^2, G = A^T + 2 X."""
    a = rng.standard_normal((N, N))  # deliberately non-symmetric

    def f(x):
        return np.einsum("ij,sji->s", a, x) + np.einsum("sij,sij->s", x, x)

    x = M.random_point(rng, S)
    u = tangent(M, rng, x)
    grad = M.euclidean_to_riemannian_gradient(x, a.T + 2 * x)
    fd = (f(M.retraction(x, H * u)) - f(M.retraction(x, -H * u))) / (2 * H)
    close(M.inner(x, grad, u), fd, FD_TOL)
    # and the Riesz identity <grad f, U>_X = <G, U>_F holds exactly
    close(M.inner(x, grad, u), np.einsum("sij,sij->s", a.T + 2 * x, u))


# ---- exp / log / dist -----------------------------------------------------------
def test_exp_at_identity_is_matrix_exponential(M, rng):
    u = sym(rng.standard_normal((S, N, N)))
    eye = np.broadcast_to(np.eye(N), u.shape)
    close(M.exp(eye, u), np.stack([scipy.linalg.expm(uj) for uj in u]))
    y = M.random_point(rng, S)
    close(M.log(eye, y), np.stack([np.real(scipy.linalg.logm(yj)) for yj in y]))
    # d(I, Y) = sqrt(sum log(lambda_i(Y))^2)
    close(M.dist(eye, y), np.sqrt(np.sum(np.log(np.linalg.eigvalsh(y)) ** 2, axis=1)))


def test_exp_formula_general_point(M, rng):
    """Exp_X(V) = X expm(X^{-1} V) (the same map written without square roots)."""
    x = M.random_point(rng, S)
    u = tangent(M, rng, x, 0.8)
    close(M.exp(x, u), np.stack([x[j] @ scipy.linalg.expm(inv(x[j]) @ u[j]) for j in range(S)]))


def test_exp_log_inverse(M, rng):
    x = M.random_point(rng, S)
    u = tangent(M, rng, x, 0.7)
    close(M.log(x, M.exp(x, u)), u)
    y = M.random_point(rng, S)
    close(M.exp(x, M.log(x, y)), y)
    close(M.exp(x, M.zero_vector(x)), x)
    close(M.log(x, x), np.zeros_like(x))


def test_dist(M, rng):
    x = M.random_point(rng, S)
    u = tangent(M, rng, x, 0.3)
    close(M.dist(x, M.exp(x, u)), M.norm(x, u))
    close(M.dist(x, M.exp(x, u)), 0.3 * np.ones(S))
    y = M.random_point(rng, S)
    close(M.dist(x, y), M.dist(y, x))
    close(M.dist(x, y), M.norm(x, M.log(x, y)))
    close(M.dist(x, x), np.zeros(S))
    # affine invariance d(A X A^T, A Y A^T) = d(X, Y)
    a = rng.standard_normal((S, N, N))
    at = np.swapaxes(a, -1, -2)
    close(M.dist(a @ x @ at, a @ y @ at), M.dist(x, y))


# ---- retraction ----------------------------------------------------------------
def test_retraction_centred_and_first_order(M, rng):
    x = M.random_point(rng, S)
    u = tangent(M, rng, x)
    close(M.retraction(x, M.zero_vector(x)), x)
    fd = (M.retraction(x, H * u) - M.retraction(x, -H * u)) / (2 * H)
    close(fd, u, FD_TOL)


def test_retraction_stays_on_manifold_1e5_steps(M):
    rng = np.random.default_rng(7)
    x = M.random_point(rng, S)
    chunk = 1000
    for _ in range(100_000 // chunk):
        steps = 1e-3 * sym(rng.standard_normal((chunk, S, N, N)))  # T_X = Sym(N)
        for v in steps:
            x = M.retraction(x, v)
    assert np.all(M.distance_from_manifold(x) < TOL)
    np.linalg.cholesky(x)  # positive definite


# ---- transport -----------------------------------------------------------------
def test_transport_parallel(M, rng):
    x, y = M.random_point(rng, S), M.random_point(rng, S)
    u, v = tangent(M, rng, x), tangent(M, rng, x)
    a, b = rng.standard_normal(2)
    tu, tv = M.transport(x, y, u), M.transport(x, y, v)
    # linear
    close(M.transport(x, y, a * u + b * v), a * tu + b * tv)
    # lands in T_Y = Sym(N)
    assert np.all(tu == np.swapaxes(tu, -1, -2))
    # isometric
    close(M.inner(y, tu, tv), M.inner(x, u, v))
    close(M.inner(y, tu, tu), M.inner(x, u, u))
    # identity from X to X, and back-transport is the inverse
    close(M.transport(x, x, u), u)
    close(M.transport(y, x, tu), u)
    # the velocity of the geodesic is parallel: Gamma(Log_X Y) = -Log_Y X
    close(M.transport(x, y, M.log(x, y)), -M.log(y, x))


def test_transport_parallel_closed_forms(M, rng):
    """Gamma(U) = E U E^T with E = (Y X^{-1})^{1/2}; from I: E = Y^{1/2}."""
    x, y = M.random_point(rng, S), M.random_point(rng, S)
    u = tangent(M, rng, x)
    eye = np.broadcast_to(np.eye(N), x.shape)
    close(M.transport(eye, y, u), np.stack([msqrt(y[j]) @ u[j] @ msqrt(y[j]) for j in range(S)]))
    e = [msqrt(y[j] @ inv(x[j])) for j in range(S)]
    close(M.transport(x, y, u), np.stack([e[j] @ u[j] @ e[j].T for j in range(S)]))


# ---- pymanopt ------------------------------------------------------------------
def test_agrees_with_pymanopt(M, rng):
    P = M.to_pymanopt()
    assert type(P).__name__ == "SymmetricPositiveDefinite"
    x, y = M.random_point(rng, S), M.random_point(rng, S)
    u, v = tangent(M, rng, x), tangent(M, rng, x)
    g = rng.standard_normal((S, N, N))
    inner, proj, rgrad = M.inner(x, u, v), M.projection(x, g), M.euclidean_to_riemannian_gradient(x, g)
    ex, lg, d = M.exp(x, u), M.log(x, y), M.dist(x, y)
    for j in range(S):
        close(inner[j], P.inner_product(x[j], u[j], v[j]))
        close(proj[j], P.projection(x[j], g[j]))
        close(rgrad[j], P.euclidean_to_riemannian_gradient(x[j], g[j]))
        close(ex[j], P.exp(x[j], u[j]))
        close(lg[j], P.log(x[j], y[j]))
        close(d[j], P.dist(x[j], y[j]))
    # pymanopt's retraction is a second-order approximation of Exp and its
    # transport is the identity: neither is the same map as ours, so not compared.


# ---- batched == per-agent ------------------------------------------------------
def test_batched_equals_per_agent(M, rng):
    x, y = M.random_point(rng, S), M.random_point(rng, S)
    assert_batched_equals_per_agent(
        M, ["inner", "norm", "projection", "euclidean_to_riemannian_gradient", "retraction", "exp", "log", "dist", "transport",
            "distance_from_manifold"], TOL,
        x=x, y=y, u=tangent(M, rng, x), v=tangent(M, rng, x), g=rng.standard_normal((S, N, N)))

"""SPD manifold with the affine-invariant metric: closed forms against scipy (expm, logm,
sqrtm), the metric's invariances, the parallel transport's defining identities, and
pymanopt's SymmetricPositiveDefinite. n = 2 (CFMSPD) takes closed-form eigendecompositions
(``eigh_sym``), so every comparison runs at n = 2 and at n = 3 (LAPACK). The identities every
manifold satisfies are in rfl.testing.manifold (test_manifold_contract)."""

import numpy as np
import pytest
import scipy.linalg

from rfl.manifolds import SPD
from rfl.manifolds.spd import eigh_sym

S = 4
TOL = 1e-12


def close(a, b, tol=TOL):
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def sym(a):
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def inv(a):
    return np.linalg.inv(a)


def msqrt(a):
    """Principal square root of one SPD matrix, through scipy (independent of the code)."""
    return np.real(scipy.linalg.sqrtm(a))


@pytest.fixture(params=[2, 3], ids=["n2", "n3"])
def M(request):
    return SPD(request.param)


@pytest.fixture
def rng():
    return np.random.default_rng(20240601)


def tangent(M, rng, x, scale=1.0):
    """Random tangent vectors with ||u||_x = scale: ``(S, n, n)``."""
    return scale * M.random_tangent(rng, x)


# ---- construction --------------------------------------------------------------
def test_names():
    M = SPD(3)
    assert M.name == "spd" and M.point_shape == (3, 3) and M.dim == 6
    assert M.retraction_name == "exp" and M.transport_name == "parallel"
    with pytest.raises(ValueError):
        SPD(3, retraction="qr")
    with pytest.raises(ValueError):
        SPD(3, transport="projection")


def test_distance_from_manifold_sees_both_defects(M, rng):
    """A symmetry defect and a negative eigenvalue."""
    x = M.random_point(rng, S)
    assert np.all(x == np.swapaxes(x, -1, -2))
    assert np.all(np.linalg.eigvalsh(x) > 0)
    bad = x.copy()
    bad[0, 0, 1] += 1e-3
    bad[1] = -bad[1]
    d = M.distance_from_manifold(bad)
    assert d[0] > 1e-4 and d[1] > 0.1 and np.all(d[2:] < TOL)


# ---- the closed-form 2 x 2 eigendecomposition -----------------------------------
def test_eigh_sym_2x2_matches_lapack(rng):
    """Eigenvalues as np.linalg.eigh's, eigenvectors orthonormal with A V = V diag(w), also
    for diagonal matrices (b = 0, either order), equal eigenvalues and a11 < a22."""
    a = sym(rng.standard_normal((200, 2, 2)))
    special = np.array([[[2.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 2.0]],
                        [[1.5, 0.0], [0.0, 1.5]], [[1.0, 0.3], [0.3, 4.0]],
                        [[1.0, -1e-9], [-1e-9, 1.0]]])
    a = np.concatenate([a, special])
    w, v = eigh_sym(a)
    close(w, np.linalg.eigh(a)[0])
    close(np.swapaxes(v, -1, -2) @ v, np.broadcast_to(np.eye(2), a.shape))
    close(a @ v, v * w[:, None, :])


# ---- metric and tangent space -------------------------------------------------
def test_inner_is_affine_invariant_metric(M, rng):
    n = M.n
    x = M.random_point(rng, S)
    u, v = sym(rng.standard_normal((2, S, n, n)))
    want = [np.trace(inv(x[j]) @ u[j] @ inv(x[j]) @ v[j]) for j in range(S)]
    close(M.inner(x, u, v), want)
    # at X = I the metric is the Frobenius inner product
    eye = np.broadcast_to(np.eye(n), x.shape)
    close(M.inner(eye, u, v), np.einsum("sij,sij->s", u, v))
    # invariance under congruence X -> A X A^T, U -> A U A^T
    a = rng.standard_normal((S, n, n))
    at = np.swapaxes(a, -1, -2)
    close(M.inner(a @ x @ at, a @ u @ at, a @ v @ at), M.inner(x, u, v))


def test_projection_is_symmetrisation_and_gradient_formula(M, rng):
    """P_X(G) = sym(G); grad f(X) = X sym(G) X."""
    x = M.random_point(rng, S)
    g = rng.standard_normal(x.shape)
    close(M.projection(x, g), (g + np.swapaxes(g, -1, -2)) / 2)
    close(M.euclidean_to_riemannian_gradient(x, g), x @ sym(g) @ x)


# ---- exp / log / dist -----------------------------------------------------------
def test_exp_log_dist_at_identity_are_matrix_functions(M, rng):
    n = M.n
    u = sym(rng.standard_normal((S, n, n)))
    eye = np.broadcast_to(np.eye(n), u.shape)
    close(M.exp(eye, u), np.stack([scipy.linalg.expm(uj) for uj in u]))
    y = M.random_point(rng, S)
    close(M.log(eye, y), np.stack([np.real(scipy.linalg.logm(yj)) for yj in y]))
    # d(I, Y) = sqrt(sum log(lambda_i(Y))^2)
    close(M.dist(eye, y), np.sqrt(np.sum(np.log(np.linalg.eigvalsh(y)) ** 2, axis=1)))


def test_exp_log_formulas_general_point(M, rng):
    """Exp_X(V) = X expm(X^{-1} V), Log_X(Y) = X logm(X^{-1} Y) (the same maps written
    without square roots), at random, far-apart X and Y."""
    x, y = M.random_point(rng, S), M.random_point(rng, S)
    u = tangent(M, rng, x, 0.8)
    close(M.exp(x, u), np.stack([x[j] @ scipy.linalg.expm(inv(x[j]) @ u[j]) for j in range(S)]))
    close(M.log(x, y), np.stack([x[j] @ np.real(scipy.linalg.logm(inv(x[j]) @ y[j]))
                                 for j in range(S)]))
    close(M.exp(x, M.log(x, y)), y)


def test_dist_is_affine_invariant(M, rng):
    """d(A X A^T, A Y A^T) = d(X, Y)."""
    n = M.n
    x, y = M.random_point(rng, S), M.random_point(rng, S)
    a = rng.standard_normal((S, n, n))
    at = np.swapaxes(a, -1, -2)
    close(M.dist(a @ x @ at, a @ y @ at), M.dist(x, y))


# ---- transport -----------------------------------------------------------------
def test_transport_parallel_identities(M, rng):
    """Back-transport inverts, and the velocity of the geodesic is parallel:
    Gamma(Log_X Y) = -Log_Y X."""
    x, y = M.random_point(rng, S), M.random_point(rng, S)
    u = tangent(M, rng, x)
    close(M.transport(y, x, M.transport(x, y, u)), u)
    close(M.transport(x, y, M.log(x, y)), -M.log(y, x))


def test_transport_parallel_closed_forms(M, rng):
    """Gamma(U) = E U E^T with E = (Y X^{-1})^{1/2}; from I: E = Y^{1/2}."""
    x, y = M.random_point(rng, S), M.random_point(rng, S)
    u = tangent(M, rng, x)
    eye = np.broadcast_to(np.eye(M.n), x.shape)
    close(M.transport(eye, y, u), np.stack([msqrt(y[j]) @ u[j] @ msqrt(y[j]) for j in range(S)]))
    e = [msqrt(y[j] @ inv(x[j])) for j in range(S)]
    close(M.transport(x, y, u), np.stack([e[j] @ u[j] @ e[j].T for j in range(S)]))


# ---- pymanopt ------------------------------------------------------------------
def test_agrees_with_pymanopt(M, rng):
    P = M.to_pymanopt()
    assert type(P).__name__ == "SymmetricPositiveDefinite"
    x, y = M.random_point(rng, S), M.random_point(rng, S)
    u, v = tangent(M, rng, x), tangent(M, rng, x)
    g = rng.standard_normal(x.shape)
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

"""Stiefel manifold St(p, n) with the embedded metric: closed forms against numpy/scipy (the
polar factor, including its p = 1 and p = 2 closed forms and the SVD fallback, the QR
factor, Exp), the tangent space's characterisation, the parallelization transport's
definition and continuity, and pymanopt's Stiefel. The identities every manifold satisfies
are in rfl.testing.manifold (test_manifold_contract)."""

import numpy as np
import pytest
import scipy.linalg

from rfl.manifolds import Stiefel

S, N, P = 4, 7, 3
TOL = 1e-12
# Central differences: error O(h^2) + O(eps / h); h = 1e-5 gives ~1e-10.
H, FD_TOL = 1e-5, 1e-8


def close(a, b, tol=TOL):
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def T(a):
    return np.swapaxes(a, -1, -2)


def skew(a):
    return 0.5 * (a - T(a))


def tangent_defect(x, u):
    """||X^T U + U^T X||_F: zero iff U in T_X St."""
    return np.linalg.norm(T(x) @ u + T(u) @ x, axis=(-2, -1))


def svd_polar(a):
    """P Q^T from numpy's thin SVD a = P S Q^T, one matrix at a time."""
    out = []
    for aj in a:
        p, _, qt = np.linalg.svd(aj, full_matrices=False)
        out.append(p @ qt)
    return np.stack(out)


@pytest.fixture
def rng():
    return np.random.default_rng(20240602)


def tangent(M, rng, x, scale=1.0):
    return scale * M.random_tangent(rng, x)


# ---- construction --------------------------------------------------------------
def test_names_and_offers():
    M = Stiefel(N, P)
    assert M.name == "stiefel" and M.point_shape == (N, P)
    assert M.dim == N * P - P * (P + 1) // 2
    assert M.retraction_name == "polar" and M.transport_name == "parallelization"
    assert Stiefel(N, P, retraction="qr", transport="projection").retraction_name == "qr"
    with pytest.raises(ValueError):
        Stiefel(N, P, retraction="exp")
    with pytest.raises(ValueError):
        Stiefel(N, P, transport="parallel")
    with pytest.raises(ValueError):
        Stiefel(P, N)
    # no closed-form Log; the tangent mean through the inverse of the polar or the QR retraction
    assert not Stiefel.offers("log")
    assert Stiefel.offers("tangent_mean", "polar") and Stiefel.offers("tangent_mean", "qr")
    assert Stiefel.offers("nearest_point") and not Stiefel.offers("flat")


# ---- tangent space -------------------------------------------------------------
def test_projection_characterises_the_tangent_space(rng):
    """T_X St = {X Omega + X_perp K: Omega skew}: such vectors are left unchanged, X sym(A) is
    removed, and the result satisfies X^T U + U^T X = 0."""
    M = Stiefel(N, P)
    x = M.random_point(rng, S)
    om = skew(rng.standard_normal((S, P, P)))
    xp = np.linalg.qr(x, mode="complete")[0][..., P:]
    w = x @ om + xp @ rng.standard_normal((S, N - P, P))
    close(M.projection(x, w), w)
    a = rng.standard_normal((S, P, P))
    close(M.projection(x, x @ (a + T(a))), np.zeros_like(x))
    assert np.all(tangent_defect(x, M.projection(x, rng.standard_normal(x.shape))) < TOL)


# ---- retractions and P_M against numpy / scipy ---------------------------------
@pytest.mark.parametrize("n,p", [(25, 1), (25, 2), (N, P), (64, 3)])
def test_polar_retraction_formula(rng, n, p):
    """R_X(V) = (X + V)(I + V^T V)^{-1/2}, the inverse square root taken by scipy, = P Q^T of
    numpy's SVD of X + V. p = 1 and p = 2 (MBCFSti's St(2, 25)) take closed forms."""
    M = Stiefel(n, p, retraction="polar")
    x = M.random_point(rng, S)
    u = tangent(M, rng, x, 2.0)
    want = [(x[j] + u[j]) @ np.linalg.inv(scipy.linalg.sqrtm(np.eye(p) + u[j].T @ u[j])).real
            for j in range(S)]
    close(M.retraction(x, u), np.stack(want))
    close(M.retraction(x, u), svd_polar(x + u))


@pytest.mark.parametrize("p", [2, 3])
def test_nearest_point_is_the_svd_polar_factor_also_when_ill_conditioned(rng, p):
    """P_M(A) = P Q^T (numpy's SVD) for well-conditioned A (the p x p Gram path) and for
    condition numbers beyond 4 (the SVD fallback), mixed in one batch."""
    M = Stiefel(25, p)
    a = rng.standard_normal((6, 25, p))
    a[:3, :, 0] *= 1e-3                                   # cond(a) ~ 1e3 for half the agents
    close(M.nearest_point(a), svd_polar(a))


@pytest.mark.parametrize("n,p", [(25, 1), (25, 2), (N, P)])
def test_qr_retraction_is_numpys_q_with_positive_diagonal(rng, n, p):
    """Y = qf(X + V): numpy's Q with columns signed so that diag(R) > 0, i.e. Y in St and
    Y^T (X + V) upper triangular with positive diagonal."""
    M = Stiefel(n, p, retraction="qr")
    x = M.random_point(rng, S)
    u = tangent(M, rng, x, 2.0)
    y = M.retraction(x, u)
    q, r = np.linalg.qr(x + u)
    close(y, q * np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :])
    r = T(y) @ (x + u)
    close(np.tril(r, -1), np.zeros_like(r))
    assert np.all(np.diagonal(r, axis1=1, axis2=2) > 0)


# ---- exp (optional closed form) ------------------------------------------------
def test_exp_is_a_geodesic(rng):
    M = Stiefel(N, P)
    x = M.random_point(rng, S)
    u = tangent(M, rng, x, 1.3)
    # geodesic equation of a Riemannian submanifold: gamma'' is normal to T_gamma St.
    # Second central difference: error O(h^2) + O(eps / h^2); h = 1e-4 gives ~1e-8.
    h2, t = 1e-4, 0.6
    g = M.exp(x, t * u)
    acc = (M.exp(x, (t + h2) * u) - 2 * g + M.exp(x, (t - h2) * u)) / h2 ** 2
    close(M.projection(g, acc), np.zeros_like(acc), 1e-6)
    assert np.all(np.linalg.norm(acc, axis=(1, 2)) > 0.1)  # the test is not vacuous
    # constant speed: ||gamma'(t)|| = ||u||
    vel = (M.exp(x, (t + H) * u) - M.exp(x, (t - H) * u)) / (2 * H)
    close(np.linalg.norm(vel, axis=(1, 2)), M.norm(x, u), FD_TOL)


def test_exp_special_case_rotation_within_span(rng):
    """For V = X Omega (Omega skew), Exp_X(V) = X expm(Omega)."""
    M = Stiefel(N, P)
    x = M.random_point(rng, S)
    om = skew(rng.standard_normal((S, P, P)))
    close(M.exp(x, x @ om), np.stack([x[j] @ scipy.linalg.expm(om[j]) for j in range(S)]))


# ---- transports ----------------------------------------------------------------
def test_transport_parallelization(rng):
    M = Stiefel(N, P, transport="parallelization")
    x, y = M.random_point(rng, S), M.random_point(rng, S)
    u = tangent(M, rng, x)
    tu = M.transport(x, y, u)
    close(M.transport(y, x, tu), u)  # back-transport inverts (the closest-basis relation is symmetric)
    # definition: the skew part is carried by Y (Y^T T(V) = X^T V) and the normal part through
    # the complements (Y_perp^T T(V) = X_perp^T V), with Y_perp the basis of span(Y)^perp closest
    # to X_perp (polar factor of (I - Y Y^T) X_perp), for ANY orthonormal basis X_perp
    close(T(y) @ tu, T(x) @ u)
    y = M.retraction(x, 0.5 * M.random_tangent(rng, x))   # moderate angles: see the Grassmann test
    tu = M.transport(x, y, u)
    xp = np.linalg.qr(x, mode="complete")[0][..., P:]
    q = np.linalg.qr(rng.standard_normal((S, N - P, N - P)))[0]
    for basis in (xp, xp @ q):
        close(T(svd_polar(basis - y @ (T(y) @ basis))) @ tu, T(basis) @ u)
    # repeated calls give the same result, so transports compose consistently
    z = M.random_point(rng, S)
    assert np.array_equal(M.transport(y, z, tu), M.transport(y, z, M.transport(x, y, u)))
    # on ambient vectors it acts as B_Y B_X^+, i.e. it first projects onto T_X
    g = rng.standard_normal((S, N, P))
    close(M.transport(x, y, g), M.transport(x, y, M.projection(x, g)))


def test_transport_parallelization_is_continuous(rng):
    """Between nearby points the transport is close to the identity (to first order, the
    projection): no jump anywhere. A Householder basis per point jumps where a pivot changes
    sign; that version gave errors up to 0.76 for steps of 1e-2 on these draws."""
    M = Stiefel(25, 2, transport="parallelization")
    x = M.random_point(rng, 2000)
    h = 1e-2
    y = M.retraction(x, h * M.random_tangent(rng, x))
    v = M.random_tangent(rng, x)
    err = M.norm(y, M.transport(x, y, v) - M.projection(y, v))
    assert err.max() < 10 * h


# ---- inverse of the polar retraction ---------------------------------------------
def test_inverse_polar_retraction_solves_the_lyapunov_equation(rng):
    """R_X^{-1}(Y) = Y M - X with M symmetric and (X^T Y) M + M (X^T Y)^T = 2 I
    (Kaneko, Fiori & Tanaka 2013), M from scipy's Lyapunov solver."""
    M = Stiefel(N, P)
    x = M.random_point(rng, S)
    y = M.retraction(x, tangent(M, rng, x, 0.6))
    for j in range(S):
        a = x[j].T @ y[j]
        m = scipy.linalg.solve_continuous_lyapunov(a, 2.0 * np.eye(P))
        close(M.inverse_retraction_polar(x[j:j + 1], y[j:j + 1])[0], y[j] @ m - x[j])


# ---- pymanopt ------------------------------------------------------------------
@pytest.mark.parametrize("retraction", Stiefel.RETRACTIONS)
def test_agrees_with_pymanopt(rng, retraction):
    M = Stiefel(N, P, retraction=retraction)
    Pm = M.to_pymanopt()
    assert type(Pm).__name__ == "Stiefel"
    x, y = M.random_point(rng, S), M.random_point(rng, S)
    u, v = tangent(M, rng, x), tangent(M, rng, x)
    g = rng.standard_normal((S, N, P))
    inner, proj, rgrad = M.inner(x, u, v), M.projection(x, g), M.euclidean_to_riemannian_gradient(x, g)
    ret, ex = M.retraction(x, u), M.exp(x, u)
    tproj = M.transport_projection(x, y, u)
    for j in range(S):
        close(inner[j], Pm.inner_product(x[j], u[j], v[j]))
        close(proj[j], Pm.projection(x[j], g[j]))
        close(rgrad[j], Pm.euclidean_to_riemannian_gradient(x[j], g[j]))
        close(ret[j], Pm.retraction(x[j], u[j]))  # same retraction name in pymanopt
        close(ex[j], Pm.exp(x[j], u[j]))
        close(tproj[j], Pm.transport(x[j], y[j], u[j]))  # pymanopt transports by projection

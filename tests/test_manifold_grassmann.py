"""Grassmann manifold Gr(r, m) = St(r, m) / O(r) on orthonormal representatives: closed forms
on a known geodesic and against numpy/scipy, the quotient's invariances, the horizontal
space, the parallelization transport's definition and continuity, and pymanopt's Grassmann.
The identities every manifold satisfies are in rfl.testing.manifold (test_manifold_contract)."""

import numpy as np
import pytest
import scipy.linalg

from rfl.manifolds import Grassmann

S, M_, R = 4, 8, 3
TOL = 1e-12


def close(a, b, tol=TOL):
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def T(a):
    return np.swapaxes(a, -1, -2)


def projector(u):
    """U U^T: the subspace, independent of the representative."""
    return u @ T(u)


def orthogonal(rng, k, s=S):
    q, _ = np.linalg.qr(rng.standard_normal((s, k, k)))
    return q


def horizontal_defect(x, u):
    return np.linalg.norm(T(x) @ u, axis=(-2, -1))


@pytest.fixture
def rng():
    return np.random.default_rng(20240603)


def tangent(G, rng, x, scale=1.0):
    return scale * G.random_tangent(rng, x)


def known_geodesic(rng, theta):
    """U = Gm U0 Q, xi = Gm xi0 Q with U0 = [e_1..e_r], xi0 = [theta_i e_{r+i}],
    so that Exp_U(xi) = Gm [e_i cos theta_i + e_{r+i} sin theta_i] Q."""
    u0 = np.eye(M_)[:, :R]
    xi0 = np.eye(M_)[:, R:2 * R] * theta
    y0 = u0 * np.cos(theta) + xi0 / theta * np.sin(theta)
    g, q = orthogonal(rng, M_), orthogonal(rng, R)
    return g @ u0 @ q, g @ xi0 @ q, g @ y0 @ q


# ---- construction --------------------------------------------------------------
def test_names():
    G = Grassmann(M_, R)
    assert G.name == "grassmann" and G.point_shape == (M_, R) and G.dim == R * (M_ - R)
    assert G.retraction_name == "svd" and G.transport_name == "parallelization"
    assert Grassmann(M_, R, retraction="exp", transport="projection").retraction_name == "exp"
    with pytest.raises(ValueError):
        Grassmann(M_, R, retraction="qr")
    with pytest.raises(ValueError):
        Grassmann(R, M_)


# ---- horizontal space ------------------------------------------------------------
def test_projection_onto_the_horizontal_space(rng):
    """P_U(G) = (I - U U^T) G is horizontal (U^T xi = 0), and lifts at U Q are xi Q."""
    G = Grassmann(M_, R)
    x = G.random_point(rng, S)
    g = rng.standard_normal((S, M_, R))
    p = G.projection(x, g)
    assert np.all(horizontal_defect(x, p) < TOL)
    close(p, np.stack([(np.eye(M_) - x[j] @ x[j].T) @ g[j] for j in range(S)]))
    q = orthogonal(rng, R)
    close(G.projection(x @ q, g @ q), p @ q)


def test_gradient_of_an_invariant_cost_is_the_stiefel_gradient(rng):
    """For f(U) = tr(U^T A U), invariant under U -> U Q, U^T G is symmetric and the horizontal
    projection equals the Stiefel projection G - U sym(U^T G) (the quotient's gradient)."""
    G = Grassmann(M_, R)
    x = G.random_point(rng, S)
    a = rng.standard_normal((M_, M_))
    egrad = (a + a.T) @ x
    utg = T(x) @ egrad
    close(G.euclidean_to_riemannian_gradient(x, egrad), egrad - x @ (0.5 * (utg + T(utg))))


# ---- retractions ---------------------------------------------------------------
@pytest.mark.parametrize("m,r", [(M_, R), (100, 5), (28, 2)])
def test_svd_retraction_formula(rng, m, r):
    """For horizontal xi, P Q^T (numpy's SVD of U + xi) = (U + xi)(I + xi^T xi)^{-1/2}, the
    inverse square root by scipy; r = 2 takes the closed-form Gram path."""
    G = Grassmann(m, r, retraction="svd")
    x = G.random_point(rng, S)
    u = tangent(G, rng, x, 2.0)
    want = [(x[j] + u[j]) @ np.linalg.inv(scipy.linalg.sqrtm(np.eye(r) + u[j].T @ u[j])).real
            for j in range(S)]
    close(G.retraction(x, u), np.stack(want))
    p, _, qt = np.linalg.svd(x + u, full_matrices=False)
    close(G.retraction(x, u), p @ qt)


# ---- exp / log / dist -----------------------------------------------------------
def test_exp_log_dist_on_known_geodesic(rng):
    G = Grassmann(M_, R)
    theta = np.array([0.3, 0.9, 1.4])  # principal angles, all < pi/2
    u, xi, y = known_geodesic(rng, theta)
    close(G.exp(u, xi), y)
    close(G.log(u, y), xi)
    close(G.dist(u, y), np.full(S, np.linalg.norm(theta)))
    # beyond pi/2 the geodesic no longer minimises: d = ||min(theta, pi - theta)||
    theta2 = np.array([0.3, 2.0, 1.4])
    u, xi, y = known_geodesic(rng, theta2)
    close(G.exp(u, xi), y)
    close(G.dist(u, y), np.full(S, np.linalg.norm([0.3, np.pi - 2.0, 1.4])))


def test_log_and_dist_independent_of_representative(rng):
    G = Grassmann(M_, R)
    x, y = G.random_point(rng, S), G.random_point(rng, S)
    q = orthogonal(rng, R)
    lg = G.log(x, y)
    close(G.log(x, y @ q), lg)  # independent of the representative of V
    close(G.log(x @ q, y), lg @ q)  # horizontal lift at U Q is xi Q
    d = G.dist(x, y)
    close(G.dist(x, y @ q), d)
    close(G.dist(x @ q, y), d)
    # same subspace -> distance 0 (arccos of sigma = 1 - O(eps) would give ~1e-8 here)
    close(G.dist(x, x @ q), np.zeros(S))
    close(G.log(x, x @ q), np.zeros_like(x))
    # Exp at another representative spans the same subspace, and Exp(Log) at far points
    u = tangent(G, rng, x)
    close(projector(G.exp(x @ q, u @ q)), projector(G.exp(x, u)))
    close(projector(G.retraction(x @ q, u @ q)), projector(G.retraction(x, u)))
    close(projector(G.exp(x, lg)), projector(y))


def test_dist_is_the_norm_of_the_principal_angles(rng):
    """cos theta_i are the singular values of U^T V (numpy's SVD, arccos)."""
    G = Grassmann(M_, R)
    x, y = G.random_point(rng, S), G.random_point(rng, S)
    want = [np.linalg.norm(np.arccos(np.linalg.svd(x[j].T @ y[j], compute_uv=False)))
            for j in range(S)]
    close(G.dist(x, y), want)


# ---- transports ----------------------------------------------------------------
def test_transport_parallelization(rng):
    G = Grassmann(M_, R, transport="parallelization")
    x, y = G.random_point(rng, S), G.random_point(rng, S)
    u = tangent(G, rng, x)
    close(G.transport(y, x, G.transport(x, y, u)), u)  # back-transport inverts
    # definition: X_perp K -> Y_perp K for ANY orthonormal basis X_perp of span(X)^perp, with
    # Y_perp the basis of span(Y)^perp closest to it (polar factor of (I - Y Y^T) X_perp). Checked
    # at Y within moderate principal angles of X, where transports are used: the closest basis
    # has condition 1/cos^2(largest angle), which is unbounded for nearly orthogonal subspaces.
    y = G.retraction(x, 0.5 * G.random_tangent(rng, x))
    xp = np.linalg.qr(x, mode="complete")[0][..., R:]
    q = np.linalg.qr(rng.standard_normal((S, M_ - R, M_ - R)))[0]
    k = rng.standard_normal((S, M_ - R, R))
    for basis in (xp, xp @ q):
        uu, _, vt = np.linalg.svd(basis - y @ (np.swapaxes(y, -1, -2) @ basis), full_matrices=False)
        close(G.transport(x, y, basis @ k), (uu @ vt) @ k)
    # on ambient vectors it acts as B_Y B_X^+, i.e. it first projects onto H_X
    g = rng.standard_normal((S, M_, R))
    close(G.transport(x, y, g), G.transport(x, y, G.projection(x, g)))


def test_transport_parallelization_is_continuous(rng):
    """Between nearby subspaces the transport is close to the identity (second order here:
    its first-order term vanishes on horizontal vectors). A Householder basis per point jumps
    where a pivot changes sign: that version gave errors up to 0.28 for steps of 1e-2."""
    G = Grassmann(100, 5, transport="parallelization")
    x = G.random_point(rng, 2000)
    h = 1e-2
    y = G.retraction(x, h * G.random_tangent(rng, x))
    v = G.random_tangent(rng, x)
    err = G.norm(y, G.transport(x, y, v) - G.projection(y, v))
    assert err.max() < 10 * h


# ---- pymanopt ------------------------------------------------------------------
def test_agrees_with_pymanopt(rng):
    G = Grassmann(M_, R)
    Pm = G.to_pymanopt()
    assert type(Pm).__name__ == "Grassmann"
    x, y = G.random_point(rng, S), G.random_point(rng, S)
    u, v = tangent(G, rng, x), tangent(G, rng, x)
    g = rng.standard_normal((S, M_, R))
    inner, proj, rgrad = G.inner(x, u, v), G.projection(x, g), G.euclidean_to_riemannian_gradient(x, g)
    ret, ex, lg, d = G.retraction(x, u), G.exp(x, u), G.log(x, y), G.dist(x, y)
    tproj = G.transport_projection(x, y, u)
    for j in range(S):
        close(inner[j], Pm.inner_product(x[j], u[j], v[j]))
        close(proj[j], Pm.projection(x[j], g[j]))
        close(rgrad[j], Pm.euclidean_to_riemannian_gradient(x[j], g[j]))
        close(ret[j], Pm.retraction(x[j], u[j]))  # both: polar factor of U + xi
        # pymanopt re-orthonormalises Exp by QR, we by the polar factor: the
        # representatives differ by an O(r) factor, the subspaces agree
        close(projector(ex[j]), projector(Pm.exp(x[j], u[j])))
        close(lg[j], Pm.log(x[j], y[j]))
        # pymanopt uses arccos (accurate here: the random angles are far from 0)
        close(d[j], Pm.dist(x[j], y[j]))
        close(tproj[j], Pm.transport(x[j], y[j], u[j]))  # pymanopt transports by projection

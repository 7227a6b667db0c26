"""Stiefel manifold St(p, n) with the embedded metric: checks against the
mathematics (defining identities, special cases, finite differences) and
against pymanopt's Stiefel."""

import numpy as np
import pytest
import scipy.linalg

from manifold_cases import assert_batched_equals_per_agent
from rfl.manifolds import MANIFOLDS, Stiefel

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


@pytest.fixture
def rng():
    return np.random.default_rng(20240602)


def tangent(M, rng, x, scale=1.0):
    return scale * M.random_tangent(rng, x)


# ---- construction --------------------------------------------------------------
def test_registered_and_names():
    assert MANIFOLDS["stiefel"] is Stiefel
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


def test_random_point_on_manifold(rng):
    M = Stiefel(N, P)
    x = M.random_point(rng, S)
    assert x.shape == (S, N, P)
    close(T(x) @ x, np.broadcast_to(np.eye(P), (S, P, P)))
    assert np.all(M.distance_from_manifold(x) < TOL)
    assert np.all(M.distance_from_manifold(2 * x) > 1)


# ---- metric and tangent space -------------------------------------------------
def test_inner_and_proj(rng):
    M = Stiefel(N, P)
    x = M.random_point(rng, S)
    g, h = rng.standard_normal((2, S, N, P))
    close(M.inner(x, g, h), [np.trace(g[j].T @ h[j]) for j in range(S)])
    p = M.projection(x, g)
    assert np.all(tangent_defect(x, p) < TOL)
    close(M.projection(x, p), p)  # idempotent
    # g - P(g) = X sym(X^T g) is normal: orthogonal to every tangent vector
    close(M.inner(x, g - p, tangent(M, rng, x)), np.zeros(S))
    # a tangent vector X Omega + X_perp K is left unchanged
    om = skew(rng.standard_normal((S, P, P)))
    xp = np.linalg.qr(x, mode="complete")[0][..., P:]
    w = x @ om + xp @ rng.standard_normal((S, N - P, P))
    close(M.projection(x, w), w)
    close(M.euclidean_to_riemannian_gradient(x, g), p)


@pytest.mark.parametrize("retraction", Stiefel.RETRACTIONS)
def test_egrad2rgrad_finite_difference(rng, retraction):
    """<grad f(X), U> = d/dt f(R_X(t U)) for f(X) = tr(X^T A X D) + tr(C^T X), G = 2 A X D + C."""
    M = Stiefel(N, P, retraction=retraction)
    a = rng.standard_normal((N, N))
    a = a + a.T
    d = np.diag(np.arange(1.0, P + 1))
    c = rng.standard_normal((N, P))

    def f(x):
        return np.einsum("sij,ik,skl,lj->s", x, a, x, d) + np.einsum("ij,sij->s", c, x)

    x = M.random_point(rng, S)
    u = tangent(M, rng, x)
    grad = M.euclidean_to_riemannian_gradient(x, 2 * a @ x @ d + c)
    fd = (f(M.retraction(x, H * u)) - f(M.retraction(x, -H * u))) / (2 * H)
    close(M.inner(x, grad, u), fd, FD_TOL)


# ---- retractions ---------------------------------------------------------------
@pytest.mark.parametrize("retraction", Stiefel.RETRACTIONS)
def test_retraction_centred_and_first_order(rng, retraction):
    M = Stiefel(N, P, retraction=retraction)
    x = M.random_point(rng, S)
    u = tangent(M, rng, x)
    close(M.retraction(x, M.zero_vector(x)), x)
    fd = (M.retraction(x, H * u) - M.retraction(x, -H * u)) / (2 * H)
    close(fd, u, FD_TOL)


def test_polar_retraction_formula(rng):
    """R_X(V) = (X + V)(I + V^T V)^{-1/2}, the inverse square root taken by scipy."""
    M = Stiefel(N, P, retraction="polar")
    x = M.random_point(rng, S)
    u = tangent(M, rng, x, 2.0)
    want = [(x[j] + u[j]) @ np.linalg.inv(scipy.linalg.sqrtm(np.eye(P) + u[j].T @ u[j])).real
            for j in range(S)]
    close(M.retraction(x, u), np.stack(want))


def test_qr_retraction_characterisation(rng):
    """Y = qf(X + V) iff Y in St and Y^T (X + V) is upper triangular with positive diagonal."""
    M = Stiefel(N, P, retraction="qr")
    x = M.random_point(rng, S)
    u = tangent(M, rng, x, 2.0)
    y = M.retraction(x, u)
    assert np.all(M.distance_from_manifold(y) < TOL)
    r = T(y) @ (x + u)
    close(np.tril(r, -1), np.zeros_like(r))
    assert np.all(np.diagonal(r, axis1=1, axis2=2) > 0)
    close(y @ r, x + u)


@pytest.mark.parametrize("retraction", Stiefel.RETRACTIONS)
def test_retraction_stays_on_manifold_1e5_steps(retraction):
    M = Stiefel(N, P, retraction=retraction)
    rng = np.random.default_rng(8)
    x = M.random_point(rng, S)
    chunk = 1000
    for _ in range(100_000 // chunk):
        for g in 1e-2 * rng.standard_normal((chunk, S, N, P)):
            x = M.retraction(x, M.projection(x, g))
    assert np.all(M.distance_from_manifold(x) < TOL)


# ---- exp (optional closed form) and the missing log --------------------------
def test_exp_is_a_geodesic(rng):
    M = Stiefel(N, P)
    x = M.random_point(rng, S)
    u = tangent(M, rng, x, 1.3)
    y = M.exp(x, u)
    assert np.all(M.distance_from_manifold(y) < TOL)
    close(M.exp(x, M.zero_vector(x)), x)
    fd = (M.exp(x, H * u) - M.exp(x, -H * u)) / (2 * H)
    close(fd, u, FD_TOL)
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


def test_log_and_dist_not_implemented(rng):
    M = Stiefel(N, P)
    x = M.random_point(rng, S)
    with pytest.raises(NotImplementedError, match="closed-form"):
        M.log(x, x)
    with pytest.raises(NotImplementedError):
        M.dist(x, x)


# ---- transports ----------------------------------------------------------------
def test_transport_parallelization(rng):
    M = Stiefel(N, P, transport="parallelization")
    x, y = M.random_point(rng, S), M.random_point(rng, S)
    u, v = tangent(M, rng, x), tangent(M, rng, x)
    a, b = rng.standard_normal(2)
    tu, tv = M.transport(x, y, u), M.transport(x, y, v)
    close(M.transport(x, y, a * u + b * v), a * tu + b * tv)  # linear
    assert np.all(tangent_defect(y, tu) < TOL)  # in T_Y St
    close(M.inner(y, tu, tv), M.inner(x, u, v))  # isometric
    close(M.inner(y, tu, tu), M.inner(x, u, u))
    close(M.transport(x, x, u), u)  # identity on T_X
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
        proj = basis - y @ (T(y) @ basis)
        uu, _, vt = np.linalg.svd(proj, full_matrices=False)
        yp = uu @ vt
        close(T(yp) @ tu, T(basis) @ u)
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


def test_transport_projection(rng):
    # Projection transport is linear and lands in T_Y but is NOT isometric; it is
    # only norm non-increasing, which is what is checked instead.
    M = Stiefel(N, P, transport="projection")
    x, y = M.random_point(rng, S), M.random_point(rng, S)
    u, v = tangent(M, rng, x), tangent(M, rng, x)
    tu = M.transport(x, y, u)
    close(M.transport(x, y, 2 * u - 3 * v), 2 * tu - 3 * M.transport(x, y, v))
    assert np.all(tangent_defect(y, tu) < TOL)
    assert np.all(M.norm(y, tu) <= M.norm(x, u) + TOL)
    close(M.transport(x, x, u), u)


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


# ---- batched == per-agent ------------------------------------------------------
@pytest.mark.parametrize("retraction,transport",
                         [("polar", "parallelization"), ("qr", "projection")])
def test_batched_equals_per_agent(rng, retraction, transport):
    M = Stiefel(N, P, retraction=retraction, transport=transport)
    x, y = M.random_point(rng, S), M.random_point(rng, S)
    assert_batched_equals_per_agent(
        M, ["inner", "norm", "projection", "euclidean_to_riemannian_gradient", "retraction", "exp", "transport",
            "transport_parallelization", "distance_from_manifold"], TOL,
        x=x, y=y, u=tangent(M, rng, x), v=tangent(M, rng, x), g=rng.standard_normal((S, N, P)))


def test_inverse_polar_retraction_inverts_the_retraction():
    """R_X(R_X^{-1}(Y)) = Y, R_X^{-1}(R_X(V)) = V, and the result is tangent (Kaneko et al. 2013)."""
    m = Stiefel(7, 3)
    rng = np.random.default_rng(12)
    x = m.random_point(rng, 4)
    v = 0.6 * m.random_tangent(rng, x)
    y = m.retraction(x, v)
    w = m.tangent_log(x, y)
    np.testing.assert_allclose(w, v, rtol=0, atol=1e-12)
    np.testing.assert_allclose(m.retraction(x, w), y, rtol=0, atol=1e-12)
    np.testing.assert_allclose(x.swapaxes(-1, -2) @ w + w.swapaxes(-1, -2) @ x, 0, atol=1e-12)
    np.testing.assert_allclose(m.tangent_exp(x, w), y, rtol=0, atol=1e-12)
    assert Stiefel.offers("tangent_mean", "polar") and not Stiefel.offers("tangent_mean", "qr")

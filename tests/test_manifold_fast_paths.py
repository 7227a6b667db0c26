"""The closed-form fast paths of the geometry against numpy/scipy references, on the inputs
that reach their guarded branches: 2 x 2 eigendecompositions (SPD(2), CFMSPD), the 2 x 2 Gram
inverse square root of the polar retraction (St(n, 2), MBCFSti and kPCA at r = 2), the
Newton-Schulz square roots near the identity that replace LAPACK for nearby points (p >= 3:
polar retraction, parallelization transport), and the sphere's Log-free parallel transport at
obtuse and antipodal pairs."""

import numpy as np
import pytest
import scipy.linalg

from rfl.manifolds import Grassmann, Sphere, Stiefel
from rfl.manifolds.spd import eigh_sym
from rfl.manifolds.stiefel import (_NEAR_IDENTITY, _POLAR_GRAM_RATIO, _gram_inv_sqrt,
                                   _sqrt_pair_near_identity, complement_transport)


def random_sym(rng, shape, n):
    a = rng.standard_normal(shape + (n, n))
    return a + np.swapaxes(a, -1, -2)


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("batch", [(5,), (4, 2), (2, 3, 2)])
def test_eigh_sym_matches_lapack_for_any_batch_shape(n, batch):
    rng = np.random.default_rng(0)
    a = random_sym(rng, batch, n)
    w, v = eigh_sym(a)
    w_ref, _ = np.linalg.eigh(a)
    assert w.shape == batch + (n,) and v.shape == batch + (n, n)
    np.testing.assert_allclose(w, w_ref, rtol=0, atol=1e-13)
    np.testing.assert_allclose((v * w[..., None, :]) @ np.swapaxes(v, -1, -2), a, rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, np.broadcast_to(np.eye(n), a.shape), atol=1e-13)


def test_eigh_sym_reads_the_lower_triangle_as_lapack():
    rng = np.random.default_rng(1)
    a = random_sym(rng, (6,), 2)
    a[..., 0, 1] = 99.0                                 # garbage in the upper triangle
    np.testing.assert_allclose(eigh_sym(a)[0], np.linalg.eigh(a)[0], atol=1e-13)


def inv_sqrt_ref(c):
    return np.stack([np.real(scipy.linalg.inv(scipy.linalg.sqrtm(ci))) for ci in c])


def test_gram_inv_sqrt_two_by_two_equals_the_matrix_function():
    """Gram matrices of retraction steps, I + V^T V, and a wider spread within the ratio."""
    rng = np.random.default_rng(2)
    vs = 0.5 * rng.standard_normal((20, 7, 2))
    c = np.eye(2) + np.swapaxes(vs, -1, -2) @ vs
    c = np.concatenate([c, [[[3.0, 0.4], [0.4, 0.5]]]])             # eigenvalues 0.44, 3.06
    m, good = _gram_inv_sqrt(c)
    assert good.all()
    np.testing.assert_allclose(m, inv_sqrt_ref(c), rtol=1e-12, atol=1e-12)


def test_gram_inv_sqrt_flags_spread_beyond_the_ratio_as_lapack_does():
    """The mask says which C^{-1/2} may be used: eigenvalue ratio above _POLAR_GRAM_RATIO.
    The p = 2 closed form and the eigh branch (p = 3, padded with a unit eigenvalue in the
    middle) must agree on it on both sides of the ratio."""
    lam_max = 3.0                       # not 1: a ratio applied to 1 / lam_max would pass too
    ratios = np.array([0.5, 2.0, 1.01, 0.99, 0.2]) * _POLAR_GRAM_RATIO
    R = np.array([[np.cos(0.3), -np.sin(0.3)], [np.sin(0.3), np.cos(0.3)]])
    c2 = np.stack([R @ np.diag([r * lam_max, lam_max]) @ R.T for r in ratios])
    _, good2 = _gram_inv_sqrt(c2)
    want = ratios > _POLAR_GRAM_RATIO
    np.testing.assert_array_equal(good2, want)
    c3 = np.stack([np.diag([r * lam_max, 0.5 * lam_max, lam_max]) for r in ratios])
    _, good3 = _gram_inv_sqrt(c3)
    np.testing.assert_array_equal(good3, want)


def sqrtm_ref(c):
    return np.stack([np.real(scipy.linalg.sqrtm(ci)) for ci in c])


def spd_at_distance(rng, p, dist):
    """Symmetric positive definite p x p matrices I + E with ||E||_F = dist, one per entry."""
    out = []
    for d in dist:
        e = random_sym(rng, (), p)
        out.append(np.eye(p) + d * e / np.linalg.norm(e))
    return np.stack(out)


@pytest.mark.parametrize("p", [3, 5])
def test_newton_schulz_square_roots_near_the_identity(p):
    """M^{1/2} and M^{-1/2} at distances 1e-12 ... 0.45 of I equal scipy's sqrtm (and its
    inverse); beyond the radius, and for NaN, the matrices are not flagged."""
    rng = np.random.default_rng(4)
    dist = [1e-12, 1e-6, 1e-3, 0.1, 0.3, 0.45, 0.9 * _NEAR_IDENTITY]
    m = spd_at_distance(rng, p, dist)
    y, z, near = _sqrt_pair_near_identity(m)
    assert near.all()
    np.testing.assert_allclose(y, sqrtm_ref(m), rtol=0, atol=1e-14)
    np.testing.assert_allclose(z, inv_sqrt_ref(m), rtol=0, atol=1e-14)
    outside = spd_at_distance(rng, p, [1.1 * _NEAR_IDENTITY, 0.8])
    nan = np.full((1, p, p), np.nan)
    _, _, flags = _sqrt_pair_near_identity(np.concatenate([m[:2], outside, nan]))
    np.testing.assert_array_equal(flags, [True, True, False, False, False])


def test_newton_schulz_flags_only_converged_matrices(monkeypatch):
    """With a budget of one step, the matrix at 1e-12 of I converges (flagged) and the one at
    0.45 does not (not flagged: the callers then take LAPACK's path for it)."""
    import rfl.manifolds.stiefel as stiefel
    monkeypatch.setattr(stiefel, "_NEWTON_SCHULZ_STEPS", 1)
    m = spd_at_distance(np.random.default_rng(8), 4, [1e-12, 0.45])
    y, _, near = stiefel._sqrt_pair_near_identity(m)
    np.testing.assert_array_equal(near, [True, False])
    # the flag certifies ||I - Z Y||_F <= 8 p eps (the production tolerance), which bounds Y's
    # error as M^{1/2} (||M|| ~ 1) to about half of it; sqrtm's own error is O(p eps) more.
    # Not 1e-15: the products' rounding depends on the BLAS kernel (Haswell: 1.7e-15 here)
    tol = 8 * 4 * np.finfo(float).eps
    np.testing.assert_allclose(y[0], sqrtm_ref(m[:1])[0], rtol=0, atol=tol)


def test_gram_inv_sqrt_mixes_newton_schulz_and_eigh_rows():
    """p = 5: scaled near-identity Gram matrices (Newton-Schulz on C / (tr C / p)), a spread
    within the ratio (eigh) and one beyond it (flagged), in one batch."""
    rng = np.random.default_rng(5)
    vs = 0.05 * rng.standard_normal((4, 9, 5))
    near = np.array([7.3, 1.0, 0.02, 1e3])[:, None, None] * (np.eye(5) + np.swapaxes(vs, -1, -2) @ vs)
    q = np.linalg.qr(rng.standard_normal((5, 5)))[0]
    within = q @ np.diag([0.1, 0.3, 0.5, 0.8, 1.0]) @ q.T                  # ratio 0.1 > 1/16
    beyond = q @ np.diag([0.01, 0.3, 0.5, 0.8, 1.0]) @ q.T                 # ratio 0.01
    c = np.concatenate([near, within[None], beyond[None]])
    m, good = _gram_inv_sqrt(c)
    np.testing.assert_array_equal(good, [True] * 5 + [False])
    ref = inv_sqrt_ref(c[:5])
    scale = np.linalg.norm(ref, axis=(-2, -1), keepdims=True)        # entries relative to ||C^{-1/2}||
    np.testing.assert_allclose(m[:5] / scale, ref / scale, rtol=0, atol=1e-14)


def complement_transport_ref(x, y, w):
    """Y_perp X_perp^T w with Y_perp the polar factor of (I - Y Y^T) X_perp: full n x n bases."""
    n, p = x.shape[-2:]
    out = []
    for xi, yi, wi in zip(x, y, w):
        xp = np.linalg.qr(xi, mode="complete")[0][:, p:]
        u, _, vt = np.linalg.svd(xp - yi @ (yi.T @ xp), full_matrices=False)
        out.append((u @ vt) @ (xp.T @ wi))
    return np.stack(out)


def test_complement_transport_near_and_far_pairs_in_one_batch():
    """Nearby points (X^T Y near orthogonal: the Newton-Schulz branch) and far ones (the SVD
    branch) in one batch, against the definition with full bases; Gr(3, 12) and Gr(5, 20)."""
    rng = np.random.default_rng(6)
    for n, p in ((12, 3), (20, 5)):
        g = Grassmann(n, p)
        x = g.random_point(rng, 6)
        steps = np.array([1e-8, 1e-3, 0.05, 0.3])[:, None, None]
        v = g.random_tangent(rng, x[:4])
        v /= np.linalg.norm(v, axis=(-2, -1), keepdims=True)
        y = np.concatenate([g.retraction(x[:4], steps * v), g.random_point(rng, 2)])
        a = np.swapaxes(x, -1, -2) @ y
        _, _, near = _sqrt_pair_near_identity(np.swapaxes(a, -1, -2) @ a)
        assert near[:4].all() and not near[4:].any()         # both branches are taken
        w = g.projection(x, rng.standard_normal(x.shape))
        np.testing.assert_allclose(complement_transport(x, y, w), complement_transport_ref(x, y, w),
                                   rtol=0, atol=1e-12)


def test_polar_retraction_on_a_newton_schulz_batch_is_the_svd_polar_factor():
    """St(20, 4): retraction steps of 1e-8 ... 0.5 (Newton-Schulz) and 20 (eigh) against
    U V^T of the thin SVD of X + V."""
    rng = np.random.default_rng(7)
    st = Stiefel(20, 4, retraction="polar")
    x = st.random_point(rng, 5)
    v = st.random_tangent(rng, x)
    v *= np.array([1e-8, 1e-3, 0.1, 0.5, 20.0])[:, None, None] / np.linalg.norm(v, axis=(-2, -1), keepdims=True)
    u, _, vt = np.linalg.svd(x + v, full_matrices=False)
    np.testing.assert_allclose(st.retraction(x, v), u @ vt, rtol=0, atol=1e-13)


def test_sphere_parallel_transport_at_obtuse_and_antipodal_pairs():
    """Gamma(u) = u - <y, u>/(1 + <x, y>) (x + y) for <x, y> < 0 too; at y = -x (no unique
    geodesic) u itself; mixing both in one batch takes the guarded branch."""
    rng = np.random.default_rng(3)
    m = Sphere(5, transport="parallel")
    x = m.random_point(rng, 3)
    y = -x + 0.3 * rng.standard_normal(x.shape)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    y[2] = -x[2]
    assert np.all(np.einsum("si,si->s", x[:2], y[:2]) < 0)
    u = m.random_tangent(rng, x)
    got = m.transport(x, y, u)
    for j in range(2):           # the geodesic formula through Log, for the obtuse pairs
        v = m.log(x[j:j + 1], y[j:j + 1])[0]
        t = np.linalg.norm(v)
        e = v / t
        want = u[j] + (np.cos(t) - 1) * e * (e @ u[j]) - np.sin(t) * x[j] * (e @ u[j])
        np.testing.assert_allclose(got[j], want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got[2], u[2], rtol=0, atol=0)
    # the obtuse pairs alone (unguarded branch) give the same vectors
    np.testing.assert_allclose(m.transport(x[:2], y[:2], u[:2]), got[:2], rtol=0, atol=1e-15)

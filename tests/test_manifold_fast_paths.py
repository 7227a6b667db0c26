"""The closed-form fast paths of the geometry against numpy/scipy references, on the inputs
that reach their guarded branches: 2 x 2 eigendecompositions (SPD(2), CFMSPD), the 2 x 2 Gram
inverse square root of the polar retraction (St(n, 2), MBCFSti and kPCA at r = 2) and the
sphere's Log-free parallel transport at obtuse and antipodal pairs."""

import numpy as np
import pytest
import scipy.linalg

from rfl.manifolds import Sphere
from rfl.manifolds.spd import eigh_sym
from rfl.manifolds.stiefel import _POLAR_GRAM_RATIO, _gram_inv_sqrt


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
    lam_max = 1.0
    ratios = np.array([0.5, 2.0, 1.01, 0.99, 0.2]) * _POLAR_GRAM_RATIO
    R = np.array([[np.cos(0.3), -np.sin(0.3)], [np.sin(0.3), np.cos(0.3)]])
    c2 = np.stack([R @ np.diag([r * lam_max, lam_max]) @ R.T for r in ratios])
    _, good2 = _gram_inv_sqrt(c2)
    want = ratios > _POLAR_GRAM_RATIO
    np.testing.assert_array_equal(good2, want)
    c3 = np.stack([np.diag([r * lam_max, 0.5 * lam_max, lam_max]) for r in ratios])
    _, good3 = _gram_inv_sqrt(c3)
    np.testing.assert_array_equal(good3, want)


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

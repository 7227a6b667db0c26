"""Declarations and edge cases of the manifolds that the shared contract does not reach: the
dimension and point shape each class declares against its formula, refused sizes, default
arguments, integer input, rank-deficient QR factors, non-positive-definite distances and the
placeholders behind ``offers``."""

import numpy as np
import pytest

from rfl.manifolds import SPD, Euclidean, Grassmann, Lorentz, Sphere, Stiefel
from rfl.manifolds.base import _placeholder
from rfl.manifolds.lorentz import lorentz_to_poincare
from rfl.manifolds.stiefel import _qf


@pytest.mark.parametrize("manifold, shape, dim", [
    (Sphere(7), (7,), 6),                                     # S^{n-1} in R^n
    (Stiefel(9, 3), (9, 3), 9 * 3 - 6),                       # n p - p (p + 1) / 2
    (Grassmann(9, 3), (9, 3), 3 * 6),                         # r (m - r)
    (SPD(4), (4, 4), 10),                                     # n (n + 1) / 2
    (Lorentz(5), (6,), 5),                                    # H^d in R^{d+1}
    (Euclidean(3, 2), (3, 2), 6),
])
def test_point_shape_and_dimension_follow_the_formulas(manifold, shape, dim):
    assert manifold.point_shape == shape and manifold.dim == dim


def test_stiefel_and_grassmann_refuse_p_outside_one_to_n_with_the_sizes():
    with pytest.raises(ValueError, match=r"need 1 <= p <= n, got n=3, p=4"):
        Stiefel(3, 4)
    with pytest.raises(ValueError, match=r"need 1 <= r <= m, got m=3, r=0"):
        Grassmann(3, 0)


def test_random_point_draws_one_point_by_default():
    rng = np.random.default_rng(0)
    for m in (SPD(3), Sphere(4), Stiefel(5, 2), Grassmann(5, 2), Lorentz(3)):
        assert m.random_point(rng).shape == (1,) + m.point_shape


def test_spd_distance_counts_the_most_negative_eigenvalue():
    """A symmetric matrix with eigenvalues -2, 1, 3: distance 2 (the asymmetric part is 0)."""
    q = np.linalg.qr(np.random.default_rng(1).standard_normal((3, 3)))[0]
    x = (q @ np.diag([-2.0, 1.0, 3.0]) @ q.T)[None]
    np.testing.assert_allclose(SPD(3).distance_from_manifold(x), [2.0], rtol=1e-12)


def test_lorentz_maps_take_integer_input_as_float():
    """Integer arrays (a user's data, or egrad of integer costs) give the float results."""
    m = Lorentz(2)
    x = m.random_point(np.random.default_rng(2), 3)
    egrad = np.array([[1, 2, 3], [0, -1, 4], [2, 2, -5]])
    np.testing.assert_array_equal(m.euclidean_to_riemannian_gradient(x, egrad),
                                  m.euclidean_to_riemannian_gradient(x, egrad.astype(float)))
    pts = np.array([[1, 0, 0], [3, 2, 2]])                    # on H^2: -x0^2 + x1^2 + x2^2 = -1
    np.testing.assert_allclose(lorentz_to_poincare(pts), [[0.0, 0.0], [0.5, 0.5]])


def test_qf_of_a_rank_deficient_matrix_keeps_orthonormal_columns():
    """A zero column gives R_ii = 0; its sign is taken as +1, so Q keeps that column."""
    a = np.random.default_rng(3).standard_normal((1, 6, 3))
    a[0, :, 1] = 0.0
    q = _qf(a)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.eye(3)[None], atol=1e-12)


def test_sphere_to_pymanopt_is_the_same_sphere():
    pytest.importorskip("pymanopt")
    assert Sphere(6).to_pymanopt().dim == 5


def test_tangent_log_refuses_a_retraction_without_an_inverse():
    """A Stiefel whose QR inverse is a placeholder: ``offers`` says no tangent mean for "qr"
    (although the first retraction, "polar", has one) and ``tangent_log`` refuses by name."""

    class NoQRInverse(Stiefel):
        @_placeholder
        def inverse_retraction_qr(self, x, y):
            raise AssertionError("a placeholder is never called")

    assert NoQRInverse.offers("tangent_mean", "polar")
    assert not NoQRInverse.offers("tangent_mean", "qr")
    m = NoQRInverse(5, 2, retraction="qr")
    x = m.random_point(np.random.default_rng(4), 2)
    with pytest.raises(NotImplementedError, match="retraction 'qr' has no inverse"):
        m.tangent_log(x, x)

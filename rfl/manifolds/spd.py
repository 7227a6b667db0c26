"""The SPD manifold S^n_{++} = {X in R^{n x n} : X = X^T, X > 0} with the
affine-invariant metric (paper Appendix E, 'SPD manifold').

Points and tangent vectors (symmetric matrices): ``(S, n, n)``.
"""

from __future__ import annotations

import numpy as np

from .base import Manifold


def _t(a: np.ndarray) -> np.ndarray:
    return a.swapaxes(-1, -2)


def _sym(a: np.ndarray) -> np.ndarray:
    """sym(A) = (A + A^T) / 2 (exactly symmetric in floating point)."""
    return 0.5 * (a + _t(a))


def eigh_sym(a: np.ndarray):
    """Eigenvalues (ascending) and eigenvectors of symmetric ``a: (..., n, n)``, as
    ``np.linalg.eigh`` (which reads the lower triangle; so does this).

    n = 2 (CFMSPD's SPD(2)) in closed form, vectorised over the batch instead of one LAPACK
    call per matrix: with m = (a11 + a22)/2, h = (a11 - a22)/2 and b = a21, the eigenvalues
    are m -+ hypot(h, b) and the eigenvector of the larger one is (cos t, sin t), t =
    atan2(b, h)/2 (tan 2t = 2b / (a11 - a22)); the other is (-sin t, cos t). Both are accurate
    to O(eps ||a||), as LAPACK's.
    """
    if a.shape[-1] != 2:
        return np.linalg.eigh(a)
    p, b, q = a[..., 0, 0], a[..., 1, 0], a[..., 1, 1]
    h = 0.5 * (p - q)
    r = np.hypot(h, b)
    m = 0.5 * (p + q)
    w = np.stack([m - r, m + r], axis=-1)
    t = 0.5 * np.arctan2(b, h)
    c, s = np.cos(t), np.sin(t)
    v = np.empty(a.shape)
    v[..., 0, 0], v[..., 1, 0] = -s, c
    v[..., 0, 1], v[..., 1, 1] = c, s
    return w, v


def _symfun(a: np.ndarray, *fs):
    """f(A) = W f(Lambda) W^T for symmetric A = W Lambda W^T, one per f.

    ``a: (..., n, n)``; one batched eigendecomposition (``eigh_sym``) serves all ``fs``.
    """
    w, v = eigh_sym(a)
    out = tuple(_sym((v * f(w)[..., None, :]) @ _t(v)) for f in fs)
    return out if len(out) > 1 else out[0]


def _isqrt(w: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(w)


class SPD(Manifold):
    """S^n_{++} with <U, V>_X = tr(X^{-1} U X^{-1} V)."""

    name = "spd"
    RETRACTIONS = ("exp",)
    TRANSPORTS = ("parallel",)
    ISOMETRIC_TRANSPORTS = ("parallel",)

    @classmethod
    def examples(cls):
        """SPD(2) (CFMSPD; closed-form eigendecompositions), SPD(3) and SPD(5)."""
        return [cls(2), cls(3), cls(5)]

    def __init__(self, n: int, retraction: str | None = None, transport: str | None = None):
        super().__init__((n, n), n * (n + 1) // 2, retraction, transport)
        self.n = n

    def _whiten(self, x, y):
        """X^{1/2}, X^{-1/2} and M = X^{-1/2} Y X^{-1/2}: ``(S, n, n)`` each."""
        xh, xih = _symfun(x, np.sqrt, _isqrt)
        return xh, xih, _sym(xih @ y @ xih)

    def inner(self, x, u, v):
        """<U, V>_X = tr(X^{-1} U X^{-1} V)  (Appendix E)."""
        a = np.linalg.solve(x, u)
        b = a if v is u else np.linalg.solve(x, v)
        return np.einsum("sij,sji->s", a, b)

    def projection(self, x, u):
        """P_X(U) = sym(U): T_X S^n_{++} is the space of symmetric matrices."""
        return _sym(u)

    def euclidean_to_riemannian_gradient(self, x, egrad):
        """grad f(X) = X sym(G) X, G the Euclidean gradient."""
        return _sym(x @ _sym(egrad) @ x)

    def exp(self, x, u):
        """Exp_X(V) = X^{1/2} expm(X^{-1/2} V X^{-1/2}) X^{1/2}  (Appendix E)."""
        xh, _, m = self._whiten(x, u)
        return _sym(xh @ _symfun(m, np.exp) @ xh)

    def log(self, x, y):
        """Exp_X^{-1}(Y) = X^{1/2} logm(X^{-1/2} Y X^{-1/2}) X^{1/2}."""
        xh, _, m = self._whiten(x, y)
        return _sym(xh @ _symfun(m, np.log) @ xh)

    def dist(self, x, y):
        """d(X, Y) = ||logm(X^{-1/2} Y X^{-1/2})||_F = sqrt(sum_i log(lambda_i)^2)."""
        _, _, m = self._whiten(x, y)
        return np.sqrt(np.sum(np.log(np.linalg.eigvalsh(m)) ** 2, axis=-1))

    def _whiten_many(self, x, y):
        """X_i^{1/2} (S, 1, n, n) and M_iu = X_i^{-1/2} Y_iu X_i^{-1/2} (S, U, n, n): one
        eigendecomposition per agent's point, not per pair."""
        xh, xih = _symfun(x, np.sqrt, _isqrt)
        xih = xih[:, None]
        return xh[:, None], _sym(xih @ y @ xih)

    def log_many(self, x, y):
        """Log_{X_i}(Y_iu) = X_i^{1/2} logm(M_iu) X_i^{1/2}: ``(S, U, n, n)``."""
        xh, m = self._whiten_many(x, y)
        return _sym(xh @ _symfun(m, np.log) @ xh)

    def dist_many(self, x, y):
        """d(X_i, Y_iu) = sqrt(sum log(lambda(M_iu))^2): ``(S, U)``."""
        _, m = self._whiten_many(x, y)
        return np.sqrt(np.sum(np.log(np.linalg.eigvalsh(m)) ** 2, axis=-1))

    def transport_parallel(self, x, y, u):
        """Parallel transport along the geodesic from X to Y (Appendix E):

        Gamma(U) = E U E^T, E = (Y X^{-1})^{1/2} = X^{1/2} (X^{-1/2} Y X^{-1/2})^{1/2} X^{-1/2}.
        """
        xh, xih, m = self._whiten(x, y)
        e = xh @ _symfun(m, np.sqrt) @ xih
        return _sym(e @ u @ _t(e))

    def random_point(self, rng, n=1):
        """expm(sym(G) / 2) with G standard normal: ``(n, n, n)``."""
        g = rng.standard_normal((n, self.n, self.n))
        return _symfun(0.5 * _sym(g), np.exp)

    def distance_from_manifold(self, x):
        """||X - X^T||_F + max(0, -lambda_min(sym X))."""
        asym = np.linalg.norm(x - _t(x), axis=(-2, -1))
        lam_min = np.linalg.eigvalsh(_sym(x))[..., 0]
        return asym + np.maximum(0.0, -lam_min)

    def to_pymanopt(self):
        from pymanopt.manifolds import SymmetricPositiveDefinite
        return SymmetricPositiveDefinite(self.n)

"""The Grassmann manifold Gr(r, m) = St(r, m) / O(r) of r-dimensional subspaces of
R^m, as a Riemannian quotient of the Stiefel manifold (paper Appendix E,
'Grassmann manifold').

Points are orthonormal representatives U: ``(S, m, r)`` with U^T U = I_r; tangent
vectors are horizontal lifts xi: ``(S, m, r)`` with U^T xi = 0, i.e. xi = U_perp K.
"""

from __future__ import annotations

import numpy as np

from .base import EmbeddedSubmanifold
from .stiefel import _polar, _qf, complement_transport


def _t(a: np.ndarray) -> np.ndarray:
    return a.swapaxes(-1, -2)


class Grassmann(EmbeddedSubmanifold):
    """Gr(r, m) with <xi, eta>_U = tr(xi^T eta) on the horizontal space.

    An embedded submanifold in its horizontal-space representation: the horizontal space
    H_U = {xi : U^T xi = 0} is a linear subspace of R^{m x r}, the metric is the Euclidean one
    restricted to it and (I - U U^T) is the orthogonal projection onto it. The horizontal lift
    of grad f is (I - U U^T) G, G the Euclidean gradient at U of a smooth extension of f o pi:
    f o pi is constant along the fibres U O(r), so the Stiefel gradient G - U sym(U^T G) is
    horizontal, U^T G is symmetric and the two projections agree (Absil, Mahony & Sepulchre
    2008, 3.6.2). The retractions, Exp, Log and dist commute with U -> U Q (lifts at U Q are
    xi Q), so they are maps between subspaces.
    """

    name = "grassmann"
    RETRACTIONS = ("svd", "exp")
    TRANSPORTS = ("parallelization", "projection")
    ISOMETRIC_TRANSPORTS = ("parallelization",)

    def __init__(self, m: int, r: int, retraction: str | None = None,
                 transport: str | None = None):
        if not 1 <= r <= m:
            raise ValueError(f"need 1 <= r <= m, got m={m}, r={r}")
        super().__init__((m, r), r * (m - r), retraction, transport)
        self.m, self.r = m, r

    @classmethod
    def examples(cls):
        """Gr(5, 100) (multitask) and Gr(2..4, 100), Gr(3..5, 28) (School) and Gr(2, 28), Gr(2, 10)
        (smoke sizes), Gr(3, 64) (kPCA's subspace distance) and Gr(3, 8) with each map."""
        return ([cls(100, r, "svd", "parallelization") for r in (5, 4, 3, 2)]
                + [cls(28, r, "svd", "parallelization") for r in (3, 4, 5, 2)]
                + [cls(10, 2, "svd", "parallelization"), cls(64, 3, "exp", "projection"),
                   cls(8, 3, "exp", "parallelization"), cls(8, 3, "svd", "projection")])

    def projection(self, x, u):
        """Projection onto the horizontal space: P_U(G) = (I - U U^T) G."""
        return u - x @ (_t(x) @ u)

    def retraction_svd(self, x, u):
        """R_U(xi) = P Q^T with P S Q^T the thin SVD of U + xi  (Appendix E)."""
        return _polar(x + u)

    def exp(self, x, u):
        """Exp_U(xi) = U Q cos(S) Q^T + P sin(S) Q^T, P S Q^T the thin SVD of xi
        (Appendix E; Edelman-Arias-Smith form), re-orthonormalised by its polar factor."""
        p, s, qt = np.linalg.svd(u, full_matrices=False)
        y = (x @ (_t(qt) * np.cos(s)[..., None, :]) + p * np.sin(s)[..., None, :]) @ qt
        return _polar(y)

    def log(self, x, y):
        """Exp_U^{-1}(V) = P arctan(S) Q^T, P S Q^T the thin SVD of
        (V - U U^T V)(U^T V)^{-1}  (Appendix E). Independent of the representative of V."""
        utv = _t(x) @ y
        # M^T = (U^T V)^{-T} (V - U U^T V)^T
        mt = np.linalg.solve(_t(utv), _t(y - x @ utv))
        p, s, qt = np.linalg.svd(_t(mt), full_matrices=False)
        return (p * np.arctan(s)[..., None, :]) @ qt

    def dist(self, x, y):
        """d(U, V) = sqrt(sum_i theta_i^2), principal angles theta_i = arccos(sigma_i(U^T V)).

        With U^T V = A diag(cos theta) B^T, the columns of (V - U U^T V) B have
        norms sin theta; theta = arctan2(sin, cos) is accurate also near 0,
        where arccos loses half the digits.
        """
        utv = _t(x) @ y
        _, c, bt = np.linalg.svd(utv)
        sn = np.linalg.norm((y - x @ utv) @ _t(bt), axis=-2)
        return np.sqrt(np.sum(np.arctan2(sn, c) ** 2, axis=-1))

    def transport_parallelization(self, x, y, u):
        """Isometric transport by parallelization on the horizontal space
        (Huang-Absil-Gallivan 2018; Appendix E, T(xi) = B_Y B_X^dagger xi):

        T(X_perp K) = Y_perp K, i.e. T(xi) = Y_perp X_perp^T xi, with Y_perp the basis of
        span(Y)^perp closest to X_perp (``stiefel.complement_transport``): isometric on the
        horizontal space, exactly the identity at Y = X, and continuous in (X, Y).
        """
        return complement_transport(x, y, u - x @ (_t(x) @ u))

    def random_point(self, rng, n=1):
        return _qf(rng.standard_normal((n, self.m, self.r)))

    def distance_from_manifold(self, x):
        """||U^T U - I_r||_F."""
        return np.linalg.norm(_t(x) @ x - np.eye(self.r), axis=(-2, -1))

    def to_pymanopt(self):
        from pymanopt.manifolds import Grassmann as PGrassmann
        return PGrassmann(self.m, self.r)

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
    RETRACTIONS = ("svd", "exp", "cayley")
    TRANSPORTS = ("parallelization", "projection", "cayley")
    ISOMETRIC_TRANSPORTS = ("parallelization", "cayley")

    def __init__(self, m: int, r: int, retraction: str | None = None,
                 transport: str | None = None):
        if not 1 <= r <= m:
            raise ValueError(f"need 1 <= r <= m, got m={m}, r={r}")
        super().__init__((m, r), r * (m - r), retraction, transport)
        self.m, self.r = m, r

    @classmethod
    def examples(cls):
        """Gr(5, 100) (multitask) and Gr(2..4, 100), Gr(3..5, 28) (School) and Gr(2, 28), Gr(2, 10)
        (smoke sizes), Gr(3, 64) (kPCA's subspace distance) and Gr(3, 8) with each map; the
        Cayley maps at the LRMCGrass_Syn size Gr(5, 200) and at Gr(3, 8). (MovieLens-1M's
        Gr(6, 3952) is not an example: the contract's gradient test forms a dense quadratic on
        the m r = 23 712 ambient coordinates, 4.5 GB; tests/test_manifold_cayley.py checks the
        Cayley maps there.)"""
        return ([cls(100, r, "svd", "parallelization") for r in (5, 4, 3, 2)]
                + [cls(28, r, "svd", "parallelization") for r in (3, 4, 5, 2)]
                + [cls(10, 2, "svd", "parallelization"), cls(64, 3, "exp", "projection"),
                   cls(8, 3, "exp", "parallelization"), cls(8, 3, "svd", "projection")]
                + [cls(200, 5, "cayley", "cayley"), cls(200, 5, "cayley", "projection"),
                   cls(8, 3, "cayley", "cayley")])

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

    def representative_projection(self, x):
        """P(X) = U V^T from the thin SVD X = U Sigma V^T: the orthonormal m x r matrix nearest
        to X in the Frobenius norm (Stiefel's projection; unique when X has full rank r), a
        representative of a point of Gr(r, m). The ambient consensus of DRSGD on Gr(r, m)
        mixes representatives and projects them so (Wang et al.'s ``DRSGD_pca`` baseline).
        Not ``nearest_point``: the normal space of the representatives (X S, S symmetric) is
        not the complement of the horizontal space (it leaves out X Omega, Omega skew)."""
        return _polar(x)

    def random_point(self, rng, n=1):
        return _qf(rng.standard_normal((n, self.m, self.r)))

    def distance_from_manifold(self, x):
        """||U^T U - I_r||_F."""
        return np.linalg.norm(_t(x) @ x - np.eye(self.r), axis=(-2, -1))

    def to_pymanopt(self):
        from pymanopt.manifolds import Grassmann as PGrassmann
        return PGrassmann(self.m, self.r)

    # ---- the Cayley retraction, its inverse and transport (LRMCGrass_* scripts) ----------
    def retraction_cayley(self, x, u):
        """Cayley retraction R_X(xi) = (I - W/2)^{-1} (I + W/2) X, W = xi X^T - X xi^T (m x m
        skew; Wen & Yin 2013 on St, here for a horizontal xi, X^T xi = 0). With S = xi^T xi the
        m x m solve collapses (ansatz Y = X a + xi b, using W X = xi, W xi = -X S) to

            R_X(xi) = X (I + S/4)^{-1} (I - S/4) + xi (I + S/4)^{-1},

        the authors' ``retr_cayley`` (X + xi - (X/2 + xi/4)(I + S/4)^{-1} S, the same matrix):
        O(m r^2) instead of O(m^3). Y^T Y = I exactly (the Cayley transform is orthogonal) and
        R_{XQ}(xi Q) = R_X(xi) Q for Q in O(r): a map between subspaces. The vertical part of
        xi is dropped first (xi <- (I - X X^T) xi)."""
        u = self.projection(x, u)
        s = _t(u) @ u
        eye = np.eye(self.r)
        a_inv = np.linalg.inv(eye + 0.25 * s)
        return x @ (a_inv @ (eye - 0.25 * s)) + u @ a_inv

    def _cayley_lift(self, x, y):
        """(v, Q): v = R_X^{-1}(span Y) horizontal at X and Q in O(r) with Y = R_X(v) Q.

        Y's representative is first aligned by the polar factor Q of X^T Y = P Q (P symmetric
        positive semidefinite): Y Q^T is the representative R_X(v) of span(Y), since
        X^T R_X(v) = (I + S/4)^{-1}(I - S/4) is symmetric, positive definite for ||v||_2 < 2.
        Then, with M = X^T (Y Q^T) = P, v = 2 (Y Q^T - X M)(I + M)^{-1} (from
        Y - X X^T Y = xi (I + S/4)^{-1} and I + X^T Y = 2 (I + S/4)^{-1})."""
        a, sig, bt = np.linalg.svd(_t(x) @ y)
        q = a @ bt
        m = (a * sig[..., None, :]) @ _t(a)
        yq = y @ _t(q)
        v = 2.0 * (yq - x @ m) @ np.linalg.inv(np.eye(self.r) + m)
        return v, q

    def inverse_retraction_cayley(self, x, y):
        """R_X^{-1}(Y) of the Cayley retraction on the quotient: the horizontal v at X with
        span R_X(v) = span Y and ||v||_2 <= 2 (the branch on which R_X is injective: a singular
        value sigma > 2 of v turns a column of X past pi / 2, to the line that -4 / sigma reaches).
        Independent of Y's representative; R^{-1}_{XQ}(Y) = R^{-1}_X(Y) Q. On Y = R_X(v)
        itself this is the authors' ``invretr_cayley``, 2 (Y - X X^T Y)(I + X^T Y)^{-1}."""
        return self._cayley_lift(x, y)[0]

    def transport_cayley(self, x, y, u):
        """The Cayley transport of the authors' ``vt_cayley``: T(xi) = (I - W/2)^{-1}(I + W/2) xi,
        W = v X^T - X v^T with v = R_X^{-1}(Y), i.e. the orthogonal matrix that carries X to
        R_X(v) applied to xi (Zhu 2017's vector transport by the Cayley transform; isometric,
        not the differentiated retraction). Low-rank form (Y = X a + v b ansatz, W xi = -X v^T xi
        for horizontal xi):

            T(xi) = xi - (X + v/2)(I + S/4)^{-1} v^T xi,    S = v^T v,

        horizontal at R_X(v); returned at Y's own representative Y = R_X(v) Q as T(xi) Q (the
        lift of the same tangent vector), so it is a map between subspaces. O(m r^2)."""
        u = self.projection(x, u)
        v, q = self._cayley_lift(x, y)
        a_inv = np.linalg.inv(np.eye(self.r) + 0.25 * (_t(v) @ v))
        return (u - (x + 0.5 * v) @ (a_inv @ (_t(v) @ u))) @ q

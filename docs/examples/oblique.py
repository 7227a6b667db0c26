"""The oblique manifold OB(n, p) = {X in R^{n x p} : every column has unit norm}.

A product of p unit spheres S^{n-1}, embedded in R^{n x p} with the Frobenius metric
(Absil & Gallivan 2006): the tangent space, Exp, Log and the nearest point act column by
column. Points and tangent vectors: ``(S, n, p)``; column i of agent j is ``x[j, :, i]``.
"""

from __future__ import annotations

import numpy as np

from rfl.manifolds.base import EmbeddedSubmanifold


def _coldot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Column-wise inner products of (S, n, p) arrays: ``(S, p)``."""
    return np.einsum("snp,snp->sp", a, b)


class Oblique(EmbeddedSubmanifold):
    """OB(n, p), dimension p (n - 1)."""

    name = "oblique"
    RETRACTIONS = ("normalize", "exp")
    TRANSPORTS = ("projection",)                # EmbeddedSubmanifold.transport_projection

    def __init__(self, n: int, p: int, retraction: str | None = None, transport: str | None = None):
        super().__init__((n, p), p * (n - 1), retraction, transport)
        self.n, self.p = n, p

    @classmethod
    def examples(cls):
        """OB(5, 3) with each retraction, a single column (the sphere S^3) and OB(26, 2)."""
        return [cls(5, 3, "normalize"), cls(5, 3, "exp"), cls(4, 1, "normalize"), cls(26, 2, "exp")]

    def projection(self, x, u):
        """P_X(U) = U - X diag(diag(X^T U)): each column's component along x_i removed."""
        return u - _coldot(x, u)[:, None, :] * x

    def retraction_normalize(self, x, u):
        """R_X(U) = (X + U) with every column normalised."""
        return self.nearest_point(x + u)

    def exp(self, x, u):
        """Column-wise sphere Exp: cos(||u_i||) x_i + sin(||u_i||) u_i / ||u_i||."""
        theta = np.linalg.norm(u, axis=1)[:, None, :]
        y = np.cos(theta) * x + np.sinc(theta / np.pi) * u       # sinc(t/pi) = sin(t)/t
        return self.nearest_point(y)                              # remove rounding drift

    def log(self, x, y):
        """Column-wise sphere Log: theta_i P_{x_i}(y_i) / ||P_{x_i}(y_i)||, theta_i = angle(x_i, y_i)."""
        c = _coldot(x, y)
        w = y - c[:, None, :] * x
        nw = np.linalg.norm(w, axis=1)
        scale = np.divide(np.arctan2(nw, c), nw, out=np.ones_like(nw), where=nw > 0)
        return scale[:, None, :] * w

    def dist(self, x, y):
        """sqrt(sum_i angle(x_i, y_i)^2), the product metric's distance: ``(S,)``."""
        c = _coldot(x, y)
        nw = np.linalg.norm(y - c[:, None, :] * x, axis=1)
        return np.sqrt((np.arctan2(nw, c) ** 2).sum(axis=1))

    def nearest_point(self, x):
        """P_M(X): every (nonzero) column divided by its norm."""
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    def random_point(self, rng, n=1):
        return self.nearest_point(rng.standard_normal((n, self.n, self.p)))

    def distance_from_manifold(self, x):
        """sqrt(sum_i (||x_i|| - 1)^2): ``(S,)``."""
        return np.sqrt(((np.linalg.norm(x, axis=1) - 1.0) ** 2).sum(axis=1))

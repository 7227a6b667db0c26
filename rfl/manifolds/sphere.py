"""The unit sphere S^{n-1} = {x in R^n : ||x|| = 1} (paper Appendix E, 'Sphere manifold').

Points and tangent vectors: ``(S, n)``.
"""

from __future__ import annotations

import numpy as np

from .base import EmbeddedSubmanifold


def _col(a: np.ndarray) -> np.ndarray:
    return a[:, None]


if hasattr(np, "vecdot"):                       # numpy >= 2: the fastest row-wise dot product
    def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Row-wise inner products of (S, n) arrays: ``(S,)``."""
        return np.vecdot(a, b)
else:                                           # pragma: no cover
    def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Row-wise inner products of (S, n) arrays: ``(S,)``."""
        return np.einsum("si,si->s", a, b)


class Sphere(EmbeddedSubmanifold):
    """S^{n-1} embedded in R^n with the Euclidean metric."""

    name = "sphere"
    RETRACTIONS = ("normalize", "exp")
    TRANSPORTS = ("parallel", "projection")
    ISOMETRIC_TRANSPORTS = ("parallel",)

    def __init__(self, n: int, retraction: str | None = None, transport: str | None = None):
        super().__init__((n,), n - 1, retraction, transport)
        self.n = n

    @classmethod
    def examples(cls):
        """S^25 (CPESph, n = d + 1 = 26) and its smoke size S^8, the circle and S^2."""
        return [cls(26, "normalize", "parallel"), cls(26, "exp", "projection"),
                cls(9, "normalize", "parallel"), cls(2, "exp", "parallel"),
                cls(3, "normalize", "projection")]

    def inner(self, x, u, v):
        """<u, v> = u^T u, row-wise by ``np.vecdot`` (the fastest for vectors)."""
        return _dot(u, v)

    def projection(self, x, u):
        """P_x(u) = u - (x^T u) x."""
        return u - _col(_dot(x, u)) * x

    def retraction_normalize(self, x, u):
        """R_x(u) = (x + u) / ||x + u||  (Appendix E)."""
        y = x + u
        y /= _col(np.sqrt(_dot(y, y)))
        return y

    def exp(self, x, u):
        """Exp_x(u) = cos(||u||) x + sin(||u||) u / ||u||."""
        theta = np.linalg.norm(u, axis=1)
        # sin(t)/t evaluated stably through np.sinc(t/pi) = sin(t)/t
        y = _col(np.cos(theta)) * x + _col(np.sinc(theta / np.pi)) * u
        # renormalise to remove rounding drift (exact map has ||y|| = 1)
        return y / _col(np.linalg.norm(y, axis=1))

    def log(self, x, y):
        """Exp_x^{-1}(y) = theta * P_x(y) / ||P_x(y)||, theta = dist(x, y)."""
        c = _dot(x, y)
        w = y - _col(c) * x
        nw = np.linalg.norm(w, axis=1)
        theta = np.arctan2(nw, c)
        scale = np.divide(theta, nw, out=np.ones_like(nw), where=nw > 0)
        return _col(scale) * w

    def dist(self, x, y):
        c = _dot(x, y)
        w = y - _col(c) * x
        return np.arctan2(np.linalg.norm(w, axis=1), c)

    def transport_parallel(self, x, y, u):
        """Parallel transport along the geodesic from x to y (Appendix E):

        Gamma(u) = (I + (cos||v|| - 1) v v^T/||v||^2 - sin||v|| x v^T/||v||) u,
        with v = Exp_x^{-1}(y). For u in T_x S this equals

        Gamma(u) = u - <y, u> / (1 + <x, y>) (x + y)

        (write y = cos(t) x + sin(t) e, e = v/||v||: <y, u> = sin(t) <e, u> and
        sin(t)^2 / (1 + cos(t)) = 1 - cos(t)), which needs no Log: two inner products and one
        update. At y = -x (no unique geodesic) it returns u, as the Log form does there.
        """
        denom = _dot(x, y)
        denom += 1.0
        coef = _dot(y, u)
        if np.all(denom > 0):
            coef /= denom
        else:
            coef = np.divide(coef, denom, out=np.zeros_like(coef), where=denom > 0)
        xy = x + y
        xy *= _col(coef)
        return u - xy

    def nearest_point(self, x):
        """P_M(x) = x / ||x||, the nearest unit vector (unique for x != 0)."""
        return x / _col(np.linalg.norm(x, axis=1))

    def random_point(self, rng, n=1):
        x = rng.standard_normal((n, self.n))
        return x / _col(np.linalg.norm(x, axis=1))

    def distance_from_manifold(self, x):
        return np.abs(np.linalg.norm(x, axis=1) - 1.0)

    def to_pymanopt(self):
        from pymanopt.manifolds import Sphere as PSphere
        return PSphere(self.n)

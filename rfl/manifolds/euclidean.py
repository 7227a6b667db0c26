"""Euclidean space R^{shape}: the flat case in which RFedAGS is FedAvg.

Points and tangent vectors: ``(S, *shape)``.
"""

from __future__ import annotations

import numpy as np

from .base import EmbeddedSubmanifold


class Euclidean(EmbeddedSubmanifold):
    """R^{shape} with the Frobenius inner product; Exp is addition, transport is the identity."""

    name = "euclidean"
    FLAT = True
    RETRACTIONS = ("exp",)
    TRANSPORTS = ("identity", "projection")
    ISOMETRIC_TRANSPORTS = ("identity", "projection")

    def __init__(self, *shape: int, retraction: str | None = None, transport: str | None = None):
        super().__init__(shape, int(np.prod(shape)), retraction, transport)

    @classmethod
    def examples(cls):
        """R^8 (the LSA's features), R^3 and matrices R^{3 x 2}."""
        return [cls(8), cls(3, transport="projection"), cls(3, 2)]

    def inner(self, x, u, v):
        """<u, v> = sum(u * v) by ``np.sum`` (pairwise summation), for any number of axes."""
        return self._sum(u * v)

    def projection(self, x, u):
        """T_x R^{shape} = R^{shape}: the identity."""
        return u

    def exp(self, x, u):
        return x + u

    def log(self, x, y):
        return y - x

    def transport_identity(self, x, y, u):
        return u

    def random_point(self, rng, n=1):
        return rng.standard_normal((n,) + self.point_shape)

    def distance_from_manifold(self, x):
        return np.zeros(x.shape[0])

    def to_pymanopt(self):
        from pymanopt.manifolds import Euclidean as PEuclidean
        return PEuclidean(*self.point_shape)

"""Euclidean space R^{shape}: the flat case in which RFedAGS is FedAvg.

Points and tangent vectors: ``(S, *shape)``.
"""

from __future__ import annotations

import numpy as np

from .base import Manifold


class Euclidean(Manifold):
    """R^{shape} with the Frobenius inner product; Exp is addition, transport is the identity."""

    name = "euclidean"
    RETRACTIONS = ("exp",)
    TRANSPORTS = ("identity", "projection")

    def __init__(self, *shape: int, retraction: str | None = None, transport: str | None = None):
        super().__init__(shape, int(np.prod(shape)), retraction, transport)

    def inner(self, x, u, v):
        return self._sum(u * v)

    def projection(self, x, u):
        return u

    euclidean_to_riemannian_gradient = projection

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

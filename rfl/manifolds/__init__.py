"""Geometry: manifolds whose maps act on a leading agents axis ``(S, *point_shape)``."""

from .base import Manifold, batch_sum
from .euclidean import Euclidean
from .sphere import Sphere

MANIFOLDS = {"sphere": Sphere, "euclidean": Euclidean}

__all__ = ["Manifold", "batch_sum", "Euclidean", "Sphere", "MANIFOLDS"]

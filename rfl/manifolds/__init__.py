"""Geometry: manifolds whose maps act on a leading agents axis ``(S, *point_shape)``."""

from .base import Manifold, batch_sum
from .euclidean import Euclidean
from .grassmann import Grassmann
from .sphere import Sphere
from .spd import SPD
from .stiefel import Stiefel

MANIFOLDS = {"sphere": Sphere, "euclidean": Euclidean, "spd": SPD, "stiefel": Stiefel,
             "grassmann": Grassmann}

__all__ = ["Manifold", "batch_sum", "Euclidean", "Sphere", "SPD", "Stiefel", "Grassmann",
           "MANIFOLDS"]

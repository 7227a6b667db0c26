"""Geometry: manifolds whose maps act on a leading agents axis ``(S, *point_shape)``.

``MANIFOLDS`` is the registry (``rfl.registry.MANIFOLDS``): every subclass of ``Manifold``
that sets ``name`` is in it, these and plug-ins alike.
"""

from rfl.registry import MANIFOLDS

from .base import EmbeddedSubmanifold, Manifold, batch_sum
from .euclidean import Euclidean
from .grassmann import Grassmann
from .lorentz import Lorentz
from .sphere import Sphere
from .spd import SPD
from .stiefel import Stiefel

__all__ = ["Manifold", "EmbeddedSubmanifold", "batch_sum", "Euclidean", "Sphere", "SPD",
           "Stiefel", "Grassmann", "Lorentz", "MANIFOLDS"]

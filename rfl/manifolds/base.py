"""The batched manifold interface used by every algorithm.

Every operation takes arrays with a leading **agents axis**: a point batch is
``x: (S, *point_shape)`` and a tangent batch ``u: (S, *point_shape)`` with
``u[j]`` in the tangent space at ``x[j]``. Reductions (inner products, norms,
distances) return ``(S,)``. The algorithms therefore never loop over agents.

The retraction and the vector transport are chosen by name when the manifold is
built (``Sphere(n, retraction="exp", transport="parallel")``); the names each
manifold offers are in its ``RETRACTIONS`` and ``TRANSPORTS``.
"""

from __future__ import annotations

import numpy as np


def batch_sum(a: np.ndarray, point_ndim: int) -> np.ndarray:
    """Sum over the trailing ``point_ndim`` axes: ``(S, *shape) -> (S,)``."""
    return a.sum(axis=tuple(range(a.ndim - point_ndim, a.ndim)))


class Manifold:
    """A Riemannian manifold whose maps act on a leading agents axis.

    Subclasses implement ``inner``, ``projection``, ``euclidean_to_riemannian_gradient``, ``exp``, ``log``,
    ``dist``, ``random_point`` and one method ``retraction_<name>`` /
    ``transport_<name>`` for every name listed in ``RETRACTIONS`` /
    ``TRANSPORTS``.
    """

    name: str = "manifold"
    RETRACTIONS: tuple[str, ...] = ("exp",)
    TRANSPORTS: tuple[str, ...] = ("projection",)
    #: whether ``log`` has a closed form (tangent-mean aggregation needs it)
    HAS_LOG: bool = True

    def __init__(self, point_shape: tuple[int, ...], dim: int,
                 retraction: str | None = None, transport: str | None = None):
        self.point_shape = tuple(point_shape)
        self.dim = int(dim)
        self.retraction_name = self._choose("retraction", retraction, self.RETRACTIONS)
        self.transport_name = self._choose("transport", transport, self.TRANSPORTS)
        self._retraction = getattr(self, f"retraction_{self.retraction_name}")
        self._transport = getattr(self, f"transport_{self.transport_name}")

    def _choose(self, key: str, value: str | None, allowed: tuple[str, ...]) -> str:
        if value is None:
            return allowed[0]
        if value not in allowed:
            raise ValueError(
                f"{key}={value!r} is not available on {self.name}; allowed: {', '.join(allowed)}")
        return value

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(point_shape={self.point_shape}, "
                f"retraction={self.retraction_name!r}, transport={self.transport_name!r})")

    # ---- shapes -----------------------------------------------------------
    @property
    def point_ndim(self) -> int:
        return len(self.point_shape)

    @property
    def ambient_size(self) -> int:
        """Number of floats that represent one point (what a message carries)."""
        return int(np.prod(self.point_shape))

    def _sum(self, a: np.ndarray) -> np.ndarray:
        return batch_sum(a, self.point_ndim)

    # ---- metric -----------------------------------------------------------
    def inner(self, x: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """<u, v>_x for each agent: ``(S,)``."""
        raise NotImplementedError

    def norm(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """||u||_x for each agent: ``(S,)``."""
        return np.sqrt(np.maximum(self.inner(x, u, u), 0.0))

    # ---- tangent spaces ---------------------------------------------------
    def projection(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Orthogonal projection of an ambient vector onto T_x M."""
        raise NotImplementedError

    def euclidean_to_riemannian_gradient(self, x: np.ndarray, egrad: np.ndarray) -> np.ndarray:
        """Riemannian gradient from the Euclidean gradient of a smooth extension."""
        raise NotImplementedError

    def zero_vector(self, x: np.ndarray) -> np.ndarray:
        return np.zeros_like(x)

    # ---- maps between points and tangent vectors --------------------------
    def retraction(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """R_x(u), with the retraction chosen at construction."""
        return self._retraction(x, u)

    def retraction_exp(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.exp(x, u)

    def exp(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def log(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Exp_x^{-1}(y)."""
        raise NotImplementedError

    # ---- what the manifold offers ----------------------------------------------
    #: the capabilities ``offers`` answers for; algorithms declare what they need in these words
    CAPABILITIES = ("flat", "log", "tangent_mean", "nearest_point")

    @classmethod
    def offers(cls, capability: str, retraction: str | None = None) -> bool:
        """Whether this manifold (with ``retraction``, default the first of RETRACTIONS) offers
        ``capability``: ``flat`` (Euclidean space), ``log`` (closed-form Exp^{-1}),
        ``tangent_mean`` (Log, or an inverse of the retraction), ``nearest_point`` (the
        Euclidean projection P_M onto a compact embedded submanifold)."""
        if capability == "flat":
            return cls.name == "euclidean"
        if capability == "log":
            return cls.HAS_LOG
        if capability == "tangent_mean":
            name = retraction or cls.RETRACTIONS[0]
            return cls.HAS_LOG or hasattr(cls, f"inverse_retraction_{name}")
        if capability == "nearest_point":
            return cls.nearest_point is not Manifold.nearest_point
        raise ValueError(f"unknown manifold capability {capability!r}; allowed: "
                         f"{', '.join(cls.CAPABILITIES)}")

    # ---- tangent-mean aggregation (RFedAvg, RFedSVRG) -----------------------

    def tangent_log(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Lift y to T_x M for the tangent mean: Exp_x^{-1}(y), or R_x^{-1}(y) where Log has no
        closed form (Stiefel: the inverse of the polar retraction)."""
        if self.HAS_LOG:
            return self.log(x, y)
        inverse = getattr(self, f"inverse_retraction_{self.retraction_name}", None)
        if inverse is None:
            raise NotImplementedError(
                f"{self.name} has no closed-form Log and retraction {self.retraction_name!r} has no "
                f"inverse here; the tangent mean (RFedAvg, RFedSVRG) cannot be formed")
        return inverse(x, y)

    def tangent_exp(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The map back from the tangent mean: Exp_x(u), or R_x(u) paired with ``tangent_log``."""
        return self.exp(x, u) if self.HAS_LOG else self.retraction(x, u)

    def dist(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Riemannian distance for each agent: ``(S,)``."""
        return self.norm(x, self.log(x, y))

    # ---- vector transport -------------------------------------------------
    def transport(self, x: np.ndarray, y: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Transport u in T_x M to T_y M, with the transport chosen at construction."""
        return self._transport(x, y, u)

    def transport_projection(self, x: np.ndarray, y: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Projection transport P_{T_y M}(u) (embedded manifolds)."""
        return self.projection(y, u)

    # ---- projection onto the manifold ------------------------------------
    def nearest_point(self, x: np.ndarray) -> np.ndarray:
        """Euclidean projection P_M of ambient points onto the manifold: ``(S, *point_shape)``."""
        raise NotImplementedError(
            f"{self.name} has no Euclidean projection; RFedProj needs a compact embedded "
            f"submanifold (sphere, stiefel)")

    # ---- random objects ---------------------------------------------------
    def random_point(self, rng: np.random.Generator, n: int = 1) -> np.ndarray:
        """``(n, *point_shape)`` random points."""
        raise NotImplementedError

    def random_tangent(self, rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
        """A random unit tangent vector at each point of ``x``."""
        u = self.projection(x, rng.standard_normal(x.shape))
        nrm = self.norm(x, u).reshape((-1,) + (1,) * self.point_ndim)
        return u / nrm

    # ---- checks -----------------------------------------------------------
    def distance_from_manifold(self, x: np.ndarray) -> np.ndarray:
        """How far each point is from satisfying the manifold's constraints: ``(S,)``."""
        raise NotImplementedError

    def to_pymanopt(self):
        """The equivalent pymanopt manifold (one point, no agents axis)."""
        raise NotImplementedError

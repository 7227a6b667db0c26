"""The batched manifold interface used by every algorithm.

Every operation takes arrays with a leading **agents axis**: a point batch is
``x: (S, *point_shape)`` and a tangent batch ``u: (S, *point_shape)`` with
``u[j]`` in the tangent space at ``x[j]``. Reductions (inner products, norms,
distances) return ``(S,)``. The algorithms therefore never loop over agents.

The retraction and the vector transport are chosen by name when the manifold is
built (``Sphere(n, retraction="exp", transport="parallel")``); the names each
manifold offers are in its ``RETRACTIONS`` and ``TRANSPORTS``.

A new manifold is one subclass that sets ``name`` in its class body: it registers itself in
``rfl.registry.MANIFOLDS``, and the shared tests (``rfl.testing.manifold.ManifoldContract``)
run over the instances its ``examples()`` returns. What it offers beyond the abstract
methods is read off what it implements (``Manifold.offers``).
"""

from __future__ import annotations

import abc
import functools

import numpy as np

from rfl.registry import MANIFOLDS


def batch_sum(a: np.ndarray, point_ndim: int) -> np.ndarray:
    """Sum over the trailing ``point_ndim`` axes: ``(S, *shape) -> (S,)``."""
    return a.sum(axis=tuple(range(a.ndim - point_ndim, a.ndim)))


def _placeholder(method):
    """Mark a base-class map that a manifold offers only by overriding it (see ``offers``)."""
    method.placeholder = True
    return method


def _implements(cls: type, method: str) -> bool:
    """Whether ``cls`` has ``method`` and it is not a base-class placeholder."""
    found = getattr(cls, method, None)
    return callable(found) and not getattr(found, "placeholder", False)


class Manifold(abc.ABC):
    """A Riemannian manifold whose maps act on a leading agents axis.

    Subclasses implement the abstract methods (``inner``, ``projection``,
    ``euclidean_to_riemannian_gradient``, ``exp``, ``random_point``,
    ``distance_from_manifold``, ``examples``) and one method ``retraction_<name>`` /
    ``transport_<name>`` for every name listed in ``RETRACTIONS`` / ``TRANSPORTS``.
    Optional maps, each offered by implementing it: ``log`` (closed-form Exp^{-1}),
    ``inverse_retraction_<name>``, ``nearest_point``.
    """

    name: str = "manifold"
    RETRACTIONS: tuple[str, ...] = ("exp",)
    TRANSPORTS: tuple[str, ...] = ()
    #: the transports that are isometries T_x M -> T_y M (the shared tests check it)
    ISOMETRIC_TRANSPORTS: tuple[str, ...] = ()
    #: whether the manifold is a Euclidean space (FedAvg and SCAFFLSA need one)
    FLAT: bool = False

    def __init_subclass__(cls, **kwargs):
        """A subclass that sets ``name`` in its class body is a concrete manifold: check that
        it implements what it declares, and register it in ``MANIFOLDS``."""
        super().__init_subclass__(**kwargs)
        MANIFOLDS.declare(cls)

    @classmethod
    def contract_errors(cls, deep: bool = False) -> list[str]:
        """What this class lacks to be a manifold (phrases; empty when nothing): the abstract
        methods, ``retraction_<name>`` / ``transport_<name>`` for every declared name, at
        least one transport, ``ISOMETRIC_TRANSPORTS`` among ``TRANSPORTS``. Checked when a
        named subclass is created and, for the manifold of every problem a config uses (named
        or not), by ``rfl validate``."""
        from rfl.registry import unimplemented

        for attr in ("RETRACTIONS", "TRANSPORTS", "ISOMETRIC_TRANSPORTS"):
            value = getattr(cls, attr)
            if not (isinstance(value, tuple) and all(isinstance(n, str) for n in value)):
                return [f"declares {attr} = {value!r}; allowed: a tuple of names"]
        missing = unimplemented(cls, Manifold)
        missing += [f"{kind}_{n}" for kind, names in (("retraction", cls.RETRACTIONS),
                                                      ("transport", cls.TRANSPORTS))
                    for n in names if not callable(getattr(cls, f"{kind}_{n}", None))]
        if missing or not cls.TRANSPORTS:
            return [f"does not implement {', '.join(missing) or 'any transport (TRANSPORTS)'}"]
        extra = set(cls.ISOMETRIC_TRANSPORTS) - set(cls.TRANSPORTS)
        if extra:
            return [f"ISOMETRIC_TRANSPORTS {sorted(extra)} are not in TRANSPORTS; allowed: "
                    f"{', '.join(cls.TRANSPORTS)}"]
        return []

    @classmethod
    def summary(cls) -> str:
        """One line for ``rfl list``: its retractions, transports and capabilities."""
        iso = set(cls.ISOMETRIC_TRANSPORTS)
        offers = []
        for capability in cls.CAPABILITIES:
            some = [r for r in cls.RETRACTIONS if cls.offers(capability, r)]
            if some:
                offers.append(capability if len(some) == len(cls.RETRACTIONS)
                              else f"{capability} (with {', '.join(some)})")
        return (f"retractions: {', '.join(cls.RETRACTIONS)}; transports: "
                f"{', '.join(t + (' (isometric)' if t in iso else '') for t in cls.TRANSPORTS)}; "
                f"offers: {', '.join(offers) or 'none'}")

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

    @classmethod
    @abc.abstractmethod
    def examples(cls) -> list[Manifold]:
        """Small instances for the shared tests: the sizes the experiments run at and generic
        ones, with every retraction and transport worth testing."""

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
    @abc.abstractmethod
    def inner(self, x: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """<u, v>_x for each agent: ``(S,)``."""

    def norm(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """||u||_x for each agent: ``(S,)``."""
        return np.sqrt(np.maximum(self.inner(x, u, u), 0.0))

    # ---- tangent spaces ---------------------------------------------------
    @abc.abstractmethod
    def projection(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Orthogonal projection of an ambient vector onto T_x M."""

    @abc.abstractmethod
    def euclidean_to_riemannian_gradient(self, x: np.ndarray, egrad: np.ndarray) -> np.ndarray:
        """Riemannian gradient from the Euclidean gradient of a smooth extension."""

    def zero_vector(self, x: np.ndarray) -> np.ndarray:
        return np.zeros_like(x)

    # ---- maps between points and tangent vectors --------------------------
    def retraction(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """R_x(u), with the retraction chosen at construction."""
        return self._retraction(x, u)

    def retraction_exp(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.exp(x, u)

    @abc.abstractmethod
    def exp(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Exp_x(u): ``(S, *point_shape)``."""

    @_placeholder
    def log(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Exp_x^{-1}(y): ``(S, *point_shape)``."""
        raise NotImplementedError(
            f"{self.name} has no closed-form logarithm (Exp^{{-1}} would need an iterative "
            f"solver); use a retraction-based algorithm, or offers('tangent_mean', retraction)")

    def dist(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Riemannian distance for each agent, ||Log_x(y)||_x: ``(S,)``."""
        return self.norm(x, self.log(x, y))

    def log_many(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Log_{x_i}(y_{i,u}) from each agent's point to each of its U points: ``x (S, *point)``,
        ``y (S, U, *point) -> (S, U, *point)`` (``log`` on x repeated; a manifold may share the
        work that depends on x_i alone)."""
        S, U = y.shape[:2]
        flat = y.reshape((S * U,) + y.shape[2:])
        return self.log(np.repeat(x, U, axis=0), flat).reshape(y.shape)

    def dist_many(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """d(x_i, y_{i,u}): ``x (S, *point)``, ``y (S, U, *point) -> (S, U)`` (as ``log_many``)."""
        S, U = y.shape[:2]
        flat = y.reshape((S * U,) + y.shape[2:])
        return self.dist(np.repeat(x, U, axis=0), flat).reshape(S, U)

    # ---- what the manifold offers ----------------------------------------------
    #: the capabilities ``offers`` answers for; algorithms declare what they need in these words
    CAPABILITIES = ("flat", "log", "tangent_mean", "nearest_point", "ambient_consensus",
                    "frechet_consensus")

    @classmethod
    def offers(cls, capability: str, retraction: str | None = None) -> bool:
        """Whether this manifold (with ``retraction``, default the first of RETRACTIONS) offers
        ``capability``, each read off one declaration:

        - ``flat``: Euclidean space (the class sets ``FLAT = True``);
        - ``log``: closed-form Exp^{-1} (the class implements ``log``);
        - ``tangent_mean``: ``log``, or an inverse of the retraction (the class implements
          ``inverse_retraction_<retraction>``; none for a name it does not know);
        - ``nearest_point``: the Euclidean projection P_M onto a compact embedded submanifold
          (the class implements ``nearest_point``);
        - ``ambient_consensus``: the consensus step of the decentralised methods on an embedded
          manifold (Chen et al. 2021, eq. (2.2)): mix the agents' points in the ambient space,
          project the difference onto T_{x_i} M and retract; their network mean is the
          projected ambient mean. Offered by an embedded submanifold (``EmbeddedSubmanifold``)
          with ``nearest_point`` or ``representative_projection`` (Grassmann: the polar factor of
          mixed representatives), or a flat one (``rfl.algorithms.consensus``);
        - ``frechet_consensus``: the weighted Frechet-mean step x_i <- Exp_{x_i}(sum_j W_ij
          Log_{x_i}(x_j)) and the Karcher network mean: ``log``.
        """
        if capability == "flat":
            return bool(cls.FLAT)
        if capability == "log":
            return _implements(cls, "log")
        if capability == "tangent_mean":
            name = retraction or cls.RETRACTIONS[0]
            return _implements(cls, "log") or _implements(cls, f"inverse_retraction_{name}")
        if capability == "nearest_point":
            return _implements(cls, "nearest_point")
        if capability == "ambient_consensus":
            return issubclass(cls, EmbeddedSubmanifold) and (bool(cls.FLAT) or _implements(cls, "nearest_point")
                                                             or _implements(cls, "representative_projection"))
        if capability == "frechet_consensus":
            return _implements(cls, "log")
        raise ValueError(f"unknown manifold capability {capability!r}; allowed: "
                         f"{', '.join(cls.CAPABILITIES)}")

    # ---- tangent-mean aggregation (RFedAvg, RFedSVRG) -----------------------

    def tangent_log(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Lift y to T_x M for the tangent mean: Exp_x^{-1}(y), or R_x^{-1}(y) where Log has no
        closed form (Stiefel: the inverse of the polar or of the QR retraction). ``(S, *point_shape)``."""
        if self.offers("log"):
            return self.log(x, y)
        if not self.offers("tangent_mean", self.retraction_name):
            raise NotImplementedError(
                f"{self.name} has no closed-form Log and retraction {self.retraction_name!r} has no "
                f"inverse here; the tangent mean (RFedAvg, RFedSVRG) cannot be formed")
        return getattr(self, f"inverse_retraction_{self.retraction_name}")(x, y)

    def tangent_exp(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The map back from the tangent mean: Exp_x(u), or R_x(u) paired with ``tangent_log``."""
        return self.exp(x, u) if self.offers("log") else self.retraction(x, u)

    # ---- vector transport -------------------------------------------------
    def transport(self, x: np.ndarray, y: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Transport u in T_x M to T_y M, with the transport chosen at construction."""
        return self._transport(x, y, u)

    # ---- projection onto the manifold ------------------------------------
    @_placeholder
    def nearest_point(self, x: np.ndarray) -> np.ndarray:
        """Euclidean projection P_M of ambient points onto the manifold: ``(S, *point_shape)``."""
        raise NotImplementedError(
            f"{self.name} has no Euclidean projection; RFedProj needs a compact embedded "
            f"submanifold (sphere, stiefel)")

    # ---- random objects ---------------------------------------------------
    @abc.abstractmethod
    def random_point(self, rng: np.random.Generator, n: int = 1) -> np.ndarray:
        """``(n, *point_shape)`` random points."""

    def random_tangent(self, rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
        """A random unit tangent vector at each point of ``x``."""
        u = self.projection(x, rng.standard_normal(x.shape))
        nrm = self.norm(x, u).reshape((-1,) + (1,) * self.point_ndim)
        return u / nrm

    # ---- checks -----------------------------------------------------------
    @abc.abstractmethod
    def distance_from_manifold(self, x: np.ndarray) -> np.ndarray:
        """How far each point is from satisfying the manifold's constraints: ``(S,)``."""

    def to_pymanopt(self):
        """The equivalent pymanopt manifold (one point, no agents axis)."""
        raise NotImplementedError(f"{self.name} has no pymanopt equivalent here")


class EmbeddedSubmanifold(Manifold):
    """A Riemannian submanifold of R^{point_shape}: the metric is the Euclidean inner product
    of the embedding, T_x M a linear subspace of it and ``projection`` the orthogonal
    projection onto T_x M.

    Then the Riemannian gradient of f is the projection of the Euclidean gradient of any
    smooth extension (Absil, Mahony & Sepulchre 2008, eq. 3.37), and projecting onto T_y M is a
    vector transport. Subclasses implement ``projection``; a Riemannian quotient whose
    horizontal spaces are such subspaces (Grassmann on orthonormal representatives) fits too.
    """

    TRANSPORTS = ("projection",)

    @functools.cached_property
    def _inner_subscripts(self) -> str:
        axes = "ijklmnopqr"[:self.point_ndim]
        return f"s{axes},s{axes}->s"

    def inner(self, x, u, v):
        """<u, v>_x = sum of u * v over the point axes: ``(S,)``."""
        return np.einsum(self._inner_subscripts, u, v)

    def euclidean_to_riemannian_gradient(self, x, egrad):
        """grad f(x) = P_x(egrad), the Euclidean gradient projected onto T_x M."""
        return self.projection(x, egrad)

    def transport_projection(self, x: np.ndarray, y: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Projection transport P_{T_y M}(u)."""
        return self.projection(y, u)

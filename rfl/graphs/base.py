"""What every graph and weight rule declares, the mixing matrix W, and a config's graph spec.

A decentralised method (``rfl.algorithms.decentralised``) runs on a communication graph G of
S agents and mixes by a weight matrix W (S, S) supported on G plus the diagonal. Both come
from registries: a ``Topology`` (``rfl.registry.GRAPHS``) builds G, a ``WeightRule``
(``rfl.registry.WEIGHT_RULES``) turns G into W. A config names them as the method options

    graph: ring                       # or {name: erdos_renyi, p: 0.3}, {name: file, path: w.csv}
    weights: metropolis_hastings      # or {name: given, stochastic: row}

``canonical`` turns either form into ``{name, <every option>}``; ``check`` lists what is wrong
(``[(sub-key path, message)]``, for the config's one-line errors); ``make_mixing`` builds the
``Mixing`` of a run. Random graphs draw from the generator they are given (a run's:
``rfl.algorithms.sampling.Draws.graph_rng``, keyed by seed, experiment and the graph spec, so
every method of an experiment and seed runs on one graph).

The theory of these methods is stated in sigma_2(W), the second largest singular value of W
(``Mixing.sigma2``): for a doubly stochastic W the disagreement ||(W - 11^T/S) X|| contracts
by at least sigma_2(W) per consensus step (Chen et al. 2021, Assumption 1; Nedic et al. 2018).
"""

from __future__ import annotations

import abc
import json
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import networkx as nx
import numpy as np

#: the stochasticity a weight rule states, and what each means for W
STOCHASTIC = {"doubly": "rows and columns sum to 1", "row": "rows sum to 1",
              "column": "columns sum to 1"}
#: rounding allowed in the sums of a stochastic matrix
STOCHASTIC_TOL = 1e-10


def stochasticity_errors(W: np.ndarray, kind: str, tol: float = STOCHASTIC_TOL) -> list[str]:
    """Why ``W`` (S, S) is not ``kind``-stochastic ("doubly", "row", "column"): negative
    entries, rows or columns whose sums differ from 1 by more than ``tol`` (phrases)."""
    W = np.asarray(W, dtype=float)
    out = []
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        return [f"a {W.shape} array is not a square matrix"]
    if not np.all(np.isfinite(W)):
        return ["it has non-finite entries"]
    if W.min() < -tol:
        out.append(f"it has a negative entry ({W.min():.3g})")
    if kind in ("doubly", "row"):
        bad = np.abs(W.sum(axis=1) - 1.0)
        if bad.max() > tol:
            out.append(f"row {int(bad.argmax())} sums to {W.sum(axis=1)[bad.argmax()]:.6g}, not 1")
    if kind in ("doubly", "column"):
        bad = np.abs(W.sum(axis=0) - 1.0)
        if bad.max() > tol:
            out.append(f"column {int(bad.argmax())} sums to {W.sum(axis=0)[bad.argmax()]:.6g}, not 1")
    return out


def second_singular_value(W: np.ndarray) -> float:
    """sigma_2(W): the second largest singular value of W (S, S) (0 for S = 1)."""
    s = np.linalg.svd(np.asarray(W, dtype=float), compute_uv=False)
    return float(s[1]) if s.shape[0] > 1 else 0.0


class _Component(abc.ABC):
    """A declared component with JSON-schema ``options`` (each with its default)."""

    name: ClassVar[str]
    options: ClassVar[dict] = {}

    @classmethod
    def option_defaults(cls) -> dict:
        return {k: v["default"] for k, v in cls.options.items() if "default" in v}

    @classmethod
    def check_options(cls, options: dict, n_agents: int | None) -> list[tuple[str, str]]:
        """(option, what is wrong) for what the options' schemas cannot say; empty when fine."""
        return []

    @classmethod
    def summary(cls) -> str:
        options = ", ".join(f"{k}={json.dumps(v['default'])}" if "default" in v else k
                            for k, v in cls.options.items()) or "none"
        doc = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
        return f"{doc} Options: {options}"


class Topology(_Component):
    """A communication graph on S agents: ``Topology.build(n_agents, rng, **options)`` ->
    ``networkx.Graph`` on nodes 0..S-1 (``networkx.DiGraph`` where the edges are one-way:
    the file graph of an asymmetric matrix). ``random``: whether it draws from ``rng``."""

    random: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        from rfl.registry import GRAPHS
        GRAPHS.declare(cls)

    @classmethod
    def contract_errors(cls, deep: bool = False) -> list[str]:
        from rfl.registry import option_errors, unimplemented
        missing = unimplemented(cls, Topology)
        out = [f"does not implement {', '.join(missing)}"] if missing else []
        return out + option_errors(cls.options, deep)

    @classmethod
    @abc.abstractmethod
    def build(cls, n_agents: int, rng: np.random.Generator, **options) -> nx.Graph:
        """The graph on nodes 0..n_agents-1."""


class WeightRule(_Component):
    """W from a graph: ``WeightRule.matrix(G, **options)`` -> (S, S), W_ij > 0 only on edges
    and the diagonal. ``stochastic``: what it guarantees ("doubly", "row", "column"; a rule
    whose stochasticity is an option states it by ``stated``)."""

    stochastic: ClassVar[str] = "doubly"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        from rfl.registry import WEIGHT_RULES
        WEIGHT_RULES.declare(cls)

    @classmethod
    def contract_errors(cls, deep: bool = False) -> list[str]:
        from rfl.registry import option_errors, unimplemented
        missing = unimplemented(cls, WeightRule)
        out = [f"does not implement {', '.join(missing)}"] if missing else []
        if cls.stochastic not in STOCHASTIC:
            out.append(f"declares stochastic = {cls.stochastic!r}; allowed: {', '.join(STOCHASTIC)}")
        return out + option_errors(cls.options, deep)

    @classmethod
    def stated(cls, **options) -> str:
        """The stochasticity of W with these options."""
        return cls.stochastic

    @classmethod
    def summary(cls) -> str:
        return f"{super().summary()}; W is {cls.stochastic}-stochastic"

    @classmethod
    def needs_undirected(cls) -> bool:
        return True

    @classmethod
    @abc.abstractmethod
    def matrix(cls, G: nx.Graph, **options) -> np.ndarray:
        """W (S, S) of the graph G."""


@dataclass(frozen=True)
class Mixing:
    """A run's graph and weights: G (networkx), W (S, S), the specs they came from, and the
    stochasticity the rule states (checked when built)."""

    graph: nx.Graph
    W: np.ndarray
    graph_spec: dict
    weights_spec: dict
    stochastic: str
    attempts: int = 1                  # draws a random graph took to come out connected

    @property
    def n_agents(self) -> int:
        return int(self.W.shape[0])

    @cached_property
    def sigma2(self) -> float:
        """sigma_2(W), the second largest singular value."""
        return second_singular_value(self.W)

    @cached_property
    def directed_edges(self) -> int:
        """Messages of one consensus step: the nonzero off-diagonal entries of W (agent j
        sends its point to i when W_ij != 0)."""
        off = self.W.copy()
        np.fill_diagonal(off, 0.0)
        return int(np.count_nonzero(off))

    def power(self, t: int) -> np.ndarray:
        """W^t, the mixing of t consensus steps."""
        return np.linalg.matrix_power(self.W, int(t))

    def floats(self, t: int, point_size: int) -> int:
        """Floats sent by t consensus steps of point-sized messages: t x directed edges x size."""
        return int(t) * self.directed_edges * int(point_size)

    def describe(self) -> dict:
        """What the run's metadata records of its mixing."""
        return {"graph": self.graph_spec, "weights": self.weights_spec, "stochastic": self.stochastic,
                "sigma2": self.sigma2, "directed_edges": self.directed_edges,
                "attempts": self.attempts}


# ---- a config's graph and weights -------------------------------------------------------
def canonical(spec, kind: str = "graph") -> dict:
    """A config's ``graph`` / ``weights`` (a name, or ``{name, <option>: ...}``) as
    ``{name, <every option with its default>}`` (the name must be known)."""
    from rfl.registry import GRAPHS, WEIGHT_RULES

    registry = GRAPHS if kind == "graph" else WEIGHT_RULES
    spec = {"name": spec} if isinstance(spec, str) else dict(spec)
    cls = registry[spec["name"]]
    return {"name": cls.name, **cls.option_defaults(), **{k: v for k, v in spec.items() if k != "name"}}


def _check_one(spec, kind: str, n_agents: int | None) -> list[tuple[list, str]]:
    from rfl.registry import GRAPHS, WEIGHT_RULES
    from rfl.schema import describe, first_error

    registry = GRAPHS if kind == "graph" else WEIGHT_RULES
    if isinstance(spec, str):                 # a bare name: its problems are the key's own
        return [([], msg) for _, msg in _check_one({"name": spec}, kind, n_agents)]
    if not isinstance(spec, dict):
        return [([], f"{spec!r}; allowed: a {registry.kind} name or {{name: <name>, <option>: ...}}")]
    name = spec.get("name")
    if name not in registry:
        return [(["name"] if len(spec) > 1 else [], f"{name!r} is not a known {registry.kind}; "
                                                      f"allowed: {', '.join(registry.names())}")]
    cls = registry[name]
    out = []
    for key, value in spec.items():
        if key == "name":
            continue
        if key not in cls.options:
            out.append(([key], f"{kind} {name} takes no option {key!r}; allowed: "
                               f"{', '.join(cls.options) or 'none'}"))
            continue
        err = first_error(value, cls.options[key])
        if err is not None:
            out.append(([key, *err.absolute_path], f"{err.instance!r}: {describe(err)}"))
    if not out:
        out += [([k], msg) for k, msg in cls.check_options({**cls.option_defaults(), **spec}, n_agents)]
    return out


def check(graph, weights, n_agents: int | None) -> list[tuple[list, str]]:
    """What is wrong with a method's ``graph`` and ``weights``: [(key path from the method,
    message)], empty when fine (names, options against their schemas, each component's
    ``check_options``, and a given matrix file's stochasticity against the one stated)."""
    out = [(["graph", *p], m) for p, m in _check_one(graph, "graph", n_agents)]
    out += [(["weights", *p], m) for p, m in _check_one(weights, "weights", n_agents)]
    if out:
        return out
    g, w = canonical(graph, "graph"), canonical(weights, "weights")
    from rfl.registry import GRAPHS, WEIGHT_RULES
    gcls, wcls = GRAPHS[g["name"]], WEIGHT_RULES[w["name"]]
    if getattr(gcls, "from_file", False) and not gcls.random:
        try:
            G = gcls.build(n_agents or 0, np.random.default_rng(0), **_opts(g))
        except ValueError as exc:
            return [(["graph", "path"], str(exc))]
        if wcls.needs_undirected() and G.is_directed():
            return [(["weights"], f"{w['name']} needs an undirected graph, and the matrix of "
                                  f"{g['path']} is not symmetric in its support; allowed: given")]
        if "matrix" in G.graph and not wcls.needs_undirected():
            kind = wcls.stated(**_opts(w))
            errors = stochasticity_errors(G.graph["matrix"], kind)
            if errors:
                return [(["graph", "path"], f"{g['path']} is not {kind}-stochastic as weights "
                                            f"{w['name']} states: {errors[0]}")]
    elif not wcls.needs_undirected():
        return [(["weights"], f"{w['name']} takes the matrix of a file graph; allowed with graph "
                              f"{g['name']}: {', '.join(n for n, c in WEIGHT_RULES.items() if c.needs_undirected())}")]
    return []


def _opts(spec: dict) -> dict:
    return {k: v for k, v in spec.items() if k != "name"}


def make_mixing(graph, weights, n_agents: int, rng: np.random.Generator) -> Mixing:
    """The ``Mixing`` of a (config or canonical) graph and weights spec for ``n_agents``
    agents; ValueError naming the bad key for a bad spec, and for a W that is not the
    stochastic kind its rule states."""
    from rfl.registry import GRAPHS, WEIGHT_RULES

    problems = check(graph, weights, n_agents)
    if problems:
        path, msg = problems[0]
        raise ValueError(f"{'.'.join(map(str, path))}: {msg}")
    g, w = canonical(graph, "graph"), canonical(weights, "weights")
    G = GRAPHS[g["name"]].build(n_agents, rng, **_opts(g))
    if G.number_of_nodes() != n_agents:
        raise ValueError(f"graph: {g['name']} has {G.number_of_nodes()} nodes for S={n_agents} agents")
    wcls = WEIGHT_RULES[w["name"]]
    W = np.asarray(wcls.matrix(G, **_opts(w)), dtype=float)
    kind = wcls.stated(**_opts(w))
    errors = stochasticity_errors(W, kind)
    if errors:
        raise ValueError(f"weights: {w['name']} on graph {g['name']} is not {kind}-stochastic: {errors[0]}")
    return Mixing(G, W, g, w, kind, int(G.graph.get("attempts", 1)))

"""The communication graphs: ring, k-nearest ring, Erdos-Renyi (connected), star, complete,
hypercube, and the support of a matrix read from a file.

networkx builds them (its generators are the reference implementations the DRSGD/DRGTA code
also uses, ``misc/Graph.py``); each is a ``Topology`` found by name in ``rfl.registry.GRAPHS``.
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np

from .base import Topology

#: a connected Erdos-Renyi draw is given up after this many tries (a config error then)
MAX_ER_ATTEMPTS = 1000


class Ring(Topology):
    """The cycle 0 - 1 - ... - (S-1) - 0 (S = 2: one edge; S = 1: no edge)."""

    name = "ring"

    @classmethod
    def build(cls, n_agents, rng, **options):
        return nx.cycle_graph(n_agents) if n_agents > 2 else nx.path_graph(n_agents)


class KRing(Topology):
    """The k-nearest ring: agent i talks to i +- 1, ..., i +- k (mod S); k = 1 is the ring."""

    name = "k_ring"
    options = {"k": {"type": "integer", "minimum": 1, "default": 2,
                     "description": "neighbours on each side"}}

    @classmethod
    def check_options(cls, options, n_agents):
        k = options["k"]
        if n_agents is not None and 2 * k >= n_agents and k != 1:
            return [("k", f"{k} neighbours on each side of a ring of S={n_agents} agents wrap "
                          f"around; allowed: 1..{max((n_agents - 1) // 2, 1)} (or graph complete)")]
        return []

    @classmethod
    def build(cls, n_agents, rng, k=2):
        return nx.circulant_graph(n_agents, list(range(1, int(k) + 1)))


class ErdosRenyi(Topology):
    """G(S, p): each edge independently with probability p, drawn again until connected
    (at most MAX_ER_ATTEMPTS draws); ``graph["attempts"]`` counts the draws."""

    name = "erdos_renyi"
    random = True
    options = {"p": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.3,
                     "description": "edge probability"}}

    @classmethod
    def build(cls, n_agents, rng, p=0.3):
        for attempt in range(1, MAX_ER_ATTEMPTS + 1):
            G = nx.gnp_random_graph(n_agents, float(p), seed=int(rng.integers(2 ** 32)))
            if n_agents <= 1 or nx.is_connected(G):
                G.graph["attempts"] = attempt
                return G
        raise ValueError(f"graph.p: {p} gave no connected graph on S={n_agents} agents in "
                         f"{MAX_ER_ATTEMPTS} draws; allowed: a larger p")


class Star(Topology):
    """Agent 0 is the hub; every other agent talks to it alone."""

    name = "star"

    @classmethod
    def build(cls, n_agents, rng, **options):
        return nx.star_graph(n_agents - 1)


class Complete(Topology):
    """Every pair of agents talks."""

    name = "complete"

    @classmethod
    def build(cls, n_agents, rng, **options):
        return nx.complete_graph(n_agents)


class Hypercube(Topology):
    """The k-cube on S = 2^k agents: i and j talk when their binary labels differ in one bit."""

    name = "hypercube"

    @classmethod
    def check_options(cls, options, n_agents):
        if n_agents is not None and (n_agents < 1 or n_agents & (n_agents - 1)):
            return [("name", f"hypercube needs S a power of 2, S={n_agents}; allowed: 1, 2, 4, 8, ...")]
        return []

    @classmethod
    def build(cls, n_agents, rng, **options):
        k = int(n_agents).bit_length() - 1
        return nx.convert_node_labels_to_integers(nx.hypercube_graph(k), ordering="sorted")


def read_matrix(path) -> np.ndarray:
    """A square matrix from a .npy or .csv (comma-separated, no header) file; ValueError
    naming the file and what is wrong."""
    p = Path(path)
    if p.suffix not in (".npy", ".csv"):
        raise ValueError(f"{path}: a {p.suffix or 'suffix-less'} file; allowed: .npy or .csv")
    if not p.is_file():
        raise ValueError(f"{path}: no such file")
    try:
        W = np.load(p, allow_pickle=False) if p.suffix == ".npy" else np.loadtxt(p, delimiter=",", ndmin=2)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot be read as a matrix ({' '.join(str(exc).split())})") from None
    W = np.asarray(W, dtype=float)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"{path}: a {W.shape} array; allowed: a square S x S matrix")
    return W


class FromFile(Topology):
    """The support of a matrix read from a .npy or .csv file (W_ij != 0, i != j: j sends to i);
    undirected when the support is symmetric. The matrix itself is ``graph["matrix"]`` (the
    weight rule ``given`` uses it)."""

    name = "file"
    from_file = True
    options = {"path": {"type": "string", "default": "", "description": "a .npy or .csv S x S matrix"}}

    @classmethod
    def check_options(cls, options, n_agents):
        try:
            W = read_matrix(options["path"])
        except ValueError as exc:
            return [("path", str(exc))]
        if n_agents and W.shape[0] != n_agents:
            return [("path", f"{options['path']}: a {W.shape[0]} x {W.shape[0]} matrix for S={n_agents} "
                             f"agents; allowed: {n_agents} x {n_agents}")]
        return []

    @classmethod
    def build(cls, n_agents, rng, path=""):
        W = read_matrix(path)
        support = (W != 0) & ~np.eye(W.shape[0], dtype=bool)
        directed = not np.array_equal(support, support.T)
        G = nx.DiGraph() if directed else nx.Graph()
        G.add_nodes_from(range(W.shape[0]))
        G.add_edges_from((int(j), int(i)) for i, j in zip(*np.nonzero(support)))   # j -> i
        G.graph["matrix"] = W
        return G

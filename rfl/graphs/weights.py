"""The weight rules: Metropolis-Hastings, lazy Metropolis, Laplacian (max-degree), uniform,
and a given matrix (the file graph's). Formulas as in the DRSGD/DRGTA code's
``misc/Graph.py`` and Xiao & Boyd (2004), d_i the degree of agent i."""

from __future__ import annotations

import networkx as nx
import numpy as np

from .base import STOCHASTIC, WeightRule


def _adjacency(G: nx.Graph) -> np.ndarray:
    """(S, S) 0/1 adjacency on nodes 0..S-1 (no self-loops)."""
    A = nx.to_numpy_array(G, nodelist=range(G.number_of_nodes()), weight=None)
    np.fill_diagonal(A, 0.0)
    return A


def _with_diagonal(off: np.ndarray) -> np.ndarray:
    """W with W_ii = 1 - sum_{j != i} W_ij."""
    W = off.copy()
    np.fill_diagonal(W, 1.0 - off.sum(axis=1))
    return W


class MetropolisHastings(WeightRule):
    """W_ij = 1 / (1 + max(d_i, d_j)) on edges, W_ii = 1 - sum_j W_ij (symmetric, doubly)."""

    name = "metropolis_hastings"

    @classmethod
    def matrix(cls, G, **options):
        A = _adjacency(G)
        d = A.sum(axis=1)
        return _with_diagonal(A / (1.0 + np.maximum(d[:, None], d[None, :])))


class LazyMetropolis(WeightRule):
    """W_ij = 1 / (2 max(d_i, d_j)) on edges, W_ii = 1 - sum_j W_ij (symmetric, doubly; every
    eigenvalue >= 0)."""

    name = "lazy_metropolis"

    @classmethod
    def matrix(cls, G, **options):
        A = _adjacency(G)
        d = A.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            off = np.where(A > 0, 0.5 / np.maximum(d[:, None], d[None, :]), 0.0)
        return _with_diagonal(off)


class Laplacian(WeightRule):
    """W = I - L / (1 + d_max), L the graph Laplacian (the max-degree rule; symmetric, doubly)."""

    name = "laplacian"

    @classmethod
    def matrix(cls, G, **options):
        A = _adjacency(G)
        L = np.diag(A.sum(axis=1)) - A
        return np.eye(A.shape[0]) - L / (1.0 + A.sum(axis=1).max(initial=0.0))


class Uniform(WeightRule):
    """W_ij = 1 / (1 + d_i) for j a neighbour of i or j = i (row-stochastic; doubly on a
    regular graph: ring, k-ring, complete, hypercube)."""

    name = "uniform"
    stochastic = "row"

    @classmethod
    def matrix(cls, G, **options):
        A = _adjacency(G) + np.eye(G.number_of_nodes())
        return A / A.sum(axis=1, keepdims=True)


class Given(WeightRule):
    """The matrix of a file graph, checked to be as stochastic as ``stochastic`` states."""

    name = "given"
    stochastic = "doubly"
    options = {"stochastic": {"enum": list(STOCHASTIC), "default": "doubly",
                              "description": "what the file's matrix is: doubly, row or column stochastic"}}

    @classmethod
    def stated(cls, stochastic="doubly", **options):
        return stochastic

    @classmethod
    def needs_undirected(cls) -> bool:
        return False

    @classmethod
    def summary(cls) -> str:
        return f"{super(WeightRule, cls).summary()}; W is as stochastic as its option states"

    @classmethod
    def matrix(cls, G, stochastic="doubly"):
        return np.asarray(G.graph["matrix"], dtype=float)

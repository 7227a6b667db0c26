"""Graphs and mixing of the decentralised track: ``Topology`` components (``rfl list graphs``)
build the communication graph, ``WeightRule`` components (``rfl list weights``) its mixing
matrix W; ``make_mixing`` builds a run's ``Mixing`` (W, sigma_2(W), messages per consensus
step) from a config's ``graph`` and ``weights``. See ``rfl.graphs.base``."""

from .base import (Mixing, Topology, WeightRule, canonical, check, make_mixing,
                   second_singular_value, stochasticity_errors)

__all__ = ["Mixing", "Topology", "WeightRule", "canonical", "check", "make_mixing",
           "second_singular_value", "stochasticity_errors"]

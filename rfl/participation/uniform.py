"""Scheme 3 of the authors' code: s agents uniformly without replacement (``participation: s``)."""

from __future__ import annotations

import numpy as np

from .base import ParticipationScheme


class Uniform(ParticipationScheme):
    """S_t: s distinct agents, every s-subset equally likely (one ``rng.choice`` per round);
    the weights are N_j-proportional, renormalised over S_t (they sum to 1)."""

    name = "uniform"
    options = {"s": {"type": "integer", "minimum": 1,
                     "description": "agents per round (at most S)"}}

    @classmethod
    def check_options(cls, options, n_agents):
        if "s" not in options:
            return [("s", "missing; allowed: an integer 1..S")]
        if n_agents is not None and options["s"] > n_agents:
            return [("s", f"{options['s']} is larger than the number of agents S={n_agents}; "
                          f"allowed: 1..{n_agents}")]
        return []

    def draw(self) -> np.ndarray:
        return np.sort(self.rng.choice(self.n_agents, size=int(self.s), replace=False))

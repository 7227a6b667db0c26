"""Scheme 1 of the authors' code: every agent in every round (the paper's Algorithm 1)."""

from __future__ import annotations

import numpy as np

from .base import ParticipationScheme


class Full(ParticipationScheme):
    """S_t = {1, ..., N}; N_j-proportional weights (1/N for equal local sizes). No draw."""

    name = "full"

    def draw(self) -> np.ndarray:
        return np.arange(self.n_agents)

"""The counter-based mini-batch draws a Flower client reproduces on its own.

The server sends (key, draw, K, B) and agent j draws the batch of its local step k as
``batch_indices(key, draw + k, [j], local_sizes, B)``: agent j's batch at draw c depends only
on (key, c, j, N_j, B), so a client holding one agent draws exactly the batch the in-process
simulator draws for it (the contract of ``rfl.algorithms.sampling``: ``batch_indices``,
``AgentSampler.key`` and ``AgentSampler.draw``).
"""

from __future__ import annotations

import numpy as np

from rfl.algorithms.sampling import batch_indices
from rfl.problems import MiniBatch


def agent_batch(key: int, draw: int, agent: int, n_local: int, B: int) -> MiniBatch:
    """The (1, B) mini-batch of one agent (global id ``agent``, N_j = ``n_local``) at ``draw``."""
    sizes = np.full(int(agent) + 1, int(n_local))          # only N_agent is read
    return MiniBatch(int(n_local), indices=batch_indices(key, draw, np.array([agent]), sizes, B))


def advance(sampler, K: int) -> int:
    """Reserve the K draws of one round's local steps: return the first, move ``draw`` past
    them (what K ``batches`` calls of the simulator do)."""
    first = int(sampler.draw)
    sampler.draw = first + int(K)
    return first

"""The counter-based mini-batch draws a Flower client reproduces on its own.

The server sends (key, draw, K, B) and agent j draws the batch of its local step k as
``batch_indices(key, draw + k, [j], local_sizes, B)``: agent j's batch at draw c depends only
on (key, c, j, N_j, B), so a client holding one agent draws exactly the batch the in-process
simulator draws for it (the contract of ``rfl.algorithms.sampling``: ``batch_indices``,
``AgentSampler.key`` and ``AgentSampler.draw``).

When ``rfl.algorithms.sampling`` provides ``batch_indices`` this module re-exports it and
``CountedSampler`` is the project's ``AgentSampler`` itself. Otherwise it falls back to a
local implementation with the same signature and contract (a SeedSequence keyed by
(key, draw, j)), and ``CountedSampler`` is an ``AgentSampler`` whose batches come from it;
``COUNTER_BASED`` says which.
"""

from __future__ import annotations

import numpy as np

from rfl.algorithms.sampling import AgentSampler
from rfl.problems import MiniBatch

try:
    from rfl.algorithms.sampling import batch_indices
    COUNTER_BASED = True
except ImportError:
    COUNTER_BASED = False

    def batch_indices(key: int, draw: int, agents, local_sizes, B: int) -> np.ndarray:
        """B distinct samples of each agent, sorted: ``(s, B)`` int64; row i depends only on
        (key, draw, agents[i], N_{agents[i]}, B) (local fallback of the project's sampler)."""
        agents = np.asarray(agents, dtype=np.int64)
        sizes = np.asarray(local_sizes, dtype=np.int64)
        out = np.empty((agents.shape[0], int(B)), dtype=np.int64)
        for i, j in enumerate(agents):
            n = int(sizes[j])
            if B == n:
                out[i] = np.arange(n)
                continue
            g = np.random.default_rng([int(key), int(draw), int(j)])
            out[i] = np.sort(g.choice(n, size=int(B), replace=False))
        return out


if COUNTER_BASED:
    CountedSampler = AgentSampler
else:
    class CountedSampler(AgentSampler):
        """``AgentSampler`` with the counter-based batches: ``key`` taken from ``rng`` once at
        construction, ``draw`` the number of ``batches`` calls so far."""

        def __init__(self, rng, local_sizes, batch_size, participation=None):
            super().__init__(rng, local_sizes, batch_size, participation)
            self.key = int(rng.integers(2 ** 63))
            self.draw = 0

        def batches(self, agents):
            agents = np.asarray(agents)
            idx = batch_indices(self.key, self.draw, agents, self.local_sizes, self.batch_size)
            self.draw += 1
            return MiniBatch(int(self.local_sizes[agents].max()), indices=idx)


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

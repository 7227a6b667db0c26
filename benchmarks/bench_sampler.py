"""The mini-batch sampler alone: one local step's draw for S = 1000 agents
(``rfl.algorithms.sampling.batch_indices``: Philox4x64-10 words and Floyd's algorithm, O(B)
per agent), at the batch shapes of the roofline benchmarks (``bench_limits``), and one agent's
own draw as a federated client makes it (the per-call overhead dominates)."""

from __future__ import annotations

import numpy as np

from rfl.algorithms.sampling import batch_indices

S = 1000


class BatchIndices:
    params = [[(50, 25), (80, 64), (10_000, 32)]]     # one axis of (N, B) pairs
    param_names = ["N, B"]

    def setup(self, nb):
        self.N, self.B = nb
        self.sizes = np.full(S, self.N)
        self.agents = np.arange(S)
        self.draw = 0
        batch_indices(1, 0, self.agents[:1], self.sizes, self.B)        # compile / load the cache

    def time_step_all_agents(self, nb):
        """(S, B) indices of one local step."""
        self.draw += 1
        batch_indices(12345, self.draw, self.agents, self.sizes, self.B)

    def time_one_agent(self, nb):
        """One agent's (1, B) row, as a client redraws it."""
        self.draw += 1
        batch_indices(12345, self.draw, self.agents[7:8], self.sizes, self.B)

"""Random draws of a federated run: which agents take part, which samples they use.

One ``AgentSampler`` serves a whole run, and both the vectorised algorithms and
the per-agent reference loops of the tests consume its draws in the same order
(per round: ``participants``; per local step: ``batches``), so the two can be
compared draw for draw.
"""

from __future__ import annotations

import numpy as np


class AgentSampler:
    """Draws participants and mini-batches.

    local_sizes: (S,) N_j; batch_size: B (<= min N_j), sampled without
    replacement within a step (Algorithm 1, line 6); participation: s, the number
    of agents sampled uniformly without replacement each round (None: all S).
    """

    def __init__(self, rng: np.random.Generator, local_sizes: np.ndarray, batch_size: int,
                 participation: int | None = None):
        self.rng = rng
        self.local_sizes = np.asarray(local_sizes, dtype=int)
        S = self.local_sizes.shape[0]
        if not 1 <= batch_size <= self.local_sizes.min():
            raise ValueError(f"batch_size={batch_size} must be in [1, min N_j={self.local_sizes.min()}]")
        if participation is not None and not 1 <= participation <= S:
            raise ValueError(f"participation={participation} must be in [1, S={S}]")
        self.batch_size = int(batch_size)
        self.participation = None if participation in (None, S) else int(participation)
        self._uniform = bool(np.all(self.local_sizes == self.local_sizes[0]))

    def participants(self) -> np.ndarray:
        """Sorted indices of this round's agents: ``(s,)``."""
        S = self.local_sizes.shape[0]
        if self.participation is None:
            return np.arange(S)
        return np.sort(self.rng.choice(S, size=self.participation, replace=False))

    def batches(self, agents: np.ndarray) -> np.ndarray:
        """A mini-batch of B distinct sample indices per agent: ``(s, B)``.

        One uniform key per local sample, the B smallest keys win (B = 1: ``argmin``, the
        same index as the partition's first entry, at a fraction of its cost)."""
        if self._uniform:
            n_max = int(self.local_sizes[0])
            keys = self.rng.random((agents.shape[0], n_max))
        else:
            sizes = self.local_sizes[agents]
            n_max = int(sizes.max())
            keys = self.rng.random((agents.shape[0], n_max))
            keys[np.arange(n_max)[None, :] >= sizes[:, None]] = np.inf
        if self.batch_size == n_max:
            if n_max == 1:                    # the keys are still drawn: the stream is unchanged
                return np.zeros((agents.shape[0], 1), dtype=np.intp)
            return np.argsort(keys, axis=1)
        if self.batch_size == 1:
            return np.argmin(keys, axis=1)[:, None]
        return np.argpartition(keys, self.batch_size - 1, axis=1)[:, : self.batch_size]

    @staticmethod
    def weights(local_sizes: np.ndarray, agents: np.ndarray) -> np.ndarray:
        """p_j proportional to N_j, renormalised over the participating agents: ``(s,)``."""
        n = np.asarray(local_sizes, dtype=float)[agents]
        return n / n.sum()

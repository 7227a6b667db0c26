"""Random draws of a federated run: which agents take part, which samples they use.

One ``AgentSampler`` serves a whole run, and both the vectorised algorithms and
the per-agent reference loops of the tests consume its draws in the same order
(per round: ``participants``; per local step: ``batches``), so the two can be
compared draw for draw.

A local step's mini-batches come as a ``rfl.problems.MiniBatch``: the B distinct samples
of each agent, held as the (s, N) selection mask the sampler draws, with the (s, B) indices
derived on demand (a compiled pass over the mask), which the problems' kernels and the
reference loops read.
"""

from __future__ import annotations

import numpy as np

from rfl.participation.base import canonical, make_scheme, proportional_weights
from rfl.problems import MiniBatch


class _SchemeWeights:
    """``weights`` of ``AgentSampler``: on an instance, the run's participation scheme's
    weights; on the class, the N_j-proportional weights renormalised over the participants
    (schemes ``full`` and ``uniform``), as a plain function of (local_sizes, agents)."""

    def __get__(self, sampler, owner):
        if sampler is None:
            return proportional_weights
        return sampler.scheme.weights


class AgentSampler:
    """Draws participants and mini-batches.

    local_sizes: (S,) N_j; batch_size: B (<= min N_j), sampled without
    replacement within a step (Algorithm 1, line 6); participation: the run's participation
    scheme (``rfl.participation``): None (all S agents), an int s (s agents uniformly without
    replacement) or ``{"scheme": name, **options}``. ``participants()`` and
    ``weights(local_sizes, agents)`` are the scheme's (``scheme``); ``participation`` is None
    when every agent takes part in every round, the scheme's canonical form otherwise.
    """

    def __init__(self, rng: np.random.Generator, local_sizes: np.ndarray, batch_size: int,
                 participation=None):
        self.rng = rng
        self.local_sizes = np.asarray(local_sizes, dtype=int)
        S = self.local_sizes.shape[0]
        if not 1 <= batch_size <= self.local_sizes.min():
            raise ValueError(f"batch_size={batch_size} must be in [1, min N_j={self.local_sizes.min()}]")
        if isinstance(participation, (int, np.integer)) and not 1 <= participation <= S:
            raise ValueError(f"participation={participation} must be in [1, S={S}]")
        self.batch_size = int(batch_size)
        self.scheme = make_scheme(participation, S, rng)
        self.participation = canonical(participation, S)
        self._uniform = bool(np.all(self.local_sizes == self.local_sizes[0]))
        self._full: dict[int, MiniBatch] = {}         # the all-samples batch, per number of agents

    def participants(self) -> np.ndarray:
        """Sorted indices of this round's agents: ``(s,)`` (the scheme's draw)."""
        return self.scheme.participants()

    #: weights(local_sizes, agents) -> (s,): the server's weight of each participant
    weights = _SchemeWeights()

    def batches(self, agents: np.ndarray) -> MiniBatch:
        """A mini-batch of B distinct samples per agent: ``(s, B)`` (a ``MiniBatch``).

        One uniform key per local sample; the B smallest keys of each agent win: the
        samples whose key is at most the B-th smallest (from a sort of the keys, which is
        cheaper than an argpartition). Keys are distinct with probability 1 - O(N^2 2^-53);
        a row where ties at the B-th key select more than B samples takes argpartition's B
        smallest keys instead, so every row always holds exactly B samples.
        B = 1: ``argmin``; B = N_j for every agent: all samples (the keys are still drawn,
        so the stream does not depend on B).
        """
        s, B = agents.shape[0], self.batch_size
        if self._uniform:
            n_max = int(self.local_sizes[0])
            keys = self.rng.random((s, n_max))
        else:
            sizes = self.local_sizes[agents]
            n_max = int(sizes.max())
            keys = self.rng.random((s, n_max))
            keys[np.arange(n_max)[None, :] >= sizes[:, None]] = np.inf
        if B == n_max:                                            # every sample
            full = self._full.get(s)
            if full is None:
                full = self._full[s] = MiniBatch(n_max, indices=np.broadcast_to(np.arange(n_max), (s, n_max)))
            return full
        if B == 1:
            return MiniBatch(n_max, indices=np.argmin(keys, axis=1)[:, None])
        mask = keys <= np.sort(keys, axis=1)[:, B - 1:B]
        if np.count_nonzero(mask) != s * B:                       # ties at the B-th key
            bad = np.flatnonzero(mask.sum(axis=1) != B)
            fixed = np.zeros((bad.size, n_max), dtype=bool)
            np.put_along_axis(fixed, np.argpartition(keys[bad], B - 1, axis=1)[:, :B], True, axis=1)
            mask[bad] = fixed
        return MiniBatch(n_max, mask=mask, size=B)

"""Random draws of a federated run: which agents take part, which samples they use.

One ``AgentSampler`` serves a whole run, and both the vectorised algorithms and
the per-agent reference loops of the tests consume its draws in the same order
(per round: ``participants``; per local step: ``batches``), so the two can be
compared draw for draw.

A local step's mini-batches come as a ``rfl.problems.MiniBatch`` of (s, B) indices, which
the problems' kernels and the reference loops read. They are counter-based
(``batch_indices``): agent j's batch at the c-th local step of the run is a function of
(key, c, j, N_j, B) alone, so a client holding agent j's data reproduces its own batches from
the run's key and the step counter, whoever else takes part. ``SAMPLER_VERSION`` names this
stream in the run metadata (1: the earlier sort of one uniform key per sample, drawn from the
run's Generator); results of different versions are not comparable draw for draw.
"""

from __future__ import annotations

import numpy as np

from rfl.participation.base import canonical, make_scheme, proportional_weights
from rfl.problems import MiniBatch

#: the mini-batch stream's version, recorded in each run's metadata (``rfl.runner``)
SAMPLER_VERSION = 2

_MAX_SIZE = 1 << 32                          # Lemire's 32-bit method draws in [0, n), n <= 2^32


def batch_indices(key: int, draw: int, agents, local_sizes, B: int) -> np.ndarray:
    """B distinct sample indices of each agent in ``agents`` for draw number ``draw``:
    ``(s, B)`` int64, row r in [0, N_j) ascending for j = agents[r] (N_j = local_sizes[j]),
    each B-subset of [0, N_j) equally likely.

    Pure and counter-based: row r depends on (key, draw, j, N_j, B) only (a Philox4x64-10
    stream per (key, draw, j), Floyd's algorithm; ``rfl.problems._kernels.floyd_batches``),
    O(B) work per agent. key: an integer in [0, 2^64); draw: >= 0.
    """
    agents = np.asarray(agents)
    local_sizes = np.asarray(local_sizes)
    if agents.ndim != 1 or (agents.size and not np.issubdtype(agents.dtype, np.integer)):
        raise ValueError(f"agents must be a 1-D integer array, got shape {agents.shape} {agents.dtype}")
    if local_sizes.ndim != 1:
        raise ValueError(f"local_sizes must have shape (S,), got {local_sizes.shape}")
    S = local_sizes.shape[0]
    agents = agents.astype(np.int64)
    if agents.size and (agents.min() < 0 or agents.max() >= S):
        raise ValueError(f"agents must lie in [0, S={S}), got {agents.min()}..{agents.max()}")
    if not 0 <= int(key) < 1 << 64:
        raise ValueError(f"key={key} must be in [0, 2^64)")
    if not 0 <= int(draw) < 1 << 64:
        raise ValueError(f"draw={draw} must be in [0, 2^64)")
    sizes = local_sizes[agents].astype(np.int64)
    B = int(B)
    if sizes.size and not 1 <= B <= sizes.min():
        raise ValueError(f"B={B} must be in [1, min N_j={sizes.min()}] over the agents")
    if sizes.size and sizes.max() > _MAX_SIZE:
        raise ValueError(f"local sizes up to 2^32 are supported, got N_j={sizes.max()}")
    out = np.empty((agents.shape[0], B), dtype=np.int64)
    from rfl.problems._batching import kernels
    return kernels().floyd_batches(np.uint64(int(key)), np.uint64(0), np.uint64(int(draw)),
                                   agents, sizes, B, out)


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
    ``key``: the mini-batch stream's key, drawn from rng once here; ``draw``: the number of
    ``batches`` calls so far (the counter of the next one). rng itself then feeds only
    the participation scheme.
    """

    def __init__(self, rng: np.random.Generator, local_sizes: np.ndarray, batch_size: int,
                 participation=None):
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
        # the mini-batches' stream: one key from rng, then one counter value per batches() call
        self.key = int(rng.integers(0, 2 ** 63, dtype=np.int64))
        self.draw = 0

    def participants(self) -> np.ndarray:
        """Sorted indices of this round's agents: ``(s,)`` (the scheme's draw)."""
        return self.scheme.participants()

    #: weights(local_sizes, agents) -> (s,): the server's weight of each participant
    weights = _SchemeWeights()

    def batches(self, agents: np.ndarray) -> MiniBatch:
        """A mini-batch of B distinct samples per agent for the next local step (Algorithm 1,
        line 6): ``(s, B)`` (a ``MiniBatch`` of indices, each row ascending).

        ``batch_indices(self.key, self.draw, agents, local_sizes, B)``, then ``draw`` counts
        one more call: agent j's batch depends only on (key, draw, j, N_j, B), not on the
        other participants. B = N_j for every agent: all samples, held once per number of
        agents (the draw counter still advances).
        """
        agents = np.asarray(agents)
        draw = self.draw
        self.draw += 1
        s, B = agents.shape[0], self.batch_size
        n_max = int(self.local_sizes.max())
        if self._uniform and B == n_max:                          # every sample
            full = self._full.get(s)
            if full is None:
                full = self._full[s] = MiniBatch(n_max, indices=np.broadcast_to(np.arange(n_max), (s, n_max)))
            return full
        return MiniBatch(n_max, indices=batch_indices(self.key, draw, agents, self.local_sizes, B))

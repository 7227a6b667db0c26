"""Random draws of a federated run: which agents take part, which samples they use.

One ``AgentSampler`` serves a whole run, and both the vectorised algorithms and
the per-agent reference loops of the tests consume its draws (per round: ``participants``;
per local step: ``batches``), so the two can be compared draw for draw.

A local step's mini-batches come as a ``rfl.problems.MiniBatch`` of (s, B) indices, which
the problems' kernels and the reference loops read. They are counter-based
(``batch_indices``): agent j's batch at draw number c is a function of (key, c, j, N_j, B)
alone, so a client holding agent j's data reproduces its own batches from the run's key and
the draw number, whoever else takes part.

Common random numbers (``SAMPLER_VERSION`` 3). A run's draws come from ``Draws(seed,
experiment)``: the mini-batch key from ``stream(seed, "sampling", experiment)`` and the
participation scheme's generator from ``stream(seed, "participation", experiment, <the
scheme's canonical form>)`` (``rfl.random.stream``); the draw number of local step k of round
t is ``draw_number(t, k) = t 2^32 + k``. So within an experiment every method and every value
of a sweep sees, for one seed, the same participants per round (for the same participation
scheme) and the same batch of agent j at (t, k) (for the same batch size B), whatever its
K, its step or how many local steps it runs: comparisons between methods are paired and identities exact (RFedAGS
paper Section 3.3: RFedAGS is RFedAvg for K = 1 with Exp and parallel transport). Versions:
1, the earlier sort of one uniform key per sample drawn from the run's Generator; 2, the
counter-based batches with a key per (seed, experiment, run) and the draw number counting
``batches`` calls; 3, this. Results of different versions are not comparable draw for draw
(``rfl.io.check_sampler_versions`` refuses to mix them).
"""

from __future__ import annotations

import json

import numpy as np

from rfl.participation.base import checked, make_scheme, proportional_weights
from rfl.problems import MiniBatch
from rfl.random import stream

#: the draws' version, recorded in each run's metadata (``rfl.runner``; module docstring)
SAMPLER_VERSION = 3
#: bits of the local step in a draw number: draw_number(t, k) = t 2^STEP_BITS + k
STEP_BITS = 32

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


def draw_number(t: int, k: int) -> int:
    """The draw number of local step k of round t: t 2^32 + k (t, k in [0, 2^32)), the
    same for every method of a run's experiment, whatever its K."""
    t, k = int(t), int(k)
    if not 0 <= t < 1 << STEP_BITS:
        raise ValueError(f"round t={t} must be in [0, 2^{STEP_BITS})")
    if not 0 <= k < 1 << STEP_BITS:
        raise ValueError(f"local step k={k} must be in [0, 2^{STEP_BITS})")
    return (t << STEP_BITS) + k


class Draws:
    """Where the draws of the runs of one experiment and seed come from (module docstring):
    ``Draws(seed, experiment)``; ``names`` beyond the experiment key a stream of its own
    (``child``: FedRR's 2 eta-chain without a shared stream)."""

    def __init__(self, seed: int, *names: str):
        if not names:
            raise ValueError("Draws needs the experiment's name")
        self.seed, self.names = int(seed), tuple(str(n) for n in names)

    def __repr__(self):
        return f"Draws({self.seed}, {', '.join(map(repr, self.names))})"

    @property
    def batch_key(self) -> int:
        """The mini-batch key: the first draw in [0, 2^63) of (seed, "sampling", *names)."""
        return int(stream(self.seed, "sampling", *self.names).integers(0, 2 ** 63, dtype=np.int64))

    def participation_rng(self, participation) -> np.random.Generator:
        """The participation scheme's generator: (seed, "participation", *names, the scheme's
        canonical form as JSON), so two runs with the same scheme and options draw the same
        participants round after round."""
        return stream(self.seed, "participation", *self.names,
                      json.dumps(participation, sort_keys=True))

    def graph_rng(self, spec: str) -> np.random.Generator:
        """A random graph's generator (decentralised methods, ``rfl.graphs``): (seed, "graph",
        *names, the graph and weights spec as JSON), so every method of an experiment and seed
        with that graph runs on the same draw of it."""
        return stream(self.seed, "graph", *self.names, spec)

    def start_rng(self) -> np.random.Generator:
        """The agents' spread starting points of a decentralised run: (seed, "start", *names)."""
        return stream(self.seed, "start", *self.names)

    def child(self, name: str) -> "Draws":
        """Draws independent of these (another stream name)."""
        return Draws(self.seed, *self.names, name)


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

    ``source``: a ``Draws`` (a run: the key and the scheme's generator are the experiment's,
    module docstring), or a ``np.random.Generator`` (tests, tools): the key is its first draw
    and it then feeds the scheme. ``key``: the mini-batch key. ``t``: the round of the last
    ``participants`` call (0 before the first); ``k``: the local step of the next ``batches``
    call (0 after ``participants``, one past the step of the last call).
    """

    def __init__(self, source, local_sizes: np.ndarray, batch_size: int,
                 participation=None):
        self.local_sizes = np.array(local_sizes, dtype=int)     # a read-only copy: n_max below
        self.local_sizes.setflags(write=False)
        S = self.local_sizes.shape[0]
        if not 1 <= batch_size <= self.local_sizes.min():
            raise ValueError(f"batch_size={batch_size} must be in [1, min N_j={self.local_sizes.min()}]")
        if isinstance(participation, (int, np.integer)) and not 1 <= participation <= S:
            raise ValueError(f"participation={participation} must be in [1, S={S}]")
        self.batch_size = int(batch_size)
        self.participation = checked(participation, S)
        if isinstance(source, Draws):
            self.key = source.batch_key
            rng = source.participation_rng(self.participation)
        else:                                  # one generator: the key first, then the scheme
            rng = source
            self.key = int(rng.integers(0, 2 ** 63, dtype=np.int64))
        self.scheme = make_scheme(participation, S, rng)
        self._uniform = bool(np.all(self.local_sizes == self.local_sizes[0]))
        self._n_max = int(self.local_sizes.max())     # asked at every local step: computed once
        self._full: dict[int, MiniBatch] = {}         # the all-samples batch, per number of agents
        self._rounds = 0                              # participants() calls so far
        self.k = 0

    @property
    def t(self) -> int:
        """The round of the last ``participants`` call (0 before the first)."""
        return max(self._rounds - 1, 0)

    def participants(self) -> np.ndarray:
        """Sorted indices of this round's agents: ``(s,)`` (the scheme's draw); starts a
        round (``t`` advances, ``k`` restarts at 0)."""
        self._rounds += 1
        self.k = 0
        return self.scheme.participants()

    #: weights(local_sizes, agents) -> (s,): the server's weight of each participant
    weights = _SchemeWeights()

    def batches(self, agents: np.ndarray, t: int | None = None, k: int | None = None) -> MiniBatch:
        """The mini-batches of local step k of round t (Algorithm 1, line 6): B distinct samples
        per agent, ``(s, B)`` (a ``MiniBatch`` of indices, each row ascending).

        ``batch_indices(key, draw_number(t, k), agents, local_sizes, B)``: agent j's batch
        depends only on (key, t, k, j, N_j, B), not on the other participants nor on the
        method. t, k default to the sampler's own count (``t``: the round of the last
        ``participants`` call; ``k``: one past the step of the last ``batches`` call, 0 after
        ``participants``), which are the round and step of a strategy that draws its
        participants once per round and one batch per local step; the strategies pass them. B = N_j for every agent: all samples, held once per
        number of agents.
        """
        agents = np.asarray(agents)
        k = self.k if k is None else int(k)
        draw = draw_number(self.t if t is None else t, k)
        self.k = k + 1
        s, B = agents.shape[0], self.batch_size
        n_max = self._n_max
        if self._uniform and B == n_max:                          # every sample
            full = self._full.get(s)
            if full is None:
                full = self._full[s] = MiniBatch(n_max, indices=np.broadcast_to(np.arange(n_max), (s, n_max)))
            return full
        return MiniBatch(n_max, indices=batch_indices(self.key, draw, agents, self.local_sizes, B))

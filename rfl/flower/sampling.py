"""The counter-based mini-batch draws a Flower client reproduces on its own.

The server sends (key, draw, K, B), draw = ``draw_number(t, 0)`` = t 2^32 for round t
(``round_draw``), and agent j draws the batch of its local step k as
``batch_indices(key, draw + k, [j], local_sizes, B)`` = the batch of draw number
``draw_number(t, k)``: agent j's batch at draw c depends only on (key, c, j, N_j, B), so a
client holding one agent draws exactly the batch the in-process simulator draws for it (the
contract of ``rfl.algorithms.sampling``: ``batch_indices``, ``draw_number`` and
``AgentSampler.key``).
"""

from __future__ import annotations

import numpy as np

from rfl.algorithms.sampling import batch_indices, draw_number
from rfl.problems import MiniBatch


def agent_batch(key: int, draw: int, agent: int, n_local: int, B: int) -> MiniBatch:
    """The (1, B) mini-batch of one agent (global id ``agent``, N_j = ``n_local``) at ``draw``."""
    sizes = np.full(int(agent) + 1, int(n_local))          # only N_agent is read
    return MiniBatch(int(n_local), indices=batch_indices(key, draw, np.array([agent]), sizes, B))


def round_draw(t: int, K: int) -> int:
    """The draw number of local step 0 of round t, sent to the clients: step k's is this + k
    (``draw_number(t, k)``, k < K)."""
    draw_number(t, int(K) - 1)                          # K steps fit in the round's draws
    return draw_number(t, 0)

"""Scaffold with option II control variates (Karimireddy et al., ICML 2020, Algorithm 1), for
problems on Euclidean space.

Round t, server point x, server control variate c, agent controls c_i, server step eta_g,
local step eta, K local steps; for each participating agent i (set S):

    y_i <- x;  K times:  y_i <- y_i - eta (g_i(y_i) - c_i + c)          (g_i: mini-batch gradient)
    c_i^+ = c_i - c + (x - y_i) / (K eta)                                  (option II)
    x <- x + eta_g sum_{i in S} p_i (y_i - x)           (p_i: the sampler's weights over S)
    c <- c + sum_{i in S} q_i (c_i^+ - c_i),  c_i <- c_i^+                 (q_i = N_i / sum_j N_j)

Karimireddy et al. weight agents equally (q_i = 1/N, the server's c update (|S|/N) mean_S);
with unequal pools the weights are the problem's p_i as in FedAvg's aggregation, so that
c = sum_i q_i c_i stays true round after round (c_i = c = 0 at the start). With every agent
and eta_g = 1, c_i - c tracks agent i's drift g_i - g at the last server point, and theta* is
a fixed point with exact gradients: the heterogeneity part of FedAvg's bias is removed (the
gradient-noise part is not: Mangold et al. 2024, arXiv 2412.01389, "it seems Scaffold cannot
correct bias due to stochasticity"). With one agent c_1 = c after every round, so Scaffold is
local SGD: K eta-steps of SGD per round.

Partial participation: only the sampled agents run and update their c_i; c moves by their
q-weighted change; the others keep c_i.

Communication: the server sends (x, c) and each participant returns (y_i - x, c_i^+ - c_i):
4 s d floats per round, twice FedAvg's.

SCAFFLSA (``rfl.algorithms.scafflsa``) is this class on a linear field with its own bookkeeping
of the corrections xi_i = c_i - c.
"""

from __future__ import annotations

import numpy as np

from .aggregation import anchored_mean
from .averaging import AVERAGE_AFTER
from .base import FederatedStrategy


class Scaffold(FederatedStrategy):
    """Local steps corrected by c - c_i, option II control variates (module docstring).

    ``control_variates``: (S, *point_shape), the c_i; ``server_control``: (*point_shape), c
    (both None before ``reset``; a round without a reset starts them at 0).
    """

    name = "scaffold"
    label = "Scaffold"
    requires = frozenset({"flat"})
    fields = frozenset({"gradient", "linear_field"})
    options = {"server_step": {"type": "number", "exclusiveMinimum": 0, "default": 1.0,
                               "description": "eta_g: x <- x + eta_g sum_i p_i (y_i - x)"},
               "average_after": AVERAGE_AFTER}
    style = {"color": "tab:olive", "ls": "-."}
    plot_order = 9

    #: c_i: (S, *point_shape) and c: point_shape, set by ``reset``
    control_variates = None
    server_control = None

    def reset(self, x0=None) -> None:
        """c_i = c = 0."""
        self.control_variates = np.zeros((self.problem.n_agents,) + self.manifold.point_shape)
        self.server_control = np.zeros(self.manifold.point_shape)

    def corrections(self, agents: np.ndarray) -> np.ndarray:
        """c_i - c, subtracted from the participants' local gradients: ``(s, *point_shape)``."""
        return self.control_variates[agents] - self.server_control

    def round(self, x_t, t, sampler):
        if self.control_variates is None:
            self.reset(x_t)
        agents = sampler.participants()
        eta = self.step_size(t)
        xi = self.corrections(agents)                                         # (s, d)
        x = self.broadcast(x_t, agents.shape[0])                              # y_i = x_t
        for k in range(self.K):
            g = self.problem.minibatch_egrad(x, agents, sampler.batches(agents, t, k))
            g -= xi
            g *= eta
            x -= g                                                            # a fresh array: in place
        x_next = anchored_mean(sampler.weights(self.problem.local_sizes, agents), x, x_t)
        if self.server_step != 1.0:
            x_next = x_t + self.server_step * (x_next - x_t)
        self.update_controls(agents, x, x_t, x_next, eta)
        return self.result(x_next, agents)

    def update_controls(self, agents, y, x_t, x_next, eta) -> None:
        """Option II: c_i^+ = c_i - c + (x_t - y_i) / (K eta); c += sum_S q_i (c_i^+ - c_i)."""
        c_i = self.control_variates[agents]
        new = c_i - self.server_control + (x_t[None] - y) / (eta * self.K)
        q = self.problem.weights[agents]
        self.server_control = self.server_control + np.tensordot(q, new - c_i, axes=1)
        self.control_variates[agents] = new

    def floats_per_round(self, s: int) -> int:
        """(x, c) to s agents and (y_i - x, c_i^+ - c_i) back: 4 s d."""
        return 4 * s * self.manifold.ambient_size

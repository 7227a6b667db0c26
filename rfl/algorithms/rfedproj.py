"""RFedProj: projection-based federated learning with drift correction on a compact
embedded submanifold (Zhang, Hu, So & Johansson, "Nonconvex Federated Learning on
Compact Smooth Submanifolds With Heterogeneous Data", Algorithm 1)."""

from __future__ import annotations

import numpy as np

from .aggregation import anchored_mean, weighted_mean
from .base import FederatedStrategy


class RFedProj(FederatedStrategy):
    """The server keeps an ambient point x_bar (not on M in general) and every agent a
    correction c_j. In round r agent j sets z_hat_0 = z_0 = P_M(x_bar^r) (line 3) and runs,
    for t = 0, ..., K-1 with a fresh mini-batch (lines 5-8),

        z_hat_{t+1} = z_hat_t - eta_r (grad f_j(z_t; B_t) + c_j),    z_{t+1} = P_M(z_hat_{t+1}),

    grad the Riemannian mini-batch gradient at z_t (line 6: projection of the Euclidean
    gradient onto T_z M). The server (line 12) sets

        x_bar^{r+1} = P_M(x_bar^r) + eta_g (sum_j p_j z_hat_{j,K} - P_M(x_bar^r)),

    p_j as in the sampler (1/n in the poster). The run's iterate is P_M(x_bar^{r+1}) (line 18).

    Correction (line 15). With z_hat_{j,K} = P_M(x_bar^r) - eta_r sum_t (g_{j,t} + c_j) the
    server step reads x_bar^{r+1} = P_M(x_bar^r) - eta_g eta_r K (avg^r + sum_j p_j c_j^r),

        old_j^r = (1/K) sum_t g_{j,t},    avg^r = sum_j p_j old_j^r,

    so line 15 with its factor read as 1/(eta_g eta K) is c_j^{r+1} = avg^r - old_j^r +
    sum_i p_i c_i^r. With every agent taking part the last sum is zero in every round
    (c^1 = 0 and sum_j p_j (avg - old_j) = 0), and this is the compact form's
    c_j^{r+1} = "average - old", which is what is implemented. Under partial participation
    c_j^{r+1} = avg^r - old_j^r for the agents of round r, and c_j = 0 for an agent that did
    not take part in the previous round (so sum_j p_j c_j^{r+1} = 0 over round r's agents).

    With K = 1, full batches and all agents, the corrections cancel in the average and
    P_M(x_bar^{r+1}) = P_M(y - eta_g eta grad f(y)), y = P_M(x_bar^r): projected Riemannian
    gradient descent with step eta_g eta K.

    Communication: the upload of z_hat_{j,K} and the broadcast of x_bar (base count,
    2 s n per round). With all agents taking part avg^r = (P_M(x_bar^r) - x_bar^{r+1})/(eta_g
    eta_r K), so the correction costs nothing extra; under partial participation an agent
    returning from the previous round also needs avg^{r-1} (one more point-sized message
    each, in the round's ``RoundResult``). Gradient evaluations: s K B per round, as the base
    class.

    State (set by ``reset``): ``x_bar`` (point_shape), the ambient server point; ``c``
    (S, *point_shape), the corrections; ``previous`` (S,) bool, the agents of the last round.
    """

    name = "rfedproj"
    label = "RFedProj"
    requires = frozenset({"nearest_point"})
    fields = frozenset({"gradient"})
    options = {"server_step": {"type": "number", "exclusiveMinimum": 0, "default": 1.0,
                               "description": "server step eta_g of line 12 (1: the plain "
                                              "average of the local points)"}}
    style = {"color": "tab:cyan", "ls": "-."}
    plot_order = 3

    #: the state across rounds (``reset``): the ambient server point, the corrections c_j and
    #: which agents took part in the previous round
    x_bar = c = previous = None

    def reset(self, x0: np.ndarray) -> None:
        """x_bar^1 = x0 and c_j^1 = 0 for all S agents, none of which took part before."""
        self.x_bar = np.array(x0, dtype=float)
        self.c = np.zeros((self.problem.n_agents,) + self.manifold.point_shape)
        self.previous = np.zeros(self.problem.n_agents, dtype=bool)

    def local_gradient(self, z, agents, sampler, t, k):
        """Lines 5-6: a fresh mini-batch per agent (``sampler.batches`` of local step k of
        round t) and the Riemannian mini-batch gradient at z: ``(s, *point_shape)``."""
        return self.problem.minibatch_rgrad(z, agents, sampler.batches(agents, t, k))

    def round(self, x_t, t, sampler):
        """One round (lines 3-15) from the state (x_bar^r, c^r), which it advances; returns
        P_M(x_bar^{r+1}) (line 18). ``x_t`` = P_M(x_bar^r) is not used: x_bar^r is the state
        (a round without a ``reset`` starts from x_bar = x_t)."""
        if self.x_bar is None:
            self.reset(x_t)
        m = self.manifold
        agents = sampler.participants()
        s = agents.shape[0]
        eta = self.step_size(t)
        w = sampler.weights(self.problem.local_sizes, agents)
        y = m.nearest_point(self.x_bar[None])[0]                          # P_M(x_bar^r)
        z_hat = self.broadcast(y, s)                                       # line 3
        z = z_hat.copy()
        c_r = self.c[agents]                                               # (s, *shape)
        g_sum = m.zero_vector(z)
        for k in range(self.K):                                            # line 4
            g = self.local_gradient(z, agents, sampler, t, k)              # lines 5-6
            g_sum += g
            z_hat = z_hat - eta * (g + c_r)                                # line 7
            z = m.nearest_point(z_hat)                                     # line 8
        self.x_bar = y + self.server_step * (anchored_mean(w, z_hat, y) - y)  # line 12
        old = g_sum / self.K
        avg = weighted_mean(w, old)
        self.c = np.zeros_like(self.c)                                     # absent agents: c = 0
        self.c[agents] = avg[None] - old                                   # line 15
        floats = self.floats_per_round(s)
        if sampler.participation is not None:                              # avg^{r-1} to returning agents
            floats += int(self.previous[agents].sum()) * m.ambient_size
        self.previous[:] = False
        self.previous[agents] = True
        return self.result(m.nearest_point(self.x_bar[None])[0], agents, floats=floats)

"""RFedProj: projection-based federated learning with drift correction on a compact
embedded submanifold (Zhang, Hu, So & Johansson, "Nonconvex Federated Learning on
Compact Smooth Submanifolds With Heterogeneous Data", Algorithm 1)."""

from __future__ import annotations

import numpy as np


from .base import Counters, FederatedAlgorithm


class RFedProj(FederatedAlgorithm):
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
    each, counted by ``iterate``). Gradient evaluations: s K B per round, as the base class.
    """

    name = "rfedproj"
    label = "RFedProj"
    requires = frozenset({"nearest_point"})
    options = {"server_step": {"type": "number", "exclusiveMinimum": 0, "default": 1.0, "description": "RFedProj's server step size eta_g (default 1)."}}

    def __init__(self, problem, step_size, K, batch_size, participation=None,
                 server_step: float = 1.0):
        super().__init__(problem, step_size, K, batch_size, participation)
        if not server_step > 0:
            raise ValueError(f"server_step must be positive, got {server_step!r}")
        self.server_step = float(server_step)
        if not self.manifold.offers("nearest_point"):
            self.manifold.nearest_point(np.zeros((1,) + self.manifold.point_shape))   # raises the message

    def initial_state(self, x0: np.ndarray):
        """x_bar^1 = x0 and c_j^1 = 0 for all S agents: ``(point_shape, (S, *point_shape))``."""
        return np.array(x0, dtype=float), np.zeros((self.problem.n_agents,) + self.manifold.point_shape)

    def step(self, x_bar, c, t, sampler):
        """One round (lines 3-15) from the state (x_bar^r, c^r); returns (x_bar^{r+1}, c^{r+1}, agents)."""
        m = self.manifold
        agents = sampler.participants()
        s = agents.shape[0]
        eta = self.step_size(t)
        w = sampler.weights(self.problem.local_sizes, agents)
        y = m.nearest_point(x_bar[None])[0]                                      # P_M(x_bar^r)
        z_hat = self.broadcast(y, s)                                       # line 3
        z = z_hat.copy()
        c_r = c[agents]                                                    # (s, *shape)
        g_sum = m.zero_vector(z)
        for _ in range(self.K):                                            # line 4
            batch = sampler.batches(agents)                                # line 5
            g = self.problem.minibatch_rgrad(z, agents, batch)             # line 6
            g_sum += g
            z_hat = z_hat - eta * (g + c_r)                                # line 7
            z = m.nearest_point(z_hat)                                           # line 8
        x_bar_next = y + self.server_step * (np.tensordot(w, z_hat, axes=1) - y)   # line 12
        old = g_sum / self.K
        avg = np.tensordot(w, old, axes=1)
        c_next = np.zeros_like(c)                                          # absent agents: c = 0
        c_next[agents] = avg[None] - old                                   # line 15
        return x_bar_next, c_next, agents

    def round(self, x_t, t, sampler):
        raise NotImplementedError(
            "rfedproj carries state across rounds (the ambient server point x_bar and the "
            "corrections c_j); use iterate(), or step() with initial_state()")

    def iterate(self, x0, rounds, rng):
        """Yield ``(t, P_M(x_bar^{t+1}), Counters)``; x_bar and the c_j stay internal."""
        sampler = self.sampler(rng)
        counters = Counters()
        n = self.manifold.ambient_size
        x_bar, c = self.initial_state(x0)
        previous = np.zeros(self.problem.n_agents, dtype=bool)     # took part in the last round
        for t in range(rounds):
            x_bar, c, agents = self.step(x_bar, c, t, sampler)
            s = agents.shape[0]
            counters.grad_evals += s * self.K * self.batch_size
            counters.floats += self.floats_per_round(s)
            if sampler.participation is not None:
                counters.floats += int(previous[agents].sum()) * n           # avg^{r-1} to returning agents
            previous[:] = False
            previous[agents] = True
            yield t, self.manifold.nearest_point(x_bar[None])[0], counters

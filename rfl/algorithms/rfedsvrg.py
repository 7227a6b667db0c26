"""RFedSVRG: Riemannian federated SVRG with tangent-mean aggregation (Li & Ma 2022, Algorithm 1)."""

from __future__ import annotations

import numpy as np

from .base import Counters, FederatedAlgorithm


class RFedSVRG(FederatedAlgorithm):
    """Each round the s participating agents send grad f_j(x_t), their full local
    Riemannian gradient at the server point; the server broadcasts

        grad f(x_t) = sum_j p_j grad f_j(x_t)

    (p_j as in the sampler: N_j-proportional, renormalised over the participants;
    1/k in the paper). Agent j then runs K variance-reduced local steps (local
    gradient step of Algorithm 1)

        x^j_{l+1} = R_{x^j_l}( -alpha_t [ g_j(x^j_l) - Gamma_{x_t -> x^j_l}(grad f_j(x_t) - grad f(x_t)) ] ),

    g_j the mini-batch Riemannian gradient, R / Gamma the manifold's retraction and
    transport (Exp and parallel transport give the paper's update exactly), and the
    server takes the tangent-space consensus step

        x_{t+1} = Exp_{x_t}( sum_j p_j Exp_{x_t}^{-1}(x^j_K) ),

    which needs a closed-form Log (not Stiefel).

    Cost per round, beyond the base class's: the full local gradient at x_t costs
    N_j sample gradients for each participating agent, and the extra upload of
    grad f_j(x_t) plus the broadcast of grad f(x_t) doubles the communication
    (``floats_per_round``).
    """

    name = "rfedsvrg"
    label = "RFedSVRG"
    requires = frozenset({"tangent_mean"})

    def __init__(self, problem, step_size, K, batch_size, participation=None):
        super().__init__(problem, step_size, K, batch_size, participation)
        m = self.manifold
        if not m.offers("tangent_mean", m.retraction_name):
            raise ValueError(
                f"rfedsvrg aggregates by the tangent mean, which needs a closed-form Log or an "
                f"inverse retraction; {m.name} with retraction {m.retraction_name!r} has neither")

    def _round(self, x_t, t, sampler):
        """One round; returns ``(x_{t+1}, agents)`` so ``iterate`` can count the full gradients."""
        m = self.manifold
        agents = sampler.participants()
        s = agents.shape[0]
        alpha = self.step_size(t)
        w = sampler.weights(self.problem.local_sizes, agents)
        x_server = self.broadcast(x_t, s)                                  # (s, *shape)
        g_local = m.euclidean_to_riemannian_gradient(x_server, self.problem.local_egrad(x_server, agents))   # grad f_j(x_t)
        g_global = np.tensordot(w, g_local, axes=1)                        # grad f(x_t)
        shift = g_local - g_global[None]                                   # grad f_j(x_t) - grad f(x_t)
        x = x_server.copy()                                                # x^j_0 = x_t
        for _ in range(self.K):
            batch = sampler.batches(agents)
            v = self.problem.minibatch_rgrad(x, agents, batch) - m.transport(x_server, x, shift)
            x = m.retraction(x, -alpha * v)                                # local gradient step
        direction = np.tensordot(w, m.tangent_log(x_server, x), axes=1)           # consensus step
        return m.tangent_exp(x_t[None], direction[None])[0], agents

    def round(self, x_t, t, sampler):
        return self._round(x_t, t, sampler)[0]

    def floats_per_round(self, s: int) -> int:
        """Broadcast of x_t and of grad f(x_t), upload of x^j_K and of grad f_j(x_t): 4 s n."""
        return 4 * s * self.manifold.ambient_size

    def iterate(self, x0, rounds, rng):
        """As the base class, with the full local gradients (N_j per participant) counted."""
        sampler = self.sampler(rng)
        counters = Counters()
        sizes = np.asarray(self.problem.local_sizes)
        x = x0
        for t in range(rounds):
            x, agents = self._round(x, t, sampler)
            s = agents.shape[0]
            counters.grad_evals += s * self.K * self.batch_size + int(sizes[agents].sum())
            counters.floats += self.floats_per_round(s)
            yield t, x, counters

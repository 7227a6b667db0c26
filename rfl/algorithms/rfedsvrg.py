"""RFedSVRG: Riemannian federated SVRG with tangent-mean aggregation (Li & Ma 2022, Algorithm 1)."""

from __future__ import annotations

import numpy as np

from .aggregation import tangent_mean, weighted_mean
from .base import FederatedStrategy


class RFedSVRG(FederatedStrategy):
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

    which needs a closed-form Log, or an inverse of the retraction in its place
    (``requires``: the manifold's tangent mean).

    Cost per round, beyond the base class's: the full local gradient at x_t costs
    N_j sample gradients for each participating agent, and the extra upload of
    grad f_j(x_t) plus the broadcast of grad f(x_t) doubles the communication
    (``floats_per_round``); both are in the round's ``RoundResult``.
    """

    name = "rfedsvrg"
    label = "RFedSVRG"
    requires = frozenset({"tangent_mean"})
    fields = frozenset({"gradient"})
    style = {"color": "tab:purple", "ls": "-."}
    plot_order = 2

    def round(self, x_t, t, sampler):
        m = self.manifold
        agents = sampler.participants()
        s = agents.shape[0]
        alpha = self.step_size(t)
        w = sampler.weights(self.problem.local_sizes, agents)
        x_server = self.broadcast(x_t, s)                                  # (s, *shape)
        g_local = m.euclidean_to_riemannian_gradient(x_server, self.problem.local_egrad(x_server, agents))   # grad f_j(x_t)
        g_global = weighted_mean(w, g_local)                               # grad f(x_t)
        shift = g_local - g_global[None]                                   # grad f_j(x_t) - grad f(x_t)
        x = x_server.copy()                                                # x^j_0 = x_t
        for _ in range(self.K):
            batch = sampler.batches(agents)
            v = self.problem.minibatch_rgrad(x, agents, batch) - m.transport(x_server, x, shift)
            x = m.retraction(x, -alpha * v)                                # local gradient step
        full = int(np.asarray(self.problem.local_sizes)[agents].sum())     # N_j per participant
        return self.result(tangent_mean(m, x_t, x, w), agents,            # consensus step
                           grad_evals=self.local_work(agents) + full)

    def floats_per_round(self, s: int) -> int:
        """Broadcast of x_t and of grad f(x_t), upload of x^j_K and of grad f_j(x_t): 4 s n."""
        return 4 * s * self.manifold.ambient_size

"""RFedAGS: Riemannian federated averaging of gradient streams (paper Algorithm 1)."""

from __future__ import annotations

from .aggregation import retract_weighted_stream
from .base import FederatedStrategy


class RFedAGS(FederatedStrategy):
    """Each agent j runs K retraction steps from x_t and accumulates its gradient stream

        zeta^j <- zeta^j + Gamma_{x^j_{t,k-1} -> x_t}(eta^j_{k-1})        (line 9)

    with eta^j_{k-1} = -alpha_t * (mini-batch Riemannian gradient)     (line 7)
    and x^j_{t,k} = R_{x^j_{t,k-1}}(eta^j_{k-1}) (line 8); the server sets
    x_{t+1} = R_{x_t}(sum_j p_j zeta^j) (line 13; p_j = 1/S in the paper's i.i.d.
    setting, N_j-proportional and renormalised over sampled agents here).
    """

    name = "rfedags"
    label = "RFedAGS"
    requires = frozenset()
    fields = frozenset({"gradient"})
    style = {"color": None, "ls": "-"}
    plot_order = 0

    def gradient_streams(self, x_t, t, sampler):
        """Lines 2-10 for the round's agents: ``(agents (s,), zeta (s, *point_shape))``, zeta^j
        in T_{x_t} M."""
        m = self.manifold
        agents = sampler.participants()
        s = agents.shape[0]
        alpha = self.step_size(t)
        x_server = self.broadcast(x_t, s)            # (s, *shape), the transport target
        x = x_server.copy()                          # x^j_{t,0}
        zeta = m.zero_vector(x)                      # line 4
        for _ in range(self.K):
            batch = sampler.batches(agents)          # line 6: (s, B)
            eta = -alpha * self.problem.minibatch_rgrad(x, agents, batch)   # line 7
            zeta += m.transport(x, x_server, eta)    # line 9 (uses x^j_{t,k-1})
            x = m.retraction(x, eta)                 # line 8
        return agents, zeta

    def round(self, x_t, t, sampler):
        agents, zeta = self.gradient_streams(x_t, t, sampler)
        w = sampler.weights(self.problem.local_sizes, agents)
        return self.result(retract_weighted_stream(self.manifold, x_t, zeta, w), agents)   # line 13

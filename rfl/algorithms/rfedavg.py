"""RFedAvg: local Riemannian SGD and tangent-mean aggregation (Li & Ma, Algorithm 2; paper (3.3))."""

from __future__ import annotations

from .aggregation import tangent_mean
from .base import FederatedStrategy


class RFedAvg(FederatedStrategy):
    """K local steps x^j_{t,k} = R(x^j_{t,k-1}, -alpha_t grad), then

        x_{t+1} = Exp_{x_t}( sum_j p_j Exp_{x_t}^{-1}(x^j_{t,K}) ).
    """

    name = "rfedavg"
    label = "RFedAvg"
    requires = frozenset({"tangent_mean"})
    fields = frozenset({"gradient"})
    style = {"color": None, "ls": "--"}
    plot_order = 1

    def round(self, x_t, t, sampler):
        m = self.manifold
        agents = sampler.participants()
        s = agents.shape[0]
        alpha = self.step_size(t)
        x = self.broadcast(x_t, s)
        for _ in range(self.K):
            batch = sampler.batches(agents)
            x = m.retraction(x, -alpha * self.problem.minibatch_rgrad(x, agents, batch))
        w = sampler.weights(self.problem.local_sizes, agents)
        return self.result(tangent_mean(m, x_t, x, w), agents)

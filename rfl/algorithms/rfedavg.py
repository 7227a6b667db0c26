"""RFedAvg: local Riemannian SGD and tangent-mean aggregation (Li & Ma, Algorithm 2; paper (3.3))."""

from __future__ import annotations

import numpy as np

from .base import FederatedAlgorithm


class RFedAvg(FederatedAlgorithm):
    """K local steps x^j_{t,k} = R(x^j_{t,k-1}, -alpha_t grad), then

        x_{t+1} = Exp_{x_t}( sum_j p_j Exp_{x_t}^{-1}(x^j_{t,K}) ).
    """

    name = "rfedavg"
    label = "RFedAvg"
    requires = frozenset({"tangent_mean"})

    def round(self, x_t, t, sampler):
        m = self.manifold
        agents = sampler.participants()
        s = agents.shape[0]
        alpha = self.step_size(t)
        x_server = self.broadcast(x_t, s)
        x = x_server.copy()
        for _ in range(self.K):
            batch = sampler.batches(agents)
            x = m.retraction(x, -alpha * self.problem.minibatch_rgrad(x, agents, batch))
        w = sampler.weights(self.problem.local_sizes, agents)
        direction = np.tensordot(w, m.tangent_log(x_server, x), axes=1)
        return m.tangent_exp(x_t[None], direction[None])[0]

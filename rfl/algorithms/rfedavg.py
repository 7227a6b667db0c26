"""RFedAvg: local Riemannian SGD and tangent-mean aggregation (Li & Ma, Algorithm 2; paper (3.3))."""

from __future__ import annotations

from .aggregation import tangent_mean
from .base import FederatedStrategy


def local_sgd(problem, x_t, agents, alpha, K, batches):
    """K local Riemannian SGD steps x^j_{t,k} = R(x^j_{t,k-1}, -alpha grad f_j(x^j_{t,k-1}; batch))
    of the agents ``agents`` (s,) from ``x_t`` broadcast as (s, *point_shape), ``batches(k)``
    the (s, B) mini-batch of step k = 0..K-1; returns x^j_{t,K} (s, *point_shape). The local
    work of RFedAvg, used by the in-process strategy and by a Flower client (``rfl.flower``)."""
    m = problem.manifold
    x = x_t
    for k in range(K):
        x = m.retraction(x, -alpha * problem.minibatch_rgrad(x, agents, batches(k)))
    return x


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
        x = local_sgd(self.problem, self.broadcast(x_t, s), agents, alpha, self.K,
                      lambda k: sampler.batches(agents, t, k))
        w = sampler.weights(self.problem.local_sizes, agents)
        return self.result(tangent_mean(m, x_t, x, w), agents)

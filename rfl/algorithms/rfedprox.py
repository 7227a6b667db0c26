"""RFedProx: Riemannian FedProx, the proximal baseline of Li & Ma (2022), Section 5.

FedProx (Li et al. 2020) adds to agent j's local objective a proximal term that keeps its
iterates near the server point: f_j(y) + (mu / 2) d(y, x_t)^2. On a manifold the gradient of
(1/2) d(y, x)^2 in y is -Log_y(x), so the local Riemannian gradient is

    grad f_j(y) - mu Log_y(x_t),

with Log the manifold's tangent lift (``Manifold.tangent_log``: Exp^{-1}, or the inverse of the
retraction where Log has no closed form, as RFedAvg's tangent mean uses). The server
aggregates as RFedAvg (tangent mean). mu = 0 is RFedAvg.
"""

from __future__ import annotations

from .aggregation import tangent_mean
from .base import FederatedStrategy


class RFedProx(FederatedStrategy):
    """K local steps from x^j_{t,0} = x_t,

        x^j_{t,k} = R( x^j_{t,k-1}, -alpha_t [ g_j(x^j_{t,k-1}) - mu Log_{x^j_{t,k-1}}(x_t) ] ),

    g_j the mini-batch Riemannian gradient of f_j; then x_{t+1} = Exp_{x_t}(sum_j p_j
    Exp_{x_t}^{-1}(x^j_{t,K})) (paper (3.3)). Shapes: points ``(s, *point_shape)``."""

    name = "rfedprox"
    label = "RFedProx"
    requires = frozenset({"tangent_mean"})
    fields = frozenset({"gradient"})
    options = {"mu": {"type": "number", "minimum": 0, "default": 0.1,
                      "description": "weight of the proximal term (mu/2) d(y, x_t)^2 of each "
                                     "agent's local objective (FedProx's mu); 0 is RFedAvg"}}
    style = {"color": "tab:olive", "ls": "--"}
    plot_order = 13

    def round(self, x_t, t, sampler):
        m = self.manifold
        agents = sampler.participants()
        s = agents.shape[0]
        alpha = self.step_size(t)
        anchor = self.broadcast(x_t, s)                                   # x_t for each agent
        x = anchor.copy()
        for k in range(self.K):
            v = self.problem.minibatch_rgrad(x, agents, sampler.batches(agents, t, k))
            if self.mu:
                v = v - self.mu * m.tangent_log(x, anchor)                 # grad of (mu/2) d(y, x_t)^2
            x = m.retraction(x, -alpha * v)
        w = sampler.weights(self.problem.local_sizes, agents)
        return self.result(tangent_mean(m, x_t, x, w), agents)

"""RFedAGS: Riemannian federated averaging of gradient streams (paper Algorithm 1)."""

from __future__ import annotations

from .aggregation import retract_weighted_stream
from .base import FederatedStrategy


def gradient_stream(problem, x_t, agents, alpha, K, batches):
    """Lines 3-10 of Algorithm 1 for the agents ``agents`` (s,) from the server point
    ``x_t`` broadcast as (s, *point_shape): K retraction steps with step size ``alpha``,
    ``batches(k)`` the (s, B) mini-batch of local step k = 0..K-1 (line 6); returns zeta
    (s, *point_shape), zeta^j in T_{x_t} M. The one local step of RFedAGS, used by the
    in-process strategy and by a Flower client serving one agent (``rfl.flower``)."""
    m = problem.manifold
    x = x_t.copy()                                # x^j_{t,0}
    zeta = m.zero_vector(x)                       # line 4
    for k in range(K):
        eta = -alpha * problem.minibatch_rgrad(x, agents, batches(k))   # line 7
        zeta += m.transport(x, x_t, eta)          # line 9 (uses x^j_{t,k-1})
        x = m.retraction(x, eta)                  # line 8
    return zeta


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
        agents = sampler.participants()
        x_server = self.broadcast(x_t, agents.shape[0])     # (s, *shape), the transport target
        zeta = gradient_stream(self.problem, x_server, agents, self.step_size(t), self.K,
                               lambda k: sampler.batches(agents))   # line 6: (s, B)
        return agents, zeta

    def round(self, x_t, t, sampler):
        agents, zeta = self.gradient_streams(x_t, t, sampler)
        w = sampler.weights(self.problem.local_sizes, agents)
        return self.result(retract_weighted_stream(self.manifold, x_t, zeta, w), agents)   # line 13

"""RFedAGS with a server step size: x_{t+1} = R_{x_t}(eta_g sum_j p_j zeta^j).

The agents' local work is RFedAGS's (paper Algorithm 1, lines 2-10, ``RFedAGS.gradient_streams``);
the server scales the aggregated gradient stream by eta_g before retracting (line 13 with
eta_g; eta_g = 1 is RFedAGS). One file: in-tree it goes to ``rfl/algorithms/``, in a plug-in
it is the module an ``rfl.algorithms`` entry point names.
"""

from __future__ import annotations

from rfl.algorithms.aggregation import retract_weighted_stream
from rfl.algorithms.rfedags import RFedAGS


class RFedAGSServerStep(RFedAGS):
    """RFedAGS whose server moves eta_g times the weighted mean of the gradient streams.

    Agent j: eta^j_{k-1} = -alpha_t grad f_j(x^j_{t,k-1}; B^j_k),
    zeta^j <- zeta^j + Gamma_{x^j_{t,k-1} -> x_t}(eta^j_{k-1}), x^j_{t,k} = R(x^j_{t,k-1}, eta^j_{k-1});
    server: x_{t+1} = R_{x_t}(eta_g sum_j p_j zeta^j).
    """

    name = "rfedags_server_step"
    label = "RFedAGS-SS"
    requires = frozenset()                      # any manifold: a retraction and a transport
    fields = frozenset({"gradient"})
    # the base class sets self.server_step from the config (checked against this schema)
    options = {"server_step": {"type": "number", "exclusiveMinimum": 0, "default": 1.0,
                               "description": "server step eta_g (1: RFedAGS)"}}
    style = {"color": "tab:red", "ls": "--"}
    plot_order = 10

    def round(self, x_t, t, sampler):
        """One round from x_t (``point_shape``)."""
        agents, zeta = self.gradient_streams(x_t, t, sampler)
        w = sampler.weights(self.problem.local_sizes, agents)
        # R_{x_t}(sum_j (eta_g p_j) zeta^j): the weights carry the server step
        return self.result(retract_weighted_stream(self.manifold, x_t, zeta, self.server_step * w),
                           agents)

"""RFedAGS: Riemannian federated averaging of gradient streams (paper Algorithm 1)."""

from __future__ import annotations

import numpy as np

from .aggregation import retract_weighted_stream
from .base import FederatedStrategy

#: the local methods of RFedAGS (option ``local_method``)
LOCAL_METHODS = ("sgd", "rsvrg")


def gradient_stream(problem, x_t, agents, alpha, K, batches, local_method="sgd"):
    """Lines 3-10 of Algorithm 1 for the agents ``agents`` (s,) from the server point
    ``x_t`` broadcast as (s, *point_shape): K retraction steps with step size ``alpha``,
    ``batches(k)`` the (s, B) mini-batch of local step k = 0..K-1 (line 6); returns zeta
    (s, *point_shape), zeta^j in T_{x_t} M. ``local_method``: "sgd" or "rsvrg" (see
    ``RFedAGS``). The one local step of RFedAGS, used by the in-process strategy and by a
    Flower client serving one agent (``rfl.flower``)."""
    if local_method not in LOCAL_METHODS:
        raise ValueError(f"local_method={local_method!r} is unknown; allowed: {', '.join(LOCAL_METHODS)}")
    m = problem.manifold
    x = x_t.copy()                                # x^j_{t,0}
    zeta = m.zero_vector(x)                       # line 4
    rsvrg = local_method == "rsvrg"
    if rsvrg:                                     # g_j = grad f_j(x_t)
        g_full = m.euclidean_to_riemannian_gradient(x_t, problem.local_egrad(x_t, agents))
    for k in range(K):
        batch = batches(k)                        # line 6: (s, B), drawn at every step
        if not rsvrg:
            v = problem.minibatch_rgrad(x, agents, batch)
        elif k == 0:
            v = g_full
        else:
            shift = problem.minibatch_rgrad(x_t, agents, batch) - g_full
            v = problem.minibatch_rgrad(x, agents, batch) - m.transport(x_t, x, shift)
        eta = -alpha * v                          # line 7
        zeta += m.transport(x, x_t, eta)          # line 9 (uses x^j_{t,k-1})
        x = m.retraction(x, eta)                  # line 8
    return zeta


class RFedAGS(FederatedStrategy):
    """Each agent j runs K retraction steps from x_t and accumulates its gradient stream

        zeta^j <- zeta^j + Gamma_{x^j_{t,k-1} -> x_t}(eta^j_{k-1})        (line 9)

    with eta^j_{k-1} = -alpha_t * (mini-batch Riemannian gradient)     (line 7)
    and x^j_{t,k} = R_{x^j_{t,k-1}}(eta^j_{k-1}) (line 8); the server sets
    x_{t+1} = R_{x_t}(sum_j p_j zeta^j) (line 13; p_j = 1/S in the paper's i.i.d.
    setting, the participation scheme's weights here: N_j-proportional and renormalised over
    the sampled agents, or 1/(N q_j) for the Bernoulli schemes, ``rfl.participation``).

    Local method (option ``local_method``). ``sgd``: line 7 as above. ``rsvrg``: the
    authors' code's ``localMethod = 'RSVRG'``, a variance-reduced local gradient anchored at
    the server point: agent j computes its full local gradient g_j = grad f_j(x_t) once per
    round, and each local step uses

        v^j_k = grad f_{j,B}(x^j_{t,k}) - Gamma_{x_t -> x^j_{t,k}}( grad f_{j,B}(x_t) - g_j ),

    both mini-batch gradients on the step's batch B, eta^j_k = -alpha_t v^j_k; lines 8 and 9
    are unchanged (the stream accumulates Gamma_{x^j_{t,k} -> x_t}(eta^j_k)). At k = 0,
    x^j_{t,0} = x_t and v^j_0 = g_j exactly (Gamma_{x_t -> x_t} = id on T_{x_t}M), so that step
    takes g_j without evaluating the batch; each agent draws a batch at every step all the
    same, as the authors' code does, so that the draws line up with ``sgd``. With B = N_j
    (full local batches) grad f_{j,B} = grad f_j and v^j_k = grad f_j(x^j_{t,k}): the run is
    plain RFedAGS with full batches.

    Where this differs from the authors' ``localRSVRG``: their stream adds
    -alpha_t (Gamma_{x^j -> x_t}(grad f_{j,B}(x^j)) - (grad f_{j,B}(x_t) - g_j)), i.e. the
    correction term enters the stream untransported, whereas line 9 transports the whole step,
    giving -alpha_t Gamma_{x^j -> x_t} Gamma_{x_t -> x^j}(grad f_{j,B}(x_t) - g_j) for that
    term. The two agree when Gamma_{x^j -> x_t} inverts Gamma_{x_t -> x^j} (parallel transport
    along the geodesic, the sphere's isometric transport their MNIST scripts use); with the
    projection transport they differ by O(alpha_t |x^j - x_t| |grad f_{j,B}(x_t) - g_j|).
    Here line 9 of Algorithm 1 is followed as written.

    Cost of ``rsvrg``: N_j sample gradients for g_j plus 2 B per local step after the first
    (grad f_{j,B} at x^j_{t,k} and at x_t): N_j + 2 B (K - 1) per participating agent and
    round, against K B for ``sgd`` (the authors count N_j + 2 B K). Communication is
    unchanged: g_j is local.
    """

    name = "rfedags"
    label = "RFedAGS"
    requires = frozenset()
    fields = frozenset({"gradient"})
    options = {"local_method": {"enum": list(LOCAL_METHODS), "default": "sgd",
                                "description": "local steps: plain mini-batch Riemannian SGD, or "
                                               "variance-reduced steps anchored at x_t (RSVRG)"}}
    style = {"color": None, "ls": "-"}
    plot_order = 0
    #: the local method when a subclass declares options of its own without this one
    local_method = "sgd"

    def gradient_streams(self, x_t, t, sampler):
        """Lines 2-10 for the round's agents: ``(agents (s,), zeta (s, *point_shape))``, zeta^j
        in T_{x_t} M."""
        agents = sampler.participants()
        x_server = self.broadcast(x_t, agents.shape[0])     # (s, *shape), the transport target
        zeta = gradient_stream(self.problem, x_server, agents, self.step_size(t), self.K,
                               lambda k: sampler.batches(agents, t, k), self.local_method)   # line 6
        return agents, zeta

    def local_work(self, agents: np.ndarray) -> int:
        """Sample gradients of a round: K B per participant (``sgd``), N_j + 2 B (K - 1)
        (``rsvrg``)."""
        if self.local_method != "rsvrg":
            return super().local_work(agents)
        full = int(np.asarray(self.problem.local_sizes)[agents].sum())
        return full + agents.shape[0] * 2 * self.batch_size * (self.K - 1)

    def round(self, x_t, t, sampler):
        agents, zeta = self.gradient_streams(x_t, t, sampler)
        w = sampler.weights(self.problem.local_sizes, agents)
        return self.result(retract_weighted_stream(self.manifold, x_t, zeta, w), agents)   # line 13

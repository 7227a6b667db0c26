"""RFedSVRG: Riemannian federated SVRG with tangent-mean aggregation (Li & Ma 2022, Algorithm 1)."""

from __future__ import annotations

import numpy as np

from .aggregation import tangent_mean, weighted_mean
from .base import FederatedStrategy

#: how grad f(x_t) of the correction is formed (option ``correction``)
CORRECTIONS = ("all_agents", "participants", "authors")


def authors_server_gradient(g_participants: np.ndarray, n_agents: int) -> np.ndarray:
    """grad f(x_t) as ``RFedSVRG_.m`` forms it (lines 74-78 of the authors' file): from the
    s participants' gradients in ascending agent order, (g_s + g_2 + ... + g_s) / S: the last
    participant counted twice, the first not at all (once when s = 1), over the number S of
    agents: ``(s, *shape) -> shape``."""
    g = np.asarray(g_participants)
    return (g[-1] + g[1:].sum(axis=0)) / n_agents


class RFedSVRG(FederatedStrategy):
    """Each round the server needs grad f(x_t), the gradient of the global cost
    f = sum_i p_i f_i at the server point (Li & Ma: f = (1/n) sum_i f_i over all n agents;
    here p_i = N_i / sum_l N_l, ``Problem.weights``). With ``correction: all_agents`` (the
    default, Li & Ma's definition) every one of the S agents sends grad f_i(x_t), its full
    local Riemannian gradient, and the server forms

        grad f(x_t) = sum_{i=1}^S p_i grad f_i(x_t);

    with ``correction: participants`` only the s agents of the round send it and the server
    uses their weighted mean sum_{j in S_t} p_j grad f_j(x_t) (p_j renormalised over the
    participants, as the sampler does) in its place. With every agent taking part the two
    coincide. ``correction: authors`` is the authors' code (``RFedSVRG_.m``) as it is: the
    participants send grad f_j(x_t) and the server forms (g_last + g_2 + ... + g_last) / S
    (``authors_server_gradient``: the last participant twice, the first not at all, over the
    number of agents), not an estimate of grad f(x_t); it is there to draw the authors' curves.
    Agent j of the round then runs K variance-reduced local steps (local
    gradient step of Algorithm 1)

        x^j_{l+1} = R_{x^j_l}( -alpha_t [ g_j(x^j_l) - Gamma_{x_t -> x^j_l}(grad f_j(x_t) - grad f(x_t)) ] ),

    g_j the mini-batch Riemannian gradient, R / Gamma the manifold's retraction and
    transport (Exp and parallel transport give the paper's update exactly), and the
    server takes the tangent-space consensus step

        x_{t+1} = Exp_{x_t}( sum_j p_j Exp_{x_t}^{-1}(x^j_K) ),

    which needs a closed-form Log, or an inverse of the retraction in its place
    (``requires``: the manifold's tangent mean).

    Cost per round, beyond the base class's: the full local gradient at x_t costs N_i
    sample gradients for each agent that sends one (all S, or the s participants), and
    communication is ``floats_per_round``; both are in the round's ``RoundResult``.
    """

    name = "rfedsvrg"
    label = "RFedSVRG"
    requires = frozenset({"tangent_mean"})
    fields = frozenset({"gradient"})
    options = {"correction": {
        "enum": list(CORRECTIONS), "default": "all_agents",
        "description": "grad f(x_t) in the local correction: all_agents = the gradient of the "
                       "global cost, every agent sends grad f_i(x_t) (Li & Ma, Algorithm 1); "
                       "participants = the weighted mean over the round's participants only; "
                       "authors = RFedSVRG_.m's sum (last participant twice, first not at all) "
                       "over the number of agents"}}
    style = {"color": "tab:purple", "ls": "-."}
    plot_order = 2

    def round(self, x_t, t, sampler):
        m = self.manifold
        agents = sampler.participants()
        s = agents.shape[0]
        alpha = self.step_size(t)
        w = sampler.weights(self.problem.local_sizes, agents)
        x_server = self.broadcast(x_t, s)                                  # (s, *shape)
        if self.correction == "all_agents":
            S = self.problem.n_agents
            everyone = np.arange(S)
            x_all = self.broadcast(x_t, S)
            g_all = m.euclidean_to_riemannian_gradient(                    # grad f_i(x_t), i = 1..S
                x_all, self.problem.local_egrad(x_all, everyone))
            g_global = weighted_mean(self.problem.weights, g_all)          # grad f(x_t)
            g_local = g_all[agents]
            senders = everyone
        else:
            g_local = m.euclidean_to_riemannian_gradient(x_server, self.problem.local_egrad(x_server, agents))
            if self.correction == "authors":
                g_global = authors_server_gradient(g_local, self.problem.n_agents)
            else:
                g_global = weighted_mean(w, g_local)                       # mean over S_t
            senders = agents
        shift = g_local - g_global[None]                                   # grad f_j(x_t) - grad f(x_t)
        x = x_server.copy()                                                # x^j_0 = x_t
        for k in range(self.K):
            batch = sampler.batches(agents, t, k)
            v = self.problem.minibatch_rgrad(x, agents, batch) - m.transport(x_server, x, shift)
            x = m.retraction(x, -alpha * v)                                # local gradient step
        full = int(np.asarray(self.problem.local_sizes)[senders].sum())    # N_i per sender
        return self.result(tangent_mean(m, x_t, x, w), agents,            # consensus step
                           grad_evals=self.local_work(agents) + full)

    def floats_per_round(self, s: int) -> int:
        """``participants`` and ``authors``: broadcast of x_t and of grad f(x_t) to the s participants, upload
        of x^j_K and of grad f_j(x_t) from them: 4 s n. ``all_agents``: x_t goes to all S
        agents and each uploads grad f_i(x_t) (2 S n), grad f(x_t) goes to the s participants
        and each uploads x^j_K (2 s n): 2 (S + s) n, = 4 S n with every agent taking part."""
        n = self.manifold.ambient_size
        if self.correction == "all_agents":
            return 2 * (self.problem.n_agents + s) * n
        return 4 * s * n

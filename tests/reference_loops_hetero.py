"""Plain reference implementations of RFedSVRG and RFedProj, written from the papers' pseudo-code.

Same style as ``reference_loops.py``: Python loops over rounds, agents and local
steps, on single points (no agents axis), through single-point manifold maps
(pymanopt's where it has them), consuming the draws of an ``AgentSampler`` in
the same order as the vectorised algorithms (per round: ``participants``; per
local step: ``batches``).
"""

from __future__ import annotations

import numpy as np
from reference_loops import SphereOps, _agent_grad

__all__ = ["SphereOps", "StiefelOps", "rfedproj_loop", "rfedsvrg_loop", "sphere_project"]


class StiefelOps:
    """Single-point Stiefel maps: pymanopt's tangent projection; the polar factor as P_M."""

    def __init__(self, n, p):
        from pymanopt.manifolds import Stiefel
        self.m = Stiefel(n, p)

    def euclidean_to_riemannian_gradient(self, x, g):
        return self.m.euclidean_to_riemannian_gradient(x, g)

    def project(self, x):
        """Nearest point of St(p, n): U V^T from the SVD of x."""
        u, _, vt = np.linalg.svd(x, full_matrices=False)
        return u @ vt


def sphere_project(x):
    """Nearest point of the unit sphere."""
    return x / np.linalg.norm(x)


def rfedsvrg_loop(problem, ops, x1, step_size, K, rounds, sampler):
    """Li & Ma Algorithm 1. Returns [x_1, ..., x_{T+1}]."""
    xs = [x1]
    x_t = x1
    for t in range(rounds):
        agents = sampler.participants()
        alpha = step_size(t)
        w = sampler.weights(problem.local_sizes, agents)
        # agents send grad f_j(x_t); the server broadcasts grad f(x_t) = sum_j p_j grad f_j(x_t)
        g_loc = {j: ops.euclidean_to_riemannian_gradient(x_t, problem.local_egrad(x_t[None], np.array([j]))[0]) for j in agents}
        g_glob = sum(w[row] * g_loc[j] for row, j in enumerate(agents))
        x = {j: x_t.copy() for j in agents}
        for k in range(K):
            batches = sampler.batches(agents)
            for row, j in enumerate(agents):
                g = _agent_grad(problem, ops, x[j], j, batches[row])
                v = g - ops.transport(x_t, x[j], g_loc[j] - g_glob)
                x[j] = ops.retraction(x[j], -alpha * v)
        x_t = ops.exp(x_t, sum(w[row] * ops.log(x_t, x[j]) for row, j in enumerate(agents)))
        xs.append(x_t)
    return xs


def rfedproj_loop(problem, ops, project, x1, step_size, K, rounds, sampler, server_step=1.0,
                  line15=False):
    """Zhang-Hu-So-Johansson Algorithm 1, line by line; c_j = 0 for an agent absent from the
    previous round. Returns [P(x_bar^1), ..., P(x_bar^{R+1})].

    Correction: the compact form's c_j^{r+1} = average - old; with ``line15`` the literal line 15
    with its factor read as 1/(eta_g eta K): c_j^{r+1} = (P(x_bar^r) - x_bar^{r+1})/(eta_g eta K) - old_j
    (the same when every agent takes part in every round)."""
    x_bar = x1.copy()
    c = {}                                                       # c_j^r of last round's agents
    xs = [project(x_bar)]
    for r in range(rounds):
        agents = sampler.participants()
        eta = step_size(r)
        w = sampler.weights(problem.local_sizes, agents)
        y = project(x_bar)
        z_hat = {j: y.copy() for j in agents}                    # line 3
        z = {j: y.copy() for j in agents}
        c_r = {j: c.get(j, np.zeros_like(y)) for j in agents}
        grads = {j: [] for j in agents}
        for t in range(K):                                       # line 4
            batches = sampler.batches(agents)                    # line 5
            for row, j in enumerate(agents):
                g = _agent_grad(problem, ops, z[j], j, batches[row])     # line 6
                grads[j].append(g)
                z_hat[j] = z_hat[j] - eta * (g + c_r[j])                 # line 7
                z[j] = project(z_hat[j])                                 # line 8
        mean_z_hat = sum(w[row] * z_hat[j] for row, j in enumerate(agents))
        x_bar_next = y + server_step * (mean_z_hat - y)          # line 12
        old = {j: sum(grads[j]) / K for j in agents}
        if line15:
            avg = (y - x_bar_next) / (server_step * eta * K)
        else:
            avg = sum(w[row] * old[j] for row, j in enumerate(agents))
        c = {j: avg - old[j] for j in agents}                    # line 15
        x_bar = x_bar_next
        xs.append(project(x_bar))
    return xs

"""Plain reference implementations, written straight from the papers' pseudo-code.

A Python loop over rounds, agents and local steps, on single points (no agents
axis), through single-point manifold operations (pymanopt's where pymanopt has
the map; the paper's Appendix E formula otherwise). They consume the draws of an
``AgentSampler`` in the same order as the vectorised algorithms, and serve as
the oracle for them.
"""

from __future__ import annotations

import numpy as np


class SphereOps:
    """Single-point sphere maps: pymanopt's where it has them, Appendix E for parallel transport."""

    def __init__(self, n, retraction="normalize", transport="parallel"):
        from pymanopt.manifolds import Sphere
        self.m = Sphere(n)
        self.retraction = self.m.retraction if retraction == "normalize" else self.m.exp
        self.transport = self.parallel if transport == "parallel" else (lambda x, y, u: self.m.projection(y, u))

    def euclidean_to_riemannian_gradient(self, x, g):
        return self.m.euclidean_to_riemannian_gradient(x, g)

    def exp(self, x, u):
        return self.m.exp(x, u)

    def log(self, x, y):
        return self.m.log(x, y)

    def parallel(self, x, y, u):
        """Appendix E: (I + (cos|v| - 1) v v^T/|v|^2 - sin|v| x v^T/|v|) u, v = Log_x(y)."""
        v = self.m.log(x, y)
        nv = np.linalg.norm(v)
        if nv == 0.0:
            return u.copy()
        P = np.eye(x.size) + (np.cos(nv) - 1) * np.outer(v, v) / nv**2 - np.sin(nv) * np.outer(x, v) / nv
        return P @ u


class EuclideanOps:
    def retraction(self, x, u):
        return x + u

    def transport(self, x, y, u):
        return u

    def euclidean_to_riemannian_gradient(self, x, g):
        return g

    exp = retraction

    def log(self, x, y):
        return y - x


def _agent_grad(problem, ops, x, j, batch):
    """Mini-batch Riemannian gradient of agent j at one point x."""
    g = problem.minibatch_egrad(x[None], np.array([j]), batch[None])[0]
    return ops.euclidean_to_riemannian_gradient(x, g)


def rfedags_loop(problem, ops, x1, step_size, K, rounds, sampler):
    """Algorithm 1 of the RFedAGS paper, line by line. Returns [x_1, ..., x_{T+1}]."""
    xs = [x1]
    x_t = x1
    for t in range(rounds):
        agents = sampler.participants()
        alpha = step_size(t)
        x = {j: x_t.copy() for j in agents}                      # line 2
        zeta = {j: np.zeros_like(x_t) for j in agents}            # line 4
        for k in range(K):                                        # line 5
            batches = sampler.batches(agents)                     # line 6
            for row, j in enumerate(agents):                      # line 3: agents in parallel
                eta = -alpha * _agent_grad(problem, ops, x[j], j, batches[row])   # line 7
                zeta[j] = zeta[j] + ops.transport(x[j], x_t, eta)                # line 9
                x[j] = ops.retraction(x[j], eta)                                 # line 8
        w = sampler.weights(problem.local_sizes, agents)
        direction = sum(w[row] * zeta[j] for row, j in enumerate(agents))
        x_t = ops.retraction(x_t, direction)                      # line 13
        xs.append(x_t)
    return xs


def rfedavg_loop(problem, ops, x1, step_size, K, rounds, sampler):
    """Li & Ma Algorithm 2: local steps, then x_{t+1} = Exp_{x_t}(sum_j p_j Log_{x_t}(x^j_K))."""
    xs = [x1]
    x_t = x1
    for t in range(rounds):
        agents = sampler.participants()
        alpha = step_size(t)
        x = {j: x_t.copy() for j in agents}
        for k in range(K):
            batches = sampler.batches(agents)
            for row, j in enumerate(agents):
                x[j] = ops.retraction(x[j], -alpha * _agent_grad(problem, ops, x[j], j, batches[row]))
        w = sampler.weights(problem.local_sizes, agents)
        x_t = ops.exp(x_t, sum(w[row] * ops.log(x_t, x[j]) for row, j in enumerate(agents)))
        xs.append(x_t)
    return xs


def fedavg_loop(problem, x1, step_size, K, rounds, sampler):
    """FedAvg (local SGD + weighted averaging of the local iterates)."""
    xs = [x1]
    x_t = x1
    for t in range(rounds):
        agents = sampler.participants()
        alpha = step_size(t)
        x = {j: x_t.copy() for j in agents}
        for k in range(K):
            batches = sampler.batches(agents)
            for row, j in enumerate(agents):
                x[j] = x[j] - alpha * problem.minibatch_egrad(x[j][None], np.array([j]), batches[row][None])[0]
        w = sampler.weights(problem.local_sizes, agents)
        x_t = sum(w[row] * x[j] for row, j in enumerate(agents))
        xs.append(x_t)
    return xs

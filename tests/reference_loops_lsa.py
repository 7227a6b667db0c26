"""Plain FedLSA / SCAFFLSA loops, written straight from Mangold et al.'s pseudo-code.

A Python loop over rounds, agents and local steps on single parameter vectors,
with the TD(0) oracle rebuilt here as explicit matrices A(Z) = phi(s)(phi(s) -
gamma phi(s'))^T and vectors b(Z) = r(s) phi(s) from the problem's raw pool
(not through ``minibatch_egrad``). They consume an ``AgentSampler``'s draws in
the order of the vectorised algorithms (per round ``participants``, per local
step ``batches``) and serve as their oracle.
"""

from __future__ import annotations

import numpy as np


def lsa_oracle(problem, j, batch):
    """Mini-batch means (A, b) of agent j's oracle: ``(d, d)``, ``(d,)``."""
    if problem.oracle == "exact":
        return problem.A_bar_local[j], problem.b_bar_local[j]
    d = problem.phi.shape[1]
    A, b = np.zeros((d, d)), np.zeros(d)
    for i in batch:
        s, s_next = problem.states[j, i], problem.next_states[j, i]
        A += np.outer(problem.phi[s], problem.phi[s] - problem.gamma * problem.phi[s_next])
        b += problem.r_pi[j, s] * problem.phi[s]
    return A / len(batch), b / len(batch)


def fedlsa_loop(problem, theta0, step_size, H, rounds, sampler):
    """FedLSA: H local steps theta <- theta - eta (A(Z) theta - b(Z)), then averaging."""
    thetas = [theta0]
    theta_t = theta0
    for t in range(rounds):
        agents = sampler.participants()
        eta = step_size(t)
        theta = {c: theta_t.copy() for c in agents}
        for h in range(H):
            batches = sampler.batches(agents)
            for row, c in enumerate(agents):
                A, b = lsa_oracle(problem, c, batches[row])
                theta[c] = theta[c] - eta * (A @ theta[c] - b)
        w = sampler.weights(problem.local_sizes, agents)
        theta_t = sum(w[row] * theta[c] for row, c in enumerate(agents))
        thetas.append(theta_t)
    return thetas


def scafflsa_loop(problem, theta0, step_size, H, rounds, sampler):
    """SCAFFLSA: local steps theta <- theta - eta (A(Z) theta - b(Z) - xi_c), averaging,
    xi_c <- xi_c + (theta_{t+1} - theta^c_{t,H}) / (eta H) for the participating agents.

    Returns ([theta_0, ..., theta_T], {c: xi_c} after the last round).
    """
    xi = {c: np.zeros_like(theta0) for c in range(problem.n_agents)}
    thetas = [theta0]
    theta_t = theta0
    for t in range(rounds):
        agents = sampler.participants()
        eta = step_size(t)
        theta = {c: theta_t.copy() for c in agents}
        for h in range(H):
            batches = sampler.batches(agents)
            for row, c in enumerate(agents):
                A, b = lsa_oracle(problem, c, batches[row])
                theta[c] = theta[c] - eta * (A @ theta[c] - b - xi[c])
        w = sampler.weights(problem.local_sizes, agents)
        theta_t = sum(w[row] * theta[c] for row, c in enumerate(agents))
        for c in agents:
            xi[c] = xi[c] + (theta_t - theta[c]) / (eta * H)
        thetas.append(theta_t)
    return thetas, xi

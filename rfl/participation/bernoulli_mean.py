"""Scheme 2 of the authors' code as their other methods use it: independent joins, the
participants averaged plainly (``RFedAvg_.m``, ``RFedSVRG_.m``, ``RFedProj_.m`` and
``ZORFedProj_.m`` with ``options.option = 2``). The ``biased`` aggregation of ``RFedAGSP__.m``
with one difference: a round nobody joins has one agent drawn uniformly take part with weight 1
(their ``St = randi(nagents)``), where ``biased`` leaves the server at x_t."""

from __future__ import annotations

import numpy as np

from .base import proportional_weights
from .biased import Biased, pi_tilde


def size_weighted_pi(p, local_sizes) -> np.ndarray:
    """E[N_i 1{i in J} / sum_{j in J} N_j] for independent joins J with probabilities p
    (``(S,)``) and local sizes N (``(S,)``, positive), 0 on an empty round:

        = p_i N_i E[1 / (N_i + B_i)],  B_i = sum_{j != i} N_j 1{j in J},
        1 / a = int_0^inf e^(-a u) du,  E[e^(-u B_i)] = prod_{j != i} (1 - p_j + p_j e^(-u N_j)),

    so, with u = v / N_i, the weight is p_i int_0^inf e^(-v) prod_{j != i} (1 - p_j +
    p_j e^(-v N_j / N_i)) dv (the t = e^(-u) form of int_0^1 t^(N_i-1) prod (...) dt). The
    integrand is a mixture of decaying exponentials bounded by e^(-v); adaptive quadrature
    (``scipy.integrate.quad``, relative tolerance 1e-13). Equal sizes give ``pi_tilde``.
    """
    from scipy.integrate import quad

    p = np.asarray(p, dtype=float)
    n = np.asarray(local_sizes, dtype=float)
    if n.shape != p.shape or np.any(n <= 0):
        raise ValueError(f"local_sizes must be {p.shape[0]} positive sizes, got {n.tolist()}")
    out = np.empty_like(p)
    for i in range(p.shape[0]):
        q, r = np.delete(p, i), np.delete(n, i) / n[i]

        def integrand(v, q=q, r=r):
            return np.exp(-v) * np.prod(1 - q + q * np.exp(-v * r))

        value, _ = quad(integrand, 0, np.inf, epsabs=0, epsrel=1e-13, limit=200)
        out[i] = p[i] * value
    return out


class BernoulliMean(Biased):
    """Agent i joins with probability p_i (the draws of ``bernoulli``); the server averages the
    round's participants with N_j-proportional weights renormalised over them (with equal N_j
    the plain mean 1/|S_t|); when nobody joins, the one agent drawn uniformly takes part.

    The objective it minimises: agent i weighted by E[N_i 1{i in J} / sum_{j in J} N_j] plus the
    empty round's uniform draw prod_j (1 - p_j) / S (``size_weighted_pi``; ``pi_tilde`` for equal
    local sizes); these weights sum to 1."""

    name = "bernoulli_mean"

    def weights(self, local_sizes, agents):
        return proportional_weights(local_sizes, agents)

    def objective_weights(self, local_sizes) -> np.ndarray:
        n = np.asarray(local_sizes, dtype=float)
        joined = pi_tilde(self.p) if np.all(n == n[0]) else size_weighted_pi(self.p, n)
        w = joined + np.prod(1 - self.p) / self.n_agents
        return w / w.sum()

"""ZO-RFedProj: RFedProj with a zeroth-order gradient estimator built on the projection
(Wang, Pan, He, Li & Jiang, "Federated Learning on Riemannian Manifolds: A Gradient-Free
Projection-Based Approach", arXiv 2507.22855; the RFedAGS authors run it as ``ZORFedProj_.m``).

The estimator. At a point x of a compact embedded submanifold M of R^n (n the ambient
dimension, ``Manifold.ambient_size``: d r on St(d, r)), for a mini-batch b_1..b_B of one
agent and one direction u_b per sample, uniform on the unit sphere of R^n (a normalised
ambient Gaussian, no tangent-space sampling),

    G_mu(x) = (n / B) sum_b [(f(P_M(x + mu u_b); z_b) - f(x; z_b)) / mu] u_b,

P_M the nearest-point projection. Since DP_M(x) is the orthogonal projection onto T_x M,
f(P_M(x + mu u); z) = f(x; z) + mu <grad f(x; z), u> + O(mu^2), and E[u u^T] = I_n / n, so

    E_u G_mu(x) -> (1/B) sum_b grad f(x; z_b)    (mu -> 0),

the Riemannian mini-batch gradient: the factor is the AMBIENT dimension n (with the manifold's
dimension in its place the mean would be dim M / n times the gradient). Each term is an
ambient vector, not a tangent one; only its mean is tangent. Its spread, mu -> 0: with
G_b = grad f(x; z_b), E ||n <G_b, u> u - G_b||^2 = (n - 1) ||G_b||^2, hence

    E ||G_mu(x) - (1/B) sum_b G_b||^2 = (n - 1) / B^2 sum_b ||G_b||^2.

The authors' ``grad_estimator`` (ZORFedProj_.m) is this estimator with the same factor p r
(ambient) and mu = 1e-5 (``PCAStief_Syn_40.m``, ``construct_prob``).

The rest is RFedProj (``rfl.algorithms.rfedproj``, Zhang et al. Algorithm 1) with G_mu in place
of the mini-batch Riemannian gradient of line 6: the local steps on z_hat, the projection,
the drift correction c_j and the server step.

Random directions: agent j's directions at local step k of round t are
``directions(key, c, j, B, point_shape)``, c = ``draw_number(t, k)`` the draw number of that
step's mini-batch, a stream of their own keyed by (the run's mini-batch key, c, j), so a client
reproduces its own directions, whoever else takes part, and every method of the experiment
that draws directions at (t, k) draws the same (as its mini-batches, ``rfl.algorithms.sampling``).

Cost counted: the sample oracle calls are cost evaluations, two per sample per local step
(f at x and at P_M(x + mu u_b)): 2 s K B per round in the run table's ``grad_evals``
column; no gradient is evaluated. Communication as RFedProj.
"""

from __future__ import annotations

import numpy as np

from .rfedproj import RFedProj
from .sampling import draw_number

#: first word of the directions' seed (keeps their stream apart from any other seeded one)
DIRECTIONS_TAG = 0x5A4F


def directions(key: int, draw: int, agent: int, B: int, shape: tuple) -> np.ndarray:
    """B directions uniform on the unit sphere of the ambient space of ``shape`` (normalised
    standard Gaussians) for ``agent`` at mini-batch draw ``draw`` of the run keyed ``key``:
    ``(B, *shape)``."""
    rng = np.random.default_rng([DIRECTIONS_TAG, int(key), int(draw), int(agent)])
    u = rng.standard_normal((B,) + tuple(shape))
    norms = np.sqrt(np.einsum("bi,bi->b", u.reshape(B, -1), u.reshape(B, -1)))
    return u / norms.reshape((B,) + (1,) * len(shape))


def zo_gradient(problem, x: np.ndarray, agents: np.ndarray, batch, u: np.ndarray,
                mu: float) -> np.ndarray:
    """G_mu of the module docstring for each agent: x ``(s, *shape)``, batch ``(s, B)``
    sample indices, u ``(s, B, *shape)`` unit directions -> ``(s, *shape)``."""
    m = problem.manifold
    x = np.asarray(x, dtype=float)
    idx = np.asarray(batch)
    s, B = idx.shape
    shape = tuple(m.point_shape)
    moved = m.nearest_point((x[:, None] + mu * u).reshape((s * B,) + shape)).reshape((s, B) + shape)
    f_moved = problem.sample_costs(moved, agents, idx)
    f_here = problem.sample_costs(np.broadcast_to(x[:, None], (s, B) + shape), agents, idx)
    coef = (f_moved - f_here) * (m.ambient_size / (mu * B))
    return np.einsum("sb,sb...->s...", coef, u)


class ZORFedProj(RFedProj):
    """RFedProj whose local steps follow the zeroth-order estimator G_mu (module docstring)."""

    name = "zorfedproj"
    label = "ZO-RFedProj"
    requires = frozenset({"nearest_point"})
    fields = frozenset({"gradient"})
    oracles = frozenset({"sample_costs"})
    options = {**RFedProj.options,
               "mu": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 1.0e-5,
                      "description": "smoothing mu of the forward difference along each "
                                     "direction (the authors' 1e-5)"}}
    style = {"color": "tab:olive", "ls": ":"}
    plot_order = 12

    def local_gradient(self, z, agents, sampler, t, k):
        """G_mu at z for each agent with the mini-batch of local step k of round t and one
        direction per sample."""
        draw = draw_number(t, k)
        batch = np.asarray(sampler.batches(agents, t, k))
        shape = self.manifold.point_shape
        u = np.stack([directions(sampler.key, draw, j, batch.shape[1], shape) for j in agents])
        return zo_gradient(self.problem, z, agents, batch, u, self.mu)

    def local_work(self, agents: np.ndarray) -> int:
        """Cost evaluations of the local steps: 2 per sample, 2 K B per participating agent."""
        return 2 * agents.shape[0] * self.K * self.batch_size

"""rfl as a library: RFedAGS on a problem defined in this script, without the workflow.

The problem: the nearest unit vector to agents' anchors, f(x; z) = ||x - z||^2 / 2 on the
sphere S^{d-1}. With m = sum_j p_j m_j the pooled mean of the anchors,
F(x) = (1 + mean ||z||^2) / 2 - m^T x, minimised by x* = m / ||m||, and the excess risk is
F(x) - F* = ||m|| (1 - cos theta), theta the angle between x and x*.

With K = 1 and full local batches RFedAGS is Riemannian gradient descent: on the sphere
with the normalising retraction x_{t+1} = (x_t + alpha P_x(m)) / ||...||, so the angle obeys
theta_{t+1} = theta_t - arctan(a sin theta_t), a = alpha ||m||. For a <= 1 and
theta_0 <= pi/2 this gives theta_{t+1} <= (1 - a/2) theta_t (sin theta >= 2 theta / pi,
arctan y >= pi y / 4 on [0, 1]): linear convergence, printed below beside the bound.
"""

import numpy as np

from rfl.algorithms import Fixed, RFedAGS
from rfl.problems.base import Problem


class Anchors(Problem):
    """Z: (S, N, d) anchors. No ``name``: a script's problem, not registered for the workflow."""

    def __init__(self, Z):
        from rfl.manifolds import Sphere
        self.Z = Z
        self.local_sizes = np.full(Z.shape[0], Z.shape[1])
        self.manifold = Sphere(Z.shape[2], retraction="normalize", transport="parallel")
        self.m = Z.mean(axis=(0, 1))                      # equal N_j: p_j = 1/S
        self.const = 0.5 * (1.0 + (Z ** 2).sum(axis=2).mean())

    def minibatch_egrad(self, x, agents, batch):
        """x_j - (1/B) sum_{i in batch_j} z_{j,i}: x (s, d), batch (s, B) -> (s, d)."""
        return x - self.Z[agents[:, None], np.asarray(batch)].mean(axis=1)

    def cost(self, x):
        return float(self.const - self.m @ x)

    def egrad(self, x):
        return x - self.m


rng = np.random.default_rng(0)
S, N, d = 5, 20, 10
mu = rng.standard_normal(d)
problem = Anchors(mu / np.linalg.norm(mu) + 0.8 * rng.standard_normal((S, N, d)))

norm_m = np.linalg.norm(problem.m)
x_star = problem.m / norm_m
F_star = problem.cost(x_star)
x0 = problem.initial_point(rng)
if problem.cost(x0) > problem.const:                      # start in the hemisphere of x*: m^T x0 > 0
    x0 = -x0

alpha, rounds = 0.3 / norm_m, 30                          # a = alpha ||m|| = 0.3
strategy = RFedAGS(problem, Fixed(alpha), K=1, batch_size=N)
theta0 = np.arccos(np.clip(x0 @ x_star, -1.0, 1.0))
print(f"a = {alpha * norm_m:.6g}, ||m|| = {norm_m:.6g}, theta_0 = {theta0:.6g}, rounds = {rounds}")
for t, x, counters in strategy.iterate(x0, rounds, np.random.default_rng(1)):
    if (t + 1) % 5 == 0:
        print(f"round {t + 1:2d}  excess risk {problem.cost(x) - F_star:.3e}  "
              f"sample gradients {counters.grad_evals}")
bound = norm_m * (1 - np.cos((1 - alpha * norm_m / 2) ** rounds * theta0))
print(f"final excess risk {problem.cost(x) - F_star:.6e} (bound {bound:.6e})")

"""The federated problem interface: F(x) = sum_j p_j f_j(x), f_j the local risk of agent j.

A problem holds the agents' local data and gives, batched over agents,
mini-batch Euclidean gradients; the manifold turns them into Riemannian ones.
Weights p_j = N_j / sum_i N_i (local data sizes), so F is the pooled empirical
risk (5.1) of the paper; with equal N_j it is (1/S) sum_j f_j.
"""

from __future__ import annotations

import numpy as np

from rfl.manifolds import Manifold


class Problem:
    """Cost and gradients of a federated problem on a manifold.

    Attributes
    ----------
    manifold : Manifold
    local_sizes : (S,) int array, N_j, the number of samples agent j holds.
    """

    name: str = "problem"
    manifold: Manifold
    local_sizes: np.ndarray
    #: names of the problem-specific columns ``extra_metrics`` adds to a run table
    extra_metric_names: tuple[str, ...] = ()

    @classmethod
    def from_arrays(cls, arrays: dict, params: dict, **geometry) -> "Problem":
        """Build from the arrays the data step wrote and the dataset's parameters."""
        raise NotImplementedError

    @staticmethod
    def local_sizes_from(params: dict) -> list[int]:
        """(S,) local data sizes implied by the dataset parameters, before any data exist."""
        raise NotImplementedError

    @property
    def n_agents(self) -> int:
        return int(self.local_sizes.shape[0])

    @property
    def weights(self) -> np.ndarray:
        """p_j = N_j / sum_i N_i: ``(S,)``."""
        return self.local_sizes / self.local_sizes.sum()

    # ---- federated (batched over agents) ----------------------------------
    def minibatch_egrad(self, x: np.ndarray, agents: np.ndarray, batch: np.ndarray) -> np.ndarray:
        """Euclidean gradient of (1/B) sum_{s in batch_j} f(x_j; z_{j,s}) for each row j.

        x: (s, *point_shape) one point per participating agent;
        agents: (s,) agent indices; batch: (s, B) sample indices into each agent's data.
        Returns (s, *point_shape).
        """
        raise NotImplementedError

    def minibatch_rgrad(self, x, agents, batch):
        """Riemannian mini-batch gradient (Algorithm 1, line 7 without the step size)."""
        return self.manifold.euclidean_to_riemannian_gradient(x, self.minibatch_egrad(x, agents, batch))

    def local_egrad(self, x: np.ndarray, agents: np.ndarray) -> np.ndarray:
        """Euclidean gradient of the full local risk f_j at x_j: ``(s, *point_shape)``."""
        raise NotImplementedError

    def local_cost(self, x: np.ndarray, agents: np.ndarray) -> np.ndarray:
        """f_j(x_j) for each row: ``(s,)``."""
        raise NotImplementedError

    # ---- global (one point, no agents axis) -------------------------------
    def cost(self, x: np.ndarray) -> float:
        """F(x) for one point ``x: point_shape``."""
        raise NotImplementedError

    def egrad(self, x: np.ndarray) -> np.ndarray:
        """Euclidean gradient of F at one point."""
        raise NotImplementedError

    def grad(self, x: np.ndarray) -> np.ndarray:
        """Riemannian gradient of F at one point."""
        return self.manifold.euclidean_to_riemannian_gradient(x[None], self.egrad(x)[None])[0]

    def grad_norm(self, x: np.ndarray) -> float:
        return float(self.manifold.norm(x[None], self.grad(x)[None])[0])

    # ---- reference solution ----------------------------------------------
    def closed_form_optimum(self) -> np.ndarray | None:
        """A global minimiser x* in closed form, or None when there is none."""
        return None

    def reference_candidates(self) -> list[np.ndarray]:
        """Extra starting points for the reference solver (e.g. a planted solution)."""
        return []

    def distance_to_optimum(self, x: np.ndarray, x_star: np.ndarray) -> float:
        """Distance from x to the set of minimisers containing x_star (default: Riemannian distance)."""
        return float(self.manifold.dist(x[None], x_star[None])[0])

    def extra_metrics(self, x: np.ndarray) -> dict[str, float]:
        """Problem-specific metrics at one point (e.g. test NMSE): keys ``extra_metric_names``."""
        return {}

    def predictions(self, spec: dict) -> dict:
        """What theory predicts for the run ``spec`` (e.g. FedLSA's bias), recorded in the
        run's metadata so that reports read files only; JSON-serialisable. Default: none."""
        return {}

    def initial_point(self, rng: np.random.Generator) -> np.ndarray:
        """The starting point x_1 of every method for one seed."""
        return self.manifold.random_point(rng, 1)[0]

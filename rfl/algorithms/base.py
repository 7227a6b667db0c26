"""The federated round loop shared by every strategy.

A strategy implements ``round(x_t, t, sampler) -> x_{t+1}`` for one outer
iteration; ``iterate`` drives the rounds and yields, after each, the new server
point and the cumulative cost counters that the run table records.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rfl.problems.base import Problem

from .sampling import AgentSampler


@dataclass
class Counters:
    """Cumulative work of a run: sample gradients evaluated and floats communicated."""

    grad_evals: int = 0
    floats: int = 0


def weighted_mean(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """sum_j p_j x^j over the agents axis: w (s,), x (s, *shape) -> shape (one matmul)."""
    return (w @ x.reshape(x.shape[0], -1)).reshape(x.shape[1:])


class FederatedAlgorithm:
    """K local steps per agent per round, then a server aggregation.

    problem: the federated problem (cost and batched gradients on its manifold);
    step_size: callable t -> alpha_t; K: local steps; batch_size: B;
    participation: s agents per round (None: all).
    """

    name = "federated"
    federated = True
    requires = frozenset()
    fields = frozenset({"gradient"})
    options = {}

    def __init__(self, problem: Problem, step_size, K: int, batch_size: int,
                 participation: int | None = None):
        if not (isinstance(K, (int, np.integer)) and K >= 1):
            raise ValueError(f"K must be an integer >= 1, got {K!r}")
        self.problem = problem
        self.manifold = problem.manifold
        self.step_size = step_size
        self.K = int(K)
        self.batch_size = int(batch_size)
        self.participation = participation

    def sampler(self, rng: np.random.Generator) -> AgentSampler:
        return AgentSampler(rng, self.problem.local_sizes, self.batch_size, self.participation)

    def broadcast(self, x_t: np.ndarray, s: int) -> np.ndarray:
        """x^j_{t,0} = x_t for the s participating agents: ``(s, *point_shape)``."""
        return np.repeat(x_t[None], s, axis=0)

    def round(self, x_t: np.ndarray, t: int, sampler: AgentSampler) -> np.ndarray:
        raise NotImplementedError

    def floats_per_round(self, s: int) -> int:
        """Broadcast of x_t to s agents plus one point-sized upload per agent."""
        return 2 * s * self.manifold.ambient_size

    def iterate(self, x0: np.ndarray, rounds: int, rng: np.random.Generator):
        """Yield ``(t, x_{t+1}, Counters)`` after each of ``rounds`` rounds."""
        sampler = self.sampler(rng)
        counters = Counters()
        s = sampler.participation or self.problem.n_agents
        x = x0
        for t in range(rounds):
            x = self.round(x, t, sampler)
            counters.grad_evals += s * self.K * self.batch_size
            counters.floats += self.floats_per_round(s)
            yield t, x, counters

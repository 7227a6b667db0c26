"""Independent replicas of one run's chain in one process (experiment option ``replicas: R``).

A fixed-step method's stationary bias is O(eta) while the standard error of one chain's time
average does not shrink with eta, so one long chain per step cannot resolve the bias at small
steps. R independent copies of the chain, run side by side, give R independent estimates of
the stationary mean: their spread is the standard error (``rfl.claims.bias``).

Draws. Replica r of seed s takes its mini-batches from ``Draws(s, experiment, "replica", r)``
(``rfl.algorithms.sampling``): its own counter-based key, the draw number t 2^32 + k as in a
plain run. So replicas are independent of each other, and replica r sees the same batches in
every method and at every step size of the experiment (common random numbers): the paired
comparisons of a plain run hold replica by replica. Replica r is, draw for draw, the plain run
of the same algorithm whose sampler is built from those draws (tests/test_replicas.py).

Vectorisation. The strategies' own code runs once on a state with a replica axis: the point is
(R, *point_shape), a point of ``Euclidean(R, *point_shape)``; the agents' local iterates are
(s, R, *point_shape); ``ReplicatedProblem.minibatch_egrad`` hands the s R rows to the problem's
batched kernel with each row's own batch (``ReplicaSampler``). Aggregation, control variates
and running means act per replica because every one of them is linear over the point's axes.

What it covers. The Euclidean strategies ``REPLICA_ALGORITHMS`` (fedavg, fedrr, scaffold, and
scafflsa) on flat problems with a gradient field or a linear field (federated LSA, where fedavg
is FedLSA), every agent in every round (each replica would need its own participants
otherwise), FedRR with its shared stream (the default). ``rfl.config`` refuses the rest with a
one-line error naming the key.

Recording (``rfl.runner``). The run table keeps one row per round: each column the mean over
the replicas of the metric (cost, excess_risk, grad_norm, dist_to_opt, err_*); the counters are
one replica's; cost, excess_risk and grad_norm are the mean over the first ``COSTLY_REPLICAS``
replicas (an unbiased estimate of the same mean at a fixed cost per round), err_* and
dist_to_opt over every replica. On a problem with a linear field (``rfl.problems.lsa``) cost
is the problem's own ``cost`` of each replica's point (||x_r - theta*||^2 there, not a mean of
agents' costs), and grad_norm the norm of its mean field ``egrad``. The metadata's ``replicas``
holds the sample the rules read: per replica the mean of err_* and of dist_to_opt^2 =
||x_r - x*||^2 over the window of the last ``WINDOW`` share of the rows.
"""

from __future__ import annotations

import numpy as np

from rfl.manifolds.euclidean import Euclidean
from rfl.problems import MiniBatch
from rfl.problems._error_coordinates import COORDINATES

from .base import Counters
from .sampling import AgentSampler, Draws

#: the strategies a run with replicas may use
REPLICA_ALGORITHMS = ("fedavg", "fedrr", "scaffold", "scafflsa")
#: the replicas 0..COSTLY_REPLICAS-1 whose mean cost, excess_risk and grad_norm a row records
#: (each costs a pass over the agents' data; err_* and dist_to_opt are of every replica)
COSTLY_REPLICAS = 64
#: the share of the last rows of a run table over which each replica's errors are averaged
#: (``rfl.claims.bias``: the rules' default window)
WINDOW = 0.5


def replica_draws(draws: Draws, R: int) -> list[Draws]:
    """The draws of replicas 0..R-1: ``Draws(seed, *names, "replica", str(r))``."""
    return [Draws(draws.seed, *draws.names, "replica", str(r)) for r in range(int(R))]


def window_start(rounds: int, window: float = WINDOW) -> int:
    """The first round of the window of a table with rows t = 0..rounds: the last
    ceil(window (rounds + 1)) rows (``rfl.claims.bias.estimate``)."""
    n = rounds + 1
    return n - max(2, int(np.ceil(window * n)))


class ReplicatedProblem:
    """``problem`` with R replicas of its point: ``manifold`` is Euclidean(R, *point_shape);
    ``minibatch_egrad`` takes x (s, R, *point_shape) and a (s R, B) batch whose row j R + r
    is agent j's batch in replica r; every other attribute is the problem's."""

    def __init__(self, problem, R: int):
        if not getattr(problem.manifold, "FLAT", False):
            raise ValueError(f"replicas need a flat problem, got {problem.manifold.name}")
        self.base, self.R = problem, int(R)
        self.manifold = Euclidean(self.R, *problem.manifold.point_shape)

    def __getattr__(self, name):
        return getattr(self.base, name)

    def minibatch_egrad(self, x, agents, batch):
        """x (s, R, *shape), agents (s,), batch (s R, B) -> (s, R, *shape)."""
        agents = np.asarray(agents)
        s = agents.shape[0]
        rows = np.repeat(agents, self.R)
        g = self.base.minibatch_egrad(x.reshape((s * self.R,) + x.shape[2:]), rows, batch)
        return g.reshape(x.shape)


class ReplicaSampler:
    """The draws of R replicas with every agent in every round: ``participants()`` all S
    agents, ``weights`` the N_j-proportional ones, ``batches(agents, t, k)`` a ``MiniBatch``
    of (s R, B) indices, row j R + r = replica r's ``AgentSampler.batches(agents, t, k)`` row j."""

    def __init__(self, draws: list[Draws], local_sizes, batch_size: int):
        self.samplers = [AgentSampler(d, local_sizes, batch_size) for d in draws]
        first = self.samplers[0]
        self.local_sizes, self.batch_size = first.local_sizes, first.batch_size
        self.keys = np.array([s.key for s in self.samplers], dtype=np.uint64)
        self.R = len(self.samplers)
        self.participation = None
        self._rounds = 0
        self.k = 0

    @property
    def t(self) -> int:
        return max(self._rounds - 1, 0)

    def participants(self) -> np.ndarray:
        self._rounds += 1
        self.k = 0
        return np.arange(self.local_sizes.shape[0])

    def weights(self, local_sizes, agents):
        return self.samplers[0].weights(local_sizes, agents)

    def batches(self, agents, t=None, k=None) -> MiniBatch:
        from rfl.problems._batching import kernels

        from .sampling import draw_number
        agents = np.ascontiguousarray(agents, dtype=np.int64)
        k = self.k if k is None else int(k)
        draw = draw_number(self.t if t is None else t, k)
        self.k = k + 1
        s, B, R = agents.shape[0], self.batch_size, self.R
        n_max = int(self.local_sizes.max())
        sizes = self.local_sizes[agents].astype(np.int64)
        if bool(np.all(self.local_sizes == n_max)) and B == n_max:            # every sample
            return MiniBatch(n_max, indices=np.broadcast_to(np.arange(n_max), (s * R, n_max)))
        out = np.empty((R, s, B), dtype=np.int64)
        kernels().floyd_batches_keys(self.keys, np.uint64(draw), agents, sizes, B, out)
        return MiniBatch(n_max, indices=np.ascontiguousarray(out.transpose(1, 0, 2)).reshape(s * R, B))


def iterate(algorithm, X0: np.ndarray, rounds: int, draws: list[Draws]):
    """``FederatedStrategy.iterate`` on the replicated state: yield (t, X_{t+1} (R, *shape),
    Counters of one replica) after each round."""
    from .averaging import RunningMean

    R = len(draws)
    sampler = ReplicaSampler(draws, algorithm.problem.local_sizes, algorithm.batch_size)
    counters = Counters()
    algorithm.reset(X0)
    mean = RunningMean(algorithm.manifold, getattr(algorithm, "average_after", None))
    X = X0
    for t in range(rounds):
        r = algorithm.round(X, t, sampler)
        X = r.x
        counters.grad_evals += r.grad_evals
        counters.floats += r.floats // R                   # floats_per_round counts R points
        counters.participants = r.participants
        yield t, mean.update(t, X), counters


def metrics(problem, X: np.ndarray, x_star: np.ndarray, F_star: float,
            costly: int = COSTLY_REPLICAS) -> dict[str, np.ndarray]:
    """Per replica: cost F(x_r) = sum_j p_j f_j(x_r), excess_risk, grad_norm
    ||sum_j p_j grad f_j(x_r)|| of replicas 0..``costly``-1 (min(R, costly),) (a linear field:
    the problem's ``cost`` and ``egrad`` of each point, module docstring); dist_to_opt
    ||x_r - x*|| and the coordinates err_* of x_r - theta* (0 past the dimension) of every
    replica (R,); X (R, d)."""
    R, S = X.shape[0], problem.n_agents
    C = min(R, int(costly))
    if getattr(problem, "field", "gradient") == "linear_field":
        # the cost is not the agents' mean cost (rfl.problems.lsa: ||x - theta*||^2)
        cost = np.array([problem.cost(x) for x in X[:C]])
        grad = np.stack([problem.egrad(x) for x in X[:C]])
    else:
        rows = np.repeat(X[:C], S, axis=0)                       # row r S + j: x_r for agent j
        agents = np.tile(np.arange(S), C)
        w = np.asarray(problem.weights, dtype=float)
        cost = problem.local_cost(rows, agents).reshape(C, S) @ w
        grad = np.einsum("rjd,j->rd", problem.local_egrad(rows, agents).reshape(C, S, -1), w)
    out = {"cost": cost, "excess_risk": cost - F_star, "grad_norm": np.linalg.norm(grad, axis=1),
           "dist_to_opt": np.linalg.norm(X - x_star[None], axis=1)}
    e = X - np.asarray(problem.theta_star)[None]
    for i, m in enumerate(COORDINATES):
        out[m] = e[:, i] if i < e.shape[1] else np.zeros(R)
    return out

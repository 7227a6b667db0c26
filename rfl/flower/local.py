"""One agent's side of a round, without Flower: what a ClientApp computes from a message.

The server's ConfigRecord carries (algorithm, t, alpha_t, K, B, key, draw), draw = t 2^32 the
draw number of the round's first local step (``rfl.flower.sampling.round_draw``); agent j draws
the batch of local step k as ``agent_batch(key, draw + k, j, N_j, B)`` and runs the strategy's own
local work (``rfl.algorithms.rfedags.gradient_stream``, ``rfl.algorithms.rfedavg.local_sgd``,
``svrg_local_steps`` below) on its problem restricted to itself (agents = [j_local], the
agent's row in the data file it holds).
"""

from __future__ import annotations

import json
from functools import lru_cache

import numpy as np

from rfl.algorithms.rfedags import gradient_stream
from rfl.algorithms.rfedavg import local_sgd
from rfl.flower.sampling import agent_batch

#: what each algorithm's client returns from a training message (an ArrayRecord key)
REPLY_KEY = {"rfedags": "zeta", "rfedavg": "x", "rfedsvrg": "x"}


@lru_cache(maxsize=8)
def load_problem(problem: str, params_json: str, geometry_json: str, data_file: str):
    """The registered problem ``problem`` built from the arrays of ``data_file`` (cached per
    process: a simulation actor or a SuperNode's ClientApp process loads its data once)."""
    from rfl.registry import PROBLEMS

    if problem not in PROBLEMS:
        raise ValueError(f"problem {problem!r} is unknown to this client; allowed: "
                         f"{', '.join(PROBLEMS.names())} (a plug-in problem must be installed "
                         f"on every SuperNode)")
    with np.load(data_file, allow_pickle=False) as f:     # rfl.io.read_arrays, without pandas
        arrays = {k: f[k] for k in f.files}
    return PROBLEMS[problem].from_arrays(arrays, json.loads(params_json),
                                         **json.loads(geometry_json))


class Agent:
    """Agent ``agent`` (global id j) held as row ``row`` of ``problem`` (its local data)."""

    def __init__(self, problem, agent: int, row: int):
        self.problem, self.agent, self.row = problem, int(agent), int(row)
        self.manifold = problem.manifold
        self.rows = np.array([self.row])
        self.n_local = int(np.asarray(problem.local_sizes)[self.row])

    @classmethod
    def from_file(cls, problem: str, params_json: str, geometry_json: str, data_file: str,
                  agent: int) -> Agent:
        """Agent j of the data file: its row j, or row 0 of a file that holds one agent only
        (a node given only its own data)."""
        p = load_problem(problem, params_json, geometry_json, data_file)
        S = int(np.asarray(p.local_sizes).shape[0])
        if S == 1:
            return cls(p, agent, 0)
        if not 0 <= agent < S:
            raise ValueError(f"agent {agent} is not in {data_file} (it holds agents 0..{S - 1})")
        return cls(p, agent, agent)

    def point(self, name: str, value) -> np.ndarray:
        """``value`` as a float array of the manifold's ``point_shape``, or ValueError naming it:
        the problems' compiled kernels index without bounds checks, so an x of another shape
        from a faulty server would make them read and write outside their arrays."""
        v = np.asarray(value, dtype=float)
        shape = tuple(self.manifold.point_shape)
        if v.shape != shape:
            raise ValueError(f"{name} has shape {v.shape}, expected {shape}")
        return v

    def batches(self, cfg):
        key, draw, B = int(cfg["key"]), int(cfg["draw"]), int(cfg["B"])
        return lambda k: agent_batch(key, draw + k, self.agent, self.n_local, B)

    def full_gradient(self, x_t: np.ndarray) -> np.ndarray:
        """grad f_j(x_t): ``point_shape`` (RFedSVRG's first exchange)."""
        x = self.point("x", x_t)[None]
        return self.manifold.euclidean_to_riemannian_gradient(
            x, self.problem.local_egrad(x, self.rows))[0]

    def local_cost(self, x: np.ndarray) -> float:
        return float(self.problem.local_cost(self.point("x", x)[None], self.rows)[0])

    def train(self, x_t: np.ndarray, cfg, g_ref: np.ndarray | None = None) -> np.ndarray:
        """The agent's reply to a training message: zeta^j (RFedAGS) or x^j_{t,K} (RFedAvg,
        RFedSVRG with the reference gradient ``g_ref``), ``point_shape``."""
        name, alpha, K = str(cfg["algorithm"]), float(cfg["alpha"]), int(cfg["K"])
        x_t = self.point("x", x_t)
        x = x_t[None]
        if name == "rfedags":
            return gradient_stream(self.problem, x, self.rows, alpha, K, self.batches(cfg))[0]
        if name == "rfedavg":
            return local_sgd(self.problem, x, self.rows, alpha, K, self.batches(cfg))[0]
        if name == "rfedsvrg":
            shift = self.full_gradient(x_t)[None] - self.point("g_ref", g_ref)[None]
            return svrg_local_steps(self.problem, x, self.rows, alpha, K, self.batches(cfg), shift)[0]
        raise ValueError(f"algorithm {name!r} has no Flower client; allowed: {', '.join(REPLY_KEY)}")


def svrg_local_steps(problem, x_t, agents, alpha, K, batches, shift):
    """RFedSVRG's K variance-reduced local steps (Li & Ma, Algorithm 1, local gradient step)

        x^j_{l+1} = R_{x^j_l}( -alpha [ g_j(x^j_l) - Gamma_{x_t -> x^j_l}(shift^j) ] ),

    shift^j = grad f_j(x_t) - grad f(x_t) in T_{x_t}M: x_t, shift (s, *point_shape) -> x^j_K."""
    m = problem.manifold
    x = x_t.copy()
    for k in range(K):
        v = problem.minibatch_rgrad(x, agents, batches(k)) - m.transport(x_t, x, shift)
        x = m.retraction(x, -alpha * v)
    return x

"""Mean direction on the sphere: f(x; z) = -z^T x on S^{d-1} = {x in R^d : ||x|| = 1}.

Agent j holds N_j unit vectors z_{j,i} (rows of Z[j]) and f_j(x) = -m_j^T x with m_j its
sample mean; the pooled risk F(x) = sum_j p_j f_j(x) = -m^T x, m = sum_j p_j m_j,
p_j = N_j / sum_i N_i, is minimised by x* = m / ||m|| with F* = -||m|| (for m != 0).

Data: a population direction mu (uniform on the sphere); agent j's direction
mu_j = normalise(mu + spread h_j) (h_j ~ N(0, I_d): spread > 0 makes the agents
heterogeneous); samples z_{j,i} = normalise(mu_j + noise g_{j,i}), g_{j,i} ~ N(0, I_d).
One file: the generator is ``MeanDirection.generate``.
"""

from __future__ import annotations

import numpy as np

from rfl.manifolds import Sphere
from rfl.problems.base import Problem


def _normalise(a: np.ndarray) -> np.ndarray:
    """Rows of a (..., d) divided by their norms."""
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


class MeanDirection(Problem):
    """Z: (S, N_max, d) samples, zero rows past N_j; sizes: (S,) N_j; mu: (d,) population direction."""

    name = "mean_direction"
    manifold_class = Sphere
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["d", "S", "N", "noise"],
        "properties": {
            "d": {"type": "integer", "minimum": 2},
            "S": {"type": "integer", "minimum": 1},
            "N": {"description": "samples per agent: one N for all, or a list of S sizes N_j",
                  "oneOf": [{"type": "integer", "minimum": 1},
                            {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1}}]},
            "noise": {"type": "number", "minimum": 0},
            "spread": {"type": "number", "minimum": 0, "default": 0.0},
        },
    }
    metrics = ("angle_to_mu",)
    metric_labels = {"angle_to_mu": r"angle$(x_t, \mu)$"}
    test_params = {"d": 4, "S": 3, "N": 6, "noise": 0.5, "spread": 0.3}

    @classmethod
    def check_params(cls, params):
        """A list N names one size per agent: len(N) = S."""
        N = params["N"]
        if isinstance(N, list) and len(N) != params["S"]:
            return [("N", f"{len(N)} sizes for S = {params['S']} agents; allowed: an integer, "
                          f"or a list of {params['S']} integers")]
        return []

    @staticmethod
    def local_sizes_from(params):
        N = params["N"]
        return list(N) if isinstance(N, list) else [N] * params["S"]

    @classmethod
    def generate(cls, rng, d, S, N, noise, spread=0.0):
        """``{"Z": (S, N_max, d), "mu": (d,)}`` (module docstring), rows past N_j zero."""
        sizes = np.array(cls.local_sizes_from({"S": S, "N": N}))
        mu = _normalise(rng.standard_normal(d))
        mu_j = _normalise(mu + spread * rng.standard_normal((S, d)))               # (S, d)
        Z = _normalise(mu_j[:, None, :] + noise * rng.standard_normal((S, sizes.max(), d)))
        Z[np.arange(sizes.max())[None, :] >= sizes[:, None]] = 0.0                 # padding
        return {"Z": Z, "mu": mu}

    @classmethod
    def from_arrays(cls, arrays, params, **geometry):
        return cls(arrays["Z"], cls.local_sizes_from(params), arrays["mu"], **geometry)

    def __init__(self, Z, sizes, mu, retraction=None, transport=None):
        self.Z = np.asarray(Z, dtype=float)
        self.mu = np.asarray(mu, dtype=float)
        self.local_sizes = np.asarray(sizes)
        self.manifold = Sphere(self.Z.shape[2], retraction=retraction, transport=transport)
        self.m_local = self.Z.sum(axis=1) / self.local_sizes[:, None]               # (S, d): m_j
        self.m = self.weights @ self.m_local                                         # (d,): m

    def minibatch_egrad(self, x, agents, batch):
        """-(1/B) sum_{i in batch_j} z_{j,i}: x (s, d), batch (s, B) -> (s, d)."""
        return -self.Z[np.asarray(agents)[:, None], np.asarray(batch)].mean(axis=1)

    def local_egrad(self, x, agents):
        """-m_j: (s, d)."""
        return -np.broadcast_to(self.m_local[agents], np.shape(x)).copy()

    def local_cost(self, x, agents):
        """-m_j^T x_j: (s,)."""
        return -np.einsum("sd,sd->s", self.m_local[agents], x)

    def cost(self, x):
        return float(-self.m @ x)

    def egrad(self, x):
        return -self.m.copy()

    def closed_form_optimum(self):
        """x* = m / ||m|| (None if the pooled mean is zero: every point is optimal)."""
        norm = np.linalg.norm(self.m)
        return self.m / norm if norm > 0 else None

    def extra_metrics(self, x):
        """The angle between x and the population direction mu."""
        return {"angle_to_mu": float(np.arctan2(np.linalg.norm(x - (x @ self.mu) * self.mu), x @ self.mu))}

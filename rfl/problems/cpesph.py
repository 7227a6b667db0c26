"""CPESph: principal eigenvector on the sphere (paper Section 5.1).

f(x; z) = -(z^T x)^2 on S^d = {x in R^{d+1}: ||x|| = 1}; agent i holds
Z_i: (N_i, d+1) and f_i(x) = -(1/N_i) sum_j (z_{ij}^T x)^2. The pooled risk is
F(x) = -x^T C x, C = (1/sum N_i) sum_i Z_i^T Z_i, minimised by the top
eigenvector of C with F* = -lambda_max(C).
"""

from __future__ import annotations

import numpy as np

from rfl.data import cpesph as data
from rfl.manifolds import Sphere

from ._batching import agent_rows, gram_apply, is_full_batch, local_gram
from .base import COUNT, SampleArrayProblem, object_schema


class CPESph(SampleArrayProblem):
    """Z: (S, N, n) agents' samples (rows), n = d + 1."""

    closed_form = True               # x* in closed form (closed_form_optimum): no solver
    name = "cpesph"
    manifold_class = Sphere
    params_schema = object_schema(
        required={"d": {"type": "integer", "minimum": 5},
                  "nu": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1 / 1.4,
                         "description": "Sigma's smallest fixed entry 1 - 1.4 nu stays > 0"},
                  "S": COUNT, "N": COUNT},
        optional={"heterogeneous": {"type": "boolean"}})
    test_params = {"d": 5, "nu": 0.1, "S": 3, "N": 8}

    @classmethod
    def generate(cls, rng, **params):
        """Samples of Section 5.1 (``rfl.data.cpesph.generate``): ``{"Z": (S, N, d+1)}``."""
        return data.generate(rng, **params)

    @classmethod
    def check_params(cls, params):
        """N >= d + 1: the generator draws U_i with orthonormal columns in R^N."""
        if params["N"] < params["d"] + 1:
            return [("N", f"{params['N']} is smaller than d+1 = {params['d'] + 1} (U_i needs "
                          f"orthonormal columns); allowed: N >= {params['d'] + 1}")]
        return []

    @classmethod
    def memory_bytes(cls, params):
        """Z: S*N*(d+1) float64."""
        return params["S"] * params["N"] * (params["d"] + 1) * 8

    def __init__(self, Z: np.ndarray, retraction: str | None = None, transport: str | None = None):
        self.Z = np.asarray(Z, dtype=float)
        S, N, n = self.Z.shape
        self.manifold = Sphere(n, retraction=retraction, transport=transport)
        self.local_sizes = np.full(S, N)
        # C_i = Z_i^T Z_i / N only where a full local gradient is cheaper with it (2 n^2 flops
        # against 4 N n with the samples: 2 N >= n); at MNIST's size (N = 160, n = 784) the
        # S n x n matrices would cost 12 GFLOP and 300 MB to build and a full gradient would
        # read all of them
        self._local_cov = local_gram(self.Z) if 2 * N >= n else None        # (S, n, n)
        if self._local_cov is not None:
            self.C = np.einsum("s,snm->nm", self.weights, self._local_cov)  # pooled covariance
        else:                                       # equal N: C = sum_i Z_i^T Z_i / (S N)
            pooled = self.Z.reshape(S * N, n)
            C = pooled.T @ pooled
            self.C = (C + C.T) * (0.5 / (S * N))

    def minibatch_egrad(self, x, agents, batch):
        """-(2/B) Z_b^T Z_b x for each agent: x (s, n), batch (s, B) -> (s, n)
        (``rfl.problems._batching.gram_apply`` with r = 1). A full batch is
        -2 C_i x with the precomputed C_i = Z_i^T Z_i / N (2 n^2 flops per agent) when that is
        cheaper than Z_i^T (Z_i x) (4 N n): N >= n / 2."""
        N, n = self.Z.shape[1:]
        if 2 * N >= n and is_full_batch(batch, N):
            return self.local_egrad(x, agents)
        out = gram_apply(self.Z, np.asarray(agents), batch, np.asarray(x)[..., None])[..., 0]
        out *= -2.0 / batch.shape[1]
        return out

    def local_egrad(self, x, agents):
        """-2 C_i x for each agent: with the precomputed C_i, else -(2/N) Z_i^T (Z_i x)."""
        x = np.asarray(x)[..., None]
        if self._local_cov is not None:
            out = np.matmul(agent_rows(self._local_cov, agents), x)[..., 0]
            out *= -2.0
            return out
        Z = agent_rows(self.Z, agents)
        out = np.matmul(Z.swapaxes(-1, -2), np.matmul(Z, x))[..., 0]
        out *= -2.0 / self.Z.shape[1]
        return out

    def local_cost(self, x, agents):
        """-x^T C_i x for each agent: with the precomputed C_i, else -||Z_i x||^2 / N."""
        if self._local_cov is not None:
            return -np.einsum("sn,snm,sm->s", x, agent_rows(self._local_cov, agents), x)
        zx = np.matmul(agent_rows(self.Z, agents), np.asarray(x)[..., None])[..., 0]
        return -np.einsum("sb,sb->s", zx, zx) / self.Z.shape[1]

    def sample_costs(self, x, agents, batch):
        """f(x_{j,b}; z) = -(z^T x_{j,b})^2 for z the sample batch[j, b] of agent agents[j]:
        x (s, B, n), batch (s, B) -> (s, B)."""
        z = self.Z[np.asarray(agents)[:, None], np.asarray(batch)]          # (s, B, n)
        return -np.einsum("sbn,sbn->sb", z, np.asarray(x, dtype=float)) ** 2

    def cost(self, x):
        """-x^T C x, with C x first: ``-x @ C @ x`` multiplies the row vector into C, 30x slower
        at n = 784 than the matrix-vector product."""
        return -float(x @ (self.C @ x))

    def egrad(self, x):
        """-2 C x (the scalar applied to the vector, not to the n x n matrix)."""
        return -2.0 * (self.C @ x)

    def reweighted(self, weights):
        """F~(x) = -x^T C~ x, C~ = sum_j w_j C_j: the same class with C~ (the top eigenvector of
        C~ is F~'s minimiser in closed form)."""
        import copy

        from .base import check_agent_weights

        out = copy.copy(self)
        w = check_agent_weights(weights, self.n_agents)
        if self._local_cov is not None:
            out.C = np.einsum("s,snm->nm", w, self._local_cov)
        else:                                       # no C_j kept (2 N < n): sum_j w_j Z_j^T Z_j / N
            S, N, n = self.Z.shape
            C = (self.Z * w[:, None, None]).reshape(S * N, n).T @ self.Z.reshape(S * N, n)
            out.C = (C + C.T) * (0.5 / N)
        return out

    def closed_form_optimum(self):
        w, v = np.linalg.eigh(self.C)
        x = v[:, -1]
        return np.sign(x[np.argmax(np.abs(x))]) * x

    def distance_to_optimum(self, x, x_star):
        """Geodesic distance to the minimiser set {x*, -x*}: arccos|x^T x*|."""
        c = abs(float(x @ x_star))
        s = float(np.linalg.norm(x - (x @ x_star) * x_star))
        return float(np.arctan2(s, c))

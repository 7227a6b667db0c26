"""KPCA: federated principal component analysis on the Stiefel manifold (Li & Ma 2022).

f(X; z) = -1/2 (z^T X)(X^T z) = -1/2 ||X^T z||^2 on St(d, r) (points X: d x r, X^T X = I_r);
agent i holds samples Z_i: (N, d) (rows z_ij, centred by the pooled mean, see
``rfl.data.kpca``) and

    f_i(X) = (1/N) sum_j f(X; z_ij) = -1/2 tr(X^T A_i X),   A_i = (1/N) Z_i^T Z_i,

F(X) = sum_i w_i f_i(X) = -1/2 tr(X^T A X) with the pooled matrix A = sum_i w_i A_i (with
global centring: the pooled covariance). Euclidean gradients: -A_i X, and for a mini-batch
b of B samples -(1/B) Z_b^T Z_b X = -(1/B) Z_b^T (Z_b X) (computed in this order: O(B d r)).

Optimum. With lambda_1 >= ... >= lambda_d the eigenvalues of A (eigenvectors v_1, ..., v_d),
min over St(d, r) of -1/2 tr(X^T A X) is F* = -1/2 (lambda_1 + ... + lambda_r) (Ky Fan),
attained at X* = [v_1, ..., v_r]. The cost is O(r)-invariant (F(X Q) = F(X) for Q in O(r)),
so X* Q is optimal for every Q; when lambda_r > lambda_{r+1} the minimisers are exactly the
orthonormal bases of span(v_1, ..., v_r). Hence ``distance_to_optimum`` is the Grassmann
distance between the subspaces span(X) and span(X*): sqrt(sum_k theta_k^2) with
theta_1, ..., theta_r the principal angles (0 <= theta_k <= pi/2), computed as
arctan2(sin, cos) so that it stays accurate near 0. It is O(r)-invariant in both arguments.
"""

from __future__ import annotations

import numpy as np

from rfl.data import kpca as data
from rfl.data.kpca import n_per_agent_from
from rfl.manifolds import Grassmann, Stiefel

from ._batching import agent_rows, gram_apply, is_full_batch, local_gram
from .base import COUNT, Problem, object_schema


class KPCA(Problem):
    """Z: (S, N, d) agents' samples; r the number of principal components."""

    closed_form = True               # x* in closed form (closed_form_optimum): no solver
    name = "kpca"
    manifold_class = Stiefel
    params_schema = object_schema(
        required={"S": {"type": "integer", "minimum": 1, "maximum": 1740},
                  "r": {"type": "integer", "minimum": 1, "maximum": 64},
                  "split": {"enum": ["iid", "label"]}},
        optional={"n_per_agent": COUNT})
    test_params = {"S": 3, "r": 2, "split": "label", "n_per_agent": 10}

    @classmethod
    def generate(cls, rng, **params):
        """Agents' digits samples (``rfl.data.kpca.generate``): ``{"Z": (S, N, 64), "labels", "r"}``."""
        return data.generate(rng, **params)

    @classmethod
    def check_params(cls, params):
        """S * n_per_agent images must fit in the class-balanced digits pool."""
        n = params.get("n_per_agent")              # its default, POOL_SIZE // S, always fits
        if n is not None and params["S"] * n > data.POOL_SIZE:
            return [("n_per_agent", f"S*n_per_agent = {params['S'] * n} images, but the "
                                    f"class-balanced digits pool holds {data.POOL_SIZE}; allowed: "
                                    f"n_per_agent <= {data.POOL_SIZE // params['S']}")]
        return []

    @classmethod
    def memory_bytes(cls, params):
        """Z: S*n_per_agent*64 float64 (8x8 digits)."""
        return params["S"] * params.get("n_per_agent", data.POOL_SIZE // params["S"]) * 64 * 8

    @classmethod
    def from_arrays(cls, arrays, params=None, **geometry):
        """r is the dataset parameter when given, else ``arrays["r"]`` (written by the generator)."""
        if params is not None and "r" in params:
            r = int(params["r"])
        elif "r" in arrays:
            r = int(arrays["r"])
        else:
            raise KeyError("KPCA needs r: neither the dataset params nor the arrays carry 'r'")
        return cls(arrays["Z"], r, labels=arrays.get("labels"), **geometry)

    @staticmethod
    def local_sizes_from(params: dict):
        """(S,) local sizes implied by the dataset parameters (S, n_per_agent or its default)."""
        return [n_per_agent_from(params)] * int(params["S"])

    def __init__(self, Z: np.ndarray, r: int, labels: np.ndarray | None = None,
                 retraction: str | None = None, transport: str | None = None):
        self.Z = np.asarray(Z, dtype=float)
        if self.Z.ndim != 3:
            raise ValueError(f"Z must have shape (S, N, d), got {self.Z.shape}")
        S, N, d = self.Z.shape
        self.d, self.r = d, int(r)
        self.manifold = Stiefel(d, self.r, retraction=retraction, transport=transport)
        self._grassmann = Grassmann(d, self.r)
        self.labels = None if labels is None else np.asarray(labels)
        self.local_sizes = np.full(S, N)
        self.A_local = local_gram(self.Z)                                   # (S, d, d): A_i
        self.A_bar = np.einsum("s,skl->kl", self.weights, self.A_local)   # pooled A

    @property
    def full_batch_product(self) -> str:
        """How a full local gradient -A_i X is computed, whichever costs fewer flops per agent:
        "gram", A_i X with the precomputed A_i (2 d^2 r), or "samples", Z_i^T (Z_i X) (two
        N x d by d x r products, 4 N d r); "gram" exactly when N >= d / 2."""
        N = self.Z.shape[1]
        return "gram" if 2 * self.d * self.d * self.r <= 4 * N * self.d * self.r else "samples"

    def minibatch_egrad(self, x, agents, batch):
        """-(1/B) Z_b^T Z_b X: x (s, d, r), batch (s, B) -> (s, d, r)
        (``rfl.problems._batching.gram_apply``). A full batch is -A_i X
        (``full_batch_product``)."""
        x = np.asarray(x, dtype=float)
        if self.full_batch_product == "gram" and is_full_batch(batch, self.Z.shape[1]):
            return self.local_egrad(x, agents)
        out = gram_apply(self.Z, np.asarray(agents), batch, x)
        out /= -batch.shape[1]
        return out

    def local_egrad(self, x, agents):
        """-A_i X: x (s, d, r) -> (s, d, r) (``full_batch_product``; the agents' A_i as a view
        when they are consecutive)."""
        if self.full_batch_product == "samples":
            x = np.asarray(x, dtype=float)
            out = gram_apply(self.Z, np.asarray(agents), None, x)
            out /= -self.Z.shape[1]
            return out
        out = np.matmul(agent_rows(self.A_local, agents), x)
        np.negative(out, out=out)
        return out

    def local_cost(self, x, agents):
        return -0.5 * np.einsum("sik,sij,sjk->s", x, agent_rows(self.A_local, agents), x)

    def sample_costs(self, x, agents, batch):
        """f(X_{j,b}; z) = -1/2 ||X_{j,b}^T z||^2 for z the sample batch[j, b] of agent
        agents[j]: x (s, B, d, r), batch (s, B) -> (s, B)."""
        z = self.Z[np.asarray(agents)[:, None], np.asarray(batch)]          # (s, B, d)
        proj = np.einsum("sbd,sbdr->sbr", z, np.asarray(x, dtype=float))
        return -0.5 * np.einsum("sbr,sbr->sb", proj, proj)

    def cost(self, x):
        return float(-0.5 * np.einsum("ik,ij,jk->", x, self.A_bar, x))

    def egrad(self, x):
        return -(self.A_bar @ x)

    def eigenvalues(self) -> np.ndarray:
        """Eigenvalues of the pooled A in descending order: ``(d,)``."""
        return np.linalg.eigvalsh(self.A_bar)[::-1]

    def closed_form_optimum(self):
        """X* = [v_1, ..., v_r], eigenvectors of the r largest eigenvalues of A (v_1 for the
        largest); each column's sign makes its largest-|.| entry positive."""
        _, v = np.linalg.eigh(self.A_bar)
        return self.signed(v[:, ::-1][:, :self.r])

    @staticmethod
    def signed(x: np.ndarray) -> np.ndarray:
        """``x`` with each column's sign making its largest-|.| entry positive."""
        idx = np.argmax(np.abs(x), axis=0)
        return np.ascontiguousarray(np.sign(x[idx, np.arange(x.shape[1])]) * x)

    def optimal_value(self) -> float:
        """F* = -1/2 (lambda_1 + ... + lambda_r), the r largest eigenvalues of A."""
        return float(-0.5 * np.sum(self.eigenvalues()[:self.r]))

    def distance_to_optimum(self, x, x_star):
        """Grassmann (principal-angle) distance between span(x) and span(x_star):
        sqrt(sum_k theta_k^2). The minimisers form the set {X* Q : Q in O(r)} (a single
        subspace when lambda_r > lambda_{r+1}), so this is the distance to that set measured
        on Gr(d, r); it is 0 exactly when span(x) = span(x_star)."""
        return float(self._grassmann.dist(np.asarray(x)[None], np.asarray(x_star)[None])[0])

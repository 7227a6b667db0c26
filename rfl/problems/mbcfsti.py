"""MBCFSti: Brockett cost on the Stiefel manifold (paper Section 5.1).

f(X; A) = tr(X^T A X H) on St(p, d), H = diag(mu_1, ..., mu_p) = diag(p, p-1, ..., 1)
(mu_1 > ... > mu_p > 0); agent i holds A_i: (N_i, d, d) symmetric and
f_i(X) = (1/N_i) sum_j f(X; A_ij); F(X) = sum_i w_i f_i(X) = tr(X^T A_bar X H)
with the pooled mean matrix A_bar = sum_i w_i (1/N_i) sum_j A_ij.
Euclidean gradient (A symmetric): 2 A X H.

Optimum. tr(X^T A X H) = sum_k mu_k x_k^T A x_k. With lambda_1 <= ... <= lambda_d
the eigenvalues of A_bar (eigenvectors v_1, ..., v_d), the minimum over
St(p, d) is sum_k mu_k lambda_k (Brockett; by the rearrangement inequality the
largest weight mu_1 goes with the smallest eigenvalue), attained at
X* = [v_1, ..., v_p]. When lambda_1, ..., lambda_p are simple and lambda_p <
lambda_{p+1}, the minimisers are exactly X* diag(+-1, ..., +-1).
"""

from __future__ import annotations

import numpy as np

from rfl.data import mbcfsti as data
from rfl.manifolds import Stiefel

from ._batching import agent_rows, kernel_inputs, kernels
from .base import COUNT, SCALE, Problem, object_schema


class MBCFSti(Problem):
    """A: (S, N, d, d) agents' symmetric matrices; p the number of columns."""

    closed_form = True               # x* in closed form (closed_form_optimum): no solver
    name = "mbcfsti"
    manifold_class = Stiefel
    params_schema = object_schema(
        required={"d": {"type": "integer", "minimum": 2}, "p": COUNT, "S": COUNT, "N": COUNT},
        optional={"heterogeneity": SCALE})
    test_params = {"d": 5, "p": 2, "S": 3, "N": 4}

    @classmethod
    def generate(cls, rng, **params):
        """Symmetric matrices of Section 5.1 (``rfl.data.mbcfsti.generate``): ``{"A": (S, N, d, d), "p"}``."""
        return data.generate(rng, **params)

    @classmethod
    def check_params(cls, params):
        """p <= d: St(p, d) needs p orthonormal columns in R^d."""
        if params["p"] > params["d"]:
            return [("p", f"{params['p']} is larger than d = {params['d']}; allowed: 1..{params['d']}")]
        return []

    @classmethod
    def memory_bytes(cls, params):
        """A: S*N*d*d float64."""
        return params["S"] * params["N"] * params["d"] ** 2 * 8

    @classmethod
    def from_arrays(cls, arrays, params=None, **geometry):
        """p is the dataset parameter when given, else ``arrays["p"]`` (written by the generator)."""
        if params is not None and "p" in params:
            p = int(params["p"])
        elif "p" in arrays:
            p = int(arrays["p"])
        else:
            raise KeyError("MBCFSti needs p: neither the dataset params nor the arrays carry 'p'")
        return cls(arrays["A"], p, **geometry)

    @staticmethod
    def local_sizes_from(params: dict):
        """(S,) local sizes implied by the dataset parameters (d, p, S, N)."""
        return [params["N"]] * params["S"]

    def __init__(self, A: np.ndarray, p: int, retraction: str | None = None,
                 transport: str | None = None):
        self.A = np.asarray(A, dtype=float)
        if self.A.ndim != 4 or self.A.shape[-1] != self.A.shape[-2]:
            raise ValueError(f"A must have shape (S, N, d, d), got {self.A.shape}")
        S, N, d, _ = self.A.shape
        self.d, self.p = d, int(p)
        self.manifold = Stiefel(d, self.p, retraction=retraction, transport=transport)
        self.local_sizes = np.full(S, N)
        self.h = np.arange(self.p, 0, -1, dtype=float)                      # diag(H) = (p, ..., 1)
        self._local_mean = self.A.mean(axis=1)                             # (S, d, d)
        self.A_bar = np.einsum("s,sij->ij", self.weights, self._local_mean)
        self._triu = np.triu_indices(d)
        self._packed = self._pack_upper(self.A, self._triu)                 # (S, N, d(d+1)/2) or None
        position = np.empty((d, d), dtype=np.intp)                          # packed index of (k, l)
        position[self._triu] = np.arange(self._triu[0].size)
        position[self._triu[1], self._triu[0]] = position[self._triu]
        self._unpack = position.ravel()

    @staticmethod
    def _pack_upper(A: np.ndarray, triu) -> np.ndarray | None:
        """The upper triangles of the A_ij, row by row: ``(S, N, d (d + 1) / 2)``, or None when
        some A_ij is not exactly symmetric (then the kernels read the full matrices). A
        mini-batch sum of symmetric matrices is symmetric, so it is summed in this packed form,
        which reads 52% of the bytes of the full matrices for d = 25 (one copy, kept)."""
        S, N = A.shape[:2]
        step = max(1, (1 << 20) // max(1, A[0].nbytes))            # ~1 MB of A per check
        packed = np.empty((S, N, triu[0].size))
        for i in range(0, S, step):
            chunk = A[i:i + step]
            if not np.array_equal(chunk, chunk.swapaxes(-1, -2)):
                return None
            packed[i:i + step] = chunk[..., triu[0], triu[1]]
        return packed

    def _batch_sums(self, agents, batch):
        """(1/B) sum_{b in batch_r} A_{r,b} for each row r: agents (s,), batch (s, B) -> (s, d, d).
        Read by the compiled ``_kernels.row_sums`` (only the B selected matrices, once each),
        in the packed upper triangles when A is symmetric (a sum of symmetric matrices is
        symmetric), unpacked as it is written out."""
        S, N, d, _ = self.A.shape
        data = self.A.reshape(S, N, d * d) if self._packed is None else self._packed
        agents, idx = kernel_inputs(agents, batch, S, N)
        pos = self._unpack if self._packed is not None else np.arange(d * d)
        total = kernels().row_sums(data, agents, idx, pos, np.empty((agents.shape[0], d * d)))
        total /= idx.shape[1]
        return total.reshape(-1, d, d)

    def batch_mean(self, agents, batch):
        """(1/B) sum_{b in batch_j} A_{j,b} for each row: agents (s,), batch (s, B) -> (s, d, d)."""
        return self._batch_sums(agents, batch)

    def minibatch_egrad(self, x, agents, batch):
        """(2/B) sum_b A_b X H: x (s, d, p), batch (s, B) -> (s, d, p). With A symmetric, the
        compiled ``_kernels.packed_sums_apply`` applies each agent's packed sum to X directly."""
        if self._packed is None:
            out = self._batch_sums(agents, batch) @ x
            out *= 2.0 * self.h
            return out
        S, N = self._packed.shape[:2]
        agents, idx = kernel_inputs(agents, batch, S, N)
        xt = np.ascontiguousarray(np.swapaxes(x, -1, -2), dtype=float)
        out = kernels().packed_sums_apply(self._packed, agents, idx, xt, np.empty(xt.shape))
        out *= (2.0 / idx.shape[1]) * self.h[:, None]
        return np.ascontiguousarray(out.swapaxes(-1, -2))

    def local_egrad(self, x, agents):
        return 2.0 * (agent_rows(self._local_mean, agents) @ x) * self.h

    def local_cost(self, x, agents):
        return np.einsum("sik,sij,sjk,k->s", x, agent_rows(self._local_mean, agents), x, self.h)

    def cost(self, x):
        return float(np.einsum("ik,ij,jk,k->", x, self.A_bar, x, self.h))

    def egrad(self, x):
        return 2.0 * (self.A_bar @ x) * self.h

    def closed_form_optimum(self):
        """X* = [v_1, ..., v_p], eigenvectors of the p smallest eigenvalues of A_bar (v_1 for the
        smallest, paired with mu_1 = p); each column's sign makes its largest-|.| entry positive."""
        _, v = np.linalg.eigh(self.A_bar)
        x = v[:, :self.p]
        idx = np.argmax(np.abs(x), axis=0)
        return np.sign(x[idx, np.arange(self.p)]) * x

    def optimal_value(self) -> float:
        """F* = sum_k mu_k lambda_k, lambda_1 <= ... <= lambda_p the smallest eigenvalues of A_bar."""
        return float(self.h @ np.linalg.eigvalsh(self.A_bar)[:self.p])

    def distance_to_optimum(self, x, x_star):
        """min over column signs D of ||X D - X*||_F: the minimisers are X* D (simple eigenvalues),
        and the Frobenius distance separates over columns, so each column's sign is flipped to
        make x_k^T x*_k >= 0. (With repeated eigenvalues the minimiser set is larger and this
        overestimates the distance to it.)"""
        s = np.sign(np.sum(x * x_star, axis=0))
        s[s == 0] = 1.0
        return float(np.linalg.norm(s * x - x_star))

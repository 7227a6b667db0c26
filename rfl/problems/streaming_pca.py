"""Streaming PCA on the Grassmannian Gr(n, p) (Wang, Borsoi, Richard & Sayed, "Riemannian
diffusion adaptation for distributed optimization on manifolds", ICML 2025, Section 5.1;
the authors' ``main_pca.py`` and ``utils/pca.py``).

Each of S agents receives one fresh sample z_{k,t} in R^n at every step t = 0..T-1 and the
instantaneous cost is the authors' (no 1/2)

    f(U; z) = -tr(U^T z z^T U) = -||U^T z||^2,      Euclidean gradient -2 z z^T U,

so the pooled risk is F(U) = -tr(U^T C U), C = (1/(S T)) sum z z^T, minimised by the p leading
eigenvectors of C. Agent j's local risk f_j pools its T samples; a streaming strategy uses
sample t at step t (``stream_batch``).

Data (the authors' construction, ``generator: whitened``): a (S T, n) standard normal array
G = A diag(s) B^T (thin SVD) is replaced by A diag(sigma) B^T sqrt(S T - 1), sigma_i =
decay^i (i = 0..n-1, decay 0.8), its rows shuffled and dealt out as (S, T, n): the pooled
sample covariance is exactly B diag(sigma^2) B^T and the true subspace U* = B[:, :p].
``generator: iid`` draws z = B diag(sigma) g, g ~ N(0, I_n), B a random orthogonal matrix
(the same distribution without the whitening).

Metric (the paper's Figure 2): the mean-square deviation MSD = mean over agents of the squared
Grassmann distance d^2(U_k, U*) (sum of squared principal angles), in dB (10 log10 MSD).
"""

from __future__ import annotations

import numpy as np

from rfl.manifolds import Grassmann

from .base import COUNT, SampleArrayProblem, object_schema

GENERATORS = ("whitened", "iid")


def _t(a):
    return a.swapaxes(-1, -2)


class StreamingPCA(SampleArrayProblem):
    """Z: (S, T, n) the agents' samples in arrival order; U_true: (n, p)."""

    closed_form = True               # x* in closed form (closed_form_optimum): no solver

    name = "streaming_pca"
    manifold_class = Grassmann
    params_schema = object_schema(
        required={"n": {"type": "integer", "minimum": 2}, "p": COUNT, "S": COUNT, "T": COUNT},
        optional={"decay": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1,
                            "description": "singular values decay^i of the data (0.8)"},
                  "generator": {"enum": list(GENERATORS),
                                "description": "whitened: the authors' (pooled covariance exact); "
                                               "iid: Gaussian samples of that covariance"}},
        description="S agents, one sample in R^n per agent per step for T steps; subspace of dim p")
    #: per-agent metrics (the decentralised strategies record them each round)
    agent_metric_names = ("msd", "msd_db")
    agent_metric_labels = {"msd": "MSD", "msd_db": "MSD (dB)"}
    metric_definitions = {
        "msd": "mean over agents of the squared Grassmann distance (sum of squared principal "
               "angles) of each agent's iterate to the true subspace U*",
        "msd_db": "10 log10 msd"}
    test_params = {"n": 6, "p": 2, "S": 3, "T": 8}
    #: samples per agent per step (the stream protocol: ``stream_batch``)
    block = 1

    @classmethod
    def check_params(cls, params):
        out = []
        if params["p"] >= params["n"]:
            out.append(("p", f"{params['p']} is not below n = {params['n']}; allowed: 1..{params['n'] - 1}"))
        if params.get("generator", "whitened") == "whitened" and params["S"] * params["T"] < params["n"]:
            out.append(("T", f"S T = {params['S'] * params['T']} samples are fewer than n = "
                             f"{params['n']}: the whitened generator needs S T >= n"))
        return out

    @classmethod
    def memory_bytes(cls, params):
        return params["S"] * params["T"] * params["n"] * 8 * 3

    @staticmethod
    def local_sizes_from(params):
        return [int(params["T"])] * int(params["S"])

    @classmethod
    def generate(cls, rng, n, p, S, T, decay=0.8, generator="whitened"):
        """``{"Z": (S, T, n), "U_true": (n, p)}`` (module docstring)."""
        sigma = decay ** np.arange(n)
        g = rng.standard_normal((S * T, n))
        if generator == "whitened":
            a, _, bt = np.linalg.svd(g, full_matrices=False)
            z = (a * sigma) @ bt * np.sqrt(S * T - 1)
            z = z[rng.permutation(S * T)]
            basis = bt.T
        else:
            basis, r = np.linalg.qr(rng.standard_normal((n, n)))
            basis = basis * np.sign(np.diag(r))
            z = (g * sigma) @ basis.T
        return {"Z": z.reshape(S, T, n), "U_true": basis[:, :p].copy()}

    @classmethod
    def from_arrays(cls, arrays, params=None, **geometry):
        return cls(arrays["Z"], arrays["U_true"], **geometry)

    def __init__(self, Z, U_true, retraction: str | None = None, transport: str | None = None):
        self.Z = np.asarray(Z, dtype=float)
        self.U_true = np.asarray(U_true, dtype=float)
        S, T, n = self.Z.shape
        p = self.U_true.shape[1]
        self.manifold = Grassmann(n, p, retraction=retraction, transport=transport)
        self.local_sizes = np.full(S, T)
        self.horizon = T
        self._local_cov = np.einsum("stn,stm->snm", self.Z, self.Z) / T      # (S, n, n)
        self.C = self._local_cov.mean(axis=0)

    # ---- the stream --------------------------------------------------------------------
    def stream_batch(self, t: int) -> np.ndarray:
        """(S, block) sample indices of step t (0-based): sample t of every agent."""
        if not 0 <= t < self.horizon:
            raise IndexError(f"step {t} outside the stream's {self.horizon} steps")
        return np.full((self.n_agents, self.block), t, dtype=int)

    # ---- gradients and costs -------------------------------------------------------------
    def minibatch_egrad(self, x, agents, batch):
        """-(2/B) Z_b^T Z_b U for each agent: x (s, n, p), batch (s, B) -> (s, n, p)."""
        z = self.Z[np.asarray(agents)[:, None], np.asarray(batch)]          # (s, B, n)
        return -2.0 / z.shape[1] * (_t(z) @ (z @ x))

    def local_egrad(self, x, agents):
        return -2.0 * (self._local_cov[np.asarray(agents)] @ x)

    def local_cost(self, x, agents):
        return -np.einsum("snp,snm,smp->s", x, self._local_cov[np.asarray(agents)], x)

    def sample_costs(self, x, agents, batch):
        """-||U_{j,b}^T z||^2 for z the sample batch[j, b] of agent agents[j]: x (s, B, n, p)."""
        z = self.Z[np.asarray(agents)[:, None], np.asarray(batch)]          # (s, B, n)
        return -np.sum(np.einsum("sbn,sbnp->sbp", z, np.asarray(x, dtype=float)) ** 2, axis=-1)

    def cost(self, x):
        return -float(np.sum(x * (self.C @ x)))

    def egrad(self, x):
        return -2.0 * (self.C @ x)

    def closed_form_optimum(self):
        """The p leading eigenvectors of the pooled C (for the whitened generator: U_true)."""
        _, v = np.linalg.eigh(self.C)
        return v[:, ::-1][:, :self.manifold.r].copy()

    # ---- the paper's metric ------------------------------------------------------------
    def msd(self, x_stack: np.ndarray) -> float:
        """Mean over agents of d^2(U_k, U*): ``x_stack (S, n, p)``."""
        ref = np.broadcast_to(self.U_true, x_stack.shape)
        return float(np.mean(self.manifold.dist(x_stack, ref) ** 2))

    def agent_metrics(self, x_stack: np.ndarray, t: int | None = None) -> dict[str, float]:
        """``{"msd", "msd_db"}`` of the agents' iterates (``agent_metric_names``)."""
        m = self.msd(x_stack)
        return {"msd": m, "msd_db": float(10.0 * np.log10(max(m, 1e-300)))}

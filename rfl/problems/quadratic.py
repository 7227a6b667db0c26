"""Heterogeneous quadratics: FedAvg's bias is FedLSA's (SCAFFLSA slides "For Quadratics").

Client c holds f^c(theta) = 1/2 theta^T A_c theta + b_c^T theta (the slides' sign convention),
A_c symmetric positive definite, known through n samples

    l(theta; z_{c,i}) = 1/2 theta^T A_{c,i} theta + b_{c,i}^T theta,
    A_{c,i} = A_c + noise_A (S_{c,i} - mean_i S_{c,i}),  b_{c,i} = b_c + noise_b (xi_{c,i} - mean_i xi_{c,i}),

S symmetric with N(0, 1/d) entries, xi ~ N(0, I): per-sample (multiplicative and additive)
mini-batch noise, centred so that the n samples average to A_c, b_c exactly (up to rounding).
A mini-batch of B of them (without replacement, the framework's sampler) gives the
gradient A_hat theta + b_hat; the full batch gives the exact grad f^c(theta) = A_c theta + b_c.

Global f = sum_c p_c f^c (p_c = 1/N: equal local sizes), theta* = -A^{-1} b in closed form,
A = sum_c p_c A_c, b = sum_c p_c b_c. In the LSA notation of ``rfl.problems.lsa`` (field
A theta - b_LSA) this is b_LSA = -b, theta*_c = -A_c^{-1} b_c, and FedAvg's iterate is FedLSA's,
so its stationary mean is theta* + the FedLSA bias ``rfl.problems.lsa.fedlsa_bias`` on
(A_c, theta*_c) exactly, with or without the noise (the mean of a product of independent
(I - eta A_hat) factors is the product of their means; grad^3 f = 0, so (E2) of
``rfl.problems.fedavg_bias`` vanishes).

Settings: "heterogeneous" draws A_c = Q_c diag(lambda_c) Q_c^T (Q_c Haar, lambda_c uniform in
[mu, L]) and b_c ~ N(0, spread^2 I) per client; "homogeneous" draws one (A, b) for every client
(no bias at all). Metrics: the coordinates of theta_t - theta* (``_error_coordinates``).
"""

from __future__ import annotations

import numpy as np

from rfl.manifolds import Euclidean

from ._batching import is_full_batch
from ._error_coordinates import ErrorCoordinates
from .base import COUNT, NONNEGATIVE, POSITIVE, Problem, object_schema
from .lsa import fedlsa_bias


def _orthogonal(rng: np.random.Generator, d: int) -> np.ndarray:
    """A Haar-distributed orthogonal d x d matrix (QR of a Gaussian, signs fixed)."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


#: the curvature and noise scales: far beyond any experiment's, so that A, b and their products
#: stay finite (1e6^2 d samples, no overflow)
BOUNDED_POSITIVE = {"type": "number", "minimum": 1e-6, "maximum": 1e6}
BOUNDED = {"type": "number", "minimum": 0, "maximum": 1e6}


class HeterogeneousQuadratic(ErrorCoordinates, Problem):
    """A_mean (N, d, d), b_mean (N, d): the clients' exact A_c, b_c; A_dev (N, n, d, d),
    b_dev (N, n, d): the per-sample deviations (each sums to 0 over its n samples)."""

    closed_form = True               # x* in closed form (closed_form_optimum): no solver
    name = "quadratic"
    manifold_class = Euclidean
    params_schema = object_schema(
        required={"setting": {"enum": ["heterogeneous", "homogeneous"]},
                  "n_agents": COUNT, "dim": COUNT, "n": COUNT},
        optional={"mu": {**BOUNDED_POSITIVE, "default": 0.5, "description": "smallest eigenvalue range end"},
                  "L": {**BOUNDED_POSITIVE, "default": 2.0, "description": "largest eigenvalue range end"},
                  "spread": {**BOUNDED, "default": 1.0, "description": "std of the clients' b_c"},
                  "noise_A": {**BOUNDED, "default": 0.0,
                              "description": "per-sample std of A_{c,i} - A_c (times 1/sqrt(d))"},
                  "noise_b": {**BOUNDED, "default": 0.0,
                              "description": "per-sample std of b_{c,i} - b_c"}},
        description="Heterogeneous quadratics f^c = 1/2 theta^T A_c theta + b_c^T theta with "
                    "per-sample noise (rfl/problems/quadratic.py).")
    test_params = {"setting": "heterogeneous", "n_agents": 3, "dim": 2, "n": 5, "noise_A": 0.3,
                   "noise_b": 0.5}

    @classmethod
    def check_params(cls, params):
        mu, L = params.get("mu", 0.5), params.get("L", 2.0)
        if mu > L:
            return [("mu", f"mu = {mu} exceeds L = {L}; allowed: mu <= L")]
        return []

    @classmethod
    def memory_bytes(cls, params):
        """Per-sample A and b: N n d (d + 1) float64, and the means."""
        N, n, d = params["n_agents"], params["n"], params["dim"]
        return N * (n + 1) * d * (d + 1) * 8

    @classmethod
    def generate(cls, rng, setting, n_agents, dim, n, mu=0.5, L=2.0, spread=1.0, noise_A=0.0,
                 noise_b=0.0):
        """The clients' (A_c, b_c) and per-sample deviations (module docstring)."""
        N, d = int(n_agents), int(dim)
        draws = N if setting == "heterogeneous" else 1
        A = np.empty((draws, d, d))
        for c in range(draws):
            Q = _orthogonal(rng, d)
            A[c] = (Q * rng.uniform(mu, L, d)) @ Q.T
        A = 0.5 * (A + A.transpose(0, 2, 1))
        b = spread * rng.standard_normal((draws, d))
        if draws == 1:
            A, b = np.repeat(A, N, axis=0), np.repeat(b, N, axis=0)
        G = rng.standard_normal((N, n, d, d)) / np.sqrt(d)
        S = (G + G.transpose(0, 1, 3, 2)) / np.sqrt(2)
        xi = rng.standard_normal((N, n, d))
        A_dev = noise_A * (S - S.mean(axis=1, keepdims=True))
        b_dev = noise_b * (xi - xi.mean(axis=1, keepdims=True))
        return {"A_mean": A, "b_mean": b, "A_dev": A_dev, "b_dev": b_dev}

    @classmethod
    def from_arrays(cls, arrays, params=None, **geometry):
        return cls(arrays["A_mean"], arrays["b_mean"], arrays["A_dev"], arrays["b_dev"], **geometry)

    @staticmethod
    def local_sizes_from(params):
        return [int(params["n"])] * int(params["n_agents"])

    def __init__(self, A_mean, b_mean, A_dev, b_dev, retraction=None, transport=None):
        self.A_local = np.asarray(A_mean, dtype=float)                 # (N, d, d)
        self.b_local = np.asarray(b_mean, dtype=float)                 # (N, d)
        self.A_dev = np.asarray(A_dev, dtype=float)                    # (N, n, d, d)
        self.b_dev = np.asarray(b_dev, dtype=float)                    # (N, n, d)
        N, n, d = self.b_dev.shape
        self.manifold = Euclidean(d, retraction=retraction, transport=transport)
        self.local_sizes = np.full(N, n)
        self.A_bar = np.einsum("c,cij->ij", self.weights, self.A_local)
        self.b_bar = self.weights @ self.b_local
        self.theta_star = -np.linalg.solve(self.A_bar, self.b_bar)
        self.theta_star_local = -np.linalg.solve(self.A_local, self.b_local[..., None])[..., 0]

    # ---- federated ----------------------------------------------------------------------
    def minibatch_egrad(self, x, agents, batch):
        """(1/B) sum_i A_{c,i} x + b_{c,i} per row: x (s, d), batch (s, B) -> (s, d); the full
        batch is the exact A_c x + b_c."""
        agents = np.asarray(agents)
        if is_full_batch(batch, self.b_dev.shape[1]):
            return self.local_egrad(x, agents)
        idx = np.asarray(batch)
        rows = agents[:, None]
        A = self.A_local[agents] + self.A_dev[rows, idx].mean(axis=1)
        b = self.b_local[agents] + self.b_dev[rows, idx].mean(axis=1)
        return np.einsum("sij,sj->si", A, x) + b

    def local_egrad(self, x, agents):
        """grad f^c(x) = A_c x + b_c: ``(s, d)``."""
        agents = np.asarray(agents)
        return np.einsum("sij,sj->si", self.A_local[agents], x) + self.b_local[agents]

    def local_cost(self, x, agents):
        agents = np.asarray(agents)
        return (0.5 * np.einsum("si,sij,sj->s", x, self.A_local[agents], x)
                + np.einsum("si,si->s", self.b_local[agents], x))

    # ---- global -------------------------------------------------------------------------
    def cost(self, x):
        return float(0.5 * x @ self.A_bar @ x + self.b_bar @ x)

    def egrad(self, x):
        return self.A_bar @ x + self.b_bar

    def closed_form_optimum(self):
        """theta* = -A^{-1} b."""
        return self.theta_star.copy()

    def distance_to_optimum(self, x, x_star):
        return float(np.linalg.norm(x - x_star))

    # ---- FedAvg's bias ------------------------------------------------------------------
    def fedavg_bias(self, eta: float, H: int) -> np.ndarray:
        """FedAvg's exact stationary mean minus theta*: FedLSA's bias on (A_c, theta*_c)."""
        return fedlsa_bias(self.A_local, self.theta_star_local, self.theta_star, self.weights, eta, H)

    def predictions(self, spec: dict) -> dict:
        """For a ``fedavg`` run with a fixed step and every client: the exact bias
        (``fedavg_bias``) as ``fedavg_bias`` (its heterogeneity part; the noise part is 0)."""
        alg, step = spec.get("algorithm") or {}, spec.get("step") or {}
        if (alg.get("name") != "fedavg" or alg.get("K") is None or step.get("rule") != "fixed"
                or alg.get("participation") not in (None, self.n_agents)):
            return {}
        eta, H = float(step["alpha"]), int(alg["K"])
        bias = self.fedavg_bias(eta, H)
        zero = [0.0] * bias.shape[0]
        return {"eta": eta, "H": H, "fedavg_bias": {"heterogeneity": bias.tolist(), "noise": zero,
                                                     "total": bias.tolist()},
                "bias_formula": "exact (FedLSA's, slides 'For Quadratics')"}

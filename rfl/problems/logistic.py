"""L2-regularised logistic regression on heterogeneous clients: FedAvg's bias beyond quadratics.

Sample z = (x, y), x in R^d, y in {-1, +1}, margin m = y x^T theta:

    l(theta; z) = log(1 + exp(-m)) + lam/2 ||theta||^2,
    grad l      = -y sigma(-m) x + lam theta,
    hess l      = s(m) x x^T + lam I,                    s = sigma (1 - sigma),
    grad^3 l    = y s(m) (1 - 2 sigma(m)) x (x) x (x) x   (the regulariser's is 0),

sigma the logistic function (s and 1 - 2 sigma are even and odd in m, and y^2 = 1). Client c
holds n samples, f^c their mean; f = sum_c p_c f^c (p_c = 1/N). theta* is Newton's solution
(gradient norm below 1e-12), and everything (E1)-(E2) of ``rfl.problems.fedavg_bias`` needs is
computed exactly over the finite data: hess f^c(theta*), grad f^c(theta*), grad^3 f(theta*) and
the covariance C_c of one local step's mini-batch gradient, B samples drawn without replacement
(the framework's sampler): C_c = Sigma_c (n - B) / (B (n - 1)), Sigma_c the covariance of the
n per-sample gradients at theta*. So the predicted bias is computed, never fitted.

Sources. "synthetic": client c draws x ~ N(shift u_c, I) (u_c ~ N(0, I / d)) and
y = +1 with probability sigma(w_c^T x), w_c = w_0 + label_spread v_c (w_0 ~ N(0, I / d) * 2,
v_c ~ N(0, I / d)); setting "homogeneous" gives every client the same n samples (f^c = f: no
heterogeneity bias, only the noise part). "breast_cancer" (scikit-learn's copy of the Wisconsin
data, 569 samples, 30 features): features standardised and projected on their first d principal
components, then split among the N clients by label skew: samples are sorted by
skew * [label] + (1 - skew) * U(0, 1) and dealt in contiguous blocks of n = floor(569 / N)
(skew 0: a random split; 1: the classes one after the other).

Metrics: the coordinates of theta_t - theta* (``_error_coordinates``).
"""

from __future__ import annotations

import numpy as np

from rfl.manifolds import Euclidean

from ._batching import is_full_batch
from ._error_coordinates import ErrorCoordinates
from .base import COUNT, NONNEGATIVE, POSITIVE, Problem, object_schema
from .fedavg_bias import predicted_bias, without_replacement_covariance

#: Newton's stopping rule for theta*: the gradient norm of f
NEWTON_TOL = 1e-12
BREAST_CANCER_SIZE = 569


def sigmoid(z):
    """1 / (1 + exp(-z)), without overflow."""
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=float)))


def _logaddexp0(z):
    return np.logaddexp(0.0, z)


class FederatedLogistic(ErrorCoordinates, Problem):
    """X (N, n, d) features, y (N, n) labels in {-1, +1}, lam the L2 weight."""

    closed_form = True               # x* in closed form (closed_form_optimum): no solver
    name = "logistic"
    manifold_class = Euclidean
    params_schema = object_schema(
        required={"source": {"enum": ["synthetic", "breast_cancer"]}, "n_agents": COUNT,
                  "dim": {"type": "integer", "minimum": 1, "maximum": 30}},
        optional={"setting": {"enum": ["heterogeneous", "homogeneous"], "default": "heterogeneous",
                              "description": "synthetic: homogeneous = the same samples at every client"},
                  "n": {**COUNT, "description": "samples per client (synthetic)"},
                  "lam": {**POSITIVE, "default": 0.1, "description": "L2 weight"},
                  "shift": {**NONNEGATIVE, "maximum": 100, "default": 1.0,
                            "description": "feature shift (synthetic; at most 100: Newton's theta* to 1e-12)"},
                  "label_spread": {**NONNEGATIVE, "maximum": 100, "default": 1.0,
                                   "description": "spread of the label models (synthetic)"},
                  "skew": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.8,
                           "description": "label skew of the split (breast_cancer)"}},
        description="L2-regularised logistic regression, heterogeneous clients "
                    "(rfl/problems/logistic.py).")
    test_params = {"source": "synthetic", "n_agents": 3, "dim": 2, "n": 6}

    @classmethod
    def check_params(cls, params):
        out = []
        if params["source"] == "synthetic" and "n" not in params:
            out.append(("n", "the synthetic source needs n, the samples per client; allowed: n >= 1"))
        if params["source"] == "breast_cancer":
            for key in ("n", "shift", "label_spread", "setting"):
                if key in params:
                    out.append((key, f"{key} belongs to the synthetic source; allowed with "
                                     f"breast_cancer: n_agents, dim, lam, skew"))
            if params["n_agents"] > BREAST_CANCER_SIZE:
                out.append(("n_agents", f"{params['n_agents']} clients for {BREAST_CANCER_SIZE} "
                                        f"samples; allowed: 1..{BREAST_CANCER_SIZE}"))
        elif "skew" in params:
            out.append(("skew", "skew belongs to the breast_cancer source"))
        return out

    @classmethod
    def memory_bytes(cls, params):
        n = params.get("n", BREAST_CANCER_SIZE // params["n_agents"])
        return params["n_agents"] * n * (params["dim"] + 1) * 8

    @classmethod
    def generate(cls, rng, source, n_agents, dim, setting="heterogeneous", n=None, lam=0.1,
                 shift=1.0, label_spread=1.0, skew=0.8):
        """{"X": (N, n, d), "y": (N, n), "lam": ()} (module docstring)."""
        N, d = int(n_agents), int(dim)
        if source == "breast_cancer":
            from sklearn.datasets import load_breast_cancer
            data = load_breast_cancer()
            Z = (data.data - data.data.mean(0)) / data.data.std(0)
            _, _, Vt = np.linalg.svd(Z, full_matrices=False)
            F = Z @ Vt[:d].T
            labels = np.where(data.target == 1, 1.0, -1.0)
            key = skew * (labels > 0) + (1 - skew) * rng.uniform(size=labels.shape[0])
            order = np.argsort(key, kind="stable")
            n = labels.shape[0] // N
            order = order[:N * n].reshape(N, n)
            return {"X": F[order], "y": labels[order], "lam": np.array(float(lam))}
        draws = N if setting == "heterogeneous" else 1
        w0 = 2 * rng.standard_normal(d) / np.sqrt(d)
        X = np.empty((draws, n, d))
        y = np.empty((draws, n))
        for c in range(draws):
            u = rng.standard_normal(d) / np.sqrt(d)
            w = w0 + label_spread * rng.standard_normal(d) / np.sqrt(d)
            X[c] = shift * u + rng.standard_normal((n, d))
            y[c] = np.where(rng.uniform(size=n) < sigmoid(X[c] @ w), 1.0, -1.0)
        if draws == 1:
            X, y = np.repeat(X, N, axis=0), np.repeat(y, N, axis=0)
        return {"X": X, "y": y, "lam": np.array(float(lam))}

    @classmethod
    def from_arrays(cls, arrays, params=None, **geometry):
        return cls(arrays["X"], arrays["y"], float(arrays["lam"]), **geometry)

    @staticmethod
    def local_sizes_from(params):
        n = params.get("n") if params["source"] == "synthetic" else BREAST_CANCER_SIZE // params["n_agents"]
        return [int(n)] * int(params["n_agents"])

    def __init__(self, X, y, lam: float, retraction=None, transport=None):
        self.X = np.asarray(X, dtype=float)                      # (N, n, d)
        self.y = np.asarray(y, dtype=float)                      # (N, n)
        self.lam = float(lam)
        N, n, d = self.X.shape
        self.manifold = Euclidean(d, retraction=retraction, transport=transport)
        self.local_sizes = np.full(N, n)
        self.yX = self.y[..., None] * self.X                     # (N, n, d)
        self.theta_star = self.newton()

    # ---- per-sample closed forms --------------------------------------------------------
    def sample_gradients(self, theta: np.ndarray) -> np.ndarray:
        """grad l(theta; z_{c,i}) for every sample: ``(N, n, d)``."""
        m = self.yX @ theta
        return -sigmoid(-m)[..., None] * self.yX + self.lam * theta

    def local_hessians(self, theta: np.ndarray) -> np.ndarray:
        """hess f^c(theta): ``(N, d, d)``."""
        m = self.yX @ theta
        s = sigmoid(m) * sigmoid(-m)
        n, d = self.X.shape[1:]
        return np.einsum("cn,cni,cnj->cij", s, self.X, self.X) / n + self.lam * np.eye(d)

    def local_third(self, theta: np.ndarray) -> np.ndarray:
        """grad^3 f^c(theta): ``(N, d, d, d)``."""
        m = self.yX @ theta
        w = self.y * sigmoid(m) * sigmoid(-m) * (1 - 2 * sigmoid(m))
        return np.einsum("cn,cni,cnj,cnk->cijk", w, self.X, self.X, self.X) / self.X.shape[1]

    def hessian(self, theta: np.ndarray) -> np.ndarray:
        return np.einsum("c,cij->ij", self.weights, self.local_hessians(theta))

    def third(self, theta: np.ndarray) -> np.ndarray:
        """grad^3 f(theta) = sum_c p_c grad^3 f^c: ``(d, d, d)``."""
        return np.einsum("c,cijk->ijk", self.weights, self.local_third(theta))

    def gradient_covariances(self, theta: np.ndarray, B: int) -> np.ndarray:
        """C_c: covariance of a B-sample mini-batch gradient (without replacement) at theta:
        ``(N, d, d)``."""
        return without_replacement_covariance(self.sample_gradients(theta), B)

    def newton(self, max_iterations: int = 100) -> np.ndarray:
        """theta* by Newton's method from 0 with a backtracking (Armijo) line search on f, to
        ||grad f|| <= NEWTON_TOL (strictly convex: the minimiser is unique)."""
        theta = np.zeros(self.X.shape[2])
        for _ in range(max_iterations):
            g = self.egrad(theta)
            if np.linalg.norm(g) <= NEWTON_TOL:
                return theta
            step = np.linalg.solve(self.hessian(theta), g)
            t, f0 = 1.0, self.cost(theta)
            # Armijo on f while its decrease is resolved in floating point; below that (the
            # quadratic convergence region) the full Newton step
            if g @ step > 1e-12 * max(abs(f0), 1.0):
                while self.cost(theta - t * step) > f0 - 0.25 * t * (g @ step) and t > 1e-10:
                    t *= 0.5
            theta = theta - t * step
        if np.linalg.norm(self.egrad(theta)) > NEWTON_TOL:
            raise RuntimeError(f"Newton stopped at gradient norm {np.linalg.norm(self.egrad(theta)):.2e}")
        return theta

    # ---- federated ----------------------------------------------------------------------
    def minibatch_egrad(self, x, agents, batch):
        """(1/B) sum_i grad l(x_c; z_{c,i}) per row: x (s, d), batch (s, B) -> (s, d)."""
        agents = np.asarray(agents)
        if is_full_batch(batch, self.X.shape[1]):
            return self.local_egrad(x, agents)
        idx = np.asarray(batch)
        yX = self.yX[agents[:, None], idx]                               # (s, B, d)
        m = np.einsum("sbi,si->sb", yX, x)
        return -np.einsum("sb,sbi->si", sigmoid(-m), yX) / idx.shape[1] + self.lam * x

    def local_egrad(self, x, agents):
        yX = self.yX[np.asarray(agents)]
        m = np.einsum("sni,si->sn", yX, x)
        return -np.einsum("sn,sni->si", sigmoid(-m), yX) / yX.shape[1] + self.lam * x

    def local_cost(self, x, agents):
        yX = self.yX[np.asarray(agents)]
        m = np.einsum("sni,si->sn", yX, x)
        return _logaddexp0(-m).mean(axis=1) + 0.5 * self.lam * (x * x).sum(axis=1)

    # ---- global -------------------------------------------------------------------------
    def cost(self, x):
        m = self.yX @ x                                                    # (N, n)
        return float(self.weights @ _logaddexp0(-m).mean(axis=1) + 0.5 * self.lam * x @ x)

    def egrad(self, x):
        m = self.yX @ x
        per_client = -np.einsum("cn,cni->ci", sigmoid(-m), self.yX) / self.X.shape[1]
        return self.weights @ per_client + self.lam * x

    def closed_form_optimum(self):
        """theta* by Newton (``newton``): ||grad f(theta*)|| <= 1e-12."""
        return self.theta_star.copy()

    def distance_to_optimum(self, x, x_star):
        return float(np.linalg.norm(x - x_star))

    # ---- FedAvg's bias ------------------------------------------------------------------
    def fedavg_bias(self, eta: float, H: int, B: int) -> dict:
        """Predicted FedAvg bias (E1) + (E2) of ``rfl.problems.fedavg_bias`` at theta*, with
        mini-batches of B samples: {"heterogeneity", "noise", "total"} (lists)."""
        ts = self.theta_star
        m = self.yX @ ts
        grads = -np.einsum("cn,cni->ci", sigmoid(-m), self.yX) / self.X.shape[1] + self.lam * ts
        return predicted_bias(self.local_hessians(ts), grads, self.third(ts),
                              self.gradient_covariances(ts, B), self.weights, eta, H)

    def predictions(self, spec: dict) -> dict:
        """For a ``fedavg`` run with a fixed step and every client: ``fedavg_bias``."""
        alg, step = spec.get("algorithm") or {}, spec.get("step") or {}
        if (alg.get("name") != "fedavg" or alg.get("K") is None or step.get("rule") != "fixed"
                or alg.get("participation") not in (None, self.n_agents)
                or alg.get("batch_size") is None):
            return {}
        eta, H, B = float(step["alpha"]), int(alg["K"]), int(alg["batch_size"])
        return {"eta": eta, "H": H, "batch_size": B, "fedavg_bias": self.fedavg_bias(eta, H, B),
                "bias_formula": "first order (E1) + (E2), rfl/problems/fedavg_bias.py"}

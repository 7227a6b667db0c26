"""Hyperbolic structured prediction (HSP) on WordNet mammals, the authors' ``HSPHyper_WordNet``
(``ConstructRFLHSPProb_Hyper``) experiment of the newer version of the RFedAGS paper.

Predict the hyperbolic embedding of a held-out node from its features: agent j holds N nodes
with embeddings y_{j,i} in H^2 (Lorentz model) and weights alpha_{j,i} = alpha_i(w) from a
kernel between the test node's features w and its nodes' features (``rfl.data.wordnet``);

    f_j(x) = (1/N) sum_i alpha_{j,i} d^2(x, y_{j,i}),     F = (1/S) sum_j f_j,

a weighted Fréchet mean (the weights may be negative: kernel ridge regression). The prediction
is the minimiser; it is compared with the node's own embedding y_true (metric ``dist_true``).

Gradient: grad_x d^2(x, y) = -2 Log_x(y) (Hadamard manifold). As a Euclidean gradient of the
extension arccosh(-<x, y>_L)^2 it is -2 (d / sinh d) J y, J = diag(-1, 1, 1), whose Riemannian
conversion P_x(J .) gives -2 (d / sinh d) P_x(y) = -2 Log_x(y).
"""

from __future__ import annotations

import numpy as np

from rfl.data import wordnet
from rfl.data.wordnet import lam_min
from rfl.manifolds import Lorentz

from .base import COUNT, POSITIVE_SCALE, Problem, object_schema


def _d_over_sinh(c: np.ndarray) -> np.ndarray:
    """d / sinh(d) for c = cosh(d) >= 1 (1 - d^2/6 near d = 0)."""
    c = np.maximum(c, 1.0)
    s = np.sqrt(np.maximum(c * c - 1.0, 0.0))
    d = np.arccosh(c)
    small = d < 1e-6
    return np.where(small, 1.0 - d * d / 6.0, d / np.where(small, 1.0, s))


class HSP(Problem):
    """Y: (S, N, 3) training embeddings, alpha: (S, N) weights, y_true: (3,) the test node."""

    name = "hsp"
    manifold_class = Lorentz
    params_schema = object_schema(
        required={"S": COUNT},
        optional={"test_node": {"type": "integer", "minimum": 1, "maximum": wordnet.N_NODES,
                                "description": "held-out node, 1-based (100 = primate)"},
                  "sigma": POSITIVE_SCALE,
                  "lam": {"type": "number", "minimum": lam_min(1),
                          "description": "kernel ridge lam; at least N sqrt(eps) for N nodes "
                                         "per agent (check_params), so that alpha does not "
                                         "depend on rounding"}},
        description="WordNet mammals; defaults from HSPHyper_WordNet_Fixed.m")
    raw_inputs = ("wordnet_features", "wordnet_poincare")
    metrics = ("dist_true",)
    metric_labels = {"dist_true": "distance to the true embedding d(x, y_true)"}
    test_params = {"S": 9}
    DEFAULTS = {"test_node": 100, "sigma": 0.03, "lam": 1e-5}

    @classmethod
    def find_raw_inputs(cls):
        from rfl.data.sources import find_all_in_mirror
        return find_all_in_mirror(cls.raw_inputs, "the WordNet files")

    @classmethod
    def check_params(cls, params):
        n = wordnet.N_NODES - 1
        if params["S"] > n:
            return [("S", f"{params['S']} agents for {n} training nodes; allowed: S <= {n}")]
        N = n // params["S"]
        lam, bound = params.get("lam", cls.DEFAULTS["lam"]), lam_min(N)
        if lam < bound:
            return [("lam", f"{lam:g} leaves the kernel weights to rounding: with N = {N} nodes "
                            f"per agent K + lam I may have condition number up to 1 + N/lam = "
                            f"{1 + N / lam:.3g}; allowed: lam >= N sqrt(eps) / (1 - sqrt(eps)) "
                            f"= {bound:.4g}")]
        return []

    @classmethod
    def generate(cls, rng, features, poincare, **params):
        """``rfl.data.wordnet.generate`` (deterministic: ``rng`` is not used)."""
        p = {**cls.DEFAULTS, **params}
        return wordnet.generate(features, poincare, p["S"], p["test_node"], p["sigma"], p["lam"])

    @classmethod
    def from_arrays(cls, arrays, params=None, **geometry):
        return cls(arrays["Y"], arrays["alpha"], arrays["y_true"], **geometry)

    @staticmethod
    def local_sizes_from(params):
        N = (wordnet.N_NODES - 1) // params["S"]
        return [N] * params["S"]

    @classmethod
    def memory_bytes(cls, params):
        return (wordnet.N_NODES - 1) * 4 * 8

    def __init__(self, Y, alpha, y_true, retraction=None, transport=None):
        self.Y = np.asarray(Y, dtype=float)
        self.alpha = np.asarray(alpha, dtype=float)
        self.y_true = np.asarray(y_true, dtype=float)
        S, N, n = self.Y.shape
        self.manifold = Lorentz(n - 1, retraction=retraction, transport=transport)
        self.local_sizes = np.full(S, N)
        self._Yflat = self.Y.reshape(S * N, n)
        self._aflat = self.alpha.reshape(S * N) / (S * N)

    # ---- pieces ---------------------------------------------------------------------------
    @staticmethod
    def _cosh_d(x, Y):
        """cosh d(x_j, y_{j,b}) = -<x_j, y_{j,b}>_L: x (s, n), Y (s, B, n) -> (s, B)."""
        return np.maximum(Y[..., 0] * x[:, None, 0] - np.einsum("sbi,si->sb", Y[..., 1:], x[:, 1:]),
                          1.0)

    @staticmethod
    def _egrad_terms(x, Y, a):
        """(1/B) sum_b a_b (-2 d_b/sinh d_b) J y_b: x (s, n), Y (s, B, n), a (s, B) -> (s, n)."""
        w = -2.0 * a * _d_over_sinh(HSP._cosh_d(x, Y)) / Y.shape[1]
        g = np.einsum("sb,sbi->si", w, Y)
        g[:, 0] = -g[:, 0]
        return g

    def minibatch_egrad(self, x, agents, batch):
        agents = np.asarray(agents)
        return self._egrad_terms(np.asarray(x), self.Y[agents[:, None], batch],
                                 self.alpha[agents[:, None], batch])

    def local_egrad(self, x, agents):
        agents = np.asarray(agents)
        return self._egrad_terms(np.asarray(x), self.Y[agents], self.alpha[agents])

    def local_cost(self, x, agents):
        agents = np.asarray(agents)
        d = np.arccosh(self._cosh_d(np.asarray(x), self.Y[agents]))
        return (self.alpha[agents] * d * d).mean(axis=1)

    def cost(self, x):
        d = np.arccosh(self._cosh_d(x[None], self._Yflat[None])[0])
        return float(self._aflat @ (d * d))

    def egrad(self, x):
        w = -2.0 * self._aflat * _d_over_sinh(self._cosh_d(x[None], self._Yflat[None])[0])
        g = w @ self._Yflat
        g[0] = -g[0]
        return g

    def extra_metrics(self, x):
        return {"dist_true": float(self.manifold.dist(x[None], self.y_true[None])[0])}

    def reference_candidates(self):
        """The training node of largest weight: a starting point for RLBFGS near the minimiser
        (the weights concentrate on the test node's nearest neighbours in feature space)."""
        return [self._Yflat[np.argmax(self._aflat)].copy()]

"""CFMSPD: Fréchet (Karcher) mean of SPD matrices (paper Section 5.1).

f(X; Z) = ||logm(X^{-1/2} Z X^{-1/2})||_F^2 = dist(X, Z)^2 on S^d_{++} with the
affine-invariant metric; agent i holds Z_i: (N_i, d, d) and
f_i(X) = (1/N_i) sum_j f(X; Z_ij). The paper (Section 5.1) and the slides both
write the squared distance WITHOUT a factor 1/2 (consistent with the paper's
"2-geodesic strongly convex"), and so does this module.

Gradients. The Riemannian gradient of dist(X, Z)^2 is -2 Log_X(Z) with
Log_X(Z) = X^{1/2} logm(X^{-1/2} Z X^{-1/2}) X^{1/2}. The manifold maps a
Euclidean gradient G to X sym(G) X, so the (symmetric) Euclidean gradient is

    G = X^{-1} (-2 Log_X(Z)) X^{-1} = -2 X^{-1/2} logm(X^{-1/2} Z X^{-1/2}) X^{-1/2},

checked against central finite differences in tests/test_cfmspd.py. Over a
batch, X^{-1/2} is common to every sample, so the batch mean of the logm's is
taken before the outer products. Everything is batched over agents and samples
with ``eigh_sym`` (``np.linalg.eigh``, closed form for d = 2).

There is no closed-form Fréchet mean: ``closed_form_optimum`` returns None.
``frechet_mean_fixed_point`` gives the Karcher mean of a set of matrices by
the fixed-point iteration X <- Exp_X(mean_j Log_X(Z_j)), an independent check.
"""

from __future__ import annotations

import numpy as np

from rfl.data import cfmspd as data
from rfl.manifolds import SPD
from rfl.manifolds.spd import eigh_sym

from ._batching import batch_chunks
from .base import COUNT, POSITIVE, SampleArrayProblem, object_schema


def _t(a: np.ndarray) -> np.ndarray:
    return a.swapaxes(-1, -2)


def _sym(a: np.ndarray) -> np.ndarray:
    return 0.5 * (a + _t(a))


def _eigfun(v: np.ndarray, fw: np.ndarray) -> np.ndarray:
    """V diag(f(w)) V^T from an eigendecomposition (batched)."""
    return _sym((v * fw[..., None, :]) @ _t(v))


def _sqrt_isqrt(x: np.ndarray):
    """X^{1/2}, X^{-1/2} for SPD ``x: (..., d, d)``."""
    w, v = eigh_sym(x)
    return _eigfun(v, np.sqrt(w)), _eigfun(v, 1.0 / np.sqrt(w))


def _whitened_eigs(x: np.ndarray, z: np.ndarray):
    """X^{-1/2} and the eigendecomposition of M_b = X^{-1/2} Z_b X^{-1/2}.

    ``x: (s, d, d)``, ``z: (s, B, d, d)`` -> ``xih (s, d, d)``, ``w (s, B, d)``, ``v (s, B, d, d)``.
    """
    _, xih = _sqrt_isqrt(x)
    m = _sym(xih[:, None] @ z @ xih[:, None])
    w, v = eigh_sym(m)
    return xih, w, v


def _mean_log(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """mean_b logm(M_b): ``(s, B, d), (s, B, d, d) -> (s, d, d)``."""
    return _eigfun(v, np.log(w)).mean(axis=1)


def _egrad_of(xih: np.ndarray, w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """-2 X^{-1/2} [mean_b logm(M_b)] X^{-1/2} from ``_whitened_eigs``: ``(s, d, d)``."""
    return _sym(-2.0 * xih @ _mean_log(w, v) @ xih)


def _cost_of(w: np.ndarray) -> np.ndarray:
    """mean_b ||logm(M_b)||_F^2 from the eigenvalues of ``_whitened_eigs``: ``(s,)``."""
    return np.sum(np.log(w) ** 2, axis=-1).mean(axis=1)


def _egrad_from(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """-2 X^{-1/2} [mean_b logm(X^{-1/2} Z_b X^{-1/2})] X^{-1/2}: ``(s, d, d)``."""
    return _egrad_of(*_whitened_eigs(x, z))


def _cost_from(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """mean_b ||logm(X^{-1/2} Z_b X^{-1/2})||_F^2: ``(s,)``."""
    return _cost_of(_whitened_eigs(x, z)[1])


def frechet_mean_fixed_point(Z_all: np.ndarray, tol: float = 1e-12, max_iter: int = 1000,
                             x0: np.ndarray | None = None) -> np.ndarray:
    """Karcher mean argmin_X (1/M) sum_j dist(X, Z_j)^2 of ``Z_all: (..., d, d)`` (all leading
    axes pooled, equal weights).

    Riemannian gradient fixed point X <- Exp_X(mean_j Log_X(Z_j)), written in whitened form
    L = mean_j logm(X^{-1/2} Z_j X^{-1/2}), X <- X^{1/2} expm(L) X^{1/2}. Stops when
    ||mean_j Log_X(Z_j)||_X = ||L||_F < tol, i.e. when the Riemannian gradient of the
    pooled cost, -2 mean_j Log_X(Z_j), has norm below 2 tol. Starts from ``x0``
    (default: the log-Euclidean mean expm(mean_j logm Z_j)). Raises RuntimeError if
    ``max_iter`` iterations do not reach ``tol``.
    """
    Z = np.asarray(Z_all, dtype=float)
    d = Z.shape[-1]
    Z = Z.reshape(-1, d, d)
    if x0 is None:
        w, v = eigh_sym(Z)
        lw, lv = eigh_sym(_eigfun(v, np.log(w)).mean(axis=0))
        x = _eigfun(lv, np.exp(lw))
    else:
        x = _sym(np.asarray(x0, dtype=float))
    nrm = np.inf
    for _ in range(max_iter):
        xh, xih = _sqrt_isqrt(x)
        w, v = eigh_sym(_sym(xih @ Z @ xih))
        L = _eigfun(v, np.log(w)).mean(axis=0)
        nrm = float(np.linalg.norm(L))
        if nrm < tol:
            return x
        lw, lv = eigh_sym(L)
        x = _sym(xh @ _eigfun(lv, np.exp(lw)) @ xh)
    raise RuntimeError(f"Karcher fixed point did not reach tol={tol} in {max_iter} "
                       f"iterations (last ||mean Log||={nrm:.3e})")


class CFMSPD(SampleArrayProblem):
    """Z: (S, N, d, d) agents' SPD samples. The paper does not specify x_1: ``initial_point``
    is the default SPD.random_point, expm(sym(G)/2) with G standard normal (affine-invariant
    distance to I of order 1 for small d)."""

    name = "cfmspd"
    manifold_class = SPD
    params_schema = object_schema(
        required={"d": COUNT, "S": COUNT, "N": COUNT},
        optional={"D_W": POSITIVE})
    test_params = {"d": 2, "S": 3, "N": 4, "D_W": 1.0}

    @classmethod
    def generate(cls, rng, **params):
        """Wishart samples within D_W of I (``rfl.data.cfmspd.generate``): ``{"Z": (S, N, d, d)}``."""
        return data.generate(rng, **params)

    @classmethod
    def check_params(cls, params):
        """The rejection sampler must find S*N samples within its 10^7 Wishart draws (with a
        factor 10 to spare), judged from the acceptance rate of a fixed pilot."""
        D_W = params.get("D_W", 1.0)
        rate = data.acceptance_rate(params["d"], D_W)
        need = params["S"] * params["N"]
        if rate * 1e7 < 10 * need:
            return [("D_W", f"{D_W} with d = {params['d']}: the rejection sampler keeps about "
                            f"{rate:.1e} of its Wishart draws, too few for S*N = {need} samples "
                            f"within 10^7 draws; allowed: a larger D_W or a smaller d")]
        return []

    @classmethod
    def memory_bytes(cls, params):
        """Z: S*N*d*d float64."""
        return params["S"] * params["N"] * params["d"] ** 2 * 8

    def __init__(self, Z: np.ndarray, retraction: str | None = None, transport: str | None = None):
        self.Z = np.asarray(Z)                 # used only against float64 points: any real dtype
        if self.Z.ndim != 4 or self.Z.shape[2] != self.Z.shape[3]:
            raise ValueError(f"Z must have shape (S, N, d, d), got {self.Z.shape}")
        S, N, d, _ = self.Z.shape
        self.d = d
        self.manifold = SPD(d, retraction=retraction, transport=transport)
        self.local_sizes = np.full(S, N)

    def minibatch_egrad(self, x, agents, batch):
        """-2 X^{-1/2} [mean_{b} logm(X^{-1/2} Z_b X^{-1/2})] X^{-1/2}: x (s, d, d), batch (s, B).

        The selected samples are gathered in chunks of agents (``rfl.problems._batching``; one
        eigendecomposition per sample, so never all N samples), which bounds the temporaries
        of the batched ``eigh`` by the chunk size."""
        x = np.asarray(x, dtype=float)
        out = np.empty(x.shape)
        for i, j, rows in batch_chunks(self.Z, np.asarray(agents), np.asarray(batch)):
            out[i:j] = _egrad_from(x[i:j], rows)
        return out

    def local_egrad(self, x, agents):
        x = np.asarray(x, dtype=float)
        out = np.empty(x.shape)
        for i, j, rows in batch_chunks(self.Z, np.asarray(agents), None):
            out[i:j] = _egrad_from(x[i:j], rows)
        return out

    def local_cost(self, x, agents):
        x = np.asarray(x, dtype=float)
        out = np.empty(x.shape[0])
        for i, j, rows in batch_chunks(self.Z, np.asarray(agents), None):
            out[i:j] = _cost_from(x[i:j], rows)
        return out

    def _all_agents(self, x):
        S = self.n_agents
        return np.broadcast_to(x, (S,) + x.shape), np.arange(S)

    def _global(self, x) -> tuple[np.ndarray, np.ndarray]:
        """Every agent's f_i and Euclidean gradient at one point X from one eigendecomposition
        per sample (``local_cost`` and ``local_egrad`` at X, the same numbers): ``(S,)`` and
        ``(S, d, d)``. The last point's pair is kept: a run records the cost and the gradient
        norm of every iterate, one pass over the samples instead of two (``_at_last_point``)."""
        def one_pass(x):
            xs, agents = self._all_agents(x)
            cost, egrad = np.empty(len(agents)), np.empty(xs.shape)
            for i, j, rows in batch_chunks(self.Z, agents, None):
                xih, w, v = _whitened_eigs(xs[i:j], rows)
                cost[i:j], egrad[i:j] = _cost_of(w), _egrad_of(xih, w, v)
            return cost, egrad

        return self._at_last_point(x, one_pass)

    def cost(self, x):
        return float(self.weights @ self._global(x)[0])

    def egrad(self, x):
        return np.einsum("s,sij->ij", self.weights, self._global(x)[1])

    def closed_form_optimum(self):
        """None: the Fréchet mean has no closed form (a Riemannian solver provides x*)."""
        return None

    def frechet_mean(self, tol: float = 1e-12) -> np.ndarray:
        """Karcher mean of all samples (= argmin F, equal local sizes) by the fixed point."""
        return frechet_mean_fixed_point(self.Z, tol=tol)

    def distance_to_optimum(self, x, x_star):
        """Affine-invariant distance ||logm(X*^{-1/2} X X*^{-1/2})||_F (the minimiser is unique)."""
        return float(self.manifold.dist(x_star[None], x[None])[0])

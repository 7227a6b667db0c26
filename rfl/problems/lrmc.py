"""Low-rank matrix completion on the Grassmann manifold (the RFedAGS authors' ``LRMCGrass_Syn``
study, cost of their ``ConstructRFLLRMCProb_Grass_``, with their lambda = 0).

Agent j holds N columns x_c of an m x n matrix, each observed on a set Omega_c of rows. A
subspace span(U), U in St(r, m), is scored by each column's best fit on its observed entries:

    h_c(U) = min_w 0.5 ||P_{Omega_c}(U w - x_c)||^2 = 0.5 ||U_c w_c(U) - y_c||^2,
    w_c(U) = (U_c^T U_c)^{-1} U_c^T y_c,

U_c = the rows Omega_c of U (|Omega_c| x r), y_c = x_c on Omega_c. The local risk is
f_j(U) = (1/N) sum_{c of agent j} h_c(U) and F(U) = sum_j p_j f_j(U) (equal N: the mean over
all columns, as the authors' cost). h_c(U G) = h_c(U) for every invertible G (w -> G^{-1} w),
so F is a function on Gr(r, m).

Gradient (envelope theorem: the derivative in w of the inner objective vanishes at w_c(U)):

    grad h_c(U) = P_{Omega_c}(U w_c - x_c) w_c^T     (m x r; rows outside Omega_c are 0),

the authors' ``singlegrad`` at lambda = 0. Since h_c is GL(r)-invariant, U^T grad h_c = 0,
so this is already horizontal and equals its Grassmann gradient. The synthetic script uses
lambda = 0; their MovieLens script lambda = 1e-2, a penalty on the completion's unobserved
entries (``lam``; ``LowRankMatrixCompletionMovieLens`` below).

Storage (``rfl.data.lrmc``): per column the observed rows and values padded to D slots
(padding: row 0, value 0; ``count`` says how many are real). A compiled loop (``_kernel``)
reads each selected column's entries where they lie, solves its r x r normal equations and
scatter-adds res w^T into the observed rows: O(B |Omega_c| r^2) per agent and step, with
|Omega_c| about OS r (m + n) / n entries per column.

Metrics (``extra_metrics``), for every iterate:

- ``rel_error``: ||U W^T - M||_F / ||M||_F, W the coefficients fitted on the training
  entries, M = A B^T the noise-free ground truth (the authors' Figure "Relative Errors");
- ``test_rmse``: held-out protocol: w_c fitted on column c's training entries, the squared
  errors of U w_c on its test entries pooled over all columns, sqrt(mean);
- ``test_rmse_refit``: the authors' ``RMSE(U, D_test)``: w_c refitted on column c's test
  entries, scored on the same entries (it measures how well span(U) contains the test
  columns' restrictions, not a prediction of unseen entries). A column with fewer than r test
  entries is refitted by the minimum-norm least-squares solution (its residual is 0).
"""

from __future__ import annotations

import functools

import numpy as np

from rfl.data import lrmc as data
from rfl.manifolds import Grassmann

from .base import COUNT, SCALE, SOURCE, Problem, object_schema


def _gather(x: np.ndarray, rows: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """U_c for each selected column: x (s, m, r), rows/valid (s, T, D) -> (s, T, D, r), padded
    slots zero."""
    s = x.shape[0]
    uc = x[np.arange(s)[:, None, None], rows]                          # (s, T, D, r)
    uc *= valid[..., None]
    return uc


def _fit(uc: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """w = (U_c^T U_c)^+ U_c^T y, the minimum-norm least-squares fit (a column may have fewer
    than r entries), and the residual U_c w - y (padded slots: 0 - 0).
    uc (s, T, D, r) (``_gather``), y (s, T, D) -> w (s, T, r), res (s, T, D)."""
    uct = uc.transpose(0, 1, 3, 2)
    gram = uct @ uc                                                    # (s, T, r, r)
    rhs = uct @ y[..., None]
    # hermitian=True: pinv by eigh instead of an SVD of the symmetric gram, the same matrix
    w = np.linalg.pinv(gram, hermitian=True) @ rhs  # pragma: no mutate
    return w[..., 0], (uc @ w)[..., 0] - y


@functools.cache
def _kernel():
    """The compiled per-column pass (numba, imported on first use; cached on disk like
    ``rfl.problems._kernels``): for each row i and each selected column c of agent agents[i],
    w_c from the r x r normal equations (Cholesky), h_c = 0.5 ||U_c w_c - y_c||^2, and with
    ``grad`` the scatter-add of (U_c w_c - y_c) w_c^T into the observed rows of g[i]. numpy
    spends ~10 us per column on the small products; this loop about 0.3 us."""
    from ._kernels import numba       # imported there after numba's cache directory is set

    @numba.njit(cache=True, nogil=True, boundscheck=False)
    def columns(x, rows, vals, count, agents, cols, grad, lam, utu, w_out, h_out, g_out, ww_out):
        s, T = cols.shape
        r = x.shape[2]
        gram = np.empty((r, r))
        z = np.empty(r)
        for i in range(s):
            a = agents[i]
            if grad:
                g_out[i, :, :] = 0.0
                ww_out[i, :, :] = 0.0
            for t in range(T):
                c = cols[i, t]
                n = count[a, c]
                gram[:, :] = 0.0
                z[:] = 0.0
                for d in range(n):
                    row = rows[a, c, d]
                    v = vals[a, c, d]
                    for k in range(r):
                        uk = x[i, row, k]
                        z[k] += uk * v
                        for l in range(k + 1):
                            gram[k, l] += uk * x[i, row, l]
                if lam != 0.0:           # (1 - lam) U_c^T U_c + lam U^T U
                    for k in range(r):
                        for l in range(k + 1):
                            gram[k, l] = (1.0 - lam) * gram[k, l] + lam * utu[i, k, l]
                # Cholesky gram = L L^T in the lower triangle, then L L^T w = z
                for k in range(r):
                    acc = gram[k, k]
                    for l in range(k):
                        acc -= gram[k, l] * gram[k, l]
                    gram[k, k] = np.sqrt(acc)
                    for j in range(k + 1, r):
                        acc = gram[j, k]
                        for l in range(k):
                            acc -= gram[j, l] * gram[k, l]
                        gram[j, k] = acc / gram[k, k]
                for k in range(r):
                    acc = z[k]
                    for l in range(k):
                        acc -= gram[k, l] * z[l]
                    z[k] = acc / gram[k, k]
                for k in range(r - 1, -1, -1):
                    acc = z[k]
                    for l in range(k + 1, r):
                        acc -= gram[l, k] * z[l]
                    z[k] = acc / gram[k, k]
                h = 0.0
                inside = 0.0
                for d in range(n):
                    row = rows[a, c, d]
                    pred = 0.0
                    for k in range(r):
                        pred += x[i, row, k] * z[k]
                    res = pred - vals[a, c, d]
                    h += res * res
                    inside += pred * pred
                    if grad:
                        for k in range(r):
                            g_out[i, row, k] += (res - lam * pred) * z[k]
                if lam != 0.0:           # + lam ||P_Omega^c(U w)||^2 = lam (w^T U^T U w - ||U_c w||^2)
                    wuw = 0.0
                    for k in range(r):
                        for l in range(r):
                            wuw += z[k] * utu[i, k, l] * z[l]
                    h += lam * (wuw - inside)
                    if grad:
                        for k in range(r):
                            for l in range(r):
                                ww_out[i, k, l] += z[k] * z[l]
                h_out[i, t] = 0.5 * h
                for k in range(r):
                    w_out[i, t, k] = z[k]

    return columns


@functools.cache
def _residual_kernel():
    """The compiled sum of squared residuals sum_c ||U_c w_c - y_c||^2 for given coefficients
    w (s, N, r) on the entries rows/vals/count (s, N, D): the held-out test error."""
    from ._kernels import numba       # imported there after numba's cache directory is set

    @numba.njit(cache=True, nogil=True, boundscheck=False)
    def residual(x, rows, vals, count, w):
        s, N = count.shape
        r = x.shape[2]
        total = 0.0
        for i in range(s):
            for c in range(N):
                for d in range(count[i, c]):
                    row = rows[i, c, d]
                    res = -vals[i, c, d]
                    for k in range(r):
                        res += x[i, row, k] * w[i, c, k]
                    total += res * res
        return total

    return residual


class LowRankMatrixCompletion(Problem):
    """Matrix completion on Gr(r, m): rows/vals (S, N, D) observed entries per column."""

    name = "lrmc"
    manifold_class = Grassmann
    metrics = ("rel_error", "test_rmse", "test_rmse_refit")
    metric_labels = {"rel_error": r"$\|U W^\top - M\|_F / \|M\|_F$",
                     "test_rmse": "test RMSE (w fitted on training entries)",
                     "test_rmse_refit": "test RMSE (w refitted on test entries)"}
    params_schema = object_schema(
        required={"m": {"type": "integer", "minimum": 2}, "n": COUNT, "r": COUNT, "S": COUNT},
        optional={"OS": {"type": "number", "exclusiveMinimum": 0},
                  "noise": SCALE,
                  "test_fraction": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}},
        description="m x n rank-r matrix, n columns dealt to S agents; OS: training entries "
                    "per degree of freedom r (m + n - r); test_fraction: test entries / (m n)")
    test_params = {"m": 12, "n": 24, "r": 2, "S": 3, "OS": 2.0, "noise": 0.1, "test_fraction": 0.2}

    @classmethod
    def generate(cls, rng, m, n, r, S, OS=6.0, noise=1e-6, test_fraction=0.1):
        """``rfl.data.lrmc.generate``."""
        return data.generate(rng, m=m, n=n, r=r, S=S, OS=OS, noise=noise, test_fraction=test_fraction)

    @classmethod
    def check_params(cls, params):
        """r < m, n a multiple of S, and the training and test budgets fit in the m n entries
        with at least r training entries per column."""
        m, n, r, S = params["m"], params["n"], params["r"], params["S"]
        out = []
        if r >= m:
            out.append(("r", f"{r} is not below m = {m}; allowed: 1..{m - 1}"))
        if n % S:
            out.append(("n", f"{n} columns are not a multiple of S = {S} agents; allowed: n = k S"))
        if out:                      # the budgets below assume r < m
            return out
        OS, test_fraction = params.get("OS", 6.0), params.get("test_fraction", 0.1)
        dof = data.degrees_of_freedom(m, n, r)
        if OS > m * n / dof:         # compared before OS dof is rounded to an int (it may be inf)
            return [("OS", f"{OS} r (m + n - r) training entries exceed the m n = {m * n} entries; "
                           f"allowed: OS <= {m * n / dof:.4g}")]
        k_train = data.n_train(m, n, r, OS)
        k_test = data.n_test(m, n, test_fraction)
        if k_test < 1:
            out.append(("test_fraction", f"{test_fraction} of the m n = {m * n} entries rounds to "
                                         f"no test entry, and the test metrics (test_rmse, "
                                         f"test_rmse_refit) need one; allowed: test_fraction >= "
                                         f"{1 / (m * n):.4g}"))
        if k_train < r * n:
            out.append(("OS", f"{k_train} training entries are fewer than r n = {r * n} (r per "
                              f"column); allowed: OS >= {r * n / data.degrees_of_freedom(m, n, r):.4g}"))
        elif k_train + k_test > m * n:
            out.append(("test_fraction", f"{k_train} training + {k_test} test entries exceed the "
                                         f"m n = {m * n} entries; lower OS or test_fraction"))
        return out

    @classmethod
    def memory_bytes(cls, params):
        """At most m entries per column, training and test: 4 arrays of n m 8-byte values,
        and the m x n ground truth used by the generator (twice)."""
        return 6 * params["n"] * params["m"] * 8

    @classmethod
    def from_arrays(cls, arrays, params=None, **geometry):
        return cls(arrays["rows"], arrays["vals"], arrays["count"], arrays["A"], arrays["B"],
                   arrays.get("test_rows"), arrays.get("test_vals"), arrays.get("test_count"),
                   lam=float(arrays.get("lam", 0.0)), **geometry)

    @staticmethod
    def local_sizes_from(params: dict):
        """(S,) local sizes: n / S columns per agent."""
        return [int(params["n"]) // int(params["S"])] * int(params["S"])

    def __init__(self, rows, vals, count, A=None, B=None, test_rows=None, test_vals=None,
                 test_count=None, retraction: str | None = None, transport: str | None = None,
                 lam: float = 0.0, m: int | None = None, r: int | None = None):
        """A, B: the ground truth's factors (None: no ground truth, then ``m`` and ``r`` say
        the size and ``rel_error`` is NaN); lam: the authors' lambda (penalty on the
        completion's unobserved entries)."""
        self.rows = np.asarray(rows, dtype=np.int64)
        self.vals = np.asarray(vals, dtype=float)
        self.count = np.asarray(count, dtype=np.int64)
        self.lam = float(lam)
        if not 0.0 <= self.lam < 1.0:
            raise ValueError(f"lam = {lam}; allowed: 0 <= lam < 1")
        S, N, D = self.rows.shape
        if A is None:
            m, r = int(m), int(r)
            A, B = np.full((m, r), np.nan), np.full((S, N, r), np.nan)
        self.A, self.B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
        m, r = self.A.shape
        if self.vals.shape != (S, N, D) or self.count.shape != (S, N) or self.B.shape != (S, N, r):
            raise ValueError(f"expected rows, vals (S, N, D), count (S, N), B (S, N, r); got "
                             f"{self.rows.shape}, {self.vals.shape}, {self.count.shape}, {self.B.shape}")
        least = 0 if self.lam else r         # lam > 0: the normal equations are definite
        if self.count.min() < least or self.count.max() > D:
            raise ValueError(f"every column needs {'r = ' if least else ''}{least} to D = {D} observed entries (lambda = "
                             f"{self.lam:g}); counts range over [{self.count.min()}, {self.count.max()}]")
        if self.rows.min() < 0 or self.rows.max() >= m:
            raise ValueError(f"observed rows must lie in [0, {m}), got [{self.rows.min()}, {self.rows.max()}]")
        self.m, self.r = m, r
        self.manifold = Grassmann(m, r, retraction=retraction, transport=transport)
        self.local_sizes = np.full(S, N)
        self.has_truth = bool(np.all(np.isfinite(self.A)))
        self.U_star, self.M_norm = None, float("nan")
        if self.has_truth:
            self.U_star, ra = np.linalg.qr(self.A)
            self.M_norm = float(np.linalg.norm(self.B.reshape(S * N, r) @ ra.T))    # ||A B^T||_F
        self.test = None
        if test_rows is not None:
            t_rows = np.asarray(test_rows, dtype=np.int64)
            t_count = np.asarray(test_count, dtype=np.int64)
            if (t_rows.shape[:2] != (S, N) or t_count.shape != (S, N) or t_count.max() > t_rows.shape[2]
                    or t_rows.min() < 0 or t_rows.max() >= m):
                raise ValueError(f"test entries: expected rows (S, N, D_test) in [0, {m}) and counts "
                                 f"(S, N) <= D_test, got {t_rows.shape}, {t_count.shape}")
            self.test = (t_rows, np.asarray(test_vals, dtype=float), t_count,
                         np.arange(t_rows.shape[2])[None, None, :] < t_count[..., None])

    # ---- per column ------------------------------------------------------
    def _columns(self, x, agents, cols=None, grad=False, data=None):
        """w (s, T, r), h (s, T) and, with ``grad``, (1/T) sum_c P_Omega(U w_c - x_c) w_c^T
        (s, m, r) for columns ``cols`` (s, T) of each agent (None: all N); ``_kernel``.
        ``data``: (rows, vals, count) of other entries (the test set), default the training."""
        x = np.ascontiguousarray(x, dtype=float)
        agents = np.ascontiguousarray(agents, dtype=np.intp)
        s = agents.shape[0]
        if x.shape != (s, self.m, self.r):
            raise ValueError(f"x must have shape ({s}, {self.m}, {self.r}), got {x.shape}")
        if s and (agents.min() < 0 or agents.max() >= self.n_agents):
            raise IndexError(f"agent indices must lie in [0, {self.n_agents})")
        N = self.local_sizes[0]
        if cols is None:
            cols = np.broadcast_to(np.arange(N, dtype=np.intp), (s, N))
        cols = np.ascontiguousarray(cols, dtype=np.intp)
        if cols.size and (cols.min() < 0 or cols.max() >= N):
            raise IndexError(f"column indices must lie in [0, {N})")
        T = cols.shape[1]
        w, h = np.empty((s, T, self.r)), np.empty((s, T))
        g = np.empty((s, self.m, self.r) if grad else (0, 0, 0))
        ww = np.empty((s, self.r, self.r) if grad else (0, 0, 0))
        utu = (np.swapaxes(x, 1, 2) @ x if self.lam else np.zeros((s, self.r, self.r)))
        rows, vals, count = (self.rows, self.vals, self.count) if data is None else data
        _kernel()(x, rows, vals, count, agents, cols, grad, self.lam, utu, w, h, g, ww)
        out = {"w": w, "h": h}
        if grad:
            if self.lam:             # lam P_Omega^c(U w) w^T = lam (U w w^T - P_Omega(U w) w^T)
                g += self.lam * (x @ ww)
            out["grad"] = g / T
        return out

    # ---- federated (batched over agents) ----------------------------------
    def minibatch_egrad(self, x, agents, batch):
        """(1/B) sum_{c in batch_j} P_Omega_c(U_j w_c - x_c) w_c^T: x (s, m, r), agents (s,),
        batch (s, B) column indices -> (s, m, r)."""
        return self._columns(x, agents, np.asarray(batch), grad=True)["grad"]

    def local_egrad(self, x, agents):
        return self._columns(x, agents, grad=True)["grad"]

    def local_cost(self, x, agents):
        return self._columns(x, agents)["h"].mean(axis=1)

    # ---- global (one point U: (m, r)) -------------------------------------
    def _global(self, x):
        """Cost, gradient and coefficients at one U over all columns (the last point's result is
        kept: a run records cost, gradient norm and metrics of the same iterate; ``_at_last_point``)."""
        S = self.n_agents
        return self._at_last_point(
            x, lambda x: self._columns(np.broadcast_to(x, (S,) + x.shape).copy(), np.arange(S), grad=True))

    def cost(self, x):
        """F(U) = sum_j p_j (1/N) sum_c h_c(U)."""
        return float(self.weights @ self._global(x)["h"].mean(axis=1))

    def egrad(self, x):
        return np.tensordot(self.weights, self._global(x)["grad"], axes=1)

    # ---- completion and metrics --------------------------------------------
    def coefficients(self, x):
        """w_c(U) of every column fitted on its training entries: (S, N, r)."""
        return self._global(x)["w"].copy()

    def rel_error(self, x):
        """||U W^T - A B^T||_F / ||A B^T||_F (W from the training entries), without forming the
        m x n matrices: with the QR factorisation [U, A] = Q [R_U, R_A] (Q: m x 2r orthonormal,
        exact whatever the rank of [U, A]), U W^T - A B^T = Q (R_U W^T - R_A B^T), whose norm is
        that of the 2r x n matrix in brackets (no cancellation between the two terms)."""
        if not self.has_truth:
            return float("nan")
        w = self._global(x)["w"].reshape(-1, self.r)
        _, rr = np.linalg.qr(np.concatenate([np.asarray(x, dtype=float), self.A], axis=1))
        diff = rr[:, :self.r] @ w.T - rr[:, self.r:] @ self.B.reshape(-1, self.r).T
        return float(np.linalg.norm(diff) / self.M_norm)

    def test_rmse(self, x, refit=False):
        """Pooled RMSE on the test entries: w from the training entries, or (``refit``)
        refitted on each column's test entries (module docstring)."""
        if self.test is None:
            return float("nan")
        rows, y, count, valid = self.test
        S = self.n_agents
        xs = np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=float), (S, self.m, self.r)))
        if not refit:
            sq = _residual_kernel()(xs, rows, y, count, self._global(x)["w"])
        elif count.min() >= self.r or self.lam:
            w = self._columns(xs, np.arange(S), data=(rows, y, count))["w"]
            sq = _residual_kernel()(xs, rows, y, count, w)      # h holds lam's penalty too
        else:
            sq = float(np.sum(_fit(_gather(xs, rows, valid), y)[1] ** 2))
        return float(np.sqrt(sq / count.sum()))

    def extra_metrics(self, x):
        return {"rel_error": self.rel_error(x), "test_rmse": self.test_rmse(x),
                "test_rmse_refit": self.test_rmse(x, refit=True)}

    def reference_candidates(self):
        """span(A), the planted column space (optimal up to the noise), as a start for RLBFGS."""
        return [] if self.U_star is None else [self.U_star.copy()]


class LowRankMatrixCompletionMovieLens(LowRankMatrixCompletion):
    """Matrix completion of MovieLens-1M on Gr(r, 3952) (the authors' ``LRMCGrass_MovieLens``):
    one column per user, z-scored ratings, a per-user 80/20 split (``rfl.data.movielens``) and
    their lambda > 0: w_c = argmin 0.5 ||U_c w - y_c||^2 + 0.5 lam ||P_Omega^c(U w)||^2, from
    ((1 - lam) U_c^T U_c + lam U^T U) w = U_c^T y_c, the cost the same expression at w_c and its
    gradient (envelope theorem) P_Omega(U w - x) w^T + lam P_Omega^c(U w) w^T, horizontal since
    the cost is GL(r)-invariant. No ground truth: the metrics are the two test RMSEs."""

    name = "lrmc_movielens"
    raw_inputs = ("movielens_ratings",)
    metrics = ("test_rmse", "test_rmse_refit")
    metric_labels = {"test_rmse": "test RMSE (w fitted on the user's training ratings)",
                     "test_rmse_refit": "test RMSE (w refitted on the test ratings; the authors')"}
    params_schema = object_schema(
        required={"r": COUNT, "S": COUNT},
        optional={"lam": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
                  "train_fraction": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                  "source": SOURCE},
        description="MovieLens-1M ratings.dat: 6040 users (columns) dealt to S agents, 3952 movies "
                    "(rows); lam: the authors' lambda (1e-2); train_fraction: per user (0.8); "
                    "source generated: 20 to 30 random ratings per user")
    test_params = {"r": 6, "S": 40, "lam": 1e-2}

    @classmethod
    def find_raw_inputs(cls):
        from rfl.data.sources import find_all_in_mirror
        return find_all_in_mirror(cls.raw_inputs, "MovieLens-1M")

    @classmethod
    def check_params(cls, params):
        from rfl.data.movielens import N_MOVIES, N_USERS
        out = []
        if N_USERS % params["S"]:
            out.append(("S", f"{N_USERS} users are not a multiple of S = {params['S']}; allowed: "
                             f"a divisor of {N_USERS} (40: 151 users per agent)"))
        if params["r"] >= N_MOVIES:
            out.append(("r", f"{params['r']} is not below m = {N_MOVIES}"))
        return out

    @classmethod
    def memory_bytes(cls, params):
        """Training and test rows and values padded to the most ratings of a user (2314)."""
        return 4 * 6040 * 2314 * 8

    @staticmethod
    def local_sizes_from(params: dict):
        from rfl.data.movielens import N_USERS
        return [N_USERS // int(params["S"])] * int(params["S"])

    @classmethod
    def generate(cls, rng, *ratings, r, S, lam=1e-2, train_fraction=0.8, source="pinned"):
        """``rfl.data.movielens.generate`` on the verified ratings file, with r. ``source``
        "generated": no input; a ratings.dat of 20 to 30 random ratings by each of the 6040 users
        of the 3952 movies (``rfl.data.generated``, seeded by ``rng``) written to a temporary
        folder and read as the pinned one but its checksum."""
        from rfl.data.movielens import N_MOVIES, N_USERS, generate, read_ratings
        from rfl.data.sources import verified
        if source == "generated":
            import tempfile
            from pathlib import Path

            from rfl.data import generated
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "ratings.dat"
                generated.write_movielens_ratings(path, N_USERS, N_MOVIES, generated.seed_from(rng),
                                                  per_user=(20, 30))
                table = read_ratings(path)
            out = generate(rng, table, S, lam, train_fraction)
            out["fixture"] = np.array(path.name)
        else:
            out = generate(rng, read_ratings(verified("movielens_ratings", *ratings)), S, lam,
                           train_fraction)
        out["r"] = np.array(r)
        return out

    @classmethod
    def from_arrays(cls, arrays, params=None, **geometry):
        from rfl.data.generated import notes
        problem = cls(arrays["rows"], arrays["vals"], arrays["count"], None, None,
                      arrays["test_rows"], arrays["test_vals"], arrays["test_count"],
                      lam=float(arrays["lam"]), m=int(arrays["m"]), r=int(arrays["r"]), **geometry)
        problem.data = notes(arrays)
        return problem

    def data_notes(self) -> dict:
        """Whether the ratings are a generated fixture (run metadata ``data``)."""
        return dict(getattr(self, "data", {}))

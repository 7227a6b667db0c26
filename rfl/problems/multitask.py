"""Low-dimensional multitask feature learning on the Grassmann manifold (paper
Section 5.2, problem (5.3), after [MKJS19] Section 3.2).

Agent i holds N regression tasks (X_ij, y_ij), X_ij: (d_ij, m), y_ij: (d_ij,).
All tasks share an r-dimensional feature subspace span(U), U in St(r, m); task
ij fits its own coefficients w in R^r on the features X_ij U:

    w_ij(U) = argmin_w 0.5 ||X_ij U w - y_ij||^2 + lambda ||w||^2
            = (U^T G_ij U + 2 lambda I_r)^{-1} U^T c_ij,
    G_ij = X_ij^T X_ij (m x m),  c_ij = X_ij^T y_ij (m,)

(normal equations: U^T X^T (X U w - y) + 2 lambda w = 0, hence the factor 2).

The objective we differentiate (and call ``cost``)
---------------------------------------------------
The value function of the inner problem,

    h_ij(U) = min_w [0.5 ||X_ij U w - y_ij||^2 + lambda ||w||^2]
            = 0.5 ||X_ij U w_ij(U) - y_ij||^2 + lambda ||w_ij(U)||^2,

    F(U) = sum_i p_i f_i(U),  f_i(U) = (1/N) sum_j h_ij(U),  p_i = 1/S,

the value function, not a fixed-w surrogate. By the envelope theorem (the partial
derivative in w of the inner objective vanishes at w = w_ij(U)) its Euclidean
gradient in R^{m x r} is exactly

    grad h_ij(U) = X_ij^T (X_ij U w - y_ij) w^T = (G_ij U w - c_ij) w^T,  w = w_ij(U),

with no derivative of w_ij(U) needed. Reasons for (a): it is the formulation
of [MKJS19] (min over U of the sum of the tasks' regularised least-squares
minima), its gradient is exact and cheap, and h_ij(U Q) = h_ij(U) for every
orthogonal Q (substitute v = Q w, ||v|| = ||w||), so F is a function on
Gr(r, m). For lambda = 0 (the paper's synthetic case) h_ij is exactly the
paper's (5.3) term 0.5 ||X_ij U w_ijU - y_ij||^2.

For lambda > 0 the paper's (5.3), 0.5 ||X U w_ij(U) - y||^2 evaluated at the
*regularised* w, is not the value function (it omits lambda ||w||^2), so the
envelope argument does not give its gradient; it is available as
``data_fit(U)`` (value only, for reporting) and differs from ``cost`` by
lambda * mean ||w_ij(U)||^2. The algorithms only need a cost and a gradient
that agree: ``cost``/``local_cost`` and the ``*_egrad`` methods all refer to h.
For School (lambda = 1e-3) the difference is small; the reported metric there
is the test NMSE anyway.

Riemannian structure: the Euclidean gradient E of the O(r)-invariant extension
satisfies U^T E = -2 lambda W (symmetric, W = mean of w w^T; 0 for lambda = 0),
so the Grassmann gradient is the horizontal projection (I - U U^T) E
(``Grassmann.euclidean_to_riemannian_gradient``), and E(U Q) = E(U) Q.

Storage and cost. Tasks are padded to a common row count D: X (S, N, D, m),
y (S, N, D), sizes d (S, N); padded rows must be exactly zero in X and y
(checked at construction, ``ValueError`` otherwise), so they add nothing to
G_ij, c_ij or any residual. Two ways to compute the same mini-batch gradient
(``gradient=`` at construction):

- ``"gram"``: G (S, N, m, m) and c (S, N, m) are computed once; a mini-batch
  gradient of B tasks per agent gathers B Gram matrices and costs
  O(B (m^2 r + r^3)) flops per agent, independent of the d_ij. Memory for G is
  S N m^2 * 8 bytes: 80 MB for the paper's synthetic case (S=20, N=50,
  m=100), 0.9 MB for School (S=6, N=23, m=28).
- ``"rows"``: X^T (X U w - y) w^T from the valid rows, O(B (d_ij m r + r^3))
  flops per agent, no extra memory (``_task_pass``: a compiled pass per task,
  ``_kernels.task_pass``, reads the task's d_ij valid rows where they lie, never the
  padding; at S = 1000, B = 25, r = 5: 77 ms per mini-batch gradient, against 157 ms
  for numpy gathering the selected tasks' padded rows and doing one GEMM per
  agent).
- ``"auto"`` (default): ``"rows"`` when D < m, else ``"gram"``. The Gram path
  wins when tasks have more rows than features (School: D = max training
  school size >> m = 28); for the paper's synthetic case (D = 50 < m = 100)
  gathering 25 Gram matrices of 100 x 100 per agent moves twice the memory of
  the rows, and measured 12 ms against 5 ms per mini-batch gradient (S=20,
  B=25, r=5), so ``auto`` takes the rows there.

The raw X is always kept (S N D m * 8 bytes, 40 MB synthetic) because the
cost is evaluated from the rows. ``cost``, ``egrad``, ``data_fit`` and
``coefficients`` at one point U share one pass over all rows (``_global``
keeps the last point's result; a run records cost and gradient norm of every
iterate).

Accuracy. ``cost`` and ``data_fit`` are computed from the residual rows
X U w - y, not from the Gram form 0.5 (w^T U^T G U w - 2 c^T U w + y^T y),
which cancels catastrophically near a zero-residual optimum (absolute error
~eps ||y||^2 instead of ~eps^2 ||y||^2). w itself comes from the r x r normal
equations; an error delta in w changes h only at second order (w minimises
the inner objective).

Mini-batches: the "samples" of agent i are its N tasks; ``batch`` indexes
tasks, and the mini-batch gradient is the mean over the B tasks.

Classes: ``MultitaskFeatures`` (name "multitask", the synthetic case, built
from ``rfl.data.multitask.generate`` output) and ``SchoolMultitask`` (name
"school", built from a ``rfl.data.school.split_school`` dict; it keeps the test
split and reports the test NMSE through ``extra_metrics``, under two evaluation
protocols and two normalisations, ``NMSE_COLUMNS``: ``test_nmse`` is the held-out
error pooled over all test rows; ``refit_on_test`` is the authors' evaluation). r and lambda come
from the dataset params (see ``from_arrays``).

Reference point: ``closed_form_optimum`` is None (no closed form);
``reference_candidates`` offers the planted U* of synthetic data as a start.
``distance_to_optimum(U, U_ref)`` is the Grassmann geodesic distance
sqrt(sum_k theta_k^2) over the principal angles theta_k between span(U) and
span(U_ref). For synthetic data the natural references are U* (the subspace
the data were generated from; a minimiser when noise = 0 and lambda = 0) and a
computed minimiser of F (differs from U* by O(noise) when noise > 0); the
data's U* is kept as ``self.U_star``.
"""

from __future__ import annotations

import numpy as np

from rfl.data import multitask as synthetic
from rfl.data import school
from rfl.data.school import nmse, unpad
from rfl.manifolds import Grassmann

from ._batching import CHUNK_BYTES, kernel_inputs, kernels
from .base import COUNT, NONNEGATIVE, SCALE, Problem, object_schema

#: lambda of the paper's School experiment (Section 5.2).
SCHOOL_LAMBDA = 1e-3

#: How the coefficients w_ij of a task are obtained when a subspace U is scored on its test
#: rows. ``heldout`` is the usual held-out test error; ``refit_on_test`` is what the
#: authors' code of the RFedAGS paper computes (``ConstructRFLLRMCProb_Grass_.m``: its
#: ``RMSE(U, D_test)`` calls ``completion(U, D_test)``, which solves each column's
#: coefficients on the test entries themselves, then scores those entries), and what
#: ``demo_sl_school.m`` of hujiangpku/RNGD computes for School (``sl_mystatsfun``).
NMSE_PROTOCOLS = {
    "heldout": "w_ij(U) is the ridge solution (lambda of the problem) on task ij's training rows; "
               "the residuals X_test U w_ij - y_test are taken on its test rows",
    "refit_on_test": "w_ij = (U^T X_test^T X_test U + 2 lambda I)^-1 U^T X_test^T y_test, the same "
                     "ridge problem solved on task ij's test rows; the residuals are taken on "
                     "those same rows (the authors' evaluation)",
}
#: How squared test errors are turned into one number (both over var, the population
#: variance of all valid test labels pooled over the tasks).
NMSE_NORMALISATIONS = {
    "pooled": "sum of squared residuals over all test rows of all tasks / number of those rows, "
              "over var",
    "task_mean": "mean over tasks of (sum of the task's squared test residuals / its test rows), "
                 "over var",
}
#: run-table column of each (protocol, normalisation); ``test_nmse`` is (heldout, pooled)
NMSE_COLUMNS = {
    ("heldout", "pooled"): "test_nmse",
    ("heldout", "task_mean"): "test_nmse_taskmean",
    ("refit_on_test", "pooled"): "test_nmse_refit",
    ("refit_on_test", "task_mean"): "test_nmse_refit_taskmean",
}


def nmse_column(protocol: str, normalisation: str = "pooled") -> str:
    """The run-table column of (``protocol``, ``normalisation``); ValueError naming the
    allowed values otherwise."""
    check_nmse_option("protocol", protocol, NMSE_PROTOCOLS)
    check_nmse_option("normalisation", normalisation, NMSE_NORMALISATIONS)
    return NMSE_COLUMNS[(protocol, normalisation)]


def check_nmse_option(key: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"test NMSE {key} {value!r} is not known; allowed: {', '.join(allowed)}")


def _t(a: np.ndarray) -> np.ndarray:
    return a.swapaxes(-1, -2)


def _check_padded(X: np.ndarray, y: np.ndarray, d: np.ndarray, what: str) -> np.ndarray:
    """Validate padded task arrays; return the (S, N, D) mask of valid rows."""
    if X.ndim != 4 or y.shape != X.shape[:3] or d.shape != X.shape[:2]:
        raise ValueError(f"{what}: expected X (S, N, D, m), y (S, N, D), sizes (S, N); "
                         f"got {X.shape}, {y.shape}, {d.shape}")
    D = X.shape[2]
    if np.any(d < 0) or np.any(d > D):
        raise ValueError(f"{what}: task sizes must lie in [0, {D}], got [{d.min()}, {d.max()}]")
    mask = np.arange(D)[None, None, :] < d[:, :, None]
    step = max(1, CHUNK_BYTES // max(1, X[0].nbytes))        # agents per check: no copy of X
    for i in range(0, X.shape[0], step):
        pad = ~mask[i:i + step]
        if np.any(X[i:i + step][pad] != 0) or np.any(y[i:i + step][pad] != 0):
            raise ValueError(f"{what}: padded rows (beyond each task's size) must be zero in X and y")
    return mask


class MultitaskFeatures(Problem):
    """Problem (5.3) on Gr(r, m): X (S, N, D, m), y (S, N, D), d (S, N) padded tasks."""

    name = "multitask"
    manifold_class = Grassmann
    metrics = ("subspace_dist",)
    metric_labels = {"subspace_dist": r"dist$(\mathcal{U}_t, \mathcal{U}^*)$"}
    params_schema = object_schema(
        required={"S": COUNT, "N": COUNT, "m": {"type": "integer", "minimum": 2}, "r": COUNT},
        optional={"d_min": COUNT, "d_max": COUNT, "noise": SCALE, "lam": NONNEGATIVE})
    test_params = {"S": 3, "N": 4, "m": 6, "r": 2, "d_min": 3, "d_max": 6, "noise": 0.1,
                   "lam": 0.05}

    @classmethod
    def generate(cls, rng, S, N, m, r, d_min=10, d_max=50, noise=1e-6, lam=None):
        """Synthetic tasks of Section 5.2 (``rfl.data.multitask.generate``); ``lam`` belongs to
        the problem, not to the data."""
        return synthetic.generate(rng, S=S, N=N, m=m, r=r, d_min=d_min, d_max=d_max, noise=noise)

    @classmethod
    def check_params(cls, params):
        """r <= m, d_min <= d_max, and with lam = 0 at least r rows per task (w unique)."""
        p, out = params, []
        d_min, d_max = p.get("d_min", 10), p.get("d_max", 50)
        if p["r"] > p["m"]:
            out.append(("r", f"{p['r']} is larger than m = {p['m']}; allowed: 1..{p['m']}"))
        if d_min > d_max:
            out.append(("d_min", f"{d_min} is larger than d_max = {d_max}; allowed: d_min <= d_max"))
        elif p.get("lam", 0.0) == 0 and d_min < p["r"]:
            out.append(("d_min", f"{d_min} is smaller than r = {p['r']} with lam = 0 (the "
                                 f"least-squares fit of a task needs at least r rows); allowed: "
                                 f"d_min >= {p['r']}, or lam > 0"))
        return out

    @classmethod
    def memory_bytes(cls, params):
        """X, y padded to d_max rows per task: S*N*d_max*(m+1) float64."""
        return params["S"] * params["N"] * params.get("d_max", 50) * (params["m"] + 1) * 8

    # ---- construction ----------------------------------------------------
    @classmethod
    def from_arrays(cls, arrays, params: dict | None = None, *, r: int | None = None,
                    lam: float | None = None, **geometry):
        """Build from generator output or from a School split.

        r and lambda are problem parameters, not data: they are taken from the
        keywords, else from the dataset ``params`` (keys ``r``, ``lam``), else
        from 0-d arrays ``arrays["r"]`` / ``arrays["lam"]``, else defaulted:

        - synthetic (``rfl.data.multitask.generate``): keys X, y, d, U_star;
          r defaults to U_star.shape[1], lam to 0 (the paper's synthetic case);
        - School (``rfl.data.school.split_school``): keys X_train, y_train,
          n_train, X_test, y_test, n_test; r is required, lam defaults to
          ``SCHOOL_LAMBDA`` = 1e-3.

        ``geometry``: retraction / transport names of the Grassmann manifold
        (and optionally ``gradient``, see the module docstring).
        """
        params = params or {}
        if r is None:
            r = params.get("r", arrays["r"] if "r" in arrays else None)
        if lam is None:
            lam = params.get("lam", arrays["lam"] if "lam" in arrays else None)
        r = None if r is None else int(r)
        lam = None if lam is None else float(lam)
        if "X_train" in arrays:
            if r is None:
                raise ValueError("a School problem needs the subspace dimension r "
                                 "(params['r'], keyword r= or a 0-d array 'r')")
            return cls.from_school(arrays, r, SCHOOL_LAMBDA if lam is None else lam, **geometry)
        U_star = arrays.get("U_star")
        if r is None:
            if U_star is None:
                raise ValueError("need r (params['r'], keyword, array 'r', or U_star to read it from)")
            r = np.shape(U_star)[1]
        return cls(arrays["X"], arrays["y"], arrays["d"], r, 0.0 if lam is None else lam,
                   U_star=U_star, **geometry)

    @classmethod
    def from_school(cls, split, r: int, lam: float = SCHOOL_LAMBDA, **geometry):
        """Training tasks of a ``split_school`` dict; the test arrays are kept for ``test_nmse``."""
        p = cls(split["X_train"], split["y_train"], split["n_train"], r, lam, **geometry)
        X_test = np.asarray(split["X_test"])
        y_test = np.asarray(split["y_test"])
        n_test = np.asarray(split["n_test"], dtype=np.int64)
        _check_padded(X_test, y_test, n_test, "test data")
        if X_test.shape[:2] != p.X.shape[:2] or X_test.shape[3] != p.X.shape[3]:
            raise ValueError(f"test data {X_test.shape} do not match training data {p.X.shape}")
        p.X_test, p.y_test, p.n_test = X_test, y_test, n_test
        return p

    @staticmethod
    def local_sizes_from(params: dict):
        """(S,) local sizes (tasks per agent) from dataset parameters: S, N
        (or n_agents, tasks_per_agent as in ``split_school``)."""
        S = params.get("S", params.get("n_agents"))
        N = params.get("N", params.get("tasks_per_agent"))
        if S is None or N is None:
            raise KeyError("multitask dataset parameters need S and N "
                           "(or n_agents and tasks_per_agent)")
        return [int(N)] * int(S)

    GRADIENTS = ("auto", "gram", "rows")

    def __init__(self, X: np.ndarray, y: np.ndarray, d: np.ndarray, r: int, lam: float = 0.0,
                 retraction: str | None = None, transport: str | None = None,
                 U_star: np.ndarray | None = None, gradient: str = "auto"):
        self.X = np.ascontiguousarray(X, dtype=float)
        self.y = np.ascontiguousarray(y, dtype=float)
        self.d = np.ascontiguousarray(d, dtype=np.int64)
        self.mask = _check_padded(self.X, self.y, self.d, "training data")
        S, N, D, m = self.X.shape
        r = int(r)
        self.lam = float(lam)
        if self.lam < 0:
            raise ValueError(f"lambda must be non-negative, got {lam}")
        if self.lam == 0 and self.d.min() < r:
            raise ValueError(f"with lambda = 0 every task needs at least r={r} rows for w to be "
                             f"unique; the smallest task has {self.d.min()}")
        self.manifold = Grassmann(m, r, retraction=retraction, transport=transport)
        self.m, self.r = m, r
        self.local_sizes = np.full(S, N)
        if gradient not in self.GRADIENTS:
            raise ValueError(f"gradient={gradient!r}; allowed: {', '.join(self.GRADIENTS)}")
        if gradient == "auto":
            gradient = "rows" if D < m else "gram"
        self.gradient = gradient
        if gradient == "gram":
            self.G = np.einsum("sndi,sndj->snij", self.X, self.X)              # (S, N, m, m)
            self.c = np.einsum("sndi,snd->sni", self.X, self.y)                # (S, N, m)
        else:
            self.G = self.c = None
        self.U_star = None if U_star is None else np.asarray(U_star, dtype=float)
        self.X_test = self.y_test = self.n_test = None

    # ---- inner problem ---------------------------------------------------
    def _all_tasks(self, s: int) -> np.ndarray:
        N = self.local_sizes[0]
        return np.broadcast_to(np.arange(N), (s, N))

    def _ridge(self, gram_uu: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """Solve (gram_uu + 2 lambda I) w = rhs: (..., r, r), (..., r, k) -> (..., r, k).

        ``gram_uu`` is overwritten (it is always a fresh temporary here)."""
        if self.lam:
            gram_uu[..., np.arange(self.r), np.arange(self.r)] += 2.0 * self.lam
        return np.linalg.solve(gram_uu, rhs)

    def _gram_terms(self, x, agents, tasks):
        """G U, c and w for the selected tasks: x (s, m, r), tasks (s, B) ->
        GU (s, B, m, r), c (s, B, m), w (s, B, r)."""
        G = self.G[agents[:, None], tasks]                                     # (s, B, m, m)
        c = self.c[agents[:, None], tasks]                                     # (s, B, m)
        GU = G @ x[:, None]                                                    # (s, B, m, r)
        rhs = (c[:, :, None, :] @ x[:, None]).swapaxes(-1, -2)                 # U^T c: (s, B, r, 1)
        w = self._ridge(_t(x)[:, None] @ GU, rhs)[..., 0]                      # (s, B, r)
        return GU, c, w

    def _task_pass(self, x, agents, tasks=None, *, grad=False, values=False):
        """Everything the row path needs, for the selected tasks of each row, from their valid
        rows only (problem (5.3); module docstring):

            w_ij = (U^T X^T X U + 2 lambda I)^{-1} U^T X^T y,  res_ij = X U w_ij - y  (d_ij rows),
            grad  = (1/T) sum_j X_ij^T res_ij w_ij^T                                (envelope),
            fit_ij = 0.5 ||res_ij||^2,  h_ij = fit_ij + lambda ||w_ij||^2.

        x: (s, m, r) (a broadcast view is fine); agents: (s,); tasks: (s, T) task indices,
        or None for all N tasks of each agent. Returns a dict with ``w`` (s, T, r), and
        ``grad`` (s, m, r) and/or ``h``, ``fit`` (s, T) when asked for.

        The compiled ``_kernels.task_pass`` reads each selected task's d_ij valid rows where
        they lie (no gather, no padded rows), twice: U^T x per row and the r x r system, then
        the residuals and X^T res from cache. ``np.linalg.LinAlgError`` when a task's r x r
        system is singular (as ``np.linalg.solve``).
        """
        S, N, _, m = self.X.shape
        r = self.r
        agents, idx = kernel_inputs(agents, tasks, S, N)
        s, T = idx.shape
        ut = np.ascontiguousarray(np.swapaxes(np.asarray(x, dtype=float), -1, -2))     # (s, r, m)
        if ut.shape != (s, r, m):
            raise ValueError(f"x: expected ({s}, {m}, {r}), got {np.shape(x)}")
        out = {"w": np.empty((s, T, r))}
        grad_out = np.empty((s if grad else 0, m, r))
        fit_out = np.empty((s if values else 0, T))
        if T and s:
            bad = kernels().task_pass(self.X, self.y, self.d, agents, idx, ut, 2.0 * self.lam,
                                      out["w"], grad_out, fit_out)
            if bad >= 0:
                raise np.linalg.LinAlgError(
                    f"Singular matrix: the r x r system of task {idx.flat[bad]} of agent "
                    f"{agents[bad // T]}")
        elif grad:
            grad_out[:] = np.nan                                               # mean of no tasks
        if grad:
            out["grad"] = grad_out
        if values:
            w = out["w"]
            out["fit"] = fit_out
            out["h"] = fit_out + self.lam * np.einsum("str,str->st", w, w)
        return out

    def task_coefficients(self, x, agents, tasks=None):
        """w_ij(U) fitted on the training data: x (s, m, r), agents (s,), tasks (s, B) -> (s, B, r)."""
        x = np.asarray(x)
        agents = np.asarray(agents)
        tasks = None if tasks is None else np.asarray(tasks)
        return self._task_pass(x, agents, tasks)["w"]

    def _task_values(self, x, agents, tasks):
        """(h_ij, data-fit_ij) per selected task from the residual rows: two (s, T) arrays."""
        out = self._task_pass(x, agents, tasks, values=True)
        return out["h"], out["fit"]

    def _egrad(self, x, agents, tasks):
        """(1/T) sum_j X_ij^T (X_ij U w - y_ij) w^T: x (s, m, r), tasks (s, T) or None (all)."""
        if self.gradient == "gram":
            tasks = self._all_tasks(len(agents)) if tasks is None else tasks
            GU, c, w = self._gram_terms(x, agents, tasks)
            xtr = (GU @ w[..., None])[..., 0] - c                              # X^T (X U w - y)
            return (_t(xtr) @ w) / tasks.shape[1]
        return self._task_pass(x, agents, tasks, grad=True)["grad"]

    # ---- federated (batched over agents) ----------------------------------
    def minibatch_egrad(self, x, agents, batch):
        """(1/B) sum_{j in batch_i} (G_ij U_i w - c_ij) w^T, w = w_ij(U_i): x (s, m, r),
        agents (s,), batch (s, B) task indices -> (s, m, r)."""
        return self._egrad(np.asarray(x), np.asarray(agents), np.asarray(batch))

    def minibatch_cost(self, x, agents, batch):
        """(1/B) sum_{j in batch_i} h_ij(U_i): ``(s,)`` (the function ``minibatch_egrad`` differentiates)."""
        return self._task_values(np.asarray(x), np.asarray(agents),
                                 np.asarray(batch))[0].mean(axis=1)

    def local_egrad(self, x, agents):
        return self._egrad(np.asarray(x), np.asarray(agents), None)

    def local_cost(self, x, agents):
        return self._task_values(np.asarray(x), np.asarray(agents), None)[0].mean(axis=1)

    # ---- global (one point U: (m, r)) -------------------------------------
    def _everyone(self, x):
        S = self.n_agents
        return np.broadcast_to(np.asarray(x), (S, self.m, self.r)), np.arange(S)

    def _global(self, x) -> dict:
        """One pass over all data at one point U: per-agent means of h and of the data fit,
        (S,) each, the per-agent gradients (S, m, r) and w (S, N, r). The last point's result
        is kept, so cost, egrad, data_fit and coefficients at the same U (a run records cost
        and gradient norm of every iterate) share one pass over the rows (``_at_last_point``)."""
        def one_pass(x):
            xs, agents = self._everyone(x)
            out = self._task_pass(xs, agents, None, grad=self.gradient == "rows", values=True)
            if self.gradient == "gram":
                out["grad"] = self._egrad(xs, agents, None)
            out["h_mean"], out["fit_mean"] = out["h"].mean(axis=1), out["fit"].mean(axis=1)
            return out

        return self._at_last_point(x, one_pass)

    def cost(self, x):
        """F(U) = (1/S) sum_i (1/N) sum_j h_ij(U) (value function, see the module docstring)."""
        return float(self.weights @ self._global(x)["h_mean"])

    def data_fit(self, x):
        """The paper's (5.3): (1/S) sum_i (1/N) sum_j 0.5 ||X_ij U w_ij(U) - y_ij||^2, w
        the (regularised) inner solution; equals ``cost`` when lambda = 0."""
        return float(self.weights @ self._global(x)["fit_mean"])

    def egrad(self, x):
        return np.tensordot(self.weights, self._global(x)["grad"], axes=1)

    # ---- prediction ------------------------------------------------------
    def coefficients(self, x):
        """w_ij(U) of every task, fitted on the training data: ``(S, N, r)``."""
        return self._global(x)["w"].copy()

    def predict(self, x, X_test=None):
        """Predictions X_test_ij U w_ij(U), w fitted on the training data: (S, N, D_test).

        X_test: (S, N, D_test, m) padded test features (default: the stored
        School test set); padded rows predict 0.
        """
        X_test = self.X_test if X_test is None else np.asarray(X_test)
        if X_test is None:
            raise ValueError("no test data: pass X_test or build the problem with from_school")
        if X_test.shape[:2] != self.X.shape[:2] or X_test.shape[3] != self.m:
            raise ValueError(f"X_test {X_test.shape} does not match the tasks {self.X.shape}")
        return np.einsum("sndr,snr->snd", X_test @ np.asarray(x), self.coefficients(x))

    def _test_arrays(self, X_test, y_test, n_test):
        if X_test is None and y_test is None and n_test is None and self.X_test is not None:
            return self.X_test, self.y_test, self.n_test        # checked by from_school
        if X_test is None or y_test is None or n_test is None:
            raise ValueError("need X_test, y_test and n_test (or a problem built by from_school)")
        X_test = np.asarray(X_test)
        y_test = np.asarray(y_test)
        n_test = np.asarray(n_test, dtype=np.int64)
        _check_padded(X_test, y_test, n_test, "test data")
        if X_test.shape[:2] != self.X.shape[:2] or X_test.shape[3] != self.m:
            raise ValueError(f"X_test {X_test.shape} does not match the tasks {self.X.shape}")
        return X_test, y_test, n_test

    def test_residuals(self, x, protocol: str = "heldout", X_test=None, y_test=None, n_test=None):
        """Residuals X_test_ij U w_ij - y_test_ij of every task on its test rows: (S, N, D_test)
        (padded rows 0), with w_ij by ``protocol`` (:data:`NMSE_PROTOCOLS`):

        - ``heldout``: w_ij(U) fitted on the task's training rows (``coefficients``);
        - ``refit_on_test``: w_ij = (U^T X_te^T X_te U + 2 lambda I)^{-1} U^T X_te^T y_te, the
          same ridge problem solved on the task's test rows (with lambda = 0 the minimum-norm
          least-squares solution, so a task with fewer test rows than r stays defined).
        """
        check_nmse_option("protocol", protocol, NMSE_PROTOCOLS)
        X_test, y_test, n_test = self._test_arrays(X_test, y_test, n_test)
        XU = X_test @ np.asarray(x)                                            # (S, N, D, r)
        return self._residuals(x, XU, y_test, protocol)

    def _residuals(self, x, XU, y_test, protocol):
        if protocol == "heldout":
            w = self._global(x)["w"][..., None]                                # (S, N, r, 1)
        elif self.lam:
            w = self._ridge(_t(XU) @ XU, _t(XU) @ y_test[..., None])
        else:
            w = np.linalg.pinv(XU) @ y_test[..., None]
        return (XU @ w)[..., 0] - y_test                                       # padded rows: 0 - 0

    def test_nmse(self, x, X_test=None, y_test=None, n_test=None, *, protocol: str = "heldout",
                  normalisation: str = "pooled"):
        """Test NMSE of Section 5.2 under an evaluation ``protocol`` (how w_ij is obtained,
        :data:`NMSE_PROTOCOLS`, see ``test_residuals``) and a ``normalisation``
        (:data:`NMSE_NORMALISATIONS`); both are divided by the population variance of all
        valid test labels, var:

        - ``pooled``: sum_ij ||res_ij||^2 / sum_ij d_ij / var (``rfl.data.school.nmse``);
        - ``task_mean``: mean over the tasks with a test row of ||res_ij||^2 / d_ij, / var.
        """
        check_nmse_option("normalisation", normalisation, NMSE_NORMALISATIONS)
        X_test, y_test, n_test = self._test_arrays(X_test, y_test, n_test)
        res = self.test_residuals(x, protocol, X_test, y_test, n_test)
        if normalisation == "pooled":
            return nmse(unpad(y_test + res, n_test), unpad(y_test, n_test))
        return self._task_mean_nmse(res, y_test, n_test)

    @staticmethod
    def _task_mean_nmse(res, y_test, n_test) -> float:
        var = float(np.var(unpad(y_test, n_test)))
        if var == 0.0:
            raise ValueError("var(y_test) is zero; NMSE undefined")
        has = n_test > 0
        return float(np.mean(np.einsum("snd,snd->sn", res, res)[has] / n_test[has]) / var)

    def test_nmse_all(self, x) -> dict[str, float]:
        """Every column of :data:`NMSE_COLUMNS` at U (one row of a run table), on the stored
        test split: the residuals of each protocol are computed once, and the variance of the
        test labels once per problem."""
        if getattr(self, "_test_var", None) is None:
            X_test, y_test, n_test = self._test_arrays(None, None, None)
            var = float(np.var(unpad(y_test, n_test)))
            if var == 0.0:
                raise ValueError("var(y_test) is zero; NMSE undefined")
            has = n_test > 0
            self._test_var = (var, has, float(n_test.sum()))
        var, has, rows = self._test_var
        XU = self.X_test @ np.asarray(x)                                       # shared: (S, N, D, r)
        out = {}
        for protocol in NMSE_PROTOCOLS:
            res = self._residuals(x, XU, self.y_test, protocol)
            sq = np.einsum("snd,snd->sn", res, res)                            # (S, N)
            out[NMSE_COLUMNS[(protocol, "pooled")]] = float(sq.sum() / rows / var)
            out[NMSE_COLUMNS[(protocol, "task_mean")]] = float(np.mean(sq[has] / self.n_test[has]) / var)
        return out

    # ---- reference -------------------------------------------------------
    def closed_form_optimum(self):
        return None

    def reference_candidates(self):
        """The planted subspace U* of synthetic data (a minimiser when noise = 0 and
        lambda = 0, within O(noise) of one otherwise), as a start for the reference solver."""
        if self.U_star is not None and self.U_star.shape == (self.m, self.r):
            return [self.U_star.copy()]
        return []

    def extra_metrics(self, x):
        """subspace_dist: principal-angle distance to the planted U* (paper Figure 2b)."""
        if self.U_star is None:
            return {"subspace_dist": float("nan")}
        return {"subspace_dist": self.distance_to_optimum(x, self.U_star)}

    def distance_to_optimum(self, x, x_star):
        """Grassmann geodesic distance sqrt(sum theta_k^2), theta_k the principal angles
        between span(x) and span(x_star); independent of both representatives."""
        return float(self.manifold.dist(np.asarray(x)[None], np.asarray(x_star)[None])[0])


class SchoolMultitask(MultitaskFeatures):
    """Problem (5.3) on a School split (paper Section 5.2, real case), recording the
    test NMSE of every iterate (``extra_metrics``). Build with ``from_arrays(split,
    params)`` (params: r, lam) or ``from_school(split, r, lam)``."""

    name = "school"
    metrics = tuple(NMSE_COLUMNS.values())
    metric_labels = {
        "test_nmse": "test NMSE (held out)",
        "test_nmse_taskmean": "test NMSE (held out, mean of task MSEs)",
        "test_nmse_refit": "test NMSE (w refit on test rows)",
        "test_nmse_refit_taskmean": "test NMSE (w refit on test rows, mean of task MSEs)",
    }
    metric_definitions = {col: f"protocol {p}: {NMSE_PROTOCOLS[p]}; normalisation {n}: "
                               f"{NMSE_NORMALISATIONS[n]}" for (p, n), col in NMSE_COLUMNS.items()}
    #: the ILEA567.DAT file (``rfl.data.school.fetch_ilea``), read by ``generate``
    raw_inputs = ("school",)
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["r", "lam", "S", "N"],
        "properties": {
            "r": {"type": "integer", "minimum": 1, "maximum": 27},
            "lam": {"type": "number", "minimum": 0},
            "S": {"type": "integer", "minimum": 1},
            "N": {"type": "integer", "minimum": 1},
            "train_fraction": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        },
    }
    test_params = {"r": 2, "lam": 1e-3, "S": 2, "N": 3, "train_fraction": 0.8}

    @classmethod
    def generate(cls, rng, raw_path, S, N, train_fraction=0.8, r=None, lam=None):
        """One random train/test split of the School data (``rfl.data.school.split_school``);
        r, lam belong to the problem."""
        X, y, schools = school.encode_features(school.parse_ilea(school.verified_ilea(raw_path)))
        split = school.split_school(X, y, schools, rng=rng, train_fraction=train_fraction,
                                    n_agents=S, tasks_per_agent=N)
        return {k: np.asarray(v) for k, v in split.items()}

    @classmethod
    def find_raw_inputs(cls):
        """ILEA567.DAT in the mirror named by $RFL_SCHOOL_MIRROR (``rfl.data.school``)."""
        import os
        from pathlib import Path

        mirror = os.environ.get(school.MIRROR_ENV, "").strip()
        found = school._find_in_mirror(Path(mirror)) if mirror else None
        if found is None:
            raise FileNotFoundError(f"the School data: set {school.MIRROR_ENV} to a directory "
                                    f"holding {school.ILEA_FILENAME} (or raw/{school.ILEA_FILENAME}); "
                                    f"got {mirror or 'nothing'}")
        return [found]

    @classmethod
    def check_params(cls, params):
        """S*N tasks from the 139 schools."""
        if params["S"] * params["N"] > 139:
            return [("S", f"S*N = {params['S'] * params['N']} tasks, but the School data have 139 "
                          f"schools; allowed: S*N <= 139")]
        return []

    @classmethod
    def memory_bytes(cls, params):
        """The records (15362 x 28 float64) and the split padded to the largest school (251
        students): 2*S*N*251*29 float64 and int64."""
        return (school.ILEA_N_STUDENTS * 30 + 2 * params["S"] * params["N"] * 251 * 30) * 8

    @classmethod
    def from_arrays(cls, arrays, params: dict | None = None, **kwargs):
        if "X_train" not in arrays:
            raise ValueError("a School problem is built from a split_school dict "
                             "(X_train, y_train, n_train, X_test, y_test, n_test)")
        return super().from_arrays(arrays, params, **kwargs)

    def extra_metrics(self, x):
        """The test NMSE under each evaluation protocol and normalisation (``NMSE_COLUMNS``),
        all from the same iterate."""
        return self.test_nmse_all(x)

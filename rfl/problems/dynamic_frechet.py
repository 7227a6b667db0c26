"""The dynamic Fréchet mean on H^2 and SPD(3) (Chen & Sun, "Decentralized online Riemannian
optimization with dynamic environments", arXiv 2410.05128; the generators of the authors'
``simulation.ipynb``, statsle/DPRGD).

At step t = 0..T-1 agent i holds K points z_{i,k}^t and its cost is (1/2) mean_k d^2(x, z_{i,k}^t)
(Riemannian gradient -mean_k Log_x z_{i,k}^t: the notebook's step x <- Exp_x(eta mean_k Log_x z)
is a gradient step of step eta on it). The network's cost at t is F_t(x) = (1/S) sum_i f_{i,t}.

Data, two regimes (the notebook's loop; T0 sets the rate of change):

- abrupt, steps t < ``drift_from``: at every t with t % T0 == 0 new data are drawn around the
  base b = o (o the origin; SPD: I) when (t // T0) is even, b = (3, 2, 2) (SPD: 3 I) when odd, and
  kept until the next multiple of T0;
- drift, t >= ``drift_from``: with r = t % T0, b = cosh(r/T0) o + sinh(r/T0) (0, 1, 1)/sqrt 2
  (SPD: (1 + 2 r/T0) I), new data at every step.

Each new draw: agent centres c_i ~ RN(b, sigma_agent), then points z_{i,k} ~ RN(c_i,
sigma_sample). On H^2 RN(b, sigma) is the Riemannian normal distribution, radius density
proportional to exp(-r^2 / (2 sigma^2)) sinh(r) (d = 2), direction uniform in T_b H^2
(sigma_agent 1, sigma_sample 0.25). On SPD(3) a draw is Exp_b(V), V = sym(G) with G entries
N(0, radius^2), radius 0.1 for both (the notebook's ``spd.random``; its markdown says U(0, 0.1)
entries, its code draws normals).

``drift_from``: the notebook's H^2 loop switches to drift at ``t < 100`` with T = 100, i.e.
never (its markdown and its figure's vertical line put the switch at t = 50); its SPD loop
switches at t = 30 of T = 60 as stated. ``drift_from: 100`` with T = 100 reproduces the
published H^2 loop, ``drift_from: 50`` the fixed one.

Metric: the dynamic regret in the notebook's units (mean squared distance, no 1/2):
regret_t = (1/S) sum_i F~_t(x_i^t) - min_x F~_t(x), F~_t(x) = mean over all S K points of
d^2(x, z), x_i^t the iterate agent i holds when the data of step t arrive; the cumulative
sum over t is the dynamic regret. min F~_t is at the Karcher mean of the S K points, computed
here to a gradient norm of 1e-12 (the notebook: 100 steps of size 0.1, tolerance 1e-6).
"""

from __future__ import annotations

import numpy as np

from rfl.manifolds import SPD, Lorentz
from rfl.manifolds.frechet import karcher_mean

from .base import COUNT, Problem, object_schema

#: a spread (a tangent vector's scale): positive, and at most 10, past which the points'
#: coordinates (cosh on H^2, expm on SPD) leave float64's range at a few standard deviations
SPREAD = {"type": "number", "exclusiveMinimum": 0, "maximum": 10}
#: the Riemannian normal's sigma on H^2: a spread at least 1e-3, ten steps of the inverse-CDF
#: sampler's radius grid (``_R_MAX / (_R_GRID - 1)`` = 1e-4), below which its density underflows
SIGMA = {"type": "number", "minimum": 1.0e-3, "maximum": 10}

#: radius grid of the inverse-CDF sampler of H^d's Riemannian normal (the notebook's [0, 20])
_R_MAX = 20.0
_R_GRID = 200001


def riemannian_normal_radius_cdf(sigma: float, d: int = 2):
    """(r, CDF(r)) on a grid of [0, 20] for the radius density proportional to
    exp(-r^2/(2 sigma^2)) sinh^{d-1}(r) (cumulative trapezoid; log-domain for large r)."""
    import scipy.integrate            # here, not at the top: 0.3-0.5 s that every process
                                      # loading the problem registry would pay (generation only)

    r = np.linspace(0.0, _R_MAX, _R_GRID)
    with np.errstate(divide="ignore"):
        logf = -r ** 2 / (2 * sigma ** 2) + (d - 1) * np.log(np.sinh(r))
    f = np.exp(logf - np.max(logf[1:]))
    f[0] = 0.0 if d > 1 else f[0]
    cdf = scipy.integrate.cumulative_trapezoid(f, r, initial=0.0)
    return r, cdf / cdf[-1]


class _DynamicFrechet(Problem):
    """Z: (S, T K, *point) agent i's points of step t at rows t K .. t K + K - 1; x_star: (T,
    *point) the Karcher mean of step t's S K points; f_star: (T,) its mean squared distance;
    init: (S, *point) the notebook's initial iterates."""

    closed_form = True               # x*: the Karcher mean's fixed-point iteration, no solver

    agent_metric_names = ("regret",)
    agent_metric_labels = {"regret": "regret at step t", "dynamic_regret": "dynamic regret"}
    #: the regret of step t is measured at the iterates the data of step t meet (the notebook's)
    agent_metrics_before_step = True
    #: the decentralised runs add the cumulative sum of ``regret`` as ``dynamic_regret``
    cumulative_metrics = {"dynamic_regret": "regret"}
    metric_definitions = {
        "regret": "mean over agents of the mean squared distance from the agent's iterate to "
                  "all S K points of the step, minus its minimum (at their Karcher mean)",
        "dynamic_regret": "cumulative sum of regret over the steps so far (the notebook's "
                          "dynamic regret)"}
    #: defaults of the published setting, overridden per manifold
    DEFAULTS: dict = {}

    # ---- declarations shared by both manifolds -----------------------------------------
    @classmethod
    def _schema(cls, extra: dict, description: str) -> dict:
        return object_schema(
            required={"S": COUNT, "K": COUNT, "T": COUNT, "T0": COUNT},
            optional={"drift_from": {"type": "integer", "minimum": 0,
                                     "description": "first step of the drift regime (the "
                                                    "published H^2 loop: T, i.e. never)"},
                      **extra},
            description=description)

    @classmethod
    def check_params(cls, params):
        """A switch period and a drift start within the horizon T."""
        out = []
        for key in ("T0", "drift_from"):
            if key in params and params[key] is not None and params[key] > params["T"]:
                out.append((key, f"{params[key]} is beyond the horizon T = {params['T']}; "
                                 f"allowed: at most T"))
        return out

    @staticmethod
    def local_sizes_from(params):
        return [int(params["T"]) * int(params["K"])] * int(params["S"])

    @classmethod
    def memory_bytes(cls, params):
        size = int(np.prod(cls._point_shape()))
        return (params["S"] * params["T"] * params["K"] + params["T"] + params["S"]) * size * 8 * 2

    # ---- the generator -------------------------------------------------------------------
    @classmethod
    def generate(cls, rng, S, K, T, T0, drift_from=None, **spread):
        """``{"Z", "x_star", "f_star", "init", "regime"}`` (module docstring); ``regime`` (T,)
        0 abrupt, 1 drift."""
        p = {**cls.DEFAULTS, **spread}
        drift_from = T if drift_from is None else drift_from
        M = cls._manifold()
        shape = cls._point_shape()
        Z = np.zeros((S, T, K) + shape)
        x_star = np.zeros((T,) + shape)
        f_star = np.zeros(T)
        regime = np.zeros(T, dtype=int)
        for t in range(T):
            drift = t >= drift_from
            regime[t] = int(drift)
            if not drift and t % T0 and t > 0:
                Z[:, t], x_star[t], f_star[t] = Z[:, t - 1], x_star[t - 1], f_star[t - 1]
                continue
            base = cls._drift_base(t % T0, T0) if drift else cls._abrupt_base((t // T0) % 2)
            centres = cls._draw(M, rng, np.repeat(base[None], S, 0), p["agent"])
            Z[:, t] = cls._draw(M, rng, np.repeat(centres, K, 0), p["sample"]).reshape((S, K) + shape)
            pooled = Z[:, t].reshape((S * K,) + shape)
            x_star[t] = karcher_mean(M, pooled[None], x0=cls._start(pooled))[0]
            f_star[t] = np.mean(M.dist(np.repeat(x_star[t][None], S * K, 0), pooled) ** 2)
        init = cls._initial(M, Z[:, 0])
        return {"Z": Z.reshape((S, T * K) + shape), "x_star": x_star, "f_star": f_star,
                "init": init, "regime": regime}

    @classmethod
    def from_arrays(cls, arrays, params=None, **geometry):
        K = int(params["K"]) if params and "K" in params else None
        return cls(arrays["Z"], arrays["x_star"], arrays["f_star"], arrays["init"], K,
                   arrays.get("regime"), **geometry)

    def __init__(self, Z, x_star, f_star, init, K: int | None = None, regime=None,
                 retraction: str | None = None, transport: str | None = None):
        self.Z = np.asarray(Z, dtype=float)
        self.x_star = np.asarray(x_star, dtype=float)
        self.f_star = np.asarray(f_star, dtype=float)
        self.init = np.asarray(init, dtype=float)
        self.horizon = int(self.x_star.shape[0])
        S, N = self.Z.shape[:2]
        self.block = int(K) if K is not None else N // self.horizon
        if self.block * self.horizon != N:
            raise ValueError(f"{N} points per agent are not T = {self.horizon} steps of K = {self.block}")
        self.regime = None if regime is None else np.asarray(regime)
        self.manifold = self._manifold(retraction, transport)
        self.local_sizes = np.full(S, N)
        self._rows, self._row_weights = self._distinct_rows()

    def _distinct_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows of the steps that draw new data and each row's weight (the number of steps
        that keep that draw, over T): the generator copies step t - 1's points into step t
        between switches, so mean_{t, k} h(z_{i,k}^t) = sum over distinct rows of weight x h,
        exactly, for every agent. ``(U K,), (U K,)``."""
        T, K = self.horizon, self.block
        blocks = self.Z.reshape((self.Z.shape[0], T, K, -1))
        new = [0] + [t for t in range(1, T) if not np.array_equal(blocks[:, t], blocks[:, t - 1])]
        counts = np.diff(new + [T])
        rows = (np.asarray(new)[:, None] * K + np.arange(K)).ravel()
        return rows, np.repeat(counts / (T * K), K)

    # ---- the stream ----------------------------------------------------------------------
    def stream_batch(self, t: int) -> np.ndarray:
        """(S, K) row indices of step t's points (the same rows for every agent)."""
        if not 0 <= t < self.horizon:
            raise IndexError(f"step {t} outside the stream's {self.horizon} steps")
        return np.broadcast_to(t * self.block + np.arange(self.block),
                               (self.n_agents, self.block)).copy()

    def step_points(self, t: int) -> np.ndarray:
        """All S K points of step t: ``(S K, *point)``."""
        rows = self.Z[:, t * self.block:(t + 1) * self.block]
        return rows.reshape((-1,) + self.Z.shape[2:])

    def initial_stack(self, rng=None) -> np.ndarray:
        """The notebook's initial iterates, one per agent: ``(S, *point)``."""
        return self.init.copy()

    def initial_point(self, rng):
        return self.init[0].copy()

    # ---- the metric ----------------------------------------------------------------------
    def mean_sq_dist(self, x_stack: np.ndarray, points: np.ndarray) -> np.ndarray:
        """mean_z d^2(x_i, z) over ``points (m, *point)`` for each row of ``x_stack``: ``(S,)``."""
        pr = np.broadcast_to(points, (x_stack.shape[0],) + points.shape)
        return np.mean(self.manifold.dist_many(x_stack, pr) ** 2, axis=1)

    def agent_metrics(self, x_stack: np.ndarray, t: int) -> dict[str, float]:
        """``{"regret"}`` of step t at the agents' iterates (module docstring)."""
        f = self.mean_sq_dist(np.asarray(x_stack, dtype=float), self.step_points(t))
        return {"regret": float(np.mean(f) - self.f_star[t])}

    # ---- costs and gradients: (1/2) d^2 --------------------------------------------------
    def _points(self, agents, batch):
        return self.Z[np.asarray(agents)[:, None], np.asarray(batch)]       # (s, B, *point)

    def _mean_log(self, x, z):
        return self.manifold.log_many(x, z).mean(axis=1)

    def minibatch_egrad(self, x, agents, batch):
        """Euclidean gradient whose Riemannian gradient is -mean_b Log_x z_b."""
        return self._egrad_of_rgrad(x, -self._mean_log(x, self._points(agents, batch)))

    def local_egrad(self, x, agents):
        """The gradient of the static f_i (all T K points), -mean Log_x z, summed over the
        distinct draws with their weights (``_distinct_rows``)."""
        z = self._points(agents, np.broadcast_to(self._rows, (len(agents), self._rows.size)))
        w = self._row_weights.reshape((1, -1) + (1,) * (z.ndim - 2))
        return self._egrad_of_rgrad(x, -np.sum(self.manifold.log_many(x, z) * w, axis=1))

    def local_cost(self, x, agents):
        """The static f_i(x) = (1/2) mean over all T K points of d^2(x, z), summed over the
        distinct draws with their weights (``_distinct_rows``): ``(s,)``."""
        z = self.Z[np.asarray(agents)][:, self._rows]
        return 0.5 * (self.manifold.dist_many(x, z) ** 2) @ self._row_weights

    def sample_costs(self, x, agents, batch):
        z = self._points(agents, batch)
        s, B = z.shape[:2]
        xx = np.asarray(x, dtype=float).reshape((s * B,) + z.shape[2:])
        return 0.5 * self.manifold.dist(xx, z.reshape((s * B,) + z.shape[2:])).reshape(s, B) ** 2

    def cost(self, x):
        agents = np.arange(self.n_agents)
        return float(np.mean(self.local_cost(np.repeat(x[None], self.n_agents, 0), agents)))

    def egrad(self, x):
        agents = np.arange(self.n_agents)
        return self.local_egrad(np.repeat(x[None], self.n_agents, 0), agents).mean(axis=0)

    def closed_form_optimum(self):
        """The Karcher mean of all S T K points (the static problem's minimiser)."""
        pooled = self.Z.reshape((-1,) + self.Z.shape[2:])
        return karcher_mean(self.manifold, pooled[None], x0=self._start(pooled))[0]

    def data_notes(self):
        return {"drift_steps": None if self.regime is None else int(self.regime.sum()),
                "steps": self.horizon, "K": self.block}


class DynamicFrechetH2(_DynamicFrechet):
    """Points of H^2 in the Lorentz model: ``(3,)``."""

    name = "dynamic_frechet_h2"
    manifold_class = Lorentz
    DEFAULTS = {"agent": 1.0, "sample": 0.25}
    params_schema = _DynamicFrechet._schema(
        {"sigma_agent": SIGMA, "sigma_sample": SIGMA},
        "S agents, K points each per step on H^2 for T steps; data switch every T0 steps")
    test_params = {"S": 3, "K": 4, "T": 6, "T0": 2, "drift_from": 4}

    @classmethod
    def generate(cls, rng, S, K, T, T0, drift_from=None, sigma_agent=1.0, sigma_sample=0.25):
        return super().generate(rng, S, K, T, T0, drift_from, agent=sigma_agent, sample=sigma_sample)

    @staticmethod
    def _point_shape():
        return (3,)

    @staticmethod
    def _manifold(retraction=None, transport=None):
        return Lorentz(2, retraction, transport)

    @staticmethod
    def _egrad_of_rgrad(x, rgrad):
        """G with P_x(J G) = rgrad for tangent rgrad: G = J rgrad (J = diag(-1, 1, ..., 1))."""
        g = np.array(rgrad, dtype=float, copy=True)
        g[:, 0] = -g[:, 0]
        return g

    @staticmethod
    def _abrupt_base(odd: int) -> np.ndarray:
        return np.array([3.0, 2.0, 2.0]) if odd else np.array([1.0, 0.0, 0.0])

    @staticmethod
    def _drift_base(r: int, T0: int) -> np.ndarray:
        a = r / T0
        return np.cosh(a) * np.array([1.0, 0.0, 0.0]) + np.sinh(a) * np.array([0.0, 1.0, 1.0]) / np.sqrt(2)

    @staticmethod
    def _draw(M, rng, base, sigma):
        """RN(base_j, sigma) for each row: radius by inverse CDF, direction uniform on the unit
        circle of T_base (carried from the origin by parallel transport, an isometry)."""
        n = base.shape[0]
        r, cdf = riemannian_normal_radius_cdf(sigma, 2)
        radius = np.interp(rng.uniform(size=n), cdf, r)
        theta = rng.uniform(0.0, 2 * np.pi, size=n)
        u0 = np.stack([np.zeros(n), np.cos(theta), np.sin(theta)], axis=1)
        u = M.transport_parallel(M.origin(n), base, u0)
        return M.exp(base, radius[:, None] * u)

    @staticmethod
    def _start(pooled):
        """The notebook's start of its Fréchet-mean iteration: the Poincaré-ball average."""
        from rfl.manifolds.lorentz import lorentz_to_poincare, poincare_to_lorentz
        return poincare_to_lorentz(lorentz_to_poincare(pooled).mean(axis=0, keepdims=True))

    @classmethod
    def _initial(cls, M, Z0):
        """Each agent's Fréchet mean of its own step-0 points (the notebook's H^2 start)."""
        S = Z0.shape[0]
        return karcher_mean(M, Z0, x0=np.concatenate([cls._start(Z0[i]) for i in range(S)]))


class DynamicFrechetSPD(_DynamicFrechet):
    """Points of SPD(3) with the affine-invariant metric: ``(3, 3)``."""

    name = "dynamic_frechet_spd"
    manifold_class = SPD
    DEFAULTS = {"agent": 0.1, "sample": 0.1}
    params_schema = _DynamicFrechet._schema(
        {"radius_agent": SPREAD, "radius_sample": SPREAD},
        "S agents, K points each per step on SPD(3) for T steps; data switch every T0 steps")
    test_params = {"S": 3, "K": 4, "T": 6, "T0": 2, "drift_from": 3}

    @classmethod
    def generate(cls, rng, S, K, T, T0, drift_from=None, radius_agent=0.1, radius_sample=0.1):
        return super().generate(rng, S, K, T, T0, drift_from, agent=radius_agent, sample=radius_sample)

    @staticmethod
    def _point_shape():
        return (3, 3)

    @staticmethod
    def _manifold(retraction=None, transport=None):
        return SPD(3, retraction, transport)

    @staticmethod
    def _abrupt_base(odd: int) -> np.ndarray:
        return 3.0 * np.eye(3) if odd else np.eye(3)

    @staticmethod
    def _drift_base(r: int, T0: int) -> np.ndarray:
        return (1.0 + 2.0 * r / T0) * np.eye(3)

    @staticmethod
    def _draw(M, rng, base, radius):
        """Exp_base(sym(G)), G with N(0, radius^2) entries (the notebook's ``spd.random``)."""
        g = rng.standard_normal(base.shape) * radius
        return M.exp(base, 0.5 * (g + g.swapaxes(-1, -2)))

    @staticmethod
    def _start(pooled):
        """The notebook's start: the arithmetic mean."""
        return pooled.mean(axis=0, keepdims=True)

    @classmethod
    def _initial(cls, M, Z0):
        """Each agent's first point of step 0 (the notebook's SPD start)."""
        return Z0[:, 0].copy()

    @staticmethod
    def _egrad_of_rgrad(x, rgrad):
        """G with X sym(G) X = rgrad: X^{-1} rgrad X^{-1}."""
        a = np.linalg.solve(x, rgrad)
        return np.linalg.solve(x, a.swapaxes(-1, -2))


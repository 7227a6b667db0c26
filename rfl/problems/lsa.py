"""Federated linear stochastic approximation: federated TD(0) (Mangold et al., SCAFFLSA).

Agent c holds an LSA problem A_bar_c theta = b_bar_c, known only through an
oracle A(Z), b(Z) with E[A(Z)] = A_bar_c, E[b(Z)] = b_bar_c (slides "Federated
LSA"); the federated target theta* solves A_bar theta = b_bar, A_bar = sum_c p_c
A_bar_c, b_bar = sum_c p_c b_bar_c (p_c = 1/N with the equal pool sizes of
``rfl.data.garnet``). Here the oracle is TD(0) with linear features on agent c's
MDP (``rfl.data.garnet``): Z = (s, s'), s ~ mu_c, s' ~ P_{c,pi}(s, .),

    A(Z) = phi(s) (phi(s) - gamma phi(s'))^T,      b(Z) = r_c(s) phi(s).

The LSA field. ``minibatch_egrad`` returns the mini-batch mean of the field
A(Z) theta - b(Z) = -delta(Z; theta) phi(s), delta the TD error
r_c(s) + gamma phi(s')^T theta - phi(s)^T theta. It is *not* the gradient of any
cost (A_bar_c is not symmetric); it sits where the framework expects a
gradient, so that a gradient step theta - eta (A(Z) theta - b(Z)) is the LSA /
TD(0) step, and ``rfl.algorithms.fedavg.FedAvg`` on this problem *is* FedLSA
(slides "FedLSA Algorithm": H local LSA steps, then averaging).
``local_egrad`` and ``egrad`` are the mean fields A_bar_c theta - b_bar_c and
A_bar theta - b_bar, so a run's ``grad_norm`` column is the mean-field residual
||A_bar theta - b_bar||, zero exactly at theta*. Centralised solvers with a
line search on ``cost`` (RCG, RLBFGS) do not apply.

Cost. cost(theta) = ||theta - theta*||^2, so F* = 0 and a run's ``excess_risk``
column is the squared error ||theta_t - theta*||^2 that Mangold et al. plot
(its mean over seeds estimates E||theta_t - theta*||^2).

Oracles. ``oracle="pool"`` (default): the sample index j of a mini-batch picks
transition (states[c, j], next_states[c, j]) of agent c's pre-drawn pool (a
systematic sample of the law of Z, see ``rfl.data.garnet``), so the run's
``AgentSampler`` (seeded by the run stream) supplies the randomness and the
framework's determinism and draw-for-draw reference loops carry over unchanged;
local_sizes = pool size. ``oracle="exact"``: A(Z) = A_bar_c, b(Z) = b_bar_c
whatever the batch (deterministic LSA: no mini-batch noise, so FedLSA's iterates
converge to theta* + bias exactly), for fixed-point identities and for the
workflow's bias measurements; no transition is drawn, so each agent counts one
"sample" (local_sizes = 1, batch size 1: a local step is one mean-field
evaluation). The dataset parameter ``oracle`` selects it (``from_arrays``).

Exact quantities (mu_c, A_bar_c, b_bar_c, theta*_c, theta*) are recomputed here
from the MDP in closed form (``rfl.data.garnet.td_moments``), never from the pool.
"""

from __future__ import annotations

import numpy as np

from rfl.data import garnet
from rfl.data.garnet import DEFAULT_POOL, policy_chain, stationary_distribution, td_moments
from rfl.manifolds import Euclidean

from .base import Problem


def fedlsa_bias(A_local: np.ndarray, theta_star_local: np.ndarray, theta_star: np.ndarray,
                weights: np.ndarray, eta: float, H: int) -> np.ndarray:
    """FedLSA's bias theta_inf - theta* (slides "Analysis of FedLSA"; the same for FedAvg on
    quadratics, slides "For Quadratics"):

        [sum_c p_c (I - Gamma_c)]^{-1} sum_c p_c (I - Gamma_c)(theta*_c - theta*),
        Gamma_c = (I - eta A_c)^H.

    A_local ``(N, d, d)``, theta_star_local ``(N, d)`` (A_c theta*_c = b_c), theta_star ``(d,)``,
    weights ``(N,)`` = p_c -> ``(d,)``.
    """
    A_local = np.asarray(A_local, dtype=float)
    I = np.eye(A_local.shape[-1])
    Gamma = np.stack([np.linalg.matrix_power(I - eta * A, int(H)) for A in A_local])
    M = I - Gamma                                                              # (N, d, d)
    rhs = np.einsum("c,cij,cj->i", weights, M, np.asarray(theta_star_local) - theta_star)
    return np.linalg.solve(np.einsum("c,cij->ij", weights, M), rhs)


class FederatedLSA(Problem):
    """Federated TD(0) on N agents' MDPs with shared policy and features.

    phi: (nS, d) features; P: (N, nS, nA, nS), R: (N, nS, nA) agents' MDPs;
    policy: (nS,) deterministic; gamma: discount; states, next_states: (N, n_pool)
    transition pools; oracle: "pool" or "exact".
    """

    closed_form = True               # x* in closed form (closed_form_optimum): no solver
    name = "lsa"
    manifold_class = Euclidean
    field = "linear_field"
    ORACLES = ("pool", "exact")
    params_schema = {
        "description": "Federated TD(0) on Garnet MDPs (rfl/data/garnet.py): one MDP perturbed per "
                       "agent (homogeneous) or two MDPs with rewards of opposite sign (heterogeneous).",
        "type": "object",
        "additionalProperties": False,
        "required": ["setting", "n_agents"],
        "properties": {
            "setting": {"enum": ["homogeneous", "heterogeneous"]},
            "n_agents": {"type": "integer", "minimum": 1, "description": "N agents (>= 2 when heterogeneous)"},
            "n_states": {"type": "integer", "minimum": 2, "default": 30},
            "n_actions": {"type": "integer", "minimum": 1, "default": 2},
            "branching": {"type": "integer", "minimum": 1, "default": 2,
                          "description": "successors per (s, a), <= n_states"},
            "n_features": {"type": "integer", "minimum": 1, "default": 8, "description": "d, <= n_states"},
            "gamma": {"type": "number", "minimum": 0, "exclusiveMaximum": 1, "default": 0.95},
            "perturbation": {"type": "number", "minimum": 0, "exclusiveMaximum": 1, "default": 0.05},
            "oracle": {
                "description": "pool = mini-batches of a pre-drawn transition pool (stochastic); "
                               "exact = A_bar_c, b_bar_c (deterministic, no mini-batch noise; "
                               "batch_size 1, no pool).",
                "enum": ["pool", "exact"],
                "default": "pool",
            },
            "pool": {"type": "integer", "minimum": 1, "default": DEFAULT_POOL,
                     "description": "transitions per agent (pool oracle)"},
        },
    }
    test_params = {"setting": "heterogeneous", "n_agents": 3, "n_states": 6, "n_features": 3,
                   "pool": 40}

    @classmethod
    def generate(cls, rng, setting, n_agents, oracle="pool", pool=DEFAULT_POOL, **params):
        """Federated TD(0) on Garnet MDPs (``rfl.data.garnet.generate``); ``oracle`` belongs to
        the problem: the exact oracle draws no transitions (pool 0), the pool oracle ``pool``
        per agent."""
        return garnet.generate(rng, n_agents, setting, pool=0 if oracle == "exact" else pool, **params)

    @classmethod
    def check_params(cls, params):
        """N >= 2 for two MDPs, no pool with the exact oracle, and a Garnet draw the generator
        can make within its redraws (judged from a fixed pilot, ``garnet.admissible_rate``)."""
        p = params
        out = []
        n_states, n_actions = p.get("n_states", 30), p.get("n_actions", 2)
        branching, d = p.get("branching", 2), p.get("n_features", 8)
        if p["setting"] == "heterogeneous" and p["n_agents"] < 2:
            out.append(("n_agents", f"{p['n_agents']} agent(s), but the heterogeneous setting draws "
                                    f"agents from two MDPs; allowed: n_agents >= 2"))
        if p.get("oracle") == "exact" and "pool" in p:
            out.append(("pool", "the exact oracle (A_bar_c, b_bar_c) draws no transitions; allowed: "
                                "pool only with oracle 'pool'"))
        if branching > n_states:
            out.append(("branching", f"{branching} successors per (s, a), but only n_states = "
                                     f"{n_states} states; allowed: 1..{n_states}"))
        elif d > n_states:
            out.append(("n_features", f"{d} features on n_states = {n_states} states: A_bar_c would "
                                      f"be singular; allowed: 1..{n_states}"))
        else:
            n_bases = 2 if p["setting"] == "heterogeneous" else 1
            rate = garnet.admissible_rate(n_states, n_actions, branching, d, n_bases)
            if rate * garnet.MAX_REDRAWS < 10:
                out.append(("n_features", f"{d} features with n_states = {n_states}, branching = "
                                          f"{branching}: only {rate:.1%} of Garnet draws have a "
                                          f"closed class spanned by the features (nonsingular "
                                          f"A_bar_c), too few within the generator's "
                                          f"{garnet.MAX_REDRAWS} draws; allowed: fewer features "
                                          f"or more states"))
        return out

    @classmethod
    def memory_bytes(cls, params):
        """P, R: n_agents*n_states*n_actions*(n_states + 1) float64; the pools: 2*n_agents*pool
        int64 (none with the exact oracle)."""
        nS, nA = params.get("n_states", 30), params.get("n_actions", 2)
        pool = 0 if params.get("oracle") == "exact" else params.get("pool", DEFAULT_POOL)
        return params["n_agents"] * (nS * nA * (nS + 1) + 2 * pool) * 8

    @classmethod
    def from_arrays(cls, arrays, params=None, oracle: str = "pool", **geometry):
        """The problem of a data file; the dataset parameter ``oracle`` (if any) overrides ``oracle``."""
        oracle = (params or {}).get("oracle", oracle)
        return cls(arrays["phi"], arrays["P"], arrays["R"], arrays["policy"], float(arrays["gamma"]),
                   arrays["states"], arrays["next_states"], oracle=oracle, **geometry)

    @staticmethod
    def local_sizes_from(params: dict):
        """(N,) local sizes implied by the dataset parameters: the pool size of every agent
        (pool oracle), or 1 (exact oracle: one mean-field evaluation, no transition drawn)."""
        if params.get("oracle") == "exact":
            return [1] * int(params["n_agents"])
        return [int(params.get("pool", DEFAULT_POOL))] * int(params["n_agents"])

    @classmethod
    def local_sizes_note(cls, params: dict) -> str:
        if params.get("oracle") == "exact":
            return "the exact LSA oracle evaluates A_bar_c theta - b_bar_c once per local step"
        return ""

    def __init__(self, phi, P, R, policy, gamma: float, states, next_states, oracle: str = "pool",
                 retraction: str | None = None, transport: str | None = None):
        if oracle not in self.ORACLES:
            raise ValueError(f"oracle must be one of {self.ORACLES}, got {oracle!r}")
        self.phi = np.asarray(phi, dtype=float)                        # (nS, d)
        self.policy = np.asarray(policy, dtype=int)
        self.gamma = float(gamma)
        self.oracle = oracle
        self.states = np.asarray(states, dtype=np.int64)               # (N, n_pool)
        self.next_states = np.asarray(next_states, dtype=np.int64)
        N, n_pool = self.states.shape
        d = self.phi.shape[1]
        self.manifold = Euclidean(d, retraction=retraction, transport=transport)
        if oracle == "pool" and n_pool < 1:
            raise ValueError("the pool oracle needs at least one transition per agent")
        self.local_sizes = np.full(N, n_pool if oracle == "pool" else 1)

        self.P_pi, self.r_pi = policy_chain(np.asarray(P, dtype=float), np.asarray(R, dtype=float),
                                            self.policy)               # (N, nS, nS), (N, nS)
        self.mu = np.stack([stationary_distribution(self.P_pi[c]) for c in range(N)])
        self.A_bar_local, self.b_bar_local = td_moments(self.phi, self.P_pi, self.r_pi, self.mu,
                                                        self.gamma)    # (N, d, d), (N, d)
        self.theta_star_local = np.linalg.solve(self.A_bar_local, self.b_bar_local[..., None])[..., 0]
        self.A_bar = np.einsum("c,cij->ij", self.weights, self.A_bar_local)
        self.b_bar = self.weights @ self.b_bar_local
        self.theta_star = np.linalg.solve(self.A_bar, self.b_bar)
        self._moments_key, self._moments = None, None      # ``_local_moments``' last agents
        # per pool transition: phi(s), phi(s) - gamma phi(s'), r_c(s), flat over (agent, index),
        # so that a mini-batch's field is three gathers (the oracle's hot path)
        if oracle == "pool":
            f = self.phi[self.states]                                           # (N, n_pool, d)
            self._pool_phi = f.reshape(N * n_pool, d)
            self._pool_dphi = (f - self.gamma * self.phi[self.next_states]).reshape(N * n_pool, d)
            self._pool_r = np.take_along_axis(self.r_pi, self.states, axis=1).ravel()

    # ---- the oracle ---------------------------------------------------------
    def transitions(self, agents: np.ndarray, batch: np.ndarray):
        """Pool transitions (s, s') and rewards r_c(s) of a mini-batch: each ``(s, B)``."""
        s = self.states[agents[:, None], batch]
        s_next = self.next_states[agents[:, None], batch]
        return s, s_next, self.r_pi[agents[:, None], s]

    def minibatch_egrad(self, x, agents, batch):
        """LSA field (1/B) sum_b A(Z_b) x_j - b(Z_b) for each agent row: x (s, d), batch (s, B) -> (s, d).

        A(Z) x - b(Z) = phi(s) [(phi(s) - gamma phi(s'))^T x - r(s)]; not a gradient (module docstring).
        With ``oracle="exact"``: A_bar_c x - b_bar_c, whatever the batch.
        """
        if self.oracle == "exact":
            return self.local_egrad(x, agents)
        from ._batching import kernels

        idx = np.ascontiguousarray(batch, dtype=np.int64)
        agents = np.ascontiguousarray(agents, dtype=np.int64)
        x = np.ascontiguousarray(x, dtype=float)
        return kernels().lsa_field(self._pool_phi, self._pool_dphi, self._pool_r, self.states.shape[1],
                                   agents, idx, x, np.empty_like(x))

    def local_egrad(self, x, agents):
        """Mean field A_bar_c x_c - b_bar_c: ``(s, d)``."""
        A, b = self._local_moments(np.asarray(agents))
        out = np.matmul(A, x[..., None])[..., 0]
        out -= b
        return out

    def _local_moments(self, agents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(A_bar_c, b_bar_c) of the given agents: ``(s, d, d)``, ``(s, d)``. The last agents'
        are kept: every local step of a round asks for the same agents, and with few agents
        the two gathers cost as much as the field itself."""
        key = (agents.dtype.str, agents.shape, agents.tobytes())
        if self._moments_key != key:
            self._moments = self.A_bar_local[agents], self.b_bar_local[agents]
            self._moments_key = key
        return self._moments

    def local_cost(self, x, agents):
        """||x_c - theta*_c||^2, agent c's squared error to its own TD fixed point: ``(s,)``."""
        return ((x - self.theta_star_local[agents]) ** 2).sum(axis=1)

    def pool_moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Empirical means of A(Z), b(Z) over each agent's pool: ``(N, d, d)``, ``(N, d)``."""
        f, f_next = self.phi[self.states], self.phi[self.next_states]           # (N, n_pool, d)
        r = np.take_along_axis(self.r_pi, self.states, axis=1)
        n = self.states.shape[1]
        A = np.einsum("cni,cnj->cij", f, f - self.gamma * f_next) / n
        b = np.einsum("cn,cni->ci", r, f) / n
        return A, b

    # ---- global -------------------------------------------------------------
    def cost(self, x):
        """||x - theta*||^2 (F* = 0): the squared error of Mangold et al.'s plots."""
        return float(((x - self.theta_star) ** 2).sum())

    def egrad(self, x):
        """Mean field A_bar x - b_bar (not the gradient of ``cost``; module docstring)."""
        return self.A_bar @ x - self.b_bar

    def closed_form_optimum(self):
        """theta* = A_bar^{-1} b_bar."""
        return self.theta_star.copy()

    def distance_to_optimum(self, x, x_star):
        return float(np.linalg.norm(x - x_star))

    # ---- FedLSA bias ------------------------------------------------------------
    def fedlsa_bias(self, eta: float, H: int) -> tuple[np.ndarray, float]:
        """Predicted FedLSA bias theta_inf - theta* and its squared norm (slides "Analysis of FedLSA").

        bias = [sum_c p_c (I - Gamma_c)]^{-1} sum_c p_c (I - Gamma_c)(theta*_c - theta*),
        Gamma_c = (I - eta A_bar_c)^H: with full participation, FedLSA's expected
        iterate follows theta <- sum_c p_c [Gamma_c theta + (I - Gamma_c) theta*_c]
        (E over a round's independent draws of the H-step product is Gamma_c), whose
        fixed point minus theta* is ``bias``. Mangold et al. state it with equal weights
        p_c = 1/N (this module's pools are equal-sized); unequal weights make the
        means weighted means, as in FedAvg's aggregation.
        """
        bias = fedlsa_bias(self.A_bar_local, self.theta_star_local, self.theta_star, self.weights,
                           eta, H)
        return bias, float(bias @ bias)

    def pool_atoms(self, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Agent c's pool as distinct transitions (atoms) with their pool frequencies:
        A(Z_k) ``(K, d, d)``, b(Z_k) ``(K, d)``, w_k ``(K,)`` (sum 1). The pool of n transitions
        takes at most n_states * branching values, so moments over atoms are cheap and exact."""
        nS = self.phi.shape[0]
        codes, counts = np.unique(self.states[c] * nS + self.next_states[c], return_counts=True)
        s, s_next = codes // nS, codes % nS
        f, f_next = self.phi[s], self.phi[s_next]
        A = np.einsum("ki,kj->kij", f, f - self.gamma * f_next)
        b = self.r_pi[c, s][:, None] * f
        return A, b, counts / counts.sum()

    def fedlsa_stationary_pool(self, eta: float, H: int, B: int) -> dict:
        """FedLSA's exact stationary E||theta - theta*||^2 with the pool oracle (mini-batches of
        B distinct transitions of each agent's pool, full participation, fixed step eta, H local
        steps), and its bias^2 / variance split.

        Augmented state x = (theta, 1) in R^D, D = d + 1: a local step is x <- G x with
        G = [[I - eta A_hat, eta b_hat], [0, 1]], (A_hat, b_hat) the mean over the batch, so G is
        the without-replacement mean of the pool's g_j. Its moments are exact finite-population
        ones: E[G] = G_bar_c (pool means), E[G (x) G] = G_bar_c (x) G_bar_c + f/B Sigma_c with
        Sigma_c = mean_j (g_j - G_bar_c) (x) (g_j - G_bar_c) and f = (n - B)/(n - 1). A round
        from X = E[x_t x_t^T]: agent c's H steps map vec X by T_c^H (T_c = E[G (x) G]) and its
        mean by Gamma_c = G_bar_c^H; agents draw independently given x_t, so the cross terms
        c != c' of E[x_{t+1} x_{t+1}^T] = sum_{c,c'} p_c p_c' E[x_c x_c'^T] are
        Gamma_c X Gamma_c'^T, and the round map is the linear
            L = Gamma_bar (x) Gamma_bar + sum_c p_c^2 (T_c^H - Gamma_c (x) Gamma_c),
        Gamma_bar = sum_c p_c Gamma_c. Its fixed point with X[d, d] = 1 gives the stationary
        second moment; errors are measured to the exact theta* (not the pool's).

        Returns {plateau, bias_sq, variance, contraction} (contraction: spectral radius of L
        off the constant direction; >= 1 means no stationary law, plateau = inf).
        """
        d = self.phi.shape[1]
        D = d + 1
        N, n = self.states.shape
        B, H = int(B), int(H)
        if not 1 <= B <= n:
            raise ValueError(f"batch size B={B} must be in [1, pool size {n}]")
        f = (n - B) / (n - 1) if n > 1 else 0.0
        G_bar = np.zeros((N, D, D))
        T = np.empty((N, D * D, D * D))
        for c in range(N):
            A, b, w = self.pool_atoms(c)
            g = np.zeros((len(w), D, D))
            g[:, :d, :d] = np.eye(d) - eta * A
            g[:, :d, d] = eta * b
            g[:, d, d] = 1.0
            G_bar[c] = np.einsum("k,kij->ij", w, g)
            dev = g - G_bar[c]
            cov = np.einsum("k,kij,kab->iajb", w, dev, dev).reshape(D * D, D * D)
            T[c] = np.kron(G_bar[c], G_bar[c]) + (f / B) * cov
        TH = np.linalg.matrix_power(T, H)                                  # (N, D^2, D^2)
        Gam = np.linalg.matrix_power(G_bar, H)                             # (N, D, D)
        p = self.weights
        Gam_bar = np.einsum("c,cij->ij", p, Gam)
        L = np.kron(Gam_bar, Gam_bar) + np.einsum(
            "c,cij->ij", p ** 2, TH - np.einsum("cij,cab->ciajb", Gam, Gam).reshape(N, D * D, D * D))
        free = D * D - 1                                                   # X[d, d] = 1 is the last entry
        contraction = float(np.abs(np.linalg.eigvals(L[:free, :free])).max())
        if contraction >= 1:
            return {"plateau": np.inf, "bias_sq": np.inf, "variance": np.inf, "contraction": contraction}
        y = np.linalg.solve(np.eye(free) - L[:free, :free], L[:free, free])
        X = np.append(y, 1.0).reshape(D, D)
        S, m = X[:d, :d], X[:d, d]
        ts = self.theta_star
        plateau = float(np.trace(S) - 2 * ts @ m + ts @ ts)
        bias_sq = float(((m - ts) ** 2).sum())
        return {"plateau": plateau, "bias_sq": bias_sq, "variance": plateau - bias_sq,
                "contraction": contraction}

    def predictions(self, spec: dict) -> dict:
        """Theory for one run spec, recorded in the run's metadata (reports read files only).

        For a federated run (K local steps; on this problem FedLSA = ``fedavg``, and
        SCAFFLSA, or any strategy that follows a linear field) with a fixed step eta and full
        participation: the FedLSA bias for (eta, H = K) (``fedlsa_bias``; SCAFFLSA runs get
        the FedLSA line too, to plot beside them), and the spectral radius of the mean
        one-round map sum_c p_c Gamma_c of FedLSA's expected iterate (< 1: it converges,
        geometrically at that rate per round). Empty for other runs (the bias formula
        assumes a fixed step and every agent in every round).
        """
        alg, step = spec.get("algorithm") or {}, spec.get("step") or {}
        if (alg.get("K") is None or step.get("rule") != "fixed"
                or alg.get("participation") not in (None, self.n_agents)):
            return {}
        eta, H = float(step["alpha"]), int(alg["K"])
        bias, sq = self.fedlsa_bias(eta, H)
        I = np.eye(self.phi.shape[1])
        mean_gamma = sum(w * np.linalg.matrix_power(I - eta * A, H)
                         for w, A in zip(self.weights, self.A_bar_local))
        out = {"eta": eta, "H": H, "oracle": self.oracle, "fedlsa_bias": bias.tolist(),
               "fedlsa_bias_sq": sq,
               "fedlsa_round_contraction": float(np.abs(np.linalg.eigvals(mean_gamma)).max())}
        if self.oracle == "pool" and alg.get("batch_size") is not None:
            # exact with the pool oracle: mini-batch noise included (None: no stationary law)
            st = self.fedlsa_stationary_pool(eta, H, int(alg["batch_size"]))
            fin = {k: (v if np.isfinite(v) else None) for k, v in st.items()}
            out.update({"batch_size": int(alg["batch_size"]), "fedlsa_plateau_pool": fin["plateau"],
                        "fedlsa_bias_sq_pool": fin["bias_sq"], "fedlsa_variance_pool": fin["variance"],
                        "fedlsa_second_moment_contraction": st["contraction"]})
        return out

"""Random Garnet MDPs for federated TD(0) (Mangold et al., SCAFFLSA, experiments).

A Garnet MDP (n_states, n_actions, branching): for every pair (s, a), ``branching``
successor states drawn uniformly without replacement, with transition
probabilities the lengths of a uniform partition of [0, 1] (the gaps between
``branching - 1`` sorted uniforms); rewards R(s, a) uniform in [0, 1].

Federated TD(0) (slides "Example: TD learning with linear approximation"): N
agents evaluate one shared deterministic policy pi with one shared embedding
phi: S -> R^d in N environments (P_c, R_c). Agent c observes
Z = (s, s') with s ~ mu_c (stationary distribution of its chain
P_{c,pi}(s, s') = P_c(s, pi(s), s')), s' ~ P_{c,pi}(s, .), and the reward
r_c(s) = R_c(s, pi(s)); the TD(0) linear stochastic approximation (LSA) oracle is

    A(Z) = phi(s) (phi(s) - gamma phi(s'))^T,      b(Z) = r_c(s) phi(s),

with means (exact, from the MDP)

    A_bar_c = Phi^T D_c (Phi - gamma P_{c,pi} Phi),     b_bar_c = Phi^T D_c r_c,

D_c = diag(mu_c), Phi: (n_states, d). theta*_c = A_bar_c^{-1} b_bar_c is agent
c's TD fixed point, theta* = A_bar^{-1} b_bar with A_bar, b_bar the means over
agents (equal weights) the federated one (slides "Federated LSA").

Settings. ``"homogeneous"``: every agent is a small perturbation of one Garnet
MDP (nonzero entries of P multiplied by 1 + perturbation * U(-1, 1) and
renormalised, so each row keeps exactly ``branching`` successors; rewards plus
perturbation * U(-1, 1)). ``"heterogeneous"``: agents 0 .. ceil(N/2)-1 perturb a
first Garnet MDP (P^1, R^1), the others a second one (P^2, -R^2), i.e. two
different environments with rewards of opposite sign.

Stochastic oracle: a pre-drawn pool of ``pool`` transitions per agent
(``states``, ``next_states``: (N, pool)), which the run's ``AgentSampler``
indexes (mini-batches of distinct pool indices), so that the run's draws come
from the run stream and the vectorised algorithms and the reference loops see
the same transitions. Z takes finitely many values (the atoms (s, s') with
probability q_c(s, s') = mu_c(s) P_{c,pi}(s, s')), and the pool is a
*systematic* (stratified) sample of q_c: u_i = (i + U)/pool, i = 0..pool-1, one
U ~ U(0, 1), mapped through the inverse CDF of q_c, then shuffled. Each atom
appears floor or ceil of pool * q_c(atom) times (so the pool's empirical law is
within 1/pool of q_c atom by atom, and equals q_c in expectation), whereas an
i.i.d. pool errs by O(sqrt(q/pool)); a uniformly drawn pool element is then a
draw from q_c up to that 1/pool rounding, which is why a pool models fresh
i.i.d. transitions faithfully at a size the sampler can index cheaply.

All exact quantities (mu_c, A_bar_c, b_bar_c, theta*_c, theta*) are computed
from the MDP in closed form, never from the pool.
"""

from __future__ import annotations

import functools

import numpy as np

MAX_REDRAWS = 100
DEFAULT_POOL = 10_000      # transitions per agent in the oracle's pool


def garnet(rng: np.random.Generator, n_states: int = 30, n_actions: int = 2,
           branching: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """One Garnet MDP: ``P: (n_states, n_actions, n_states)``, ``R: (n_states, n_actions)``.

    Row P[s, a] has exactly ``branching`` nonzeros, at successors drawn uniformly
    without replacement, valued by the gaps of a uniform partition of [0, 1].
    """
    if not 1 <= branching <= n_states:
        raise ValueError(f"need 1 <= branching <= n_states={n_states}, got {branching}")
    keys = rng.random((n_states, n_actions, n_states))
    succ = np.argpartition(keys, branching - 1, axis=-1)[..., :branching]      # (nS, nA, br) distinct
    cuts = np.sort(rng.random((n_states, n_actions, branching - 1)), axis=-1)
    edges = np.concatenate([np.zeros((n_states, n_actions, 1)), cuts,
                            np.ones((n_states, n_actions, 1))], axis=-1)
    probs = np.diff(edges, axis=-1)                                            # (nS, nA, br), sum 1
    P = np.zeros((n_states, n_actions, n_states))
    np.put_along_axis(P, succ, probs, axis=-1)
    R = rng.random((n_states, n_actions))
    return P, R


def random_policy(rng: np.random.Generator, n_states: int, n_actions: int) -> np.ndarray:
    """A deterministic policy pi: ``(n_states,)`` action indices, uniform."""
    return rng.integers(n_actions, size=n_states)


def random_features(rng: np.random.Generator, n_states: int, n_features: int) -> np.ndarray:
    """Phi: ``(n_states, n_features)`` nonnegative, each row summing to 1."""
    phi = rng.random((n_states, n_features))
    return phi / phi.sum(axis=1, keepdims=True)


def policy_chain(P: np.ndarray, R: np.ndarray, policy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P_pi(s, s') = P(s, pi(s), s') and r_pi(s) = R(s, pi(s)), batched over leading axes.

    P: (..., nS, nA, nS), R: (..., nS, nA), policy: (nS,) -> ``(..., nS, nS)``, ``(..., nS)``.
    """
    s = np.arange(policy.shape[0])
    return P[..., s, policy, :], R[..., s, policy]


def recurrent_class(P_pi: np.ndarray) -> np.ndarray:
    """Boolean mask of the chain's unique closed (recurrent) class: ``(nS, nS) -> (nS,)``.

    From the transition graph alone: s is recurrent iff every state reachable from s
    reaches s back. Raises ValueError when there are several closed classes (then the
    stationary distribution is not unique).
    """
    n = P_pi.shape[0]
    reach = (P_pi > 0) | np.eye(n, dtype=bool)
    for _ in range(int(np.ceil(np.log2(max(n, 2))))):                  # transitive closure
        reach = reach | ((reach.astype(np.int64) @ reach.astype(np.int64)) > 0)
    recurrent = np.all(~reach | reach.T, axis=1)
    members = np.flatnonzero(recurrent)
    if not np.all(reach[np.ix_(members, members)]):
        raise ValueError("the chain has several closed classes: its stationary distribution is not unique")
    return recurrent


def stationary_distribution(P_pi: np.ndarray, tol: float = 1e-10) -> np.ndarray:
    """The unique mu with mu P_pi = mu, sum mu = 1, mu >= 0: ``(nS, nS) -> (nS,)``.

    mu is 0 off the closed class C (``recurrent_class``); on C it solves
    [(P_CC^T - I); 1^T] mu_C = [0; 1] (least squares, exact for an irreducible P_CC).
    """
    C = np.flatnonzero(recurrent_class(P_pi))
    m = C.shape[0]
    lhs = np.vstack([P_pi[np.ix_(C, C)].T - np.eye(m), np.ones((1, m))])
    rhs = np.concatenate([np.zeros(m), [1.0]])
    mu = np.zeros(P_pi.shape[0])
    mu[C] = np.linalg.lstsq(lhs, rhs, rcond=None)[0]
    if mu.min() < -tol or np.abs(mu @ P_pi - mu).max() > tol:
        raise ValueError("stationary distribution solve failed")
    mu = np.clip(mu, 0.0, None)
    return mu / mu.sum()


def td_moments(phi: np.ndarray, P_pi: np.ndarray, r_pi: np.ndarray, mu: np.ndarray,
               gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact TD(0) means, batched over leading axes.

    A_bar = E_mu[phi(s)(phi(s) - gamma phi(s'))^T] = Phi^T D (Phi - gamma P_pi Phi),
    b_bar = E_mu[r(s) phi(s)] = Phi^T D r.
    phi: (nS, d), P_pi: (..., nS, nS), r_pi, mu: (..., nS) -> ``(..., d, d)``, ``(..., d)``.
    """
    next_phi = P_pi @ phi                                              # (..., nS, d): E[phi(s') | s]
    A = np.einsum("...s,si,...sj->...ij", mu, phi, phi - gamma * next_phi)
    b = np.einsum("...s,...s,si->...i", mu, r_pi, phi)
    return A, b


def transition_pool(rng: np.random.Generator, mu: np.ndarray, P_pi: np.ndarray,
                    size: int) -> tuple[np.ndarray, np.ndarray]:
    """A shuffled systematic sample of ``size`` transitions (s, s') ~ mu(s) P_pi(s, s').

    Returns ``states, next_states: (size,)`` int. Each atom (s, s') appears floor or
    ceil of size * mu(s) P_pi(s, s') times (see the module docstring).
    """
    n = mu.shape[0]
    q = (mu[:, None] * P_pi).ravel()                                   # (nS * nS,) atom probabilities
    cdf = np.cumsum(q)
    cdf /= cdf[-1]
    u = (np.arange(size) + rng.random()) / size
    atoms = np.minimum(np.searchsorted(cdf, u, side="right"), n * n - 1)
    atoms = atoms[rng.permutation(size)]
    return atoms // n, atoms % n


def _perturb(rng, P, R, n_agents, perturbation):
    """n_agents perturbed copies: support of P kept, rows renormalised. -> (N, nS, nA, nS), (N, nS, nA)."""
    P = np.broadcast_to(P, (n_agents,) + P.shape)
    R = np.broadcast_to(R, (n_agents,) + R.shape)
    Pc = P * (1.0 + perturbation * rng.uniform(-1.0, 1.0, P.shape))
    Pc /= Pc.sum(axis=-1, keepdims=True)
    Rc = R + perturbation * rng.uniform(-1.0, 1.0, R.shape)
    return Pc, Rc


def _admissible(P, policy, phi) -> bool:
    """The chain of (P, pi) has a unique closed class C, and Phi restricted to C has full
    column rank, so that mu is unique and A_bar = Phi^T D (I - gamma P_pi) Phi is
    nonsingular (x^T A_bar x >= (1 - gamma) ||Phi x||_D^2 > 0 for x != 0)."""
    try:
        C = recurrent_class(policy_chain(P, np.zeros(P.shape[:2]), policy)[0])
    except ValueError:
        return False
    return np.linalg.matrix_rank(phi[C]) == phi.shape[1]


@functools.lru_cache(maxsize=64)
def admissible_rate(n_states: int, n_actions: int, branching: int, n_features: int,
                    n_bases: int, draws: int = 200) -> float:
    """Fraction of ``draws`` (base MDP(s), policy, features) draws, as ``generate`` makes them,
    that are admissible (``_admissible`` for every base): a fixed pilot (``default_rng(0)``),
    so that a configuration can be checked before any data exist (``generate`` redraws at
    most MAX_REDRAWS times)."""
    rng = np.random.default_rng(0)
    ok = 0
    for _ in range(draws):
        bases = [garnet(rng, n_states, n_actions, branching) for _ in range(n_bases)]
        policy = random_policy(rng, n_states, n_actions)
        phi = random_features(rng, n_states, n_features)
        ok += all(_admissible(P, policy, phi) for P, _ in bases)
    return ok / draws


def generate(rng: np.random.Generator, n_agents: int, setting: str, n_states: int = 30,
             n_actions: int = 2, branching: int = 2, n_features: int = 8, gamma: float = 0.95,
             perturbation: float = 0.05, pool: int = DEFAULT_POOL) -> dict[str, np.ndarray]:
    """Arrays of a federated TD(0) instance (N = n_agents, d = n_features, nS = n_states).

    Returns
    -------
    P: (N, nS, nA, nS), R: (N, nS, nA)  agents' MDPs;  policy: (nS,);  phi: (nS, d);
    gamma: ();  group: (N,) base MDP of each agent (0, or 1 in the heterogeneous setting);
    mu: (N, nS) stationary distributions of the agents' policy chains;
    A_bar: (N, d, d), b_bar: (N, d) exact TD(0) means; theta_star_local: (N, d) theta*_c;
    theta_star: (d,) solution of mean_c(A_bar_c) theta = mean_c(b_bar_c);
    states, next_states: (N, pool) the transition pool of the stochastic oracle (pool = 0:
    none, for the exact oracle; the pools are drawn last, so the MDPs do not depend on pool).

    The base MDP(s), the policy and the features are redrawn (deterministically, from
    ``rng``) until each base chain under the policy has a unique closed class C with
    rank Phi[C] = d (``_admissible``: mu unique, every A_bar_c nonsingular); the
    perturbations keep the support of P, hence C and that property.
    """
    if setting not in ("homogeneous", "heterogeneous"):
        raise ValueError(f"setting must be 'homogeneous' or 'heterogeneous', got {setting!r}")
    if n_agents < 1 or (setting == "heterogeneous" and n_agents < 2):
        raise ValueError(f"need n_agents >= 1 (>= 2 when heterogeneous), got {n_agents}")
    if not 0 <= perturbation < 1:
        raise ValueError(f"perturbation must be in [0, 1), got {perturbation!r}")
    if pool < 0:
        raise ValueError(f"pool must be >= 0, got {pool!r}")
    if not 0 <= gamma < 1:
        raise ValueError(f"gamma must be in [0, 1), got {gamma!r}")
    n_bases = 1 if setting == "homogeneous" else 2
    for _ in range(MAX_REDRAWS):
        bases = [garnet(rng, n_states, n_actions, branching) for _ in range(n_bases)]
        policy = random_policy(rng, n_states, n_actions)
        phi = random_features(rng, n_states, n_features)
        if all(_admissible(P, policy, phi) for P, _ in bases):
            break
    else:
        raise RuntimeError(f"no admissible Garnet MDP (unique closed class spanned by the features) "
                           f"in {MAX_REDRAWS} draws")
    if n_bases == 2:
        bases[1] = (bases[1][0], -bases[1][1])                         # opposite rewards
    group = (np.arange(n_agents) >= (n_agents + 1) // 2).astype(int) if n_bases == 2 \
        else np.zeros(n_agents, dtype=int)

    P = np.empty((n_agents, n_states, n_actions, n_states))
    R = np.empty((n_agents, n_states, n_actions))
    for g, (Pg, Rg) in enumerate(bases):
        members = np.flatnonzero(group == g)
        P[members], R[members] = _perturb(rng, Pg, Rg, members.shape[0], perturbation)

    P_pi, r_pi = policy_chain(P, R, policy)
    mu = np.stack([stationary_distribution(P_pi[c]) for c in range(n_agents)])
    A_bar, b_bar = td_moments(phi, P_pi, r_pi, mu, gamma)
    theta_local = np.linalg.solve(A_bar, b_bar[..., None])[..., 0]
    theta_star = np.linalg.solve(A_bar.mean(axis=0), b_bar.mean(axis=0))

    states = np.empty((n_agents, pool), dtype=np.int64)
    next_states = np.empty((n_agents, pool), dtype=np.int64)
    for c in range(n_agents if pool > 0 else 0):                      # pool = 0: no transitions
        states[c], next_states[c] = transition_pool(rng, mu[c], P_pi[c], pool)

    return {"P": P, "R": R, "policy": policy, "phi": phi, "gamma": np.array(float(gamma)),
            "group": group, "mu": mu, "A_bar": A_bar, "b_bar": b_bar,
            "theta_star_local": theta_local, "theta_star": theta_star,
            "states": states, "next_states": next_states}

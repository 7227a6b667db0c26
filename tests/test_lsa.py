"""Federated TD(0) on Garnet MDPs: exact identities, FedLSA's bias, SCAFFLSA (Mangold et al.)."""

import numpy as np
import pytest

from rfl.algorithms import AgentSampler, FedAvg, Fixed
from rfl.algorithms.scafflsa import SCAFFLSA
from rfl.data.garnet import garnet, generate, policy_chain, stationary_distribution
from rfl.problems.lsa import FederatedLSA
from rfl.testing.reference_loops import fedavg_loop, scafflsa_loop

N_AGENTS, N_STATES, N_FEATURES, POOL = 6, 15, 5, 1000


@pytest.fixture(scope="module", params=["homogeneous", "heterogeneous"])
def arrays(request):
    return generate(np.random.default_rng(1), N_AGENTS, request.param, n_states=N_STATES,
                    n_features=N_FEATURES, pool=POOL)


@pytest.fixture(scope="module")
def hetero():
    return generate(np.random.default_rng(1), N_AGENTS, "heterogeneous", n_states=N_STATES,
                    n_features=N_FEATURES, pool=POOL)


def _iterates(alg, x0, rounds, seed):
    return [x0] + [x for _, x, _ in alg.iterate(x0, rounds, np.random.default_rng(seed))]


def _sampler(problem, B, s, seed):
    return AgentSampler(np.random.default_rng(seed), problem.local_sizes, B, s)


# ---- Garnet MDPs --------------------------------------------------------------
@pytest.mark.parametrize("branching", [1, 2, 4])
def test_garnet_rows_are_distributions_with_branching_successors(branching):
    P, R = garnet(np.random.default_rng(branching), n_states=12, n_actions=3, branching=branching)
    assert P.shape == (12, 3, 12) and R.shape == (12, 3)
    np.testing.assert_allclose(P.sum(axis=-1), 1.0, rtol=0, atol=1e-14)
    assert P.min() >= 0 and np.all((P > 0).sum(axis=-1) == branching)
    assert 0 <= R.min() and R.max() <= 1


def test_generated_mdps(arrays):
    """Agents' P keep exactly `branching` successors; mu is stationary; rewards' signs by group."""
    P, R, mu = arrays["P"], arrays["R"], arrays["mu"]
    np.testing.assert_allclose(P.sum(axis=-1), 1.0, rtol=0, atol=1e-14)
    assert P.min() >= 0 and np.all((P > 0).sum(axis=-1) == 2)
    P_pi, _ = policy_chain(P, R, arrays["policy"])
    assert mu.min() >= 0
    np.testing.assert_allclose(mu.sum(axis=1), 1.0, rtol=0, atol=1e-14)
    np.testing.assert_allclose(np.einsum("cs,cst->ct", mu, P_pi), mu, rtol=0, atol=1e-13)
    np.testing.assert_allclose(arrays["phi"].sum(axis=1), 1.0, rtol=0, atol=1e-14)
    assert arrays["phi"].min() >= 0
    group = arrays["group"]
    if group.max() == 1:                                    # heterogeneous: two MDPs, opposite rewards
        assert group.sum() == N_AGENTS // 2
        assert R[group == 0].min() > -0.05 - 1e-12 and R[group == 1].max() < 0.05 + 1e-12
        assert not np.array_equal(P[group == 0][0] > 0, P[group == 1][0] > 0)
    else:                                                   # homogeneous: one support, small perturbations
        assert np.all((P > 0) == (P[0] > 0))
        assert np.abs(R - R[0]).max() <= 0.1 + 1e-12


def test_stationary_distribution_of_a_known_chain():
    """3 -> {0, 1} transient; {0, 1} closed with P = [[.5, .5], [.25, .75]]: mu = (1/3, 2/3, 0)."""
    P = np.array([[0.5, 0.5, 0.0], [0.25, 0.75, 0.0], [0.3, 0.3, 0.4]])
    np.testing.assert_allclose(stationary_distribution(P), [1 / 3, 2 / 3, 0.0], rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="several closed classes"):
        stationary_distribution(np.eye(3))


def test_fixed_points_solve_their_systems(arrays):
    A, b = arrays["A_bar"], arrays["b_bar"]
    np.testing.assert_allclose(np.einsum("cij,cj->ci", A, arrays["theta_star_local"]), b, rtol=0, atol=1e-12)
    np.testing.assert_allclose(A.mean(axis=0) @ arrays["theta_star"], b.mean(axis=0), rtol=0, atol=1e-12)
    p = FederatedLSA.from_arrays(arrays)                    # the problem recomputes them from the MDP
    for mine, theirs in [(p.A_bar_local, A), (p.b_bar_local, b), (p.mu, arrays["mu"]),
                         (p.theta_star_local, arrays["theta_star_local"]),
                         (p.closed_form_optimum(), arrays["theta_star"])]:
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-12)
    assert p.cost(p.theta_star) == 0 and np.abs(p.egrad(p.theta_star)).max() < 1e-12


def test_exact_moments_match_the_pool_and_fresh_draws(arrays):
    """Exact A_bar_c against (i) the whole pool's mean of A(Z), (ii) the oracle as a run draws it.

    (i) The pool is a systematic sample: each atom (s, s') appears floor or ceil of
    POOL * q(s, s') times, so |q_hat - q| < 1/POOL per atom and
    |A_pool - A_bar|_ij <= (#atoms / POOL) max_atoms |A(Z)_ij|.
    (ii) T sampler mini-batches of size B: the mean field at a fixed theta is within 5
    standard errors (i.i.d. standard deviation of A(Z) theta - b(Z) under the exact law,
    over sqrt(T B): conservative for draws without replacement) of A_bar_c theta - b_bar_c.
    """
    p = FederatedLSA.from_arrays(arrays)
    phi, gamma = p.phi, p.gamma
    n = N_STATES
    q = p.mu[:, :, None] * p.P_pi                                          # (N, nS, nS) atom law
    counts = np.zeros((N_AGENTS, n * n))
    for c in range(N_AGENTS):
        counts[c] = np.bincount(p.states[c] * n + p.next_states[c], minlength=n * n)
    expected = POOL * q.reshape(N_AGENTS, -1)
    assert np.all(counts >= np.floor(expected - 1e-9)) and np.all(counts <= np.ceil(expected + 1e-9))

    # A(s, s') = phi(s) (phi(s) - gamma phi(s'))^T for every atom: (nS, nS, d, d)
    A_atoms = np.einsum("si,sj->sij", phi, phi)[:, None] - gamma * np.einsum("si,tj->stij", phi, phi)
    A_pool, b_pool = p.pool_moments()
    n_atoms = (q > 0).sum(axis=(1, 2))
    bound_A = n_atoms[:, None, None] / POOL * np.abs(A_atoms).max(axis=(0, 1))[None]
    assert np.all(np.abs(A_pool - p.A_bar_local) <= bound_A)
    bound_b = n_atoms[:, None] / POOL * (np.abs(p.r_pi)[:, :, None] * phi[None]).max(axis=1)
    assert np.all(np.abs(b_pool - p.b_bar_local) <= bound_b)

    theta = p.theta_star + np.random.default_rng(0).standard_normal(N_FEATURES)
    field = np.einsum("stij,j->sti", A_atoms, theta)[None] - (p.r_pi[:, :, None] * phi[None])[:, :, None]
    mean = p.local_egrad(np.repeat(theta[None], N_AGENTS, 0), np.arange(N_AGENTS))
    var = np.einsum("cst,csti->ci", q, (field - mean[:, None, None]) ** 2)
    T, B = 200, 200
    sampler = _sampler(p, B, None, 3)
    agents = np.arange(N_AGENTS)
    est = sum(p.minibatch_egrad(np.repeat(theta[None], N_AGENTS, 0), agents, sampler.batches(agents))
              for _ in range(T)) / T
    z = np.abs(est - mean) / np.sqrt(var / (T * B))
    assert z.max() < 5, z.max()


def test_minibatch_field_is_the_td_field(hetero):
    """minibatch_egrad over the whole pool = A_pool theta - b_pool; exact oracle ignores the batch."""
    p = FederatedLSA.from_arrays(hetero)
    x = np.random.default_rng(2).standard_normal((N_AGENTS, N_FEATURES))
    agents = np.arange(N_AGENTS)
    A_pool, b_pool = p.pool_moments()
    full = np.repeat(np.arange(POOL)[None], N_AGENTS, 0)
    np.testing.assert_allclose(p.minibatch_egrad(x, agents, full),
                               np.einsum("cij,cj->ci", A_pool, x) - b_pool, rtol=0, atol=1e-12)
    pe = FederatedLSA.from_arrays(hetero, oracle="exact")
    some = np.random.default_rng(3).integers(POOL, size=(3, 4))
    np.testing.assert_allclose(pe.minibatch_egrad(x[:3], agents[[0, 2, 5]], some),
                               np.einsum("cij,cj->ci", p.A_bar_local[[0, 2, 5]], x[:3])
                               - p.b_bar_local[[0, 2, 5]], rtol=0, atol=1e-15)


# ---- FedLSA's bias and SCAFFLSA's fixed point (exact oracles) ----------------
ETA, H = 5.0, 10


def test_fedlsa_bias_vanishes_with_one_local_step(hetero):
    """H = 1: sum_c (eta A_c)(theta*_c - theta*) = eta (b_bar - A_bar theta*) = 0."""
    p = FederatedLSA.from_arrays(hetero)
    assert p.fedlsa_bias(ETA, 1)[1] < 1e-20
    bias, sq = p.fedlsa_bias(ETA, H)
    assert sq == pytest.approx(bias @ bias) and sq > 1e-2


def test_fedlsa_fixed_point_is_theta_star_plus_bias(hetero):
    """theta <- mean_c Gamma_c theta + mean_c (I - Gamma_c) theta*_c: fixed point theta* + bias."""
    p = FederatedLSA.from_arrays(hetero, oracle="exact")
    x0 = np.zeros(N_FEATURES)
    x = _iterates(FedAvg(p, Fixed(ETA), H, 1), x0, 400, seed=0)
    bias, sq = p.fedlsa_bias(ETA, H)
    np.testing.assert_allclose(x[-1] - p.theta_star, bias, rtol=0, atol=1e-10)
    assert np.linalg.norm(bias) > 0.1                        # the bias is there, far above 1e-10


@pytest.mark.parametrize("participation", [None, 4])
def test_scafflsa_fixed_point_is_theta_star(hetero, participation):
    p = FederatedLSA.from_arrays(hetero, oracle="exact")
    alg = SCAFFLSA(p, Fixed(ETA), H, 1, participation)
    x = _iterates(alg, np.zeros(N_FEATURES), 600, seed=1)
    np.testing.assert_allclose(x[-1], p.theta_star, rtol=0, atol=1e-10)
    # the control variates reach xi_c = A_bar_c theta* - b_bar_c (the local drift at theta*), mean 0
    xi = alg.control_variates
    np.testing.assert_allclose(xi, p.local_egrad(np.repeat(p.theta_star[None], N_AGENTS, 0),
                                                 np.arange(N_AGENTS)), rtol=0, atol=1e-10)
    assert np.abs(p.weights @ xi).max() < 1e-12
    assert np.abs(xi).max() > 1e-2                          # heterogeneous: nonzero corrections


# ---- vectorised algorithms against the per-agent loops ------------------------
@pytest.mark.parametrize("participation", [None, 3])
def test_scafflsa_matches_reference_loop(hetero, participation):
    p = FederatedLSA.from_arrays(hetero)
    x0 = p.initial_point(np.random.default_rng(4))
    step, K, B, rounds = Fixed(2.0), 4, 3, 12
    alg = SCAFFLSA(p, step, K, B, participation)
    vec = _iterates(alg, x0, rounds, seed=7)
    xi = {}
    ref = scafflsa_loop(p, x0, step, K, rounds, _sampler(p, B, participation, 7), xi=xi)
    np.testing.assert_allclose(np.array(vec), np.array(ref), rtol=0, atol=1e-12)
    np.testing.assert_allclose(alg.control_variates, np.array([xi[c] for c in range(N_AGENTS)]),
                               rtol=0, atol=1e-12)
    assert np.abs(vec[-1] - vec[0]).max() > 0.1               # the iterates actually moved
    assert np.abs(alg.control_variates).max() > 1e-3         # and the control variates too
    again = _iterates(alg, x0, rounds, seed=7)               # iterate() resets the control variates
    np.testing.assert_array_equal(np.array(again), np.array(vec))


@pytest.mark.parametrize("participation", [None, 3])
def test_fedavg_on_lsa_is_fedlsa(hetero, participation):
    p = FederatedLSA.from_arrays(hetero)
    x0 = p.initial_point(np.random.default_rng(5))
    step, K, B, rounds = Fixed(2.0), 4, 3, 12
    vec = _iterates(FedAvg(p, step, K, B, participation), x0, rounds, seed=8)
    ref = fedavg_loop(p, x0, step, K, rounds, _sampler(p, B, participation, 8))   # FedLSA, oracle rebuilt
    np.testing.assert_allclose(np.array(vec), np.array(ref), rtol=0, atol=1e-12)
    assert np.abs(vec[-1] - vec[0]).max() > 0.1


def test_scafflsa_counters(hetero):
    p = FederatedLSA.from_arrays(hetero)
    for participation, per_round in [(None, 2 * N_AGENTS * N_FEATURES), (3, 3 * 3 * N_FEATURES)]:
        alg = SCAFFLSA(p, Fixed(1.0), 4, 2, participation)
        *_, (t, x, counters) = alg.iterate(np.zeros(N_FEATURES), 5, np.random.default_rng(0))
        s = participation or N_AGENTS
        assert counters.grad_evals == 5 * s * 4 * 2 and counters.floats == 5 * per_round


def test_local_sizes_from_params(hetero):
    p = FederatedLSA.from_arrays(hetero)
    assert FederatedLSA.local_sizes_from({"n_agents": N_AGENTS, "setting": "heterogeneous",
                                          "pool": POOL}) == list(p.local_sizes)
    assert p.name == "lsa" and p.manifold.name == "euclidean"


def test_exact_field_follows_the_asked_agents(hetero):
    """The mean field A_bar_c x - b_bar_c for whichever agents are asked, in any order and
    with repeats, call after call (the gathered moments of the last agents are reused)."""
    p = FederatedLSA.from_arrays(hetero, {"oracle": "exact"})
    rng = np.random.default_rng(0)
    for agents in ([0, 1, 2, 3, 4, 5], [5, 0, 3], [5, 0, 3], [2, 2, 4], [0, 1, 2, 3, 4, 5]):
        agents = np.array(agents)
        x = rng.standard_normal((len(agents), N_FEATURES))
        got = p.local_egrad(x, agents)
        for row, c in enumerate(agents):
            np.testing.assert_allclose(got[row], p.A_bar_local[c] @ x[row] - p.b_bar_local[c],
                                       rtol=1e-13, atol=1e-14)


def test_scafflsa_follows_the_decaying_rule(hetero):
    """SCAFFLSA with the decaying step (5.2) equals the per-agent loop with the same rule."""
    from rfl.algorithms import Decaying
    p = FederatedLSA.from_arrays(hetero)
    x0 = p.initial_point(np.random.default_rng(4))
    step, K, B, rounds = Decaying(2.0, 1.0, 2), 3, 3, 8
    vec = _iterates(SCAFFLSA(p, step, K, B, 3), x0, rounds, seed=5)
    ref = scafflsa_loop(p, x0, step, K, rounds, _sampler(p, B, 3, 5), xi={})
    np.testing.assert_allclose(np.array(vec), np.array(ref), rtol=0, atol=1e-12)
    fixed = _iterates(SCAFFLSA(p, Fixed(2.0), K, B, 3), x0, rounds, seed=5)
    assert np.abs(np.array(vec) - np.array(fixed)).max() > 1e-6

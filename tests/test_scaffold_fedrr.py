"""Scaffold (option II) and Federated Richardson-Romberg against mathematics: Scaffold with one
agent is SGD, its fixed point with exact gradients is theta* (no heterogeneity bias), its
vectorised round is the per-agent loop; FedRR with equal chains is that chain's average, on
quadratics with exact gradients it is 2 theta_bar_eta - theta_bar_2eta of two FedAvg runs, its
bias is O(eta^2) where FedAvg's is O(eta); the averages and the extrapolation on a manifold."""

import numpy as np
import pytest

from rfl.algorithms import FedAvg, FedRR, Fixed, RFedAGSRR, SCAFFLSA, Scaffold
from rfl.algorithms.averaging import RunningMean, extrapolate
from rfl.algorithms.sampling import AgentSampler, batch_indices
from rfl.manifolds import Euclidean
from rfl.testing.reference_loops import scaffold_loop


class Quadratics:
    """A test-only federated problem: agent c's sample i has f_{c,i}(x) = 1/2 (x - z_{c,i})^T
    A_c (x - z_{c,i}), so a mini-batch gradient is A_c (x - mean of the batch's z) and the local
    minimiser is theta*_c = mean_i z_{c,i}; theta* = (sum_c p_c A_c)^{-1} sum_c p_c A_c theta*_c."""

    field = "gradient"

    def __init__(self, A, z, sizes):
        self.A = np.asarray(A, dtype=float)                          # (N, d, d)
        self.z = np.asarray(z, dtype=float)                          # (N, n_max, d)
        self.local_sizes = np.asarray(sizes)
        self.manifold = Euclidean(self.A.shape[1])
        self.theta_local = np.stack([self.z[c, :n].mean(0) for c, n in enumerate(self.local_sizes)])
        p = self.weights
        self.theta_star = np.linalg.solve(np.einsum("c,cij->ij", p, self.A),
                                          np.einsum("c,cij,cj->i", p, self.A, self.theta_local))

    @property
    def n_agents(self):
        return len(self.local_sizes)

    @property
    def weights(self):
        return self.local_sizes / self.local_sizes.sum()

    def minibatch_egrad(self, x, agents, batch):
        idx = np.asarray(batch)
        zbar = self.z[np.asarray(agents)[:, None], idx].mean(axis=1)        # (s, d)
        return np.einsum("sij,sj->si", self.A[agents], x - zbar)

    def fedavg_fixed_point(self, eta, K):
        """theta = sum_c p_c [G_c theta + (I - G_c) theta*_c], G_c = (I - eta A_c)^K: FedAvg's
        limit with exact gradients (the slides' "For Quadratics" bias, with weights p_c)."""
        d = self.A.shape[1]
        M = np.stack([np.eye(d) - np.linalg.matrix_power(np.eye(d) - eta * A, K) for A in self.A])
        p = self.weights
        return np.linalg.solve(np.einsum("c,cij->ij", p, M), np.einsum("c,cij,cj->i", p, M, self.theta_local))


def quadratics(rng, N=4, d=3, sizes=(6, 6, 6, 6), spread=1.0):
    """Heterogeneous agents: different curvatures A_c (eigenvalues in [0.5, 2]) and minimisers."""
    A = []
    for _ in range(N):
        q, _ = np.linalg.qr(rng.standard_normal((d, d)))
        A.append(q @ np.diag(rng.uniform(0.5, 2.0, d)) @ q.T)
    centres = spread * rng.standard_normal((N, 1, d))
    z = centres + 0.5 * rng.standard_normal((N, max(sizes), d))
    return Quadratics(A, z, sizes)


def run(alg, x0, rounds, seed):
    return np.array([x0] + [np.array(x, copy=True) for _, x, _ in
                            alg.iterate(x0, rounds, np.random.default_rng(seed))])


# ---- Scaffold ------------------------------------------------------------------------
def test_scaffold_with_one_agent_is_sgd():
    """N = 1: c_1 = c after every round, so the corrections vanish and a round is K SGD steps
    on the agent's mini-batches (drawn as the sampler draws them)."""
    p = quadratics(np.random.default_rng(0), N=1, sizes=(10,))
    eta, K, B, rounds, seed = 0.3, 3, 2, 6, 4
    x0 = np.array([3.0, -2.0, 1.0])
    xs = run(Scaffold(p, Fixed(eta), K, B), x0, rounds, seed)
    sampler = AgentSampler(np.random.default_rng(seed), p.local_sizes, B)
    x, sgd = x0.copy(), [x0]
    for step in range(rounds * K):                 # local step k of round t: draw t 2^32 + k
        batch = batch_indices(sampler.key, (step // K) * 2 ** 32 + step % K, np.array([0]), p.local_sizes, B)[0]
        x = x - eta * p.A[0] @ (x - p.z[0, batch].mean(0))
        if (step + 1) % K == 0:
            sgd.append(x)
    np.testing.assert_allclose(xs, np.array(sgd), rtol=0, atol=1e-13)
    assert np.abs(xs[-1] - x0).max() > 1.0


@pytest.mark.parametrize("participation", [None, 2])
def test_scaffold_fixed_point_is_theta_star_where_fedavg_is_biased(participation):
    """Exact gradients (B = N_c), heterogeneous quadratics, K = 5: FedAvg converges to its
    biased fixed point (closed form), Scaffold to theta* itself, with and without sampling."""
    p = quadratics(np.random.default_rng(1))
    eta, K, x0 = 0.1, 5, np.zeros(3)
    fedavg = run(FedAvg(p, Fixed(eta), K, 6, participation), x0, 400, 0)[-1]
    if participation is None:
        np.testing.assert_allclose(fedavg, p.fedavg_fixed_point(eta, K), rtol=0, atol=1e-10)
    assert np.linalg.norm(fedavg - p.theta_star) > 1e-2                   # FedAvg's bias is there
    alg = Scaffold(p, Fixed(eta), K, 6, participation)
    scaffold = run(alg, x0, 1500, 0)[-1]
    np.testing.assert_allclose(scaffold, p.theta_star, rtol=0, atol=1e-10)
    # at the fixed point c_i - c is agent i's gradient at theta* (its drift), and c = sum_i p_i c_i
    drift = np.einsum("cij,cj->ci", p.A, p.theta_star[None] - p.theta_local)
    np.testing.assert_allclose(alg.control_variates - alg.server_control, drift, rtol=0, atol=1e-9)
    np.testing.assert_allclose(alg.server_control, p.weights @ alg.control_variates, rtol=0, atol=1e-12)


@pytest.mark.parametrize("participation,server_step", [(None, 1.0), (2, 1.0), (3, 0.5)])
def test_scaffold_matches_the_per_agent_loop(participation, server_step):
    """Unequal pools (weights p_i = N_i / N), mini-batches, sampled agents, a server step: the
    vectorised round is Karimireddy et al.'s Algorithm 1 written agent by agent, iterates and
    control variates."""
    p = quadratics(np.random.default_rng(2), sizes=(5, 8, 6, 9))
    eta, K, B, rounds, seed, x0 = 0.2, 3, 2, 8, 9, np.ones(3)
    alg = Scaffold(p, Fixed(eta), K, B, participation, server_step=server_step)
    xs = run(alg, x0, rounds, seed)
    controls = {}
    ref = scaffold_loop(p, x0, Fixed(eta), K, rounds,
                        AgentSampler(np.random.default_rng(seed), p.local_sizes, B, participation),
                        server_step=server_step, controls=controls)
    np.testing.assert_allclose(xs, np.array(ref), rtol=0, atol=1e-12)
    np.testing.assert_allclose(alg.control_variates, np.array([controls[j] for j in range(4)]),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(alg.server_control, controls["c"], rtol=0, atol=1e-12)
    assert np.abs(alg.server_control).max() > 1e-3 and np.abs(xs[-1] - x0).max() > 0.1


def test_scafflsa_is_scaffold_with_every_agent():
    """With every agent and eta_g = 1, SCAFFLSA's xi_c are Scaffold's c_i - c: same iterates."""
    p = quadratics(np.random.default_rng(3), sizes=(5, 8, 6, 9))
    a = run(Scaffold(p, Fixed(0.2), 3, 2), np.ones(3), 10, 1)
    b = run(SCAFFLSA(p, Fixed(0.2), 3, 2), np.ones(3), 10, 1)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    c = run(Scaffold(p, Fixed(0.2), 3, 2, 2), np.ones(3), 10, 1)       # sampled: they differ
    d = run(SCAFFLSA(p, Fixed(0.2), 3, 2, 2), np.ones(3), 10, 1)
    assert np.abs(c - d).max() > 1e-6


def test_scaffold_counters():
    p = quadratics(np.random.default_rng(4))
    *_, (_, _, c) = Scaffold(p, Fixed(0.1), 3, 2, 2).iterate(np.zeros(3), 5, np.random.default_rng(0))
    assert (c.grad_evals, c.floats) == (5 * 2 * 3 * 2, 5 * 4 * 2 * 3)


# ---- averages and the extrapolation --------------------------------------------------
def test_running_mean_is_the_mean_after_the_burn_in():
    xs = np.random.default_rng(5).standard_normal((7, 3))
    mean = RunningMean(Euclidean(3), 2)
    got = [np.array(mean.update(t, x), copy=True) for t, x in enumerate(xs)]
    for t in range(7):
        want = xs[t] if t < 2 else xs[2:t + 1].mean(0)
        np.testing.assert_allclose(got[t], want, rtol=0, atol=1e-15)
    x = xs[0]
    assert RunningMean(Euclidean(3), None).update(4, x) is x           # no average: the iterate
    np.testing.assert_allclose(extrapolate(Euclidean(3), xs[0], xs[1]), 2 * xs[0] - xs[1], rtol=0, atol=1e-15)


def test_sphere_mean_and_extrapolation_are_geodesic():
    """On the sphere (Exp/Log): the mean of two points is their geodesic midpoint; the
    extrapolation of (a, b) is the point c with a the midpoint of b and c."""
    from rfl.manifolds import Sphere
    m = Sphere(3)
    a = np.array([1.0, 0.0, 0.0])
    b = np.array([np.cos(0.6), np.sin(0.6), 0.0])
    mean = RunningMean(m, 0)
    mean.update(0, a)
    np.testing.assert_allclose(mean.update(1, b), [np.cos(0.3), np.sin(0.3), 0.0], rtol=0, atol=1e-14)
    np.testing.assert_allclose(extrapolate(m, a, b), [np.cos(0.6), -np.sin(0.6), 0.0], rtol=0, atol=1e-14)


# ---- FedRR ---------------------------------------------------------------------------------
@pytest.mark.parametrize("burn_in", [0, 3])
def test_fedrr_with_equal_chains_is_the_chains_average(burn_in):
    """Both chains at step eta (the 2 eta-chain's step set to eta): 2 a - a = a, the Polyak-Ruppert
    average of FedAvg's run of the same seed (the eta-chain takes the run's draws)."""
    p = quadratics(np.random.default_rng(6))
    eta, K, B, rounds, seed, x0 = 0.2, 2, 3, 10, 3, np.ones(3)
    rr = FedRR(p, Fixed(eta), K, B, 3, burn_in=burn_in)
    rr.coarse.step_size = Fixed(eta)
    got = run(rr, x0, rounds, seed)
    want = run(FedAvg(p, Fixed(eta), K, B, 3, average_after=burn_in), x0, rounds, seed)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)
    plain = run(FedAvg(p, Fixed(eta), K, B, 3), x0, rounds, seed)
    assert np.abs(plain[-1] - want[-1]).max() > 1e-3                      # the average is not the iterate


def test_fedrr_is_the_extrapolation_of_two_fedavg_runs():
    """Exact gradients: FedRR's point is 2 theta_bar_eta - theta_bar_2eta of two separate FedAvg
    runs (steps eta and 2 eta, averaged after the burn-in), and its counters are twice FedAvg's."""
    p = quadratics(np.random.default_rng(7))
    eta, K, rounds, b, x0 = 0.05, 4, 60, 20, np.zeros(3)
    got = run(FedRR(p, Fixed(eta), K, 6, burn_in=b), x0, rounds, 0)
    fine = run(FedAvg(p, Fixed(eta), K, 6, average_after=b), x0, rounds, 0)
    coarse = run(FedAvg(p, Fixed(2 * eta), K, 6, average_after=b), x0, rounds, 0)
    np.testing.assert_allclose(got, 2 * fine - coarse, rtol=0, atol=1e-13)
    *_, (_, _, c2) = FedRR(p, Fixed(eta), K, 2, 3).iterate(x0, 5, np.random.default_rng(1))
    *_, (_, _, c1) = FedAvg(p, Fixed(eta), K, 2, 3).iterate(x0, 5, np.random.default_rng(1))
    assert (c2.grad_evals, c2.floats) == (2 * c1.grad_evals, 2 * c1.floats)


def test_fedrr_bias_is_second_order_where_fedavg_is_first_order():
    """Exact gradients, heterogeneous quadratics: FedAvg's limit minus theta* halves when eta
    halves (O(eta)); FedRR's limit 2 theta_eta - theta_2eta (closed form) quarters (O(eta^2)),
    and a long FedRR run reaches it."""
    p = quadratics(np.random.default_rng(8))
    K = 4
    bias = {eta: np.linalg.norm(p.fedavg_fixed_point(eta, K) - p.theta_star) for eta in (0.02, 0.01)}
    rr = {eta: np.linalg.norm(2 * p.fedavg_fixed_point(eta, K) - p.fedavg_fixed_point(2 * eta, K)
                              - p.theta_star) for eta in (0.02, 0.01)}
    assert bias[0.02] / bias[0.01] == pytest.approx(2.0, rel=0.05)
    assert rr[0.02] / rr[0.01] == pytest.approx(4.0, rel=0.1)
    x = run(FedRR(p, Fixed(0.02), K, 6, burn_in=1500), np.zeros(3), 1600, 0)[-1]
    np.testing.assert_allclose(x, 2 * p.fedavg_fixed_point(0.02, K) - p.fedavg_fixed_point(0.04, K),
                               rtol=0, atol=1e-9)
    assert np.linalg.norm(x - p.theta_star) < 0.2 * bias[0.02]


@pytest.mark.parametrize("shared", [True, False])
def test_fedrr_stream_sharing(shared):
    """shared_stream: the 2 eta-chain is the FedAvg run at 2 eta of the same seed (same
    participants and batches); without it, it draws other ones."""
    p = quadratics(np.random.default_rng(9), sizes=(8, 8, 8, 8))
    eta, K, B, rounds, seed, x0 = 0.1, 2, 2, 6, 5, np.ones(3)
    rr = FedRR(p, Fixed(eta), K, B, 2, shared_stream=shared)
    run(rr, x0, rounds, seed)
    fine = run(FedAvg(p, Fixed(eta), K, B, 2), x0, rounds, seed)[-1]
    coarse = run(FedAvg(p, Fixed(2 * eta), K, B, 2), x0, rounds, seed)[-1]
    np.testing.assert_allclose(rr.x_fine, fine, rtol=0, atol=1e-13)
    if shared:
        np.testing.assert_allclose(rr.x_coarse, coarse, rtol=0, atol=1e-13)
    else:
        assert np.abs(rr.x_coarse - coarse).max() > 1e-6


def test_rfedags_rr_on_the_sphere_stays_on_it_and_extrapolates():
    """RFedAGS-RR records R_a(-R_a^{-1}(b)) of the two chains' inductive means: on the sphere
    a point at the same geodesic distance from a as b, on the other side."""
    from rfl.data.cpesph import generate
    from rfl.problems.cpesph import CPESph
    p = CPESph(generate(np.random.default_rng(5), d=5, nu=0.2, S=4, N=10, heterogeneous=True)["Z"])
    rr = RFedAGSRR(p, Fixed(0.2), 2, 3, burn_in=2)
    xs = run(rr, p.initial_point(np.random.default_rng(0)), 6, 1)
    assert p.manifold.distance_from_manifold(xs).max() < 1e-12
    a, b = rr.mean_fine.mean, rr.mean_coarse.mean
    m = p.manifold
    np.testing.assert_allclose(m.dist(a[None], xs[-1][None]), m.dist(a[None], b[None]), rtol=1e-10)
    np.testing.assert_allclose(m.log(a[None], xs[-1][None]), -m.log(a[None], b[None]), rtol=0, atol=1e-12)


def test_fedrr_control_records_the_eta_average():
    """records = eta_average: the eta-chain's Polyak-Ruppert average, FedAvg's averaged run."""
    p = quadratics(np.random.default_rng(10))
    got = run(FedRR(p, Fixed(0.1), 2, 3, 2, burn_in=2, records="eta_average"), np.ones(3), 8, 4)
    want = run(FedAvg(p, Fixed(0.1), 2, 3, 2, average_after=2), np.ones(3), 8, 4)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)

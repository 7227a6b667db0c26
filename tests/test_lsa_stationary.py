"""FedLSA's exact stationary error with the pool oracle (``FederatedLSA.fedlsa_stationary_pool``),
checked against: the deterministic fixed point when the batch is the whole pool, the classical
stationary covariance of single-agent LSA (a Lyapunov equation solved here), and a Monte Carlo
of many independent FedLSA runs drawing batches without replacement."""

import numpy as np
import pytest

from rfl.data.garnet import generate
from rfl.problems.lsa import FederatedLSA


def _problem(n_agents, setting, pool, n_states=6, n_features=3, seed=3):
    a = generate(np.random.default_rng(seed), n_agents, setting, n_states=n_states,
                 n_features=n_features, pool=pool)
    return FederatedLSA(a["phi"], a["P"], a["R"], a["policy"], float(a["gamma"]), a["states"],
                        a["next_states"], oracle="pool")


def _per_transition(problem, c):
    """A(Z_j), b(Z_j) of every transition of agent c's pool: (n, d, d), (n, d)."""
    f, fn = problem.phi[problem.states[c]], problem.phi[problem.next_states[c]]
    A = np.einsum("ni,nj->nij", f, f - problem.gamma * fn)
    b = problem.r_pi[c, problem.states[c]][:, None] * f
    return A, b


@pytest.mark.parametrize("H", [1, 4, 25])
def test_full_batch_is_the_deterministic_fixed_point_of_the_pool_moments(H):
    """B = pool size: no noise, so the plateau is ||theta*_pool + bias_pool - theta*||^2 with
    bias_pool = [mean_c (I - Gamma_c)]^-1 mean_c (I - Gamma_c)(theta*_c,pool - theta*_pool),
    Gamma_c = (I - eta A_c,pool)^H, and the variance is 0."""
    pr = _problem(3, "heterogeneous", pool=40)
    eta = 0.5
    A, b = pr.pool_moments()
    ts_local = np.linalg.solve(A, b[..., None])[..., 0]
    ts_pool = np.linalg.solve(A.mean(0), b.mean(0))
    eye = np.eye(A.shape[1])
    M = np.stack([eye - np.linalg.matrix_power(eye - eta * Ac, H) for Ac in A])
    bias = np.linalg.solve(M.mean(0), np.einsum("cij,cj->i", M, ts_local - ts_pool) / len(A))
    expected = float(((ts_pool + bias - pr.theta_star) ** 2).sum())
    st = pr.fedlsa_stationary_pool(eta, H, B=40)
    assert st["plateau"] == pytest.approx(expected, rel=1e-9)
    assert st["bias_sq"] == pytest.approx(expected, rel=1e-9)
    assert abs(st["variance"]) <= 1e-9 * expected
    assert st["plateau"] > 1e-6        # the pool's moments differ from the exact ones


@pytest.mark.parametrize("B", [1, 3, 20])
def test_one_agent_one_step_is_the_lyapunov_covariance_of_lsa(B):
    """N = 1, H = 1: theta <- theta - eta (A_hat theta - b_hat) around theta*_pool has
    stationary covariance P = M_bar P M_bar^T + (f/B) mean_j [eta^2 (a_j - A) P (a_j - A)^T +
    eta^2 w_j w_j^T], w_j = a_j theta*_pool - b_j, f = (n - B)/(n - 1) (without replacement);
    E||theta - theta*||^2 = tr P + ||theta*_pool - theta*||^2."""
    pr = _problem(1, "homogeneous", pool=30)
    eta, n = 0.3, 30
    a, b = _per_transition(pr, 0)
    A, bb = a.mean(0), b.mean(0)
    tp = np.linalg.solve(A, bb)
    f = (n - B) / (n - 1)
    dev, w = a - A, a @ tp - b
    d = A.shape[0]
    Mb = np.eye(d) - eta * A
    # vec(P) = K vec(P) + q, solved directly
    K = np.kron(Mb, Mb) + (f / B) * eta ** 2 * np.einsum("nij,nab->iajb", dev, dev).reshape(d * d, d * d) / n
    q = (f / B) * eta ** 2 * np.einsum("ni,nj->ij", w, w).ravel() / n
    P = np.linalg.solve(np.eye(d * d) - K, q).reshape(d, d)
    expected = np.trace(P) + float(((tp - pr.theta_star) ** 2).sum())
    st = pr.fedlsa_stationary_pool(eta, 1, B)
    assert st["plateau"] == pytest.approx(expected, rel=1e-9)
    assert st["variance"] == pytest.approx(np.trace(P), rel=1e-6, abs=1e-9 * expected)
    if B < n:
        assert np.trace(P) > 1e-3 * expected          # the noise term is really there


def test_monte_carlo_of_independent_fedlsa_runs():
    """2 agents, 4 states, pool 12, B = 3, H = 3: R independent FedLSA chains (batches drawn
    without replacement by argsort of uniforms, the problem's mini-batch field, equal-weight
    averaging), mean of ||theta_T - theta*||^2 at a round T past the transient, within 4
    standard errors of the prediction; a prediction that forgets the without-replacement
    factor or the cross-agent terms falls outside."""
    pr = _problem(2, "heterogeneous", pool=12, n_states=4, n_features=2, seed=11)
    eta, H, B, R, T = 8.0, 3, 3, 40_000, 60
    st = pr.fedlsa_stationary_pool(eta, H, B)
    assert st["contraction"] < 0.75                # 0.75^60: the start is forgotten
    rng = np.random.default_rng(0)
    N, n = pr.states.shape
    d = pr.phi.shape[1]
    theta = np.zeros((R, d))
    agents = np.tile(np.arange(N), R)
    for _ in range(T):
        x = np.repeat(theta, N, axis=0)                              # (R N, d), agent rows
        for _ in range(H):
            batch = np.sort(rng.random((R * N, n)).argsort(axis=1)[:, :B], axis=1)
            x = x - eta * pr.minibatch_egrad(x, agents, batch)
        theta = x.reshape(R, N, d).mean(axis=1)
    err = ((theta - pr.theta_star) ** 2).sum(axis=1)
    se = err.std(ddof=1) / np.sqrt(R)
    assert abs(err.mean() - st["plateau"]) <= 4 * se, (err.mean(), st["plateau"], se)
    assert st["variance"] > 10 * se                   # the test can see the variance term
    # with replacement (f = 1) the prediction would differ by (1/f - 1) x variance >> 4 se
    f = (n - B) / (n - 1)
    assert st["variance"] * (1 / f - 1) > 8 * se


def test_predictions_carry_the_pool_plateau_and_refuse_a_bad_batch():
    pr = _problem(3, "heterogeneous", pool=40)
    spec = {"algorithm": {"name": "fedavg", "K": 5, "batch_size": 4}, "step": {"rule": "fixed", "alpha": 0.5}}
    pred = pr.predictions(spec)
    st = pr.fedlsa_stationary_pool(0.5, 5, 4)
    assert pred["fedlsa_plateau_pool"] == st["plateau"] and pred["batch_size"] == 4
    assert pred["fedlsa_plateau_pool"] == pytest.approx(pred["fedlsa_bias_sq_pool"] + pred["fedlsa_variance_pool"])
    with pytest.raises(ValueError, match="batch size"):
        pr.fedlsa_stationary_pool(0.5, 5, 41)

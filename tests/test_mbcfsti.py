"""MBCFSti: symmetric Gaussian data, gradients by finite differences, the Brockett minimiser."""

import numpy as np
import pytest

from rfl.data.mbcfsti import generate
from rfl.problems.mbcfsti import MBCFSti

d, p_, S, N = 6, 2, 3, 4


@pytest.fixture(scope="module")
def arrays():
    return generate(np.random.default_rng(3), d=d, p=p_, S=S, N=N)


@pytest.fixture(scope="module")
def prob(arrays):
    return MBCFSti.from_arrays(arrays)


H = np.diag(np.arange(p_, 0, -1.0))          # diag(p, ..., 1)


def brockett(x, a):
    return float(np.trace(x.T @ a @ x @ H))


def mc_close(samples, expected, n_se=6.0):
    """|mean - expected| < n_se standard errors (SE estimated from the sample)."""
    samples = np.asarray(samples, dtype=float).ravel()
    se = samples.std(ddof=1) / np.sqrt(samples.size)
    assert abs(samples.mean() - expected) < n_se * se, (samples.mean(), expected, se)


def test_data_shapes_and_symmetry(arrays):
    A = arrays["A"]
    assert A.shape == (S, N, d, d) and int(arrays["p"]) == p_
    np.testing.assert_array_equal(A, A.swapaxes(-1, -2))


def test_data_moments():
    """A = B + B^T, B standard normal: E[A_kl] = 0, Var[A_kk] = Var[2 B_kk] = 4,
    Var[A_kl] = Var[B_kl + B_lk] = 2 (k != l); distinct entries and distinct samples are
    uncorrelated. 10000 matrices, diagonal / upper-triangular entries pooled; tolerance
    6 standard errors estimated from the sample (squared values for the variances)."""
    A = generate(np.random.default_rng(9), d=4, p=2, S=50, N=200)["A"].reshape(-1, 4, 4)
    diag = np.diagonal(A, axis1=1, axis2=2)
    off = A[:, *np.triu_indices(4, 1)]
    mc_close(diag, 0.0)
    mc_close(off, 0.0)
    mc_close(diag ** 2, 4.0)
    mc_close(off ** 2, 2.0)
    mc_close(A[:, 0, 1] * A[:, 2, 3], 0.0)          # distinct entries
    mc_close(A[:, 0, 0] * A[:, 1, 1], 0.0)
    mc_close(A[:-1, 0, 1] * A[1:, 0, 1], 0.0)       # consecutive samples (also across agents)


def test_minibatch_gradient_matches_finite_differences(arrays, prob):
    A = arrays["A"]
    rng = np.random.default_rng(0)
    x = prob.manifold.random_point(rng, S)
    agents, batch = np.arange(S), np.stack([rng.choice(N, 3, replace=False) for _ in range(S)])
    g = prob.minibatch_egrad(x, agents, batch)

    def f(xx, j):
        return np.mean([brockett(xx, a) for a in A[j, batch[j]]])

    h = 1e-6
    for j in range(S):
        for k in range(d):
            for l in range(p_):
                e = np.zeros((d, p_))
                e[k, l] = 1.0
                fd = (f(x[j] + h * e, j) - f(x[j] - h * e, j)) / (2 * h)
                assert abs(g[j, k, l] - fd) < 1e-8


def test_costs_are_means_of_brockett_costs(arrays, prob):
    A = arrays["A"]
    x = prob.manifold.random_point(np.random.default_rng(2), 1)[0]
    xs = np.repeat(x[None], S, 0)
    local = prob.local_cost(xs, np.arange(S))
    np.testing.assert_allclose(local, [np.mean([brockett(x, a) for a in A[j]]) for j in range(S)],
                               rtol=1e-12, atol=1e-12)
    assert abs(prob.cost(x) - np.mean([brockett(x, a) for a in A.reshape(-1, d, d)])) < 1e-12
    full = np.tile(np.arange(N), (S, 1))
    np.testing.assert_allclose(prob.minibatch_egrad(xs, np.arange(S), full),
                               prob.local_egrad(xs, np.arange(S)), atol=1e-12)
    np.testing.assert_allclose(prob.local_egrad(xs, np.arange(S)).mean(0), prob.egrad(x),
                               atol=1e-12)


def test_closed_form_optimum(arrays, prob):
    """min tr(X^T A X H) over St(p, d) = sum_k mu_k lambda_k (lambda ascending, mu descending),
    attained at the eigenvectors of the p smallest eigenvalues of the pooled mean A_bar."""
    A_bar = arrays["A"].reshape(-1, d, d).mean(0)
    lam, V = np.linalg.eigh(A_bar)
    f_star = float(np.arange(p_, 0, -1.0) @ lam[:p_])
    x_star = prob.closed_form_optimum()
    assert x_star.shape == (d, p_)
    assert prob.manifold.distance_from_manifold(x_star[None])[0] < 1e-14
    assert abs(prob.cost(x_star) - f_star) < 1e-12
    assert abs(prob.optimal_value() - f_star) < 1e-12
    assert prob.grad_norm(x_star) < 1e-10
    # the pairing matters: smallest eigenvalue with the largest weight
    assert prob.cost(V[:, [1, 0]]) > f_star + 1e-3
    rng = np.random.default_rng(4)
    xs = prob.manifold.random_point(rng, 300)
    assert min(prob.cost(x) for x in xs) >= f_star
    # a strict local minimum: retractions of tangent steps increase F
    for _ in range(5):
        u = prob.manifold.random_tangent(rng, x_star[None])
        for t in (1e-3, 1e-1, 1.0):
            assert prob.cost(prob.manifold.retraction(x_star[None], t * u)[0]) > f_star


def test_distance_is_sign_invariant(prob):
    x_star = prob.closed_form_optimum()
    for s in ([1, -1], [-1, 1], [-1, -1]):
        assert prob.distance_to_optimum(x_star * np.array(s, float), x_star) == 0.0
    # other points: the Frobenius distance to the nearest sign pattern
    y = prob.manifold.random_point(np.random.default_rng(5), 1)[0]
    best = min(np.linalg.norm(y * np.array(s, float) - x_star)
               for s in ([1, 1], [1, -1], [-1, 1], [-1, -1]))
    assert abs(prob.distance_to_optimum(y, x_star) - best) < 1e-14
    assert prob.distance_to_optimum(x_star[:, [1, 0]], x_star) > 1.0


def test_problem_plumbing(arrays):
    prob = MBCFSti.from_arrays(arrays, retraction="qr", transport="projection")
    assert prob.name == "mbcfsti" and prob.manifold.name == "stiefel"
    assert prob.manifold.point_shape == (d, p_)
    assert MBCFSti.local_sizes_from({"d": 25, "p": 2, "S": 20, "N": 50}) == [50] * 20
    np.testing.assert_array_equal(prob.local_sizes, [N] * S)
    x0 = prob.initial_point(np.random.default_rng(0))
    assert prob.manifold.distance_from_manifold(x0[None])[0] < 1e-14
    with pytest.raises(ValueError):
        generate(np.random.default_rng(0), d=3, p=4, S=1, N=1)

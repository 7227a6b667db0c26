"""CPESph: data generator as Section 5.1 describes, gradients by finite differences, exact optimum."""

import numpy as np
import pytest

from rfl.data.cpesph import generate
from rfl.problems.cpesph import CPESph


@pytest.fixture
def data():
    return generate(np.random.default_rng(3), d=8, nu=0.1, S=4, N=20)["Z"]


def test_generator_has_the_prescribed_spectrum(data):
    """Z_i = U_i Sigma_i V: Z_i^T Z_i = V^T Sigma_i^2 V, so its singular values are Sigma_i."""
    S, N, n = data.shape
    assert (S, N, n) == (4, 20, 9)
    nu = 0.1
    lead = np.array([1, 1 - 1.1 * nu, 1 - 1.2 * nu, 1 - 1.3 * nu, 1 - 1.4 * nu])
    for Z in data:
        sv = np.linalg.svd(Z, compute_uv=False)
        np.testing.assert_allclose(sv[:5], lead, atol=1e-12)
        assert np.all(sv[5:] >= 0) and np.all(sv[5:] <= 1 - 1.4 * nu)
    # one shared V: the right singular vectors of the leading value agree across agents (up to sign)
    v0 = [np.linalg.svd(Z)[2][0] for Z in data]
    for v in v0[1:]:
        assert abs(abs(v @ v0[0]) - 1) < 1e-10


def test_heterogeneous_agents_have_their_own_eigenvectors():
    Z = generate(np.random.default_rng(3), d=8, nu=0.1, S=3, N=20, heterogeneous=True)["Z"]
    v = [np.linalg.svd(z)[2][0] for z in Z]
    assert abs(v[0] @ v[1]) < 0.99


def test_minibatch_gradient_matches_finite_differences(data):
    p = CPESph(data)
    rng = np.random.default_rng(0)
    x = p.manifold.random_point(rng, 4)
    agents, batch = np.arange(4), np.stack([rng.choice(20, 7, replace=False) for _ in range(4)])
    g = p.minibatch_egrad(x, agents, batch)

    def f(xx, j):
        zb = data[j, batch[j]]
        return -np.mean((zb @ xx) ** 2)

    h = 1e-6
    for j in range(4):
        fd = np.array([(f(x[j] + h * e, j) - f(x[j] - h * e, j)) / (2 * h) for e in np.eye(9)])
        np.testing.assert_allclose(g[j], fd, atol=1e-8)


def test_full_cost_is_mean_of_local_costs_and_optimum_is_top_eigenvector(data):
    p = CPESph(data)
    x = p.manifold.random_point(np.random.default_rng(2), 1)[0]
    local = p.local_cost(np.repeat(x[None], 4, 0), np.arange(4))
    assert abs(p.cost(x) - local.mean()) < 1e-14
    pooled = np.concatenate(list(data))
    w, v = np.linalg.eigh(pooled.T @ pooled / pooled.shape[0])
    x_star = p.closed_form_optimum()
    assert abs(p.cost(x_star) + w[-1]) < 1e-14
    assert p.grad_norm(x_star) < 1e-13
    assert p.distance_to_optimum(-x_star, x_star) < 1e-7
    # no point on the sphere does better: Rayleigh quotient bound on random points
    xs = p.manifold.random_point(np.random.default_rng(4), 200)
    assert min(p.cost(x) for x in xs) >= p.cost(x_star)


def test_generator_refuses_impossible_sizes():
    with pytest.raises(ValueError, match="N must be at least d\\+1"):
        generate(np.random.default_rng(0), d=10, nu=0.1, S=2, N=5)

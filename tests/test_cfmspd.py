"""CFMSPD: Wishart data with a diameter, gradients by finite differences, the Fréchet mean."""

import numpy as np
import pytest
import scipy.linalg

from rfl.data.cfmspd import generate
from rfl.problems.cfmspd import CFMSPD, frechet_mean_fixed_point

d, S, N = 3, 3, 5


@pytest.fixture(scope="module")
def data():
    return generate(np.random.default_rng(7), d=d, S=S, N=N, D_W=1.0)["Z"]


def sq_dist(x, z):
    """||logm(X^{-1/2} Z X^{-1/2})||_F^2 = sum_k log(lambda_k)^2, lambda_k the generalized
    eigenvalues of Z v = lambda X v (= eigenvalues of X^{-1} Z): independent of rfl."""
    return float(np.sum(np.log(scipy.linalg.eigh(z, x, eigvals_only=True)) ** 2))


def mc_close(samples, expected, n_se=6.0):
    """|mean - expected| < n_se standard errors (SE estimated from the sample)."""
    samples = np.asarray(samples, dtype=float)
    se = samples.std(ddof=1) / np.sqrt(samples.size)
    assert abs(samples.mean() - expected) < n_se * se, (samples.mean(), expected, se)


def test_samples_are_spd_within_the_diameter(data):
    assert data.shape == (S, N, d, d)
    z = data.reshape(-1, d, d)
    np.testing.assert_array_equal(z, z.swapaxes(-1, -2))
    assert np.all(np.linalg.eigvalsh(z)[:, 0] > 0)
    # affine-invariant distance to I with scipy's logm: ||logm Z||_F < D_W
    assert max(np.linalg.norm(scipy.linalg.logm(zz), "fro") for zz in z) < 1.0
    z2 = generate(np.random.default_rng(8), d=2, S=10, N=60, D_W=1.0)["Z"]   # Table 1 row
    assert z2.shape == (10, 60, 2, 2)
    assert max(np.linalg.norm(scipy.linalg.logm(zz), "fro") for zz in z2.reshape(-1, 2, 2)) < 1.0


def test_wishart_parametrisation_without_rejection():
    """W(I/d, d): Z = sum of d outer products g g^T, g ~ N(0, I/d), so E[Z] = I,
    Var[Z_kk] = 2/d and Var[Z_kl] = 1/d (k != l); the variances pin the degrees of freedom
    (W(I/n, n) has mean I for every n). D_W = inf switches the rejection off. Monte Carlo with
    M = 20000 draws; tolerance 6 standard errors, the SE estimated from the sample itself
    (for the variances, from the squared deviations), so a correct sampler fails with
    probability ~1e-9 per check."""
    z = generate(np.random.default_rng(11), d=d, S=4, N=5000, D_W=np.inf)["Z"].reshape(-1, d, d)
    for k in range(d):
        for l in range(d):
            mc_close(z[:, k, l], 1.0 if k == l else 0.0)
            mc_close((z[:, k, l] - (k == l)) ** 2, 2.0 / d if k == l else 1.0 / d)


def test_rejection_gives_the_truncated_wishart_law():
    """The accepted samples follow W(I/d, d) conditioned on ||logm Z||_F < D_W: compare
    E[tr Z] and E[Z_11 Z_22] of the generator with an independent construction (columns
    g ~ N(0, I/d) summed as outer products, scipy's logm for the distance), d = 2 as in
    Table 1. Two independent Monte Carlo means: tolerance 6 combined standard errors."""
    dd, D_W = 2, 1.0
    gen = generate(np.random.default_rng(21), d=dd, S=10, N=400, D_W=D_W)["Z"].reshape(-1, dd, dd)
    rng = np.random.default_rng(22)
    g = rng.normal(0.0, np.sqrt(1.0 / dd), size=(60000, dd, dd))
    ref = np.einsum("mik,mjk->mij", g, g)
    dist = np.sqrt(np.sum(np.log(np.linalg.eigvalsh(ref)) ** 2, axis=-1))
    ref = ref[dist < D_W]
    print(f"acceptance rate d=2, D_W=1: {ref.shape[0] / 60000:.4f}")
    for stat in (lambda z: np.trace(z, axis1=1, axis2=2), lambda z: z[:, 0, 0] * z[:, 1, 1],
                 lambda z: z[:, 0, 1]):
        a, b = stat(gen), stat(ref)
        se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
        assert abs(a.mean() - b.mean()) < 6 * se


def test_minibatch_gradient_matches_finite_differences(data):
    """<G, E> = d/dh f(X + h E) for symmetric E spanning the symmetric matrices."""
    p = CFMSPD(data)
    rng = np.random.default_rng(0)
    x = p.manifold.random_point(rng, S)
    agents, batch = np.arange(S), np.stack([rng.choice(N, 3, replace=False) for _ in range(S)])
    g = p.minibatch_egrad(x, agents, batch)
    np.testing.assert_array_equal(g, g.swapaxes(-1, -2))

    def f(xx, j):
        return np.mean([sq_dist(xx, z) for z in data[j, batch[j]]])

    h = 1e-5
    for j in range(S):
        for k in range(d):
            for l in range(k, d):
                e = np.zeros((d, d))
                e[k, l] = e[l, k] = 1.0
                fd = (f(x[j] + h * e, j) - f(x[j] - h * e, j)) / (2 * h)
                assert abs(np.sum(g[j] * e) - fd) < 1e-8


def test_riemannian_gradient_is_minus_two_log_and_matches_directional_derivative(data):
    """grad F(X) = -2 mean_ij Log_X(Z_ij), and <grad F(x), u>_x = d/dt F(Exp_x(t u)) at t = 0."""
    p = CFMSPD(data)
    rng = np.random.default_rng(1)
    x = p.manifold.random_point(rng, 1)
    z = data.reshape(-1, d, d)
    xs = np.broadcast_to(x, z.shape)
    np.testing.assert_allclose(p.grad(x[0]), -2 * p.manifold.log(xs, z).mean(axis=0), atol=1e-12)
    for _ in range(3):
        u = p.manifold.random_tangent(rng, x)
        h = 1e-6
        fd = (p.cost(p.manifold.retraction(x, h * u)[0])
              - p.cost(p.manifold.retraction(x, -h * u)[0])) / (2 * h)
        assert abs(p.manifold.inner(x, p.grad(x[0])[None], u)[0] - fd) < 1e-8


def test_costs_are_means_of_squared_distances(data):
    p = CFMSPD(data)
    x = p.manifold.random_point(np.random.default_rng(2), 1)[0]
    local = p.local_cost(np.repeat(x[None], S, 0), np.arange(S))
    expected = [np.mean([sq_dist(x, z) for z in data[j]]) for j in range(S)]
    np.testing.assert_allclose(local, expected, rtol=1e-12)
    assert abs(p.cost(x) - np.mean(expected)) < 1e-12
    # full-batch minibatch gradient = local gradient; the mean of local gradients = egrad
    xs = np.repeat(x[None], S, 0)
    full = np.tile(np.arange(N), (S, 1))
    np.testing.assert_allclose(p.minibatch_egrad(xs, np.arange(S), full),
                               p.local_egrad(xs, np.arange(S)), atol=1e-13)
    np.testing.assert_allclose(p.local_egrad(xs, np.arange(S)).mean(0), p.egrad(x), atol=1e-13)


def test_cost_and_gradient_at_one_point_share_one_pass_over_the_samples(data, monkeypatch):
    """A run records F(x) and ||grad F(x)|| of every iterate: one eigendecomposition of each
    whitened sample serves both, with the numbers of local_cost and local_egrad; a point
    changed in place is a new point."""
    import rfl.problems.cfmspd as mod

    p = CFMSPD(data)
    x = p.manifold.random_point(np.random.default_rng(3), 1)[0]
    xs, agents = np.repeat(x[None], S, 0), np.arange(S)
    cost, egrad = p.weights @ p.local_cost(xs, agents), np.einsum("s,sij->ij", p.weights, p.local_egrad(xs, agents))
    calls = []
    eigs = mod._whitened_eigs
    monkeypatch.setattr(mod, "_whitened_eigs", lambda *a: calls.append(1) or eigs(*a))
    assert p.cost(x) == cost and np.array_equal(p.egrad(x), egrad) and p.cost(x) == cost
    assert len(calls) == 1
    x *= 1.5                                   # the same array, another point
    np.testing.assert_allclose(p.cost(x), p.weights @ p.local_cost(np.repeat(x[None], S, 0), agents), rtol=1e-14)
    assert p.cost(x) != cost


def test_frechet_mean_is_the_minimiser(data):
    """F is 2-geodesically strongly convex (Hadamard manifold), so at a critical point X*
    F(Exp_X*(t u)) >= F(X*) + t^2 ||u||^2 for every unit u and t; grad F(X*) = 0."""
    p = CFMSPD(data)
    x_star = frechet_mean_fixed_point(data)
    assert p.closed_form_optimum() is None
    assert p.grad_norm(x_star) < 1e-10
    f_star = p.cost(x_star)
    rng = np.random.default_rng(4)
    xs = p.manifold.random_point(rng, 200)
    assert min(p.cost(x) for x in xs) > f_star
    for _ in range(5):
        u = p.manifold.random_tangent(rng, x_star[None])
        for t in (1e-3, 1e-2, 1e-1, 1.0, 3.0):
            y = p.manifold.exp(x_star[None], t * u)[0]
            assert p.cost(y) - f_star >= t ** 2 * (1 - 1e-6)
            assert abs(p.distance_to_optimum(y, x_star) - t) < 1e-9


def test_frechet_mean_of_commuting_data_is_the_geometric_mean():
    """Z_ij = Q diag(e^{a_ij}) Q^T with one orthogonal Q commute, and their Fréchet mean is
    Q diag(e^{mean a}) Q^T = expm(mean logm Z) (on the flat submanifold of matrices
    diagonalised by Q the distance is Euclidean in the logs)."""
    rng = np.random.default_rng(5)
    a = rng.normal(0.0, 0.7, size=(S, N, d))
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    for Q in (np.eye(d), q):
        Z = np.einsum("ik,sjk,lk->sjil", Q, np.exp(a), Q)
        geo = Q @ np.diag(np.exp(a.mean(axis=(0, 1)))) @ Q.T
        p = CFMSPD(Z)
        assert p.grad_norm(geo) < 1e-12
        x = frechet_mean_fixed_point(Z, x0=Z.reshape(-1, d, d).mean(0))   # start: arithmetic mean
        np.testing.assert_allclose(x, geo, rtol=0, atol=1e-12)


def test_distance_to_optimum_is_affine_invariant_distance(data):
    """d(X, c X) = sqrt(d) |log c|, d(A X A^T, A Y A^T) = d(X, Y)."""
    p = CFMSPD(data)
    rng = np.random.default_rng(6)
    x, y = p.manifold.random_point(rng, 2)
    assert abs(p.distance_to_optimum(2.5 * x, x) - np.sqrt(d) * np.log(2.5)) < 1e-12
    assert p.distance_to_optimum(x, x) < 1e-12
    A = rng.standard_normal((d, d))
    assert abs(p.distance_to_optimum(A @ x @ A.T, A @ y @ A.T) - p.distance_to_optimum(x, y)) < 1e-10
    assert abs(p.distance_to_optimum(x, y) ** 2 - sq_dist(y, x)) < 1e-10


def test_problem_plumbing(data):
    p = CFMSPD.from_arrays({"Z": data}, retraction="exp", transport="parallel")
    assert p.name == "cfmspd" and p.manifold.name == "spd"
    assert CFMSPD.local_sizes_from({"d": 2, "D_W": 1, "S": 10, "N": 60}) == [60] * 10
    np.testing.assert_array_equal(p.local_sizes, [N] * S)
    x0 = p.initial_point(np.random.default_rng(0))
    assert x0.shape == (d, d) and p.manifold.distance_from_manifold(x0[None])[0] == 0


def test_generator_fails_loudly_when_nothing_is_accepted():
    with pytest.raises(RuntimeError, match="accepted only"):
        generate(np.random.default_rng(0), d=25, S=2, N=2, D_W=1.0, max_draws=5000)

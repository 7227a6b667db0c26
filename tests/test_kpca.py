"""KPCA on the digits data: preprocessing and splits, gradients by finite differences,
the cost against an independently computed covariance, the top-r eigenvector optimum."""

import numpy as np
import pytest
import scipy.linalg
import scipy.stats

from rfl.data.kpca import MIN_CLASS_SIZE, POOL_SIZE, default_n_per_agent, generate, load_raw
from rfl.problems.kpca import KPCA

S, r_ = 10, 3
N = POOL_SIZE // S                                   # 174


@pytest.fixture(scope="module")
def raw():
    return load_raw()


@pytest.fixture(scope="module")
def arrays():
    return generate(np.random.default_rng(3), S=S, r=r_, split="iid")


@pytest.fixture(scope="module")
def label_arrays():
    return generate(np.random.default_rng(3), S=S, r=r_, split="label")


@pytest.fixture(scope="module")
def prob(arrays):
    return KPCA.from_arrays(arrays)


def kpca_cost(x, a):
    return float(-0.5 * np.trace(x.T @ a @ x))


def test_raw_data_and_pool_constants(raw):
    data, target = raw
    assert data.shape == (1797, 64) and target.shape == (1797,)
    assert data.min() == 0.0 and data.max() == 16.0
    np.testing.assert_array_equal(data, np.round(data))          # integer pixel values 0..16
    counts = np.bincount(target, minlength=10)
    assert counts.min() == MIN_CLASS_SIZE and POOL_SIZE == 10 * MIN_CLASS_SIZE
    assert default_n_per_agent(10) == 174 and default_n_per_agent(7) == 248


@pytest.mark.parametrize("split", ["iid", "label"])
def test_shapes_and_preprocessing(raw, split):
    """Pixels scaled to [0, 1] (divide by 16) before centring; global centring makes the pooled
    mean zero; the samples are distinct images of load_digits, labels their targets."""
    data, target = raw
    a = generate(np.random.default_rng(1), S=S, r=r_, split=split)
    Z, labels, idx, mean = a["Z"], a["labels"], a["indices"], a["mean"]
    assert Z.shape == (S, N, 64) and Z.dtype == np.float64
    assert labels.shape == (S, N) and idx.shape == (S, N) and mean.shape == (64,)
    assert int(a["r"]) == r_
    assert np.unique(idx).size == S * N                            # no image used twice
    np.testing.assert_array_equal(labels, target[idx])
    # before centring: exactly data / 16, within [0, 1]
    pixels = Z + mean
    np.testing.assert_allclose(pixels, data[idx] / 16.0, rtol=0, atol=1e-15)
    assert pixels.min() >= -1e-15 and pixels.max() <= 1.0 + 1e-15
    np.testing.assert_allclose(mean, (data[idx] / 16.0).reshape(-1, 64).mean(0), atol=1e-15)
    # after global centring: the pooled mean vanishes up to rounding (pairwise summation of
    # 1740 terms of size <= 1: about log2(1740) ~ 11 ulps, plus the centring's own roundings)
    assert np.abs(Z.reshape(-1, 64).mean(0)).max() < 20 * np.finfo(float).eps
    # without centring: the scaled pixels themselves, in [0, 1] with both ends attained
    u = generate(np.random.default_rng(1), S=S, r=r_, split=split, center=False)
    np.testing.assert_array_equal(u["indices"], idx)
    np.testing.assert_array_equal(u["Z"], data[idx] / 16.0)
    assert u["Z"].min() == 0.0 and u["Z"].max() == 1.0
    np.testing.assert_array_equal(u["mean"], 0.0)


def test_label_split_one_class_per_agent(label_arrays):
    """S = 10: agent c holds only digit c (N = 174 = the smallest class); S = 5: two digits each;
    in general the concatenated labels are sorted (consecutive chunks of the sorted data)."""
    labels = label_arrays["labels"]
    for c in range(S):
        np.testing.assert_array_equal(labels[c], c)
    five = generate(np.random.default_rng(0), S=5, r=2, split="label")["labels"]
    for i in range(5):
        assert set(np.unique(five[i])) == {2 * i, 2 * i + 1}
        assert np.bincount(five[i], minlength=10)[2 * i] == MIN_CLASS_SIZE
    small = generate(np.random.default_rng(0), S=10, r=2, split="label", n_per_agent=50)["labels"]
    for c in range(10):
        np.testing.assert_array_equal(small[c], c)
    seven = generate(np.random.default_rng(0), S=7, r=2, split="label")["labels"]
    assert np.all(np.diff(seven.ravel()) >= 0)
    assert max(np.unique(row).size for row in seven) <= 3        # N = 248 < 2 * 174


def test_iid_split_label_proportions_near_uniform(arrays, label_arrays):
    """iid: the pooled pool is class balanced (174 per class exactly); per agent the counts
    n_c of the 10 digits pass a chi-square test of uniformity: sum_c (n_c - N/10)^2 / (N/10) below
    the 0.9999 quantile of chi2(9) (= 33.7; sampling without replacement from the balanced pool
    makes the statistic even smaller than chi2(9) in distribution). The label split's statistic
    is 9 N = 1566 for every agent, far above."""
    def chi2_stat(labels):
        counts = np.stack([np.bincount(row, minlength=10) for row in labels])
        return ((counts - N / 10) ** 2 / (N / 10)).sum(axis=1)

    np.testing.assert_array_equal(np.bincount(arrays["labels"].ravel(), minlength=10),
                                  MIN_CLASS_SIZE)
    tol = scipy.stats.chi2.ppf(1 - 1e-4, df=9)
    stat = chi2_stat(arrays["labels"])
    assert np.all(stat < tol), (stat, tol)
    np.testing.assert_allclose(chi2_stat(label_arrays["labels"]), 9 * N, rtol=1e-12)


def test_splits_share_the_pooled_data(arrays, label_arrays):
    """For one seed the iid and label splits use the same images: same pooled covariance and
    optimum; only the partition differs."""
    np.testing.assert_array_equal(np.sort(arrays["indices"].ravel()),
                                  np.sort(label_arrays["indices"].ravel()))
    np.testing.assert_array_equal(arrays["mean"], label_arrays["mean"])
    p_iid, p_lab = KPCA.from_arrays(arrays), KPCA.from_arrays(label_arrays)
    np.testing.assert_allclose(p_iid.A_bar, p_lab.A_bar, rtol=0, atol=1e-14)
    assert not np.allclose(p_iid.A_local, p_lab.A_local, atol=1e-2)


def test_minibatch_gradient_matches_finite_differences(arrays, prob):
    Z = arrays["Z"]
    rng = np.random.default_rng(0)
    agents = np.array([0, 4, 9])
    x = prob.manifold.random_point(rng, agents.size)
    batch = np.stack([rng.choice(N, 5, replace=False) for _ in agents])
    g = prob.minibatch_egrad(x, agents, batch)
    assert g.shape == x.shape

    def f(xx, j):
        return np.mean([-0.5 * np.sum((xx.T @ z) ** 2) for z in Z[agents[j], batch[j]]])

    h = 1e-6
    for j in range(agents.size):
        for k in range(64):
            for l in range(r_):
                e = np.zeros((64, r_))
                e[k, l] = 1.0
                fd = (f(x[j] + h * e, j) - f(x[j] - h * e, j)) / (2 * h)
                assert abs(g[j, k, l] - fd) < 1e-8


def test_costs_match_independent_covariances(raw, arrays, prob):
    """F(X) = -1/2 tr(X^T A X), A the covariance (1/n normalisation) of the used images scaled
    by 1/16, computed with np.cov from load_digits; f_i uses A_i = (1/N) sum_j (z_ij - m)(z_ij - m)^T,
    m the pooled mean; the gradients are consistent with each other."""
    data, _ = raw
    pixels = data[arrays["indices"]] / 16.0                         # (S, N, 64)
    A = np.cov(pixels.reshape(-1, 64), rowvar=False, bias=True)
    m = pixels.reshape(-1, 64).mean(0)
    rng = np.random.default_rng(2)
    for x in prob.manifold.random_point(rng, 3):
        assert abs(prob.cost(x) - kpca_cost(x, A)) < 1e-12
        xs = np.repeat(x[None], S, 0)
        local = prob.local_cost(xs, np.arange(S))
        expect = [kpca_cost(x, (pixels[i] - m).T @ (pixels[i] - m) / N) for i in range(S)]
        np.testing.assert_allclose(local, expect, rtol=0, atol=1e-12)
        assert abs(local.mean() - prob.cost(x)) < 1e-12
        np.testing.assert_allclose(prob.egrad(x), -A @ x, rtol=0, atol=1e-12)
        full = np.tile(np.arange(N), (S, 1))
        np.testing.assert_allclose(prob.minibatch_egrad(xs, np.arange(S), full),
                                   prob.local_egrad(xs, np.arange(S)), rtol=0, atol=1e-12)
        np.testing.assert_allclose(prob.local_egrad(xs, np.arange(S)).mean(0), prob.egrad(x),
                                   rtol=0, atol=1e-12)


def test_batched_minibatch_gradient_is_minus_the_batch_covariance_times_x(prob):
    """-(1/B) Z_b^T Z_b X for each row, agents unsorted and repeated (the per-agent identity
    itself is in the shared contract)."""
    rng = np.random.default_rng(3)
    agents = np.array([1, 7, 1, 0, 9])
    x = prob.manifold.random_point(rng, agents.size)
    batch = np.stack([rng.choice(N, 8, replace=False) for _ in agents])
    g = prob.minibatch_egrad(x, agents, batch)
    for k in range(agents.size):
        zb = prob.Z[agents[k], batch[k]]
        np.testing.assert_allclose(g[k], -zb.T @ zb @ x[k] / batch.shape[1], rtol=0, atol=1e-12)


@pytest.mark.parametrize("r", [1, 2, 3, 5])
def test_closed_form_optimum(raw, arrays, r):
    """min -1/2 tr(X^T A X) over St(64, r) = -1/2 (lambda_1 + ... + lambda_r), attained at the top-r
    eigenvectors of the pooled covariance; O(r)-invariant cost; a strict minimum up to O(r)."""
    data, _ = raw
    prob = KPCA.from_arrays(arrays, {"r": r})
    assert prob.r == r and prob.manifold.point_shape == (64, r)
    A = np.cov((data[arrays["indices"]] / 16.0).reshape(-1, 64), rowvar=False, bias=True)
    lam = np.linalg.eigvalsh(A)[::-1]
    f_star = -0.5 * lam[:r].sum()
    x_star = prob.closed_form_optimum()
    assert x_star.shape == (64, r)
    assert prob.manifold.distance_from_manifold(x_star[None])[0] < 1e-14
    assert prob.grad_norm(x_star) < 1e-10
    assert abs(prob.cost(x_star) - f_star) < 1e-12
    assert abs(prob.optimal_value() - f_star) < 1e-12
    assert lam[r - 1] - lam[r] > 1e-2                               # a unique optimal subspace
    rng = np.random.default_rng(4)
    xs = prob.manifold.random_point(rng, 300)
    assert min(prob.cost(x) for x in xs) >= f_star
    # O(r) invariance of the cost and of the distance
    for _ in range(3):
        Q = scipy.stats.ortho_group.rvs(r, random_state=rng) if r > 1 else -np.ones((1, 1))
        y = xs[0]
        assert abs(prob.cost(y @ Q) - prob.cost(y)) < 1e-12
        assert abs(prob.cost(x_star @ Q) - f_star) < 1e-12
        assert prob.distance_to_optimum(x_star @ Q, x_star) < 1e-12
        assert abs(prob.distance_to_optimum(y @ Q, x_star) - prob.distance_to_optimum(y, x_star)) \
            < 1e-12
    # retractions of tangent steps increase F (a strict minimum modulo O(r))
    for _ in range(5):
        u = prob.manifold.random_tangent(rng, x_star[None])
        u = prob.manifold.projection(x_star[None], u - x_star[None] @ (x_star.T @ u[0]))   # horizontal
        u /= np.linalg.norm(u)
        for t in (1e-3, 1e-1, 1.0):
            assert prob.cost(prob.manifold.retraction(x_star[None], t * u)[0]) > f_star


def test_distance_is_the_principal_angle_distance(prob):
    """distance_to_optimum = sqrt(sum theta_k^2), principal angles from scipy.linalg.subspace_angles;
    0 at X* Q; small perturbations measured to full relative accuracy (no arccos cancellation)."""
    x_star = prob.closed_form_optimum()
    rng = np.random.default_rng(5)
    for y in prob.manifold.random_point(rng, 5):
        theta = scipy.linalg.subspace_angles(y, x_star)
        assert abs(prob.distance_to_optimum(y, x_star) - np.linalg.norm(theta)) < 1e-12
    # the sines are norms of a residual of 64 x 3 entries, each a few ulps
    assert prob.distance_to_optimum(x_star, x_star) < 20 * np.finfo(float).eps
    # a rotation of the first column by angle t towards span(X*)^perp: distance t
    w = rng.standard_normal(64)
    w -= x_star @ (x_star.T @ w)
    w /= np.linalg.norm(w)
    for t in (1e-9, 1e-4, 0.3):
        y = x_star.copy()
        y[:, 0] = np.cos(t) * x_star[:, 0] + np.sin(t) * w
        assert abs(prob.distance_to_optimum(y, x_star) - t) < 1e-6 * t
    # orthogonal subspaces: all angles pi/2
    e = np.eye(64)
    assert abs(prob.distance_to_optimum(e[:, :r_], e[:, r_:2 * r_]) - np.sqrt(r_) * np.pi / 2) < 1e-14


def test_problem_plumbing(arrays):
    prob = KPCA.from_arrays(arrays, {"S": S, "r": 2}, retraction="qr", transport="projection")
    assert prob.name == "kpca" and prob.manifold.name == "stiefel"
    assert prob.manifold.point_shape == (64, 2)                     # params' r overrides arrays' r
    assert KPCA.from_arrays(arrays).r == r_
    np.testing.assert_array_equal(prob.local_sizes, [N] * S)
    np.testing.assert_array_equal(prob.weights, np.full(S, 1 / S))
    np.testing.assert_array_equal(prob.labels, arrays["labels"])
    assert KPCA.local_sizes_from({"S": 10, "r": 3}) == [174] * 10
    assert KPCA.local_sizes_from({"S": 7, "r": 3, "n_per_agent": None}) == [248] * 7
    assert KPCA.local_sizes_from({"S": 4, "r": 3, "n_per_agent": 100}) == [100] * 4
    x0 = prob.initial_point(np.random.default_rng(0))
    assert prob.manifold.distance_from_manifold(x0[None])[0] < 1e-14
    with pytest.raises(KeyError):
        KPCA.from_arrays({"Z": arrays["Z"]})
    with pytest.raises(ValueError):
        generate(np.random.default_rng(0), S=10, r=65)
    with pytest.raises(ValueError):
        generate(np.random.default_rng(0), S=10, r=2, split="dirichlet")
    with pytest.raises(ValueError):
        generate(np.random.default_rng(0), S=10, r=2, n_per_agent=175)   # 1750 > 1740 images
    # deterministic given the stream
    again = generate(np.random.default_rng(3), S=S, r=r_, split="iid")
    np.testing.assert_array_equal(again["Z"], arrays["Z"])

"""Multitask feature learning (paper Section 5.2, problem (5.3)) on Gr(r, m).

Every reference value is computed here from the mathematics on the raw task
rows (least squares by np.linalg.lstsq, explicit loops, finite differences),
never from the problem's own Gram-matrix code path.
"""

import io

import numpy as np
import pytest
import scipy.linalg

from rfl.data import school as sch
from rfl.problems.multitask import nmse_column
from rfl.data.multitask import generate
from rfl.problems.multitask import MultitaskFeatures, SchoolMultitask

S, N, M, R = 3, 4, 8, 2
D_MIN, D_MAX = 3, 6
# Central differences: truncation O(h^2) + rounding O(eps |f| / h); h = 1e-5 and
# |f| = O(10) give errors ~1e-10, far below FD_TOL.
H, FD_TOL = 1e-5, 1e-8
# the two code paths of the mini-batch gradient (Gram matrices / raw rows)
GRADIENTS = ["gram", "rows"]


# ---- independent reference computations (raw rows, lstsq) -------------------
def ridge_w(A, y, lam):
    """argmin_w 0.5 ||A w - y||^2 + lam ||w||^2, as the least-squares solution of the
    stacked system [A; sqrt(2 lam) I] w = [y; 0] (its squared residual is twice the objective)."""
    k = A.shape[1]
    A2 = np.vstack([A, np.sqrt(2 * lam) * np.eye(k)])
    return np.linalg.lstsq(A2, np.concatenate([y, np.zeros(k)]), rcond=None)[0]


def task_rows(data, i, j):
    d = data["d"][i, j]
    return data["X"][i, j, :d], data["y"][i, j, :d]


def h_task(data, i, j, U, lam):
    """Value function h_ij(U) = min_w 0.5 ||X U w - y||^2 + lam ||w||^2 from the rows."""
    X, y = task_rows(data, i, j)
    w = ridge_w(X @ U, y, lam)
    return 0.5 * np.sum((X @ U @ w - y) ** 2) + lam * w @ w


def grad_task(data, i, j, U, lam):
    """Envelope-theorem gradient X^T (X U w - y) w^T of h_ij, from the rows."""
    X, y = task_rows(data, i, j)
    w = ridge_w(X @ U, y, lam)
    return np.outer(X.T @ (X @ U @ w - y), w)


def random_points(rng, n, m=M, r=R):
    return np.stack([np.linalg.qr(rng.standard_normal((m, r)))[0] for _ in range(n)])


def random_orthogonal(rng, r=R, reflect=True):
    q = np.linalg.qr(rng.standard_normal((r, r)))[0]
    if reflect and np.linalg.det(q) > 0:      # include improper rotations: O(r), not SO(r)
        q[:, 0] *= -1
    return q


@pytest.fixture
def data():
    return generate(np.random.default_rng(5), S, N, M, R, D_MIN, D_MAX, noise=0.1)


# ---- generator ----------------------------------------------------------------
def test_generator_shapes_padding_and_subspace():
    a = generate(np.random.default_rng(1), S, N, M, R, D_MIN, D_MAX, noise=0.0)
    assert a["X"].shape == (S, N, D_MAX, M) and a["y"].shape == (S, N, D_MAX)
    assert a["d"].shape == (S, N) and a["d"].dtype == np.int64
    assert a["d"].min() >= D_MIN and a["d"].max() <= D_MAX
    U = a["U_star"]
    assert U.shape == (M, R)
    np.testing.assert_allclose(U.T @ U, np.eye(R), atol=1e-14)
    for i in range(S):
        for j in range(N):
            d = a["d"][i, j]
            assert np.all(a["X"][i, j, d:] == 0) and np.all(a["y"][i, j, d:] == 0)
            X, y = task_rows(a, i, j)
            # noise-free labels lie in span(X U*): the least-squares residual vanishes
            v = np.linalg.lstsq(X @ U, y, rcond=None)[0]
            assert np.linalg.norm(X @ U @ v - y) <= 1e-13 * np.linalg.norm(y)
    # plain arrays: savez / load without pickle, and the seed fixes everything
    buf = io.BytesIO()
    np.savez(buf, **a)
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as z:
        assert set(z.files) == {"X", "y", "d", "U_star"}
    b = generate(np.random.default_rng(1), S, N, M, R, D_MIN, D_MAX, noise=0.0)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_generator_noise_level_and_label_scale():
    """y = X U* (U*)^T w + noise e: the residual off span(X U*) has per-row variance
    noise^2 (chi-square with sum(d - r) degrees of freedom); the signal coefficients
    (U*)^T w ~ N(0, I_r)."""
    noise, r = 1e-6, 3
    a = generate(np.random.default_rng(2), 5, 10, 20, r, noise=noise)
    ss, dof, coef = 0.0, 0, []
    for i in range(5):
        for j in range(10):
            X, y = task_rows(a, i, j)
            A = X @ a["U_star"]
            v = np.linalg.lstsq(A, y, rcond=None)[0]
            ss += np.sum((A @ v - y) ** 2)
            dof += len(y) - r
            coef.append(v)
    assert 0.9 < np.sqrt(ss / dof) / noise < 1.1          # ~1300 dof: sd of the ratio ~2%
    coef = np.array(coef)                                 # 50 x 3 draws of N(0, 1)
    assert abs(coef.mean()) < 0.5 and 0.6 < coef.std() < 1.4


# ---- inner problem -------------------------------------------------------------
@pytest.mark.parametrize("lam", [0.0, 0.3])
def test_w_solves_its_normal_equations(data, lam):
    p = MultitaskFeatures(data["X"], data["y"], data["d"], R, lam)
    rng = np.random.default_rng(0)
    x = random_points(rng, S)
    W = p.task_coefficients(x, np.arange(S))
    assert W.shape == (S, N, R)
    for i in range(S):
        for j in range(N):
            X, y = task_rows(data, i, j)
            A, w = X @ x[i], W[i, j]
            # d/dw [0.5 ||A w - y||^2 + lam ||w||^2] = A^T (A w - y) + 2 lam w = 0
            res = A.T @ (A @ w - y) + 2 * lam * w
            scale = np.linalg.norm(A, 2) ** 2 * np.linalg.norm(w) + np.linalg.norm(A.T @ y)
            assert np.linalg.norm(res) <= 1e-13 * scale
            np.testing.assert_allclose(w, ridge_w(A, y, lam), rtol=1e-11, atol=1e-12)
            if lam == 0:
                np.testing.assert_allclose(w, np.linalg.lstsq(A, y, rcond=None)[0],
                                           rtol=1e-11, atol=1e-12)


# ---- gradients -------------------------------------------------------------------
@pytest.mark.parametrize("gradient", GRADIENTS)
@pytest.mark.parametrize("lam", [0.0, 0.3])
def test_minibatch_gradient_matches_finite_differences(data, lam, gradient):
    """minibatch_egrad is the Euclidean gradient (in R^{m x r}) of the mini-batch mean of
    the value functions h_ij; checked entrywise by central differences of the cost
    computed from the raw rows."""
    p = MultitaskFeatures(data["X"], data["y"], data["d"], R, lam, gradient=gradient)
    rng = np.random.default_rng(1)
    agents = np.array([2, 0, 2])                  # repeated agent, different points
    x = random_points(rng, 3)
    batch = np.stack([rng.choice(N, 3, replace=False) for _ in range(3)])
    g = p.minibatch_egrad(x, agents, batch)

    def f(U, k):
        return np.mean([h_task(data, agents[k], j, U, lam) for j in batch[k]])

    for k in range(3):
        assert abs(p.minibatch_cost(x, agents, batch)[k] - f(x[k], k)) <= 1e-12 * abs(f(x[k], k))
        fd = np.zeros((M, R))
        for a in range(M):
            for b in range(R):
                e = np.zeros((M, R))
                e[a, b] = H
                fd[a, b] = (f(x[k] + e, k) - f(x[k] - e, k)) / (2 * H)
        np.testing.assert_allclose(g[k], fd, rtol=0, atol=FD_TOL * max(1.0, np.abs(fd).max()))


@pytest.mark.parametrize("gradient", GRADIENTS)
@pytest.mark.parametrize("lam", [0.0, 0.3])
def test_riemannian_gradient_matches_directional_derivative(data, lam, gradient):
    """<grad F(U), xi> = d/dt F(R_U(t xi)) at t = 0, for the full cost F."""
    p = MultitaskFeatures(data["X"], data["y"], data["d"], R, lam, gradient=gradient)
    rng = np.random.default_rng(2)
    x = p.manifold.random_point(rng, 1)
    for _ in range(3):
        u = p.manifold.random_tangent(rng, x)
        fd = (p.cost(p.manifold.retraction(x, H * u)[0])
              - p.cost(p.manifold.retraction(x, -H * u)[0])) / (2 * H)
        assert abs(np.sum(p.grad(x[0]) * u[0]) - fd) < FD_TOL


def test_data_fit_is_the_papers_objective_and_differs_from_cost_for_lambda_positive(data):
    """data_fit = mean 0.5 ||X U w(U) - y||^2 at the regularised w; cost adds lam ||w||^2.
    For lam > 0 the envelope gradient is the gradient of cost, not of data_fit."""
    lam = 0.3
    p = MultitaskFeatures(data["X"], data["y"], data["d"], R, lam)
    p0 = MultitaskFeatures(data["X"], data["y"], data["d"], R, 0.0)
    U = random_points(np.random.default_rng(3), 1)[0]
    fit, pen = 0.0, 0.0
    for i in range(S):
        for j in range(N):
            X, y = task_rows(data, i, j)
            w = ridge_w(X @ U, y, lam)
            fit += 0.5 * np.sum((X @ U @ w - y) ** 2) / (S * N)
            pen += lam * (w @ w) / (S * N)
    assert abs(p.data_fit(U) - fit) <= 1e-12 * fit
    assert abs(p.cost(U) - (fit + pen)) <= 1e-12 * (fit + pen)
    assert abs(p0.data_fit(U) - p0.cost(U)) <= 1e-14 * p0.cost(U)
    # directional derivative of data_fit is not <egrad, E>: the two objectives differ
    E = np.random.default_rng(4).standard_normal((M, R))
    dfit = (p.data_fit(U + H * E) - p.data_fit(U - H * E)) / (2 * H)
    dcost = (p.cost(U + H * E) - p.cost(U - H * E)) / (2 * H)
    assert abs(np.sum(p.egrad(U) * E) - dcost) < FD_TOL
    assert abs(dfit - dcost) > 1e3 * FD_TOL


# ---- quotient structure --------------------------------------------------------
@pytest.mark.parametrize("gradient", GRADIENTS)
@pytest.mark.parametrize("lam", [0.0, 0.3])
def test_cost_is_a_function_on_the_grassmannian(data, lam, gradient):
    p = MultitaskFeatures(data["X"], data["y"], data["d"], R, lam, gradient=gradient)
    rng = np.random.default_rng(6)
    x = random_points(rng, S)
    agents, batch = np.arange(S), np.stack([rng.choice(N, 2, replace=False) for _ in range(S)])
    Q = random_orthogonal(rng)
    xq = x @ Q
    U, UQ = x[0], xq[0]
    assert abs(p.cost(UQ) - p.cost(U)) <= 1e-13 * p.cost(U)
    assert abs(p.data_fit(UQ) - p.data_fit(U)) <= 1e-13 * p.data_fit(U)
    np.testing.assert_allclose(p.local_cost(xq, agents), p.local_cost(x, agents), rtol=1e-13)
    # Euclidean gradient of the O(r)-invariant extension: E(UQ) = E(U) Q
    np.testing.assert_allclose(p.egrad(UQ), p.egrad(U) @ Q, atol=1e-12)
    np.testing.assert_allclose(p.minibatch_egrad(xq, agents, batch),
                               p.minibatch_egrad(x, agents, batch) @ Q, atol=1e-12)
    # Riemannian gradient: horizontal (U^T xi = 0) and equivariant
    rg = p.minibatch_rgrad(x, agents, batch)
    np.testing.assert_allclose(np.swapaxes(x, -1, -2) @ rg, 0, atol=1e-13)
    np.testing.assert_allclose(p.minibatch_rgrad(xq, agents, batch), rg @ Q, atol=1e-12)
    np.testing.assert_allclose(U.T @ p.grad(U), 0, atol=1e-13)
    np.testing.assert_allclose(p.grad(UQ), p.grad(U) @ Q, atol=1e-12)
    # invariance forces U^T E symmetric; here U^T E = -2 lam mean_ij w w^T (normal equations)
    E = p.egrad(U)
    ww = np.zeros((R, R))
    for i in range(S):
        for j in range(N):
            X, y = task_rows(data, i, j)
            w = ridge_w(X @ U, y, lam)
            ww += np.outer(w, w) / (S * N)
    np.testing.assert_allclose(U.T @ E, -2 * lam * ww, atol=1e-12)


@pytest.mark.parametrize("gradient", GRADIENTS)
def test_noise_free_data_are_minimised_by_u_star(gradient):
    """noise = 0, lam = 0: every task is fitted exactly on span(U*), so F(U*) = 0 and
    every task's gradient vanishes at U* (and at any representative U* Q)."""
    a = generate(np.random.default_rng(7), S, N, M, R, D_MIN, D_MAX, noise=0.0)
    p = MultitaskFeatures.from_arrays(a, gradient=gradient)
    assert p.gradient == gradient
    np.testing.assert_array_equal(p.U_star, a["U_star"])
    assert p.r == R and p.lam == 0.0
    U = a["U_star"]
    y_scale = np.mean(0.5 * np.sum(a["y"] ** 2, axis=2))          # F of the zero predictor
    # scale of the terms that cancel in X^T (X U w - y) w^T
    g_scale = np.mean([np.linalg.norm(task_rows(a, i, j)[0].T @ task_rows(a, i, j)[1])
                       * np.linalg.norm(np.linalg.lstsq(task_rows(a, i, j)[0] @ U,
                                                        task_rows(a, i, j)[1], rcond=None)[0])
                       for i in range(S) for j in range(N)])
    Q = random_orthogonal(np.random.default_rng(8))
    for V in (U, U @ Q):
        # a sum of squares: non-negative, and ~eps^2 ||y||^2 when computed from the residual
        # rows (the Gram form 0.5 (w'U'GUw - 2c'Uw + y'y) would cancel to ~eps ||y||^2)
        assert 0.0 <= p.cost(V) <= 1e-20 * y_scale
        assert 0.0 <= p.data_fit(V) <= 1e-20 * y_scale
        assert np.linalg.norm(p.egrad(V)) <= 1e-14 * g_scale
        assert p.grad_norm(V) <= 1e-14 * g_scale
        xs = np.broadcast_to(V, (S, M, R))
        assert np.abs(p.minibatch_egrad(xs, np.arange(S), np.array([[0, 1]] * S))).max() \
            <= 1e-14 * g_scale
        assert p.distance_to_optimum(V, U) < 1e-7
    rng = np.random.default_rng(9)
    for V in random_points(rng, 5):
        assert p.cost(V) > 1e-3 * y_scale
        theta = scipy.linalg.subspace_angles(V, U)
        assert abs(p.distance_to_optimum(V, U) - np.linalg.norm(theta)) < 1e-12


# ---- batching and padding ------------------------------------------------------
@pytest.mark.parametrize("gradient", GRADIENTS)
@pytest.mark.parametrize("lam", [0.0, 0.3])
def test_batched_gradient_equals_per_agent_and_per_task_loops(data, lam, gradient):
    p = MultitaskFeatures(data["X"], data["y"], data["d"], R, lam, gradient=gradient)
    rng = np.random.default_rng(10)
    agents = np.array([1, 2, 0, 1])
    x = random_points(rng, 4)
    batch = np.stack([rng.choice(N, 3, replace=False) for _ in range(4)])
    g = p.minibatch_egrad(x, agents, batch)
    for k in range(4):
        single = p.minibatch_egrad(x[k:k + 1], agents[k:k + 1], batch[k:k + 1])[0]
        np.testing.assert_allclose(g[k], single, rtol=0, atol=1e-12 * np.abs(g[k]).max())
        by_task = np.mean([grad_task(data, agents[k], j, x[k], lam) for j in batch[k]], axis=0)
        np.testing.assert_allclose(g[k], by_task, rtol=0, atol=1e-12 * np.abs(by_task).max())
    # full local quantities = the mini-batch of all tasks; global = mean over agents
    full = np.broadcast_to(np.arange(N), (4, N))
    np.testing.assert_allclose(p.local_egrad(x, agents), p.minibatch_egrad(x, agents, full),
                               atol=1e-14)
    hand = [np.mean([h_task(data, agents[k], j, x[k], lam) for j in range(N)]) for k in range(4)]
    np.testing.assert_allclose(p.local_cost(x, agents), hand, rtol=1e-12)
    U = x[0]
    xs = np.broadcast_to(U, (S, M, R))
    assert abs(p.cost(U) - p.local_cost(xs, np.arange(S)).mean()) <= 1e-14 * p.cost(U)
    np.testing.assert_allclose(p.egrad(U), p.local_egrad(xs, np.arange(S)).mean(axis=0),
                               atol=1e-14)
    assert np.allclose(p.weights, 1 / S) and list(p.local_sizes) == [N] * S


@pytest.mark.parametrize("gradient", GRADIENTS)
@pytest.mark.parametrize("lam", [0.0, 0.3])
def test_padded_rows_change_nothing(data, lam, gradient):
    """The same tasks with 3 extra zero rows of padding give the same cost and gradients."""
    extra = 3
    X2 = np.concatenate([data["X"], np.zeros((S, N, extra, M))], axis=2)
    y2 = np.concatenate([data["y"], np.zeros((S, N, extra))], axis=2)
    p = MultitaskFeatures(data["X"], data["y"], data["d"], R, lam, gradient=gradient)
    q = MultitaskFeatures(X2, y2, data["d"], R, lam, gradient=gradient)
    rng = np.random.default_rng(11)
    x = random_points(rng, S)
    agents, batch = np.arange(S), np.stack([rng.choice(N, 2, replace=False) for _ in range(S)])
    U = x[0]
    assert q.cost(U) == pytest.approx(p.cost(U), rel=1e-15, abs=0)
    np.testing.assert_allclose(q.egrad(U), p.egrad(U), rtol=1e-15, atol=0)
    np.testing.assert_allclose(q.minibatch_egrad(x, agents, batch),
                               p.minibatch_egrad(x, agents, batch), rtol=1e-15, atol=0)
    np.testing.assert_allclose(q.local_cost(x, agents), p.local_cost(x, agents), rtol=1e-15)


def test_auto_gradient_path_and_both_paths_agree(data):
    """auto: raw rows when tasks have fewer (padded) rows than features, Gram otherwise."""
    assert MultitaskFeatures(data["X"], data["y"], data["d"], R).gradient == "rows"   # D=6 < m=8
    wide = generate(np.random.default_rng(12), 2, 3, 4, 2, 5, 9, noise=0.1)           # D=9 >= m=4
    p = MultitaskFeatures.from_arrays(wide)
    assert p.gradient == "gram" and p.G.shape == (2, 3, 4, 4)
    q = MultitaskFeatures.from_arrays(wide, gradient="rows")
    assert q.G is None
    x = random_points(np.random.default_rng(13), 2, m=4)
    full = np.broadcast_to(np.arange(3), (2, 3))
    g = p.minibatch_egrad(x, np.arange(2), full)
    np.testing.assert_allclose(q.minibatch_egrad(x, np.arange(2), full), g,
                               rtol=0, atol=1e-13 * np.abs(g).max())
    with pytest.raises(ValueError, match="allowed: auto, gram, rows"):
        MultitaskFeatures(data["X"], data["y"], data["d"], R, gradient="qr")


def test_nonzero_padding_and_underdetermined_tasks_are_refused(data):
    X = data["X"].copy()
    i, j = np.argwhere(data["d"] < D_MAX)[0]
    X[i, j, D_MAX - 1, 0] = 1.0
    with pytest.raises(ValueError, match="padded rows"):
        MultitaskFeatures(X, data["y"], data["d"], R)
    small = data["d"].copy()
    small[0, 0] = 1
    X, y = data["X"].copy(), data["y"].copy()
    X[0, 0, 1:], y[0, 0, 1:] = 0, 0
    with pytest.raises(ValueError, match="at least r=2 rows"):
        MultitaskFeatures(X, y, small, R, 0.0)
    MultitaskFeatures(X, y, small, R, 0.1)           # ridge makes w unique


# ---- prediction / NMSE ---------------------------------------------------------
def test_test_nmse_by_hand_on_a_tiny_example():
    """S = 2 agents x N = 1 task, m = 2, r = 1, U = e_1: each task fits y ~ w x_1 on its
    training rows; NMSE pools the squared test errors over the population variance."""
    X = np.zeros((2, 1, 3, 2))
    y = np.zeros((2, 1, 3))
    X[0, 0, :2] = [[1.0, 5.0], [2.0, -1.0]]
    y[0, 0, :2] = [1.0, 3.0]
    X[1, 0, :3] = [[1.0, 0.0], [1.0, 2.0], [3.0, 7.0]]
    y[1, 0, :3] = [2.0, 1.0, 4.0]
    d = np.array([[2], [3]])
    p = MultitaskFeatures(X, y, d, r=1, lam=0.0)
    U = np.array([[1.0], [0.0]])
    # least squares on x_1: w = sum x y / sum x^2
    w0 = (1 * 1 + 2 * 3) / (1 + 4)                 # 7/5
    w1 = (1 * 2 + 1 * 1 + 3 * 4) / (1 + 1 + 9)     # 15/11
    np.testing.assert_allclose(p.coefficients(U)[:, 0, 0], [w0, w1], rtol=1e-14)
    Xt = np.zeros((2, 1, 2, 2))
    yt = np.zeros((2, 1, 2))
    Xt[0, 0, :1] = [[3.0, 1.0]]
    yt[0, 0, :1] = [5.0]
    Xt[1, 0, :2] = [[-1.0, 4.0], [2.0, 2.0]]
    yt[1, 0, :2] = [0.0, 2.0]
    nt = np.array([[1], [2]])
    pred = [3 * w0, -1 * w1, 2 * w1]
    true = [5.0, 0.0, 2.0]
    mse = sum((a - b) ** 2 for a, b in zip(pred, true)) / 3
    mean = sum(true) / 3
    var = sum((t - mean) ** 2 for t in true) / 3
    assert p.test_nmse(U, Xt, yt, nt) == pytest.approx(mse / var, rel=1e-14)
    np.testing.assert_allclose(p.predict(U, Xt)[:, 0], [[3 * w0, 0.0], [-w1, 2 * w1]], rtol=1e-14)
    with pytest.raises(ValueError, match="no test data"):
        p.predict(U)


def _fake_school(seed=0, n_schools=9, m=5):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 9, n_schools)
    school = np.repeat(np.arange(1, n_schools + 1), sizes)
    X = rng.standard_normal((school.size, m))
    X[:, -1] = 1.0
    y = X @ rng.standard_normal(m) + 0.1 * rng.standard_normal(school.size)
    return X, y, school


def test_from_school_keeps_the_test_split_and_fits_on_training_rows():
    X, y, school = _fake_school()
    split = sch.split_school(X, y, school, rng=np.random.default_rng(3),
                             n_agents=2, tasks_per_agent=4)
    lam, r = 1e-3, 2
    p = MultitaskFeatures.from_school(split, r=r, lam=lam)
    q = SchoolMultitask.from_arrays(split, {"r": r, "lam": lam, "S": 2, "N": 4})
    assert p.n_agents == 2 and list(p.local_sizes) == [4, 4] and p.lam == lam and q.lam == lam
    assert isinstance(q, SchoolMultitask) and q.r == r
    U = random_points(np.random.default_rng(4), 1, m=5, r=r)[0]
    assert q.test_nmse(U) == p.test_nmse(U)
    assert q.extra_metrics(U)["test_nmse"] == pytest.approx(p.test_nmse(U), rel=1e-13)
    assert list(SchoolMultitask.metrics) == ["test_nmse", "test_nmse_taskmean", "test_nmse_refit",
                                             "test_nmse_refit_taskmean"]
    assert set(SchoolMultitask.metric_definitions) == set(SchoolMultitask.metrics)
    assert MultitaskFeatures.from_arrays({**split, "r": np.array(r)}).lam == lam   # default 1e-3
    # by hand from the original rows: fit each school's w on its training students
    se, truth = 0.0, []
    for s in range(2):
        for j in range(4):
            tr = split["idx_train"][s, j, :split["n_train"][s, j]]
            te = split["idx_test"][s, j, :split["n_test"][s, j]]
            w = ridge_w(X[tr] @ U, y[tr], lam)
            se += np.sum((X[te] @ U @ w - y[te]) ** 2)
            truth.extend(y[te])
    truth = np.array(truth)
    expected = (se / truth.size) / np.mean((truth - truth.mean()) ** 2)
    assert p.test_nmse(U) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="needs the subspace dimension r"):
        MultitaskFeatures.from_arrays(split)
    with pytest.raises(ValueError, match="split_school dict"):
        SchoolMultitask.from_arrays(generate(np.random.default_rng(0), 2, 2, 4, 1), {"r": 1})


def test_test_nmse_protocols_against_a_per_task_solve():
    """Both evaluation protocols and both normalisations against a direct computation from the
    original rows: w by a ridge solve (numpy lstsq on the stacked [X U; sqrt(2 lambda) I]) on
    the task's training rows (heldout) or on its test rows (refit_on_test)."""
    X, y, school = _fake_school(seed=5, n_schools=7)
    split = sch.split_school(X, y, school, rng=np.random.default_rng(8), n_agents=2,
                             tasks_per_agent=3)
    lam, r = 0.05, 2
    q = SchoolMultitask.from_arrays(split, {"r": r, "lam": lam, "S": 2, "N": 3})
    U = random_points(np.random.default_rng(9), 1, m=5, r=r)[0]

    sq = {"heldout": [], "refit_on_test": []}
    truth = []
    for s in range(2):
        for j in range(3):
            tr = split["idx_train"][s, j, :split["n_train"][s, j]]
            te = split["idx_test"][s, j, :split["n_test"][s, j]]
            for protocol, rows in (("heldout", tr), ("refit_on_test", te)):
                w = ridge_w(X[rows] @ U, y[rows], lam)
                sq[protocol].append((X[te] @ U @ w - y[te]) ** 2)
            truth.append(y[te])
    var = np.var(np.concatenate(truth))
    row = q.extra_metrics(U)
    for protocol, errs in sq.items():
        pooled = np.concatenate(errs).mean() / var
        task_mean = np.mean([e.mean() for e in errs]) / var
        assert q.test_nmse(U, protocol=protocol) == pytest.approx(pooled, rel=1e-10)
        assert q.test_nmse(U, protocol=protocol, normalisation="task_mean") == pytest.approx(
            task_mean, rel=1e-10)
        assert row[nmse_column(protocol, "pooled")] == pytest.approx(pooled, rel=1e-10)
        assert row[nmse_column(protocol, "task_mean")] == pytest.approx(task_mean, rel=1e-10)
    # fitted on the rows it is scored on, w does better there (lambda is small)
    assert row["test_nmse_refit"] < row["test_nmse"]
    with pytest.raises(ValueError, match="protocol 'refit'.*allowed: heldout, refit_on_test"):
        q.test_nmse(U, protocol="refit")
    with pytest.raises(ValueError, match="normalisation 'mean'.*allowed: pooled, task_mean"):
        nmse_column("heldout", "mean")


def test_refit_on_test_with_lambda_zero_is_the_least_squares_projection():
    """lambda = 0 with 1-2 test rows per task (at most r, so X_te U may be rank-deficient):
    the refit residual is that of numpy's least-squares solution on the test rows."""
    X, y, school = _fake_school(seed=2, n_schools=4)
    split = sch.split_school(X, y, school, rng=np.random.default_rng(1), n_agents=2,
                             tasks_per_agent=2, train_fraction=0.8)
    p = MultitaskFeatures.from_school(split, r=2, lam=0.0)
    U = random_points(np.random.default_rng(3), 1, m=5, r=2)[0]
    res = p.test_residuals(U, "refit_on_test")
    for s in range(2):
        for j in range(2):
            te = split["idx_test"][s, j, :split["n_test"][s, j]]
            A = X[te] @ U
            w = np.linalg.lstsq(A, y[te], rcond=None)[0]
            np.testing.assert_allclose(res[s, j, :te.size], A @ w - y[te], atol=1e-10)
            assert np.all(res[s, j, te.size:] == 0)


def test_from_arrays_reads_r_and_lambda_from_params_and_offers_u_star():
    a = generate(np.random.default_rng(14), S, N, M, R, D_MIN, D_MAX, noise=0.1)
    params = {"S": S, "N": N, "m": M, "r": R, "d_min": D_MIN, "d_max": D_MAX,
              "noise": 0.1, "lam": 0.25}
    p = MultitaskFeatures.from_arrays(a, params, retraction="exp", transport="projection")
    assert (p.r, p.lam) == (R, 0.25)
    # Figure 2b's metric: principal-angle distance to the planted U*, zero at U* itself
    assert set(p.extra_metrics(a["U_star"])) == {"subspace_dist"}
    assert p.extra_metrics(a["U_star"])["subspace_dist"] < 1e-12
    assert p.manifold.retraction_name == "exp" and p.manifold.transport_name == "projection"
    cands = p.reference_candidates()
    assert len(cands) == 1
    np.testing.assert_array_equal(cands[0], a["U_star"])
    q = MultitaskFeatures.from_arrays(a)                   # paper's synthetic case: lam = 0
    assert (q.r, q.lam) == (R, 0.0)
    assert MultitaskFeatures.from_arrays(a, {"r": 1}).reference_candidates() == []


def test_local_sizes_from_params():
    assert MultitaskFeatures.local_sizes_from({"S": 20, "N": 50}) == [50] * 20
    assert MultitaskFeatures.local_sizes_from({"n_agents": 6, "tasks_per_agent": 23}) == [23] * 6

"""RLBFGS against closed-form optima: top eigenvector on the sphere, Brockett
cost on Stiefel, dominant eigenspace on Grassmann, tr(AX) - log det X on SPD."""

import numpy as np
import pytest

from rfl.algorithms.base import Counters
from rfl.algorithms.rlbfgs import RLBFGS
from rfl.manifolds import SPD, Grassmann, Stiefel
from rfl.problems.base import Problem
from rfl.problems.cpesph import CPESph

TOL = 1e-6          # the solver's stopping tolerance on ||grad F||
EXACT = 1e-10       # accuracy demanded of F and of the minimiser


def spectrum_data(rng, lam, S, N):
    """Z: (S, N, n) whose pooled covariance is exactly V diag(lam) V^T (up to rounding).

    With Q: (S N, n) orthonormal columns, Z = sqrt(S N) Q diag(sqrt lam) V^T gives
    Z^T Z / (S N) = V diag(lam) V^T; rows are dealt to S agents of N samples.
    """
    n = lam.shape[0]
    Q, _ = np.linalg.qr(rng.standard_normal((S * N, n)))
    V, _ = np.linalg.qr(rng.standard_normal((n, n)))
    Z = np.sqrt(S * N) * (Q * np.sqrt(lam)) @ V.T
    return Z.reshape(S, N, n), V


def sym_with_spectrum(rng, lam):
    V, _ = np.linalg.qr(rng.standard_normal((lam.size, lam.size)))
    return (V * lam) @ V.T, V


class Brockett(Problem):
    """F(X) = tr(X^T A X H) on St(p, n), H = diag(p, ..., 1); egrad = 2 A X H."""

    def __init__(self, A, p, **geometry):
        self.A = A
        self.H = np.arange(p, 0, -1.0)
        self.manifold = Stiefel(A.shape[0], p, **geometry)
        self.local_sizes = np.array([3, 4])

    def cost(self, x):
        return float(np.sum((x.T @ self.A @ x).diagonal() * self.H))

    def egrad(self, x):
        return 2.0 * self.A @ x * self.H


class NegTrace(Problem):
    """F(U) = -tr(U^T A U) on Gr(r, m); egrad = -2 A U."""

    def __init__(self, A, r, **geometry):
        self.A = A
        self.manifold = Grassmann(A.shape[0], r, **geometry)
        self.local_sizes = np.array([5])

    def cost(self, x):
        return float(-np.trace(x.T @ self.A @ x))

    def egrad(self, x):
        return -2.0 * self.A @ x


class LogDetBarrier(Problem):
    """F(X) = tr(A X) - log det X on SPD(n); egrad = A - X^{-1}; min at X* = A^{-1},
    F* = n + log det A (stationarity A = X^{-1}; F geodesically convex)."""

    def __init__(self, A):
        self.A = A
        self.manifold = SPD(A.shape[0])
        self.local_sizes = np.array([2, 2, 2])

    def cost(self, x):
        sign, logdet = np.linalg.slogdet(x)
        return float(np.sum(self.A * x) - logdet) if sign > 0 else np.inf

    def egrad(self, x):
        return self.A - np.linalg.inv(x)


# ---- sphere -----------------------------------------------------------------

@pytest.fixture(scope="module")
def sphere_problem():
    rng = np.random.default_rng(7)
    lam = np.concatenate([[2.0, 1.7], np.linspace(1.5, 0.1, 18)])
    Z, V = spectrum_data(rng, lam, S=4, N=25)
    return CPESph(Z), V[:, 0], lam[0], rng.standard_normal(20)


@pytest.mark.parametrize("transport", ["parallel", "projection"])
@pytest.mark.parametrize("retraction", ["normalize", "exp"])
def test_sphere_top_eigenvector(sphere_problem, retraction, transport):
    base, v, lam_max, g = sphere_problem
    p = CPESph(base.Z, retraction=retraction, transport=transport)
    x0 = g / np.linalg.norm(g)
    x, info = RLBFGS(p).solve(x0)
    assert info["stop_reason"] == "tolerance"
    assert p.grad_norm(x) < TOL
    assert abs(np.linalg.norm(x) - 1.0) < 1e-14
    assert 1.0 - abs(x @ v) < EXACT
    assert abs(p.cost(x) - (-lam_max)) < EXACT
    assert info["iterations"] < 100


def test_iterate_rows_and_counters(sphere_problem):
    """One row per iteration, t = 0, 1, ...; row t+1 (x_{t+1}) reports the t+1 full
    gradients at x_0..x_t; Armijo makes F non-increasing; stops early at tolerance."""
    p, v, lam_max, g = sphere_problem
    x0 = g / np.linalg.norm(g)
    alg = RLBFGS(p)
    rows = list(alg.iterate(x0, 500))
    n_full = int(p.local_sizes.sum())
    assert [t for t, _, _ in rows] == list(range(len(rows)))
    assert all(isinstance(c, Counters) for _, _, c in rows)
    assert [c.grad_evals for _, _, c in rows] == [(t + 1) * n_full for t in range(len(rows))]
    assert all(c.floats == 0 for _, _, c in rows)
    costs = [p.cost(x0)] + [p.cost(x) for _, x, _ in rows]
    assert all(b <= a for a, b in zip(costs, costs[1:]))
    # stopped early, at the first iterate with ||grad|| < TOL
    gn = [p.grad_norm(x) for _, x, _ in rows]
    assert len(rows) < 500 and gn[-1] < TOL and min(gn[:-1]) >= TOL
    assert alg.stop_reason == "tolerance"
    # a budget smaller than needed gives exactly that many rows
    assert len(list(RLBFGS(p).iterate(x0, 5))) == 5


def test_first_step_is_armijo_steepest_descent(sphere_problem):
    """Before any pair is stored H^0 = I: x_1 = R_x0(-a grad F(x0)) with a = 2^-k the
    first halving that satisfies Armijo with c = 1e-4."""
    p, _, _, g = sphere_problem
    x0 = g / np.linalg.norm(g)
    _, x1, _ = next(RLBFGS(p).iterate(x0, 1))
    gr = -2 * (p.C @ x0 - (x0 @ p.C @ x0) * x0)          # Riemannian gradient, closed form
    for k in range(25):
        a = 0.5 ** k
        y = (x0 - a * gr) / np.linalg.norm(x0 - a * gr)
        if p.cost(y) <= p.cost(x0) - 1e-4 * a * (gr @ gr):
            break
    np.testing.assert_allclose(x1, y, rtol=0, atol=1e-15)


# ---- Stiefel, Grassmann, SPD ------------------------------------------------

@pytest.mark.parametrize("transport", ["parallelization", "projection"])
@pytest.mark.parametrize("retraction", ["polar", "qr"])
def test_stiefel_brockett(retraction, transport):
    """min tr(X^T A X H), H = diag(p..1): X* = eigenvectors of the p smallest
    eigenvalues, the largest H_ii paired with the smallest lambda;
    F* = sum_i H_ii lambda_i (ascending lambda, descending H)."""
    rng = np.random.default_rng(11)
    p = 3                                    # n = 9: the length of lam
    lam = np.array([0.5, 1.0, 1.6, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0])
    A, V = sym_with_spectrum(rng, lam)
    prob = Brockett(A, p, retraction=retraction, transport=transport)
    x0 = prob.manifold.random_point(rng, 1)[0]
    x, info = RLBFGS(prob).solve(x0)
    assert info["stop_reason"] == "tolerance"
    assert prob.grad_norm(x) < TOL
    assert np.linalg.norm(x.T @ x - np.eye(p)) < 1e-13
    assert abs(prob.cost(x) - np.sum(np.array([3.0, 2.0, 1.0]) * lam[:p])) < EXACT
    for i in range(p):
        assert 1.0 - abs(x[:, i] @ V[:, i]) < EXACT


@pytest.mark.parametrize("transport", ["parallelization", "projection"])
@pytest.mark.parametrize("retraction", ["svd", "exp"])
def test_grassmann_dominant_subspace(retraction, transport):
    """min -tr(U^T A U) over Gr(r, m): the dominant r-dimensional eigenspace,
    F* = -(sum of the r largest eigenvalues)."""
    rng = np.random.default_rng(12)
    m, r = 12, 3
    lam = np.concatenate([np.linspace(0.0, 2.0, m - r), [3.0, 3.5, 4.5]])
    A, V = sym_with_spectrum(rng, lam)
    prob = NegTrace(A, r, retraction=retraction, transport=transport)
    x0 = prob.manifold.random_point(rng, 1)[0]
    x, info = RLBFGS(prob).solve(x0)
    assert info["stop_reason"] == "tolerance"
    assert prob.grad_norm(x) < TOL
    assert abs(prob.cost(x) - (-lam[-r:].sum())) < EXACT
    # sin of the largest principal angle between span(U) and span(V_top) = ||(I - V V^T) U||_2
    Vt = V[:, -r:]
    assert np.linalg.norm(x - Vt @ (Vt.T @ x), 2) < 1e-6


def test_spd_logdet_barrier():
    rng = np.random.default_rng(13)
    n = 5
    A, _ = sym_with_spectrum(rng, np.array([0.3, 0.7, 1.0, 2.0, 4.0]))
    prob = LogDetBarrier(A)
    x0 = np.eye(n)
    x, info = RLBFGS(prob).solve(x0)
    assert info["stop_reason"] == "tolerance"
    assert prob.grad_norm(x) < TOL
    assert abs(prob.cost(x) - (n + np.linalg.slogdet(A)[1])) < EXACT
    np.testing.assert_allclose(x, np.linalg.inv(A), rtol=0, atol=1e-6)


def test_memory_zero_is_barzilai_borwein_descent(sphere_problem):
    """Without stored pairs the direction is -gamma grad: still converges."""
    p, v, lam_max, g = sphere_problem
    x, info = RLBFGS(p, memory=0, max_iterations=5000).solve(g / np.linalg.norm(g))
    assert info["stop_reason"] == "tolerance"
    assert abs(p.cost(x) + lam_max) < EXACT


def test_a_trial_step_whose_cost_is_nan_is_never_accepted():
    """A weighted Frechet mean in H^2 of one point y with weight 1000: the first trial step
    -grad F = 2000 Log_x(y) is 2000 d(x, y) long, beyond where cosh overflows (about 710), so
    the Lorentz Exp returns a non-finite point and its cost is NaN. NaN > c is false, so a
    line search that tests "f_new > f0 + c" accepted it; it must count as no decrease and
    backtrack, and RLBFGS then reaches the minimiser y (F = 0)."""
    from rfl.manifolds import Lorentz
    from rfl.problems.hsp import HSP

    M = Lorentz(2)
    x0, y = M.random_point(np.random.default_rng(5), 2)
    d0 = float(M.dist(x0[None], y[None])[0])
    assert 2000 * d0 > 710                                # the first trial overflows
    problem = HSP(y[None, None], np.array([[1000.0]]), y)
    with np.errstate(over="ignore", invalid="ignore"):
        assert not np.isfinite(problem.cost(M.exp(x0[None], -2000 * d0 * M.log(x0[None], y[None])
                                                  / d0)[0]))
        x, info = RLBFGS(problem, tolerance=1e-8, max_iterations=100).solve(x0)
    assert np.all(np.isfinite(x)) and info["stop_reason"] == "tolerance"
    # grad F = -2000 Log_x(y): ||grad|| < 1e-8 puts x within 5e-12 of y (to the rounding of
    # a distance near y, a few eps x_0)
    assert float(M.dist(x[None], y[None])[0]) <= 1e-8 / 2000 + 8 * np.finfo(float).eps * y[0]

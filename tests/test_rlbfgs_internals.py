"""RLBFGS's internals against a plain single-point L-BFGS written here from the textbook
(Nocedal & Wright, Algorithm 7.4 for the two-loop recursion; Huang, Absil & Gallivan 2018
for the cautious update and the transport of the stored pairs), and pymanopt's view of our
geometry (the transport handed to RSD / RCG).

The oracle keeps the stored pairs in a Python list and applies every map to one point at a
time; the solver keeps stacked arrays and batches its transports. Same rules, different code:
an off-by-one in the memory, the pairs in the wrong order, gamma from the wrong pair, a pair
not transported, or the cautious test on the wrong gradient makes the iterates differ.
"""

import numpy as np
import pytest

from rfl.algorithms.centralized import RCG, PymanoptView
from rfl.algorithms.rlbfgs import RLBFGS
from rfl.manifolds import Euclidean, Sphere, Stiefel
from rfl.problems.base import Problem
from rfl.testing.manifold import example_ids, registered_examples


@pytest.fixture(autouse=True)
def deadlock_watchdog():
    """RCG's optimizer thread and its generator run in lock-step; a bug there deadlocks. Then
    end the test process after 20 s with every thread's traceback rather than stall the run."""
    import faulthandler
    faulthandler.dump_traceback_later(20, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


class Quadratic(Problem):
    """F(x) = 1/2 x^T A x - b^T x on R^n; egrad = A x - b."""

    def __init__(self, A, b):
        self.A, self.b = A, b
        self.manifold = Euclidean(b.size)
        self.local_sizes = np.array([4, 6])

    def cost(self, x):
        return float(0.5 * x @ self.A @ x - self.b @ x)

    def egrad(self, x):
        return self.A @ x - self.b


class CosineSum(Problem):
    """F(x) = sum_i cos(x_i) on R^n: concave near 0 (Hessian -diag cos x), so the first
    pairs from a start near 0 have <s, y> < 0 and the cautious test must reject them."""

    def __init__(self, n):
        self.manifold = Euclidean(n)
        self.local_sizes = np.array([1])

    def cost(self, x):
        return float(np.sum(np.cos(x)))

    def egrad(self, x):
        return -np.sin(x)


class Rayleigh(Problem):
    """F(x) = -x^T A x on the sphere S^{n-1}; egrad = -2 A x."""

    def __init__(self, A, **geometry):
        self.A = A
        self.manifold = Sphere(A.shape[0], **geometry)
        self.local_sizes = np.array([3])

    def cost(self, x):
        return float(-x @ self.A @ x)

    def egrad(self, x):
        return -2.0 * self.A @ x


def plain_lbfgs(problem, x0, iterations, memory, *, contraction=0.5, c1=1e-4, ls_max_steps=25,
                cautious=1e-4):
    """The oracle: single-point Riemannian L-BFGS; returns the iterates x_1 .. x_iterations.

    rho_i = 1/<s_i, y_i> is fixed when the pair is stored, while s_i and y_i are transported
    every iteration (Manopt's rlbfgs.m keeps rhoHistory so; with a non-isometric transport
    <s_i, y_i> drifts, and the sphere test with projection transport tells the two apart).
    """
    m = problem.manifold

    def one(fn, *args):
        return fn(*(a[None] for a in args))[0]

    def inner(x, u, v):
        return float(one(m.inner, x, u, v))

    def grad(x):
        return one(m.euclidean_to_riemannian_gradient, x, problem.egrad(x))

    x = np.array(x0, dtype=float)
    f, g = problem.cost(x), grad(x)
    pairs, gamma, out = [], 1.0, []
    for _ in range(iterations):
        q, coefficients = g.copy(), []
        for s, y, rho in reversed(pairs):               # newest to oldest
            a = rho * inner(x, s, q)
            q = q - a * y
            coefficients.append(a)
        r = gamma * q
        for (s, y, rho), a in zip(pairs, reversed(coefficients)):   # oldest to newest
            b = rho * inner(x, y, r)
            r = r + (a - b) * s
        p = -r
        slope = inner(x, g, p)
        alpha, trials = 1.0, 0
        while True:
            x_new = one(m.retraction, x, alpha * p)
            f_new = problem.cost(x_new)
            trials += 1
            if f_new <= f + c1 * alpha * slope or trials == ls_max_steps:
                break
            alpha *= contraction
        if f_new > f:
            alpha, x_new, f_new = 0.0, x, f
        out.append(x_new)
        g_new = grad(x_new)
        s = one(m.transport, x, x_new, alpha * p)
        y = g_new - one(m.transport, x, x_new, g)
        pairs = [(one(m.transport, x, x_new, s_i), one(m.transport, x, x_new, y_i), rho)
                 for s_i, y_i, rho in pairs]
        norm_s = np.sqrt(inner(x_new, s, s))
        if norm_s > 0:
            s, y = s / norm_s, y / norm_s
            if inner(x_new, s, y) / inner(x_new, s, s) >= cautious * np.sqrt(inner(x, g, g)):
                gamma = inner(x_new, s, y) / inner(x_new, y, y)
                pairs = (pairs + [(s, y, 1.0 / inner(x_new, s, y))])[-memory:] if memory else []
        x, f, g = x_new, f_new, g_new
    return out


def iterates(solver, x0, rounds):
    return [x.copy() for _, x, _ in solver.iterate(x0, rounds)]


def ill_conditioned(rng, n=8):
    V, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (V * np.geomspace(1.0, 300.0, n)) @ V.T


@pytest.mark.parametrize("memory", [0, 1, 3, 30])
def test_quadratic_iterates_equal_the_plain_lbfgs(memory):
    rng = np.random.default_rng(0)
    prob = Quadratic(ill_conditioned(rng), rng.standard_normal(8))
    x0 = rng.standard_normal(8)
    got = iterates(RLBFGS(prob, memory=memory, tolerance=0.0), x0, 12)
    want = plain_lbfgs(prob, x0, 12, memory)
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=0, atol=1e-10)
    # the memory matters at this size: a wrong truncation would not go unseen
    if memory == 1:
        other = plain_lbfgs(prob, x0, 12, 3)
        assert np.max(np.abs(np.array(want) - np.array(other))) > 1e-4


@pytest.mark.parametrize("geometry", [{"retraction": "exp", "transport": "parallel"},
                                      {"retraction": "normalize", "transport": "projection"}])
def test_sphere_iterates_equal_the_plain_lbfgs_with_transported_pairs(geometry):
    rng = np.random.default_rng(1)
    A = ill_conditioned(rng, 10)
    prob = Rayleigh(A, **geometry)
    x0 = rng.standard_normal(10)
    x0 /= np.linalg.norm(x0)
    got = iterates(RLBFGS(prob, memory=4, tolerance=0.0), x0, 10)
    want = plain_lbfgs(prob, x0, 10, 4)
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=0, atol=1e-10)


def test_cautious_threshold_uses_the_gradient_norm_at_the_old_point():
    """With a large cautious constant some pairs pass and some fail the test
    <s, y>/<s, s> >= c ||g_k||; which ones depends on taking g_k at the old point."""
    rng = np.random.default_rng(3)
    prob = Quadratic(ill_conditioned(rng), 30.0 * rng.standard_normal(8))
    x0 = rng.standard_normal(8)
    for c in (0.02, 0.05, 0.5):
        solver = RLBFGS(prob, memory=3, tolerance=0.0, cautious=c)
        got = iterates(solver, x0, 15)
        np.testing.assert_allclose(np.array(got), np.array(plain_lbfgs(prob, x0, 15, 3, cautious=c)),
                                   rtol=0, atol=1e-9, err_msg=f"cautious={c}")
        assert solver.accepted_pairs > 0 and solver.rejected_pairs > 0, c


def test_cautious_update_rejects_negative_curvature_pairs():
    prob = CosineSum(5)
    x0 = np.full(5, 0.05) * np.arange(1, 6)
    solver = RLBFGS(prob, memory=5, tolerance=0.0)
    got = iterates(solver, x0, 6)
    assert solver.rejected_pairs >= 1                   # <s, y> < 0 in the concave region
    np.testing.assert_allclose(np.array(got), np.array(plain_lbfgs(prob, x0, 6, 5)),
                               rtol=0, atol=1e-12)
    # a pair rejected at the first step leaves the next direction -gamma g with gamma = 1:
    # the second iterate is an Armijo steepest-descent step from the first
    x1, x2 = got[0], got[1]
    g1 = prob.egrad(x1)
    alpha = 1.0
    while prob.cost(x1 - alpha * g1) > prob.cost(x1) - 1e-4 * alpha * g1 @ g1:
        alpha /= 2
    np.testing.assert_allclose(x2, x1 - alpha * g1, rtol=0, atol=1e-14)


def test_two_loop_direction_is_the_bfgs_inverse_hessian_update():
    """-H g with H from the explicit BFGS update H <- (I - rho s y^T) H (I - rho y s^T) + rho s s^T,
    H_0 = gamma I, applied to the pairs oldest first (Nocedal & Wright (7.19))."""
    rng = np.random.default_rng(2)
    n, k = 6, 4
    prob = Quadratic(np.eye(n), np.zeros(n))
    S = rng.standard_normal((k, n))
    Y = S @ ill_conditioned(rng, n)                     # <s, y> > 0
    rho = 1.0 / np.einsum("ij,ij->i", S, Y)
    gamma = 0.37
    g = rng.standard_normal(n)
    H = gamma * np.eye(n)
    for s, y, r in zip(S, Y, rho):
        E = np.eye(n) - r * np.outer(s, y)
        H = E @ H @ E.T + r * np.outer(s, s)
    p = RLBFGS(prob)._direction(np.zeros(n), g, S, Y, rho, gamma)
    np.testing.assert_allclose(p, -H @ g, rtol=1e-12, atol=1e-12)


def test_line_search_halves_until_armijo_and_counts_the_first_trial():
    """F = |x|^2 / 2, p = -4 x: alpha = 1 gives 9 F, 1/2 gives F (no sufficient decrease),
    1/4 gives 0: accepted after three cost evaluations."""
    prob = Quadratic(np.eye(3), np.zeros(3))
    solver = RLBFGS(prob)
    x = np.array([1.0, -2.0, 0.5])
    f0 = prob.cost(x)
    p = -4.0 * x
    alpha, x_new, f_new = solver._line_search(x, p, f0, float(x @ p))
    assert alpha == 0.25 and solver.cost_evals == 3
    np.testing.assert_allclose(x_new, 0.0, atol=1e-15)


def test_line_search_rejects_an_ascent_step_after_ls_max_steps():
    prob = Quadratic(np.eye(3), np.zeros(3))
    solver = RLBFGS(prob, ls_max_steps=7)
    x = np.array([1.0, -2.0, 0.5])
    f0 = prob.cost(x)
    alpha, x_new, f_new = solver._line_search(x, 2.0 * x, f0, float(x @ (2.0 * x)))
    assert (alpha, f_new) == (0.0, f0) and x_new is x
    assert solver.cost_evals == 7


# ---- the geometry pymanopt is handed (RSD, RCG) ------------------------------------------

EXAMPLES = registered_examples()


@pytest.mark.parametrize("m", EXAMPLES, ids=example_ids(EXAMPLES))
def test_pymanopt_view_transport_is_ours_from_first_to_second_point(m):
    rng = np.random.default_rng(5)
    x, y = m.random_point(rng, 2)
    v = m.random_tangent(rng, x[None])[0]
    view = PymanoptView(m)
    w = view.transport(x, y, v)
    np.testing.assert_allclose(w, m.transport(x[None], y[None], v[None])[0], rtol=0, atol=1e-14)
    # lands in T_y, the tangent space of the *second* point
    np.testing.assert_allclose(m.projection(y[None], w[None])[0], w, rtol=0, atol=1e-10)
    np.testing.assert_allclose(view.euclidean_to_riemannian_gradient(x, v),
                               m.euclidean_to_riemannian_gradient(x[None], v[None])[0], atol=1e-14)
    np.testing.assert_allclose(view.retraction(x, v), m.retraction(x[None], v[None])[0], atol=1e-14)


class SourceCheckingStiefel(Stiefel):
    """Stiefel whose transport refuses a vector that is not tangent at its first point."""

    calls = 0

    def transport(self, x, y, u):
        type(self).calls += 1
        off = np.max(np.abs(self.projection(x, u) - u))
        assert off < 1e-8 * max(1.0, float(np.max(np.abs(u)))), "transport called from the wrong point"
        return super().transport(x, y, u)


def test_rcg_transports_its_direction_from_the_old_to_the_new_iterate():
    rng = np.random.default_rng(6)
    A = ill_conditioned(rng, 7)

    class Brockett(Problem):
        def __init__(self):
            self.manifold = SourceCheckingStiefel(7, 2)
            self.local_sizes = np.array([2])
            self.H = np.array([2.0, 1.0])

        def cost(self, x):
            return float(np.sum((x.T @ A @ x).diagonal() * self.H))

        def egrad(self, x):
            return 2.0 * A @ x * self.H

    prob = Brockett()
    x0 = prob.manifold.random_point(rng, 1)[0]
    SourceCheckingStiefel.calls = 0
    rows = list(RCG(prob).iterate(x0, 8))
    assert len(rows) == 8 and SourceCheckingStiefel.calls >= 6


# ---- bookkeeping: the state a caller reads, the stopping rules -----------------------------
def _grad_norm(prob, x):
    """||grad F(x)||, as the solver's stopping test reads it (Euclidean: grad = egrad)."""
    return float(prob.manifold.norm(x[None], prob.egrad(x)[None])[0])


def test_a_fresh_solver_and_a_start_at_the_optimum():
    """Before any run: no iterate, costs NaN, nothing counted. From x* itself (||grad|| <
    tolerance) the run has no rows and says why; the state describes x*."""
    rng = np.random.default_rng(4)
    A, b = ill_conditioned(rng, 5), rng.standard_normal(5)
    prob = Quadratic(A, b)
    solver = RLBFGS(prob)
    assert solver.x is None and solver.stop_reason is None
    assert np.isnan(solver.cost_value) and np.isnan(solver.grad_norm_value)
    assert (solver.iterations, solver.accepted_pairs, solver.rejected_pairs, solver.cost_evals,
            solver.grad_count) == (0, 0, 0, 0, 0)
    list(solver.iterate(rng.standard_normal(5), 4))              # some state to forget
    x_star = np.linalg.solve(A, b)
    assert list(solver.iterate(x_star, 10)) == []
    assert solver.stop_reason == "tolerance"
    assert (solver.iterations, solver.accepted_pairs, solver.rejected_pairs) == (0, 0, 0)
    np.testing.assert_array_equal(solver.x, x_star)
    assert solver.cost_value == prob.cost(x_star) and solver.grad_norm_value < 1e-6
    # the test is strict: a start with ||grad|| equal to the tolerance takes a step
    x0 = rng.standard_normal(5)
    at_tol = RLBFGS(prob, tolerance=_grad_norm(prob, x0))
    assert len(list(at_tol.iterate(x0, 1))) == 1


def test_solve_reports_the_final_state_and_its_counts():
    rng = np.random.default_rng(5)
    A, b = ill_conditioned(rng, 6), rng.standard_normal(6)
    prob = Quadratic(A, b)
    solver = RLBFGS(prob, tolerance=1e-6)
    import time
    tic = time.perf_counter()
    x, info = solver.solve(rng.standard_normal(6))
    elapsed = time.perf_counter() - tic
    np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=0, atol=1e-5)
    assert info["stop_reason"] == "tolerance" and info["cost"] == prob.cost(x)
    assert info["grad_norm"] == pytest.approx(_grad_norm(prob, x), rel=1e-12) and info["grad_norm"] < 1e-6
    k = info["iterations"]
    assert k >= 3 and info["gradients"] == k + 1                 # x_0, ..., x_k
    assert info["grad_evals"] == (k + 1) * int(prob.local_sizes.sum())
    assert info["accepted_pairs"] + info["rejected_pairs"] == k   # one decision per step
    assert info["cost_evals"] >= k + 1
    assert 0.0 <= info["time"] <= elapsed
    assert set(info) == {"iterations", "cost", "grad_norm", "grad_evals", "gradients", "cost_evals",
                         "accepted_pairs", "rejected_pairs", "stop_reason", "time"}


def test_max_iterations_ends_solve_and_counts_every_row():
    rng = np.random.default_rng(6)
    prob = Quadratic(ill_conditioned(rng, 8), rng.standard_normal(8))
    solver = RLBFGS(prob, tolerance=0.0, max_iterations=7)
    _, info = solver.solve(rng.standard_normal(8))
    assert info["iterations"] == 7 and info["stop_reason"] == "max_iterations"
    assert solver.accepted_pairs + solver.rejected_pairs == 7


def test_two_short_steps_stop_the_run_after_a_restart():
    """Every step shorter than min_step_size: the second step restarts from -gamma g (the
    memory cleared, gamma kept: L-BFGS with memory 0), and a second short step in a row stops."""
    rng = np.random.default_rng(7)
    prob = Quadratic(ill_conditioned(rng, 6), rng.standard_normal(6))
    x0 = rng.standard_normal(6)
    solver = RLBFGS(prob, memory=5, tolerance=0.0, min_step_size=1e6)
    got = iterates(solver, x0, 20)
    assert len(got) == 2 and solver.stop_reason == "min_step_size" and solver.iterations == 2
    np.testing.assert_allclose(np.array(got), np.array(plain_lbfgs(prob, x0, 2, 0)), rtol=0, atol=1e-12)
    assert not np.allclose(plain_lbfgs(prob, x0, 2, 0)[1], plain_lbfgs(prob, x0, 2, 5)[1])


def test_rejected_steps_store_no_pair_and_stop_the_run():
    """ls_max_steps = 1 on F = 25 |x|^2: the unit step -grad overshoots (F grows 81-fold), is
    rejected (x stays), no pair is stored, and two such steps in a row end the run."""
    prob = Quadratic(50.0 * np.eye(3), np.zeros(3))
    x0 = np.array([0.3, -0.2, 0.1])
    solver = RLBFGS(prob, tolerance=0.0, ls_max_steps=1)
    got = iterates(solver, x0, 10)
    assert len(got) == 2 and all(np.array_equal(x, x0) for x in got)
    assert (solver.accepted_pairs, solver.rejected_pairs) == (0, 2)
    assert solver.stop_reason == "min_step_size"


def test_a_non_descent_direction_falls_back_to_steepest_descent():
    """The guard: if the two-loop direction is not a descent direction (<g, p> >= 0) the step
    is the Armijo steepest-descent step along -g. A solver whose two-loop always answers +g
    therefore walks exactly the gradient-descent path with backtracking from alpha = 1."""

    class Ascent(RLBFGS):
        def _direction(self, x, g, S, Y, rho, gamma):
            return g.copy()

    prob = Quadratic(np.diag([1.0, 1.5, 0.6]), np.array([1.0, -2.0, 0.5]))
    x0 = np.array([3.0, 1.0, -2.0])
    got = iterates(Ascent(prob, tolerance=0.0), x0, 12)
    x, want = x0.copy(), []
    for _ in range(12):
        g = prob.egrad(x)
        alpha = 1.0
        while prob.cost(x - alpha * g) > prob.cost(x) - 1e-4 * alpha * (g @ g):
            alpha /= 2
        x = x - alpha * g
        want.append(x)
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=0, atol=1e-13)
    assert _grad_norm(prob, want[-1]) < 0.1 < 1.0 < _grad_norm(prob, x0)        # passes below |g| = 1


def test_manopts_defaults_and_a_negative_memory():
    """Manopt's rlbfgs defaults: memory 30, tolerance 1e-6, maxiter 1000, ls_max_steps 25."""
    solver = RLBFGS(Quadratic(np.eye(2), np.zeros(2)))
    assert (solver.memory, solver.tolerance, solver.max_iterations, solver.ls_max_steps) == (30, 1e-6, 1000, 25)
    with pytest.raises(ValueError, match=r"^memory must be >= 0, got -1$"):
        RLBFGS(Quadratic(np.eye(2), np.zeros(2)), memory=-1)


def test_steps_longer_than_min_step_size_never_restart():
    """The step length is alpha ||p||: with steps of length > 1 and min_step_size = 1 the run
    is the plain L-BFGS, its memory never cleared."""
    rng = np.random.default_rng(9)
    prob = Quadratic(ill_conditioned(rng, 6), 400.0 * rng.standard_normal(6))
    x0 = np.zeros(6)
    want = plain_lbfgs(prob, x0, 4, 3)
    steps = np.linalg.norm(np.diff(np.array([x0] + want), axis=0), axis=1)
    assert steps.min() > 1.0 and np.linalg.norm(prob.egrad(x0)) > 1.0
    got = iterates(RLBFGS(prob, memory=3, tolerance=0.0, min_step_size=1.0), x0, 4)
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=0, atol=1e-9)

"""RSD / RCG (pymanopt SteepestDescent / ConjugateGradient streamed one step at a
time) against the closed-form optimum of CPESph, the row/counter conventions,
pymanopt's own log, and RLBFGS on an ill-conditioned instance."""

import threading

import numpy as np
import pytest

import pymanopt
from rfl.algorithms.centralized import RCG, RSD, PymanoptView, patch_pymanopt_expm
from rfl.algorithms.rlbfgs import RLBFGS
from rfl.manifolds import Stiefel
from rfl.problems.cpesph import CPESph

EXACT = 1e-10


@pytest.fixture(autouse=True)
def deadlock_watchdog():
    """The optimizer thread and the generator run in lock-step; a bug there deadlocks. Then
    end the test process after 20 s with every thread's traceback (the whole file runs in
    about a second) rather than stall the test run."""
    import faulthandler
    faulthandler.dump_traceback_later(20, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def spectrum_data(rng, lam, S, N):
    """Z: (S, N, n) with pooled covariance exactly V diag(lam) V^T (see test_rlbfgs)."""
    n = lam.shape[0]
    Q, _ = np.linalg.qr(rng.standard_normal((S * N, n)))
    V, _ = np.linalg.qr(rng.standard_normal((n, n)))
    Z = np.sqrt(S * N) * (Q * np.sqrt(lam)) @ V.T
    return Z.reshape(S, N, n), V


@pytest.fixture(scope="module")
def sphere():
    rng = np.random.default_rng(21)
    lam = np.concatenate([[2.0, 1.7], np.linspace(1.5, 0.1, 18)])
    Z, V = spectrum_data(rng, lam, S=4, N=25)
    g = rng.standard_normal(20)
    return CPESph(Z), V[:, 0], lam[0], g / np.linalg.norm(g)


@pytest.mark.parametrize("cls", [RSD, RCG])
def test_converges_to_top_eigenvector(sphere, cls):
    """pymanopt's stopping tolerance is 1e-7 and the final row must have
    ||grad|| < 1e-6. Why these: (i) pymanopt's Armijo test compares costs, and at
    ||grad|| ~ 1e-8 the decrease a ||grad||^2 ~ 1e-16 is below the rounding of
    F ~ -2 (eps |F| ~ 4e-16), so the step is rejected and SD stops on
    min_step_size at ||grad|| = 1.5e-8 (observed) instead of the tolerance;
    1e-7 is attainable. (ii) SteepestDescent tests the gradient of the iterate
    it steps *from* and still records the step after it, whose gradient can be
    larger (observed 1.4e-6 after 9e-7 with tolerance 1e-6), hence the margin
    of 10. F - F* <= ||grad||^2 / (4 cos^2(theta) (lambda_1 - lambda_2)), theta the
    angle to x*, then gives 1e-10 on F."""
    p, v, lam_max, x0 = sphere
    alg = cls(p, tolerance=1e-7)
    rows = list(alg.iterate(x0, 5000))
    assert alg.result is not None and "min grad norm" in alg.stop_reason
    x = rows[-1][1]
    assert p.grad_norm(x) < 1e-6
    assert 1.0 - abs(x @ v) < EXACT
    assert abs(p.cost(x) + lam_max) < EXACT
    # pymanopt's iteration count: SD steps in every iteration, CG's last one only checks
    assert len(rows) == alg.result.iterations - (1 if cls is RCG else 0)


@pytest.mark.parametrize("cls", [RSD, RCG])
def test_exactly_rounds_rows_and_counters(sphere, cls):
    p, _, _, x0 = sphere
    alg = cls(p)
    rows = list(alg.iterate(x0, 12))
    n_full = int(p.local_sizes.sum())
    assert [t for t, _, _ in rows] == list(range(12))
    # row of x_{t+1}: the gradients at x_0..x_t
    assert [c.grad_evals for _, _, c in rows] == [(t + 1) * n_full for t in range(12)]
    assert all(c.floats == 0 for _, _, c in rows)
    assert alg.stop_reason == "rounds" and alg.result is None
    costs = [p.cost(x0)] + [p.cost(x) for _, x, _ in rows]
    assert all(b <= a for a, b in zip(costs, costs[1:]))          # both line searches descend
    assert costs[-1] < costs[0] - 1e-3
    assert alg.cost_evals > 12                                     # line-search trials counted
    assert list(cls(p).iterate(x0, 0)) == []


@pytest.mark.parametrize("cls", [RSD, RCG])
def test_rows_are_the_post_step_iterates(sphere, cls):
    """Our rows are pymanopt's own iterates x_1, x_2, ...: its log (log_verbosity=1)
    holds the pre-step points x_0, ..., so rows[k] == log[k + 1]."""
    p, _, _, x0 = sphere
    alg = cls(p)
    rounds = 10
    rows = [x for _, x, _ in alg.iterate(x0, rounds)]
    opt_cls = pymanopt.optimizers.SteepestDescent if cls is RSD else pymanopt.optimizers.ConjugateGradient
    opt = opt_cls(max_iterations=rounds + 1, min_gradient_norm=0.0, min_step_size=0.0,
                  verbosity=0, log_verbosity=1)
    res = opt.run(alg.pymanopt_problem, initial_point=x0.copy())
    logged = res.log["iterations"]["point"]
    np.testing.assert_array_equal(np.array(logged[0]), x0)
    np.testing.assert_array_equal(np.array(rows), np.array(logged[1:rounds + 1]))


def test_first_sd_row_is_a_gradient_step(sphere):
    """x_1 = (x_0 - a g)/||x_0 - a g||, a > 0, g = grad F(x_0) (normalize retraction)."""
    p, _, _, x0 = sphere
    _, x1, _ = next(RSD(p).iterate(x0, 1))
    g = p.grad(x0)
    w = x1 / (x1 @ x0) - x0                  # = -a g / (1 ... ) exactly when x1 ~ x0 - a g
    a = -(w @ g) / (g @ g)
    assert a > 0
    np.testing.assert_allclose(w, -a * g, rtol=0, atol=1e-13)


@pytest.mark.parametrize("cls", [RSD, RCG])
def test_early_close_stops_the_worker(sphere, cls):
    p, _, _, x0 = sphere
    before = threading.active_count()
    gen = cls(p).iterate(x0, 100)
    next(gen)
    next(gen)
    gen.close()
    assert threading.active_count() == before


def test_worker_errors_reach_the_consumer(sphere):
    class Broken(CPESph):
        calls = 0

        def egrad(self, x):
            self.calls += 1
            if self.calls > 3:
                raise FloatingPointError("boom")
            return super().egrad(x)

    p, _, _, x0 = sphere
    with pytest.raises(FloatingPointError, match="boom"):
        list(RSD(Broken(p.Z)).iterate(x0, 20))


def test_view_uses_our_geometry():
    """pymanopt sees our Stiefel polar retraction, not its default QR one."""
    rng = np.random.default_rng(3)
    m = Stiefel(6, 3)                                  # default: polar
    x = m.random_point(rng, 1)
    u = 0.7 * m.random_tangent(rng, x)
    view = PymanoptView(m)
    y = view.retraction(x[0], u[0])
    uu, _, vt = np.linalg.svd(x[0] + u[0], full_matrices=False)
    np.testing.assert_allclose(y, uu @ vt, rtol=0, atol=1e-14)       # the polar factor
    assert view.inner_product(x[0], u[0], u[0]) == pytest.approx(0.49, abs=1e-14)


def test_expm_patch():
    import scipy.linalg

    import pymanopt.tools.multi as multi
    patch_pymanopt_expm()
    assert multi.scipy_expm is scipy.linalg.expm
    a = np.random.default_rng(0).standard_normal((4, 3, 3))
    np.testing.assert_allclose(multi.multiexpm(a), np.stack([scipy.linalg.expm(b) for b in a]),
                               rtol=1e-13, atol=1e-13)


def test_rlbfgs_far_fewer_iterations_than_rsd():
    """Ill-conditioned CPESph: lambda = (1, 0.999, 0.989 ... 0), so the Riemannian
    Hessian at x* has condition number (1 - 0)/(1 - 0.999) = 1000.
    Observed iterations to ||grad|| < 1e-6: RLBFGS 52, RCG 187, RSD 3051 (x59)."""
    rng = np.random.default_rng(3)
    n = 50
    lam = np.concatenate([[1.0, 0.999], np.linspace(0.989, 0.0, n - 2)])
    Z, V = spectrum_data(rng, lam, S=5, N=40)
    p = CPESph(Z)
    x0 = p.initial_point(rng)

    def iterations_to_tol(alg):
        for t, x, _ in alg.iterate(x0, 20000):
            if p.grad_norm(x) < 1e-6:
                return t + 1, x
        raise AssertionError("did not reach ||grad|| < 1e-6")

    k_lbfgs, x_lbfgs = iterations_to_tol(RLBFGS(p))
    k_sd, x_sd = iterations_to_tol(RSD(p, tolerance=0.0))
    assert k_lbfgs <= 100
    assert 10 * k_lbfgs < k_sd
    # both at the optimum: F - F* <= ||grad||^2 / (4 cos^2(theta) gap) ~ 2.5e-10 (gap = 1e-3)
    assert abs(p.cost(x_lbfgs) + 1.0) < 1e-9 and abs(p.cost(x_sd) + 1.0) < 1e-9


# ---- the pymanopt view: every map is ours, at one point -------------------------------
def test_view_maps_are_the_spheres_closed_forms():
    """On S^{n-1} (exp retraction, parallel transport) each map of the view against its
    closed form: P_x(u) = u - <x, u> x, Exp_x(u) = cos|u| x + sin|u| u/|u|, Log_x(y) =
    theta w/|w| with w = P_x(y), theta = arccos <x, y> = dist(x, y); parallel transport keeps
    norms and lands in T_y; inner products are Python floats (pymanopt's ZeroDivisionError
    guards need them)."""
    from rfl.manifolds import Sphere
    n = 5
    view = PymanoptView(Sphere(n, "exp", "parallel"))
    rng = np.random.default_rng(8)
    x = rng.standard_normal(n)
    x /= np.linalg.norm(x)
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    u, v = a - (x @ a) * x, b - (x @ b) * x
    assert view.dim == n - 1 and str(view).startswith("rfl Sphere(")
    assert view.typical_dist == pytest.approx(np.sqrt(n - 1), abs=1e-15)
    ip = view.inner_product(x, u, v)
    assert type(ip) is float and ip == pytest.approx(u @ v, abs=1e-14)
    assert type(view.norm(x, u)) is float and view.norm(x, u) == pytest.approx(np.linalg.norm(u), abs=1e-14)
    np.testing.assert_allclose(view.projection(x, a), u, rtol=0, atol=1e-14)
    np.testing.assert_allclose(view.to_tangent_space(x, a), u, rtol=0, atol=1e-14)
    np.testing.assert_allclose(view.euclidean_to_riemannian_gradient(x, a), u, rtol=0, atol=1e-14)
    t = np.linalg.norm(u)
    y = np.cos(t) * x + np.sin(t) * u / t
    np.testing.assert_allclose(view.exp(x, u), y, rtol=0, atol=1e-14)
    np.testing.assert_allclose(view.retraction(x, u), y, rtol=0, atol=1e-14)       # the exp retraction
    w = y - (x @ y) * x
    theta = np.arccos(np.clip(x @ y, -1, 1))
    np.testing.assert_allclose(view.log(x, y), theta * w / np.linalg.norm(w), rtol=0, atol=1e-12)
    d = view.dist(x, y)
    assert type(d) is float and d == pytest.approx(t, abs=1e-12)
    moved = view.transport(x, y, v)
    assert abs(moved @ y) < 1e-14 and np.linalg.norm(moved) == pytest.approx(np.linalg.norm(v), abs=1e-14)
    np.testing.assert_allclose(view.transport(x, x, v), v, rtol=0, atol=1e-15)
    assert view.zero_vector(x).shape == (n,) and not view.zero_vector(x).any()


def test_view_random_objects_follow_numpys_global_seed():
    """pymanopt draws with numpy's global state: the view's random points and tangent vectors
    lie on the manifold / in the tangent space and repeat under np.random.seed."""
    from rfl.manifolds import SPD
    m = SPD(3)
    view = PymanoptView(m)
    np.random.seed(11)
    x, u = view.random_point(), None
    u = view.random_tangent_vector(x)
    np.random.seed(11)
    x2 = view.random_point()
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(u, view.random_tangent_vector(x2))
    assert x.shape == (3, 3) and u.shape == (3, 3)
    assert m.distance_from_manifold(x[None])[0] < 1e-12                     # symmetric positive definite
    np.testing.assert_allclose(u, u.T, rtol=0, atol=1e-14)                   # T_x SPD: symmetric matrices
    assert view.norm(x, u) == pytest.approx(1.0, abs=1e-12)                  # a unit tangent vector
    xi = np.linalg.inv(x)                                                    # affine-invariant metric
    v = view.random_tangent_vector(x)
    assert view.inner_product(x, u, v) == pytest.approx(np.trace(xi @ u @ xi @ v), rel=1e-10)
    np.random.seed(12)
    assert not np.allclose(view.random_point(), x)


def test_view_random_points_of_different_global_seeds_differ():
    """The view's Generator is seeded from 2^32 values of numpy's global state: 200 global
    seeds give 200 different points."""
    from rfl.manifolds import Sphere
    view = PymanoptView(Sphere(4))
    points = set()
    for seed in range(200):
        np.random.seed(seed)
        points.add(tuple(np.round(view.random_point(), 12)))
    assert len(points) == 200


# ---- RSD / RCG: options reach pymanopt, counters, the worker thread -------------------
def _drain(alg, x0, rounds, limit=60.0):
    """list(alg.iterate(x0, rounds)) in a thread that must finish within ``limit`` seconds
    (a lock-step bug would otherwise hang the test run)."""
    out = {}

    def run():
        try:
            out["rows"] = list(alg.iterate(x0, rounds))
        except BaseException as exc:          # handed to the test below
            out["error"] = exc

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(limit)
    assert not th.is_alive(), "iterate did not finish: the worker and the generator are out of step"
    if "error" in out:
        raise out["error"]
    return out["rows"]


@pytest.mark.parametrize("cls", [RSD, RCG])
def test_rows_and_counters_without_hanging(sphere, cls):
    """rounds rows, then the worker stops: grad_count = rounds (one gradient per iterate
    stepped from, none after the last row), cost_evals = the cost evaluations made."""
    p, _, _, x0 = sphere
    calls = {"cost": 0}

    class Counting(CPESph):
        def cost(self, x):
            calls["cost"] += 1
            return super().cost(x)

    alg = cls(Counting(p.Z))
    assert (alg.cost_evals, alg.grad_count, alg.result, alg.stop_reason) == (0, 0, None, None)
    assert alg.manifold is alg.problem.manifold
    gen = alg.iterate(x0, 6)
    next(gen)
    assert alg.stop_reason is None                 # still running
    gen.close()
    calls["cost"] = 0
    rows = _drain(alg, x0, 6)
    assert len(rows) == 6 and alg.stop_reason == "rounds"
    assert alg.grad_count == 6
    assert alg.cost_evals == calls["cost"] >= 6
    again = _drain(alg, x0, 3)                     # counters restart with each run
    np.testing.assert_array_equal(np.array([x for _, x, _ in again]), np.array([x for _, x, _ in rows[:3]]))
    assert alg.grad_count == 3


@pytest.mark.parametrize("cls", [RSD, RCG])
def test_zero_rounds_yield_nothing_and_say_so(sphere, cls):
    p, _, _, x0 = sphere
    alg = cls(p)
    assert _drain(alg, x0, 0) == [] and alg.stop_reason == "rounds"
    assert alg.grad_count == 0 and alg.cost_evals == 0


@pytest.mark.parametrize("cls", [RSD, RCG])
def test_the_worker_is_a_named_daemon_thread(sphere, cls):
    """The optimizer runs in a daemon thread named rfl-<method>: an abandoned generator never
    keeps the interpreter alive, and a thread dump names the method."""
    p, _, _, x0 = sphere
    gen = cls(p).iterate(x0, 5)
    next(gen)
    workers = [th for th in threading.enumerate() if th.name == f"rfl-{cls.name}"]
    assert len(workers) == 1 and workers[0].daemon
    gen.close()


@pytest.mark.parametrize("cls", [RSD, RCG])
def test_tolerance_reaches_pymanopt(sphere, cls):
    """A loose tolerance ends the run by pymanopt's gradient criterion: RCG's last row is the
    first iterate with ||grad|| < tolerance; RSD tests the gradient after stepping, so its
    second-last row is."""
    p, _, _, x0 = sphere
    tol = 1e-2
    alg = cls(p, tolerance=tol)
    rows = _drain(alg, x0, 500)
    assert "min grad norm" in alg.stop_reason and len(rows) < 500
    norms = [p.grad_norm(x0)] + [p.grad_norm(x) for _, x, _ in rows]
    first = next(i for i, g in enumerate(norms) if g < tol)
    assert first == len(rows) - (1 if cls is RSD else 0)
    assert alg.result.log["stopping_criteria"]["min_gradient_norm"] == tol


@pytest.mark.parametrize("cls", [RSD, RCG])
def test_min_step_size_and_max_time_reach_pymanopt(sphere, cls):
    p, _, _, x0 = sphere
    alg = cls(p, min_step_size=1e3)                # every step is shorter
    rows = _drain(alg, x0, 50)
    assert len(rows) == 1 and "min step_size" in alg.stop_reason
    alg = cls(p, max_time=0.0)                     # out of time at the first check
    assert len(_drain(alg, x0, 50)) <= 1 and "max time" in alg.stop_reason
    assert alg.result.log["stopping_criteria"]["max_time"] == 0.0


@pytest.mark.parametrize("cls", [RSD, RCG])
def test_pymanopt_runs_silently_without_an_iteration_log(sphere, cls, capsys):
    """Nothing is printed (the runner's output stays clean) and pymanopt keeps no
    per-iteration log (memory stays flat over long runs)."""
    p, _, _, x0 = sphere
    alg = cls(p, tolerance=1e-1)
    _drain(alg, x0, 200)
    assert alg.result is not None and alg.result.log["iterations"] is None
    assert capsys.readouterr().out == ""


def test_a_given_line_searcher_is_used(sphere):
    """RSD(line_searcher=...) steps with that searcher: a backtracking search whose initial
    step is tiny (initial_step_size 1e-3, no optimism) gives other, shorter steps."""
    from pymanopt.optimizers.line_search import BackTrackingLineSearcher
    p, _, _, x0 = sphere
    default = _drain(RSD(p), x0, 3)
    timid = _drain(RSD(p, line_searcher=BackTrackingLineSearcher(initial_step_size=1e-3, optimism=1.0)), x0, 3)
    step = lambda rows: np.linalg.norm(rows[0][1] - x0)
    assert step(timid) < step(default) / 10


@pytest.mark.parametrize("version,expected", [("1.17.1", (1, 17, 1)), ("1.9.0rc1", (1, 9, 0)),
                                              ("2.0", (2, 0)), ("1.10.0.dev0+abc", (1, 10, 0)),
                                              ("dev", ())])
def test_version_tuple_reads_the_leading_release_numbers(version, expected):
    from rfl.algorithms.centralized import _version_tuple
    assert _version_tuple(version) == expected


@pytest.mark.parametrize("version,patched", [("1.8.9", False), ("1.9", True), ("1.9.0", True), ("1.10.1", True),
                                             ("2.0.0", True)])
def test_expm_patch_compares_versions_numerically(monkeypatch, version, patched):
    """scipy >= 1.9 (numerically: 1.10 > 1.9) gets the batched expm, once; older scipy keeps
    pymanopt's choice."""
    import scipy
    import scipy.linalg

    import pymanopt.tools.multi as multi

    def before(a):
        return a

    monkeypatch.setattr(scipy, "__version__", version)
    monkeypatch.setattr(multi, "scipy_expm", before)
    assert patch_pymanopt_expm() is patched
    assert multi.scipy_expm is (scipy.linalg.expm if patched else before)
    assert patch_pymanopt_expm() is False                    # nothing left to do


@pytest.mark.parametrize("beta_rule,orth_value", [("FletcherReeves", np.inf), ("PolakRibiere", 0.1),
                                                  ("HestenesStiefel", np.inf)])
def test_rcg_options_reach_pymanopts_conjugate_gradient(sphere, beta_rule, orth_value):
    """RCG's rows are pymanopt's ConjugateGradient iterates with the same beta rule, Powell
    restart threshold and line searcher (its log holds the pre-step points)."""
    from pymanopt.optimizers.line_search import BackTrackingLineSearcher
    p, _, _, x0 = sphere
    rounds = 8
    alg = RCG(p, beta_rule=beta_rule, orth_value=orth_value, line_searcher=BackTrackingLineSearcher())
    rows = [x for _, x, _ in _drain(alg, x0, rounds)]
    opt = pymanopt.optimizers.ConjugateGradient(beta_rule=beta_rule, orth_value=orth_value,
                                                line_searcher=BackTrackingLineSearcher(),
                                                max_iterations=rounds + 1, min_gradient_norm=0.0,
                                                min_step_size=0.0, verbosity=0, log_verbosity=1)
    logged = opt.run(alg.pymanopt_problem, initial_point=x0.copy()).log["iterations"]["point"]
    np.testing.assert_array_equal(np.array(rows), np.array(logged[1:rounds + 1]))
    default = [x for _, x, _ in _drain(RCG(p), x0, rounds)]
    assert np.abs(np.array(rows) - np.array(default)).max() > 1e-10      # the options matter here

"""Centralised baselines: pymanopt's steepest descent (RSD) and conjugate gradient
(RCG) on the pooled problem, streamed one iterate at a time like a federated run.

How the pymanopt 2.2.1 optimizers are driven
--------------------------------------------
* **Geometry.** pymanopt does not get ``manifold.to_pymanopt()`` but
  :class:`PymanoptView`, a pymanopt ``Manifold`` whose metric, projection,
  Riemannian gradient, retraction, transport, exp/log/dist are *ours* (the
  batched maps applied with S = 1). So RSD/RCG use exactly the retraction and
  transport named in the run's geometry, like RLBFGS and the federated
  methods. This sidesteps pitfall (a): pymanopt's ``Stiefel`` defaults to the
  QR retraction, done point by point through ``np.vectorize(np.linalg.qr)``
  (slow); our Stiefel's default is the polar retraction (one thin SVD). It
  also avoids pymanopt's own SPD retraction/transport (a second-order
  retraction and the identity transport), which differ from our SPD's.
* **Matrix exponential (pitfall (b)).** ``pymanopt/tools/multi.py`` picks
  ``scipy_expm`` with the *string* comparison ``scipy.version.version >=
  "1.9.0"``, which is False for scipy 1.10 ... 1.99 (``"1.17.1" < "1.9.0"``),
  so it falls back to ``np.vectorize(scipy.linalg.expm)``, a Python loop over
  stacked matrices (used by ``multiexpm`` in pymanopt's Stiefel.exp and
  SPD.exp). :func:`patch_pymanopt_expm` (called when RSD/RCG are built)
  compares the version numerically and, for scipy >= 1.9, rebinds
  ``pymanopt.tools.multi.scipy_expm`` to the natively batched
  ``scipy.linalg.expm`` (``multiexpm`` looks that module global up at call
  time). Values are unchanged, only the speed. With :class:`PymanoptView`
  pymanopt's expm is not on the path of RSD/RCG anyway; the patch protects
  any other use of pymanopt manifolds in the same process.
* **Every iterate (pitfall (c)).** pymanopt's log (``log_verbosity=1``)
  records, per iteration, the point *before* the step together with its cost
  and gradient norm (SteepestDescent thus "reports the gradient norm of the
  previous iterate"), and the final iterate only appears in the result.
  Instead, the line searcher is wrapped: each ``search`` call is exactly one
  step and returns the new iterate x_{t+1}, which is handed to the consumer
  at that moment. The optimizer runs in a worker thread in lock-step with the
  generator (it waits while the runner records a row), so the runner's wall
  time covers only the optimizer's work and cost/grad norm of each row are
  computed by the runner at the recorded point itself.
* **Rows.** ``iterate(x0, rounds)`` yields one row per step, ``rounds`` rows
  unless pymanopt stops by its own criterion first; pymanopt's other
  criteria are: ``min_gradient_norm`` (= ``tolerance``), ``min_step_size``
  (1e-10; a rejected line-search step has size 0, so it always ends the run,
  and that step is still a row, x_{t+1} = x_t), and ``max_time`` (set to inf
  here; pymanopt's default of 1000 s would cut long runs). Note the order in
  which pymanopt tests them: SteepestDescent tests ||grad(x_t)|| *after* the
  step from x_t, so it stops one row after the first iterate with
  ||grad|| < tolerance; ConjugateGradient tests before stepping, so its last
  row is the first iterate with ||grad|| < tolerance. pymanopt is run with
  ``max_iterations = rounds`` (SD: one step per iteration) or ``rounds + 1``
  (CG: pymanopt's iteration count includes the final check that takes no
  step); the generator also stops the worker after the ``rounds``-th row.
* **Counters.** ``grad_evals`` = full gradients computed when x_{t+1} is
  handed over x sum(problem.local_sizes). Both SD and CG evaluate one
  gradient per iterate they step from, so the row of x_t reports t full
  gradients (the convention of RLBFGS too); line-search cost evaluations are
  not gradient evaluations. ``floats`` = 0. The attributes ``cost_evals`` and
  ``grad_count`` count all cost / full-gradient evaluations made (pymanopt's
  own ``cost_evaluations`` field is just the iteration count).
"""

from __future__ import annotations

import copy
import queue
import re
import threading

import numpy as np

from rfl.manifolds import Manifold
from rfl.problems.base import Problem

from .base import CentralizedSolver, Counters

# ---- pymanopt fixes ----------------------------------------------------------


def _version_tuple(version: str) -> tuple[int, ...]:
    """Leading numeric release components: "1.17.1" -> (1, 17, 1), "1.9.0rc1" -> (1, 9, 0)."""
    m = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(p) for p in m.group(0).split(".")) if m else ()


def patch_pymanopt_expm() -> bool:
    """Make ``pymanopt.tools.multi.scipy_expm`` the batched ``scipy.linalg.expm``
    whenever scipy >= 1.9 (see the module docstring). Returns True if it patched."""
    import scipy
    import scipy.linalg
    import pymanopt.tools.multi as multi

    if _version_tuple(scipy.__version__) >= (1, 9) and multi.scipy_expm is not scipy.linalg.expm:
        multi.scipy_expm = scipy.linalg.expm
        return True
    return False


def _pymanopt_manifold_base():
    from pymanopt.manifolds.manifold import Manifold as PManifold
    return PManifold


def _global_rng() -> np.random.Generator:
    """A Generator seeded from numpy's global state, which pymanopt's own random draws use
    (so ``np.random.seed`` makes the view's random points repeat)."""
    return np.random.default_rng(np.random.randint(2**32, dtype=np.uint64))


def PymanoptView(manifold: Manifold):
    """A pymanopt ``Manifold`` (one point, no agents axis) whose every map is ours."""
    PManifold = _pymanopt_manifold_base()

    class _View(PManifold):
        def __init__(self, m: Manifold):
            self.rfl_manifold = m
            super().__init__(f"rfl {m!r}", int(m.dim))

        @property
        def typical_dist(self):
            return float(np.sqrt(self.dim))

        def inner_product(self, point, tangent_vector_a, tangent_vector_b):
            # a Python float, so pymanopt's `except ZeroDivisionError` guards work
            return float(self.rfl_manifold.inner(point[None], tangent_vector_a[None],
                                                 tangent_vector_b[None])[0])

        def norm(self, point, tangent_vector):
            return float(self.rfl_manifold.norm(point[None], tangent_vector[None])[0])

        def projection(self, point, vector):
            return self.rfl_manifold.projection(point[None], vector[None])[0]

        to_tangent_space = projection

        def euclidean_to_riemannian_gradient(self, point, euclidean_gradient):
            return self.rfl_manifold.euclidean_to_riemannian_gradient(point[None], euclidean_gradient[None])[0]

        def retraction(self, point, tangent_vector):
            return self.rfl_manifold.retraction(point[None], tangent_vector[None])[0]

        def exp(self, point, tangent_vector):
            return self.rfl_manifold.exp(point[None], tangent_vector[None])[0]

        def log(self, point_a, point_b):
            return self.rfl_manifold.log(point_a[None], point_b[None])[0]

        def dist(self, point_a, point_b):
            return float(self.rfl_manifold.dist(point_a[None], point_b[None])[0])

        def transport(self, point_a, point_b, tangent_vector_a):
            return self.rfl_manifold.transport(point_a[None], point_b[None],
                                               tangent_vector_a[None])[0]

        def random_point(self):
            return self.rfl_manifold.random_point(_global_rng(), 1)[0]

        def random_tangent_vector(self, point):
            return self.rfl_manifold.random_tangent(_global_rng(), point[None])[0]

        def zero_vector(self, point):
            return np.zeros_like(point)

    return _View(manifold)


# ---- streaming pymanopt one step at a time -----------------------------------

class _Stop(Exception):
    """Raised inside the worker thread to abandon pymanopt's run."""


_CONTINUE, _STOP = "continue", "stop"


class _ReportingLineSearcher:
    """Wraps a pymanopt line searcher; reports every accepted new iterate."""

    def __init__(self, inner, report):
        self.inner = inner
        self.report = report

    def __deepcopy__(self, memo):
        # pymanopt deep-copies its line searcher at the start of run(): copy the
        # inner searcher's state, keep the (thread-bound) report callback.
        return _ReportingLineSearcher(copy.deepcopy(self.inner, memo), self.report)

    def search(self, objective, manifold, x, d, f0, df0):
        step_size, newx = self.inner.search(objective, manifold, x, d, f0, df0)
        self.report(newx)
        return step_size, newx


class _PymanoptSolver(CentralizedSolver):
    """Common driver: pooled pymanopt problem, counters, lock-step worker thread."""

    def __init__(self, problem: Problem, tolerance: float = 1e-6, min_step_size: float = 1e-10,
                 max_time: float = np.inf, line_searcher=None):
        self.check_problem(problem)
        patch_pymanopt_expm()
        self.problem = problem
        self.manifold = problem.manifold
        self.tolerance = float(tolerance)
        self.min_step_size = float(min_step_size)
        self.max_time = float(max_time)
        self.line_searcher = line_searcher if line_searcher is not None else self._default_searcher()
        self.pymanopt_manifold = PymanoptView(problem.manifold)
        self.cost_evals = 0
        self.grad_count = 0
        self.result = None              # pymanopt's OptimizerResult when it stopped by itself
        self.stop_reason: str | None = None

        import pymanopt

        pm = self.pymanopt_manifold

        @pymanopt.function.numpy(pm)
        def cost(x):
            self.cost_evals += 1
            return float(problem.cost(x))

        @pymanopt.function.numpy(pm)
        def euclidean_gradient(x):
            self.grad_count += 1
            return problem.egrad(x)

        self.pymanopt_problem = pymanopt.Problem(pm, cost, euclidean_gradient=euclidean_gradient)

    # subclass hooks
    def _default_searcher(self):
        raise NotImplementedError

    def _optimizer(self, rounds: int, line_searcher):
        raise NotImplementedError

    @property
    def full_gradient_cost(self) -> int:
        return int(np.sum(self.problem.local_sizes))

    def iterate(self, x0: np.ndarray, rounds: int, rng=None):
        """Yield ``(t, x_{t+1}, Counters)`` after each pymanopt step (``rng`` unused).

        ``rounds`` rows, or fewer when pymanopt stops by its own criterion
        (``stop_reason`` then holds pymanopt's message, else "rounds").
        """
        self.cost_evals = 0
        self.grad_count = 0
        self.result = None
        self.stop_reason = None
        if rounds <= 0:
            self.stop_reason = "rounds"
            return
        per_grad = self.full_gradient_cost
        out: queue.Queue = queue.Queue()
        go: queue.Queue = queue.Queue()

        def report(newx):
            out.put(("point", np.array(newx), self.grad_count))   # np.array copies: the row is the consumer's
            if go.get() == _STOP:
                raise _Stop

        optimizer = self._optimizer(rounds, _ReportingLineSearcher(self.line_searcher, report))
        x_init = np.array(x0, dtype=float)

        def work():
            try:
                with np.errstate(all="ignore"):
                    result = optimizer.run(self.pymanopt_problem, initial_point=x_init)
                out.put(("done", result, None))
            except _Stop:
                pass
            except BaseException as exc:   # hand any failure to the consumer
                out.put(("error", exc, None))

        worker = threading.Thread(target=work, name=f"rfl-{self.name}", daemon=True)
        worker.start()
        t = 0
        try:
            while t < rounds:
                kind, payload, grads = out.get()
                if kind == "point":
                    yield t, payload, Counters(grad_evals=grads * per_grad)   # floats: 0
                    t += 1
                    if t < rounds:
                        go.put(_CONTINUE)
                elif kind == "done":
                    self.result = payload
                    self.stop_reason = payload.stopping_criterion
                    break
                else:
                    raise payload
            else:
                self.stop_reason = "rounds"
        finally:
            if worker.is_alive():
                go.put(_STOP)
                worker.join()


class RSD(_PymanoptSolver):
    """Riemannian steepest descent: pymanopt's ``SteepestDescent`` with its
    ``BackTrackingLineSearcher`` (contraction 0.5, sufficient decrease 1e-4,
    initial step from the previous cost decrease x optimism 2).

    ``RSD(problem, tolerance=1e-6, min_step_size=1e-10, max_time=inf, line_searcher=None)``;
    see the module docstring for the rows and counters.
    """

    name = "rsd"
    label = "RSD"
    style = {"color": "tab:red", "ls": ":"}
    plot_order = 6

    def _default_searcher(self):
        from pymanopt.optimizers.line_search import BackTrackingLineSearcher
        return BackTrackingLineSearcher()

    def _optimizer(self, rounds, line_searcher):
        from pymanopt.optimizers import SteepestDescent
        # one step per pymanopt iteration: max_iterations = rounds
        return SteepestDescent(line_searcher=line_searcher, max_iterations=rounds,
                               min_gradient_norm=self.tolerance, min_step_size=self.min_step_size,
                               max_time=self.max_time, verbosity=0, log_verbosity=0)


class RCG(_PymanoptSolver):
    """Riemannian conjugate gradient: pymanopt's ``ConjugateGradient`` (default
    Hestenes-Stiefel beta, clipped at 0; no Powell restart) with its
    ``AdaptiveLineSearcher``.

    ``RCG(problem, tolerance=1e-6, min_step_size=1e-10, max_time=inf, line_searcher=None,
    beta_rule="HestenesStiefel", orth_value=inf)``; see the module docstring.
    """

    name = "rcg"
    label = "RCG"
    style = {"color": "tab:orange", "ls": ":"}
    plot_order = 7

    def __init__(self, problem: Problem, tolerance: float = 1e-6, min_step_size: float = 1e-10,
                 max_time: float = np.inf, line_searcher=None, beta_rule: str = "HestenesStiefel",
                 orth_value: float = np.inf):
        self.beta_rule = beta_rule
        self.orth_value = orth_value
        super().__init__(problem, tolerance, min_step_size, max_time, line_searcher)

    def _default_searcher(self):
        from pymanopt.optimizers.line_search import AdaptiveLineSearcher
        return AdaptiveLineSearcher()

    def _optimizer(self, rounds, line_searcher):
        from pymanopt.optimizers import ConjugateGradient
        # pymanopt's CG counts a final iteration that only checks the stopping
        # criteria: rounds steps need max_iterations = rounds + 1
        return ConjugateGradient(beta_rule=self.beta_rule, orth_value=self.orth_value,
                                 line_searcher=line_searcher, max_iterations=rounds + 1,
                                 min_gradient_norm=self.tolerance,
                                 min_step_size=self.min_step_size, max_time=self.max_time,
                                 verbosity=0, log_verbosity=0)

"""RLBFGS: Riemannian limited-memory BFGS, a centralised reference solver.

Follows Manopt's ``rlbfgs.m`` (Manopt 7.x; Huang, Gallivan & Absil, SIAM J.
Optim. 2015, and Huang, Absil & Gallivan, Math. Program. 2018), on the pooled
problem F = sum_j p_j f_j with full gradients.
"""

from __future__ import annotations

import time

import numpy as np

from rfl.problems.base import Problem

from .base import CentralizedSolver, Counters


class RLBFGS(CentralizedSolver):
    """Riemannian L-BFGS with a cautious update, as Manopt's ``rlbfgs``.

    One iteration at x_k with gradient g_k (all vectors live in T_{x_k} M):

    1. Direction p_k = -H_k g_k by the two-loop recursion over the stored
       pairs (s_i, y_i, rho_i = 1/<s_i, y_i>), oldest to newest, with the
       initial operator H^0 = gamma I, gamma = <s, y>/<y, y> of the last
       *accepted* pair (Barzilai-Borwein; gamma = 1 before any pair is accepted).
    2. Armijo backtracking as Manopt's ``linesearch_hint`` with the hint 1:
       alpha = 1, 1/2, 1/4, ... until F(R_x(alpha p)) <= F(x) + 1e-4 alpha <g, p>,
       at most ``ls_max_steps`` = 25 cost evaluations *including the first
       trial* (Manopt's ``ls_max_steps`` counts cost evaluations, so at most 24
       contractions); if the last trial still does not decrease F the step is
       rejected (alpha = 0, x_{k+1} = x_k; Manopt's ``ls_force_decrease``). A trial
       whose cost is not a number (NaN: a retraction that overflowed, e.g. cosh in the
       Lorentz model's Exp beyond distance ~710) fails the test, as a larger cost does
       (in Manopt, NaN > c is false, so it would be accepted).
    3. s_k = T_{x_k -> x_{k+1}}(alpha p_k), y_k = g_{k+1} - T_{x_k -> x_{k+1}}(g_k),
       both divided by ||s_k|| (the BFGS update is invariant under a common
       scaling; Manopt does this for numerical reasons).
    4. Cautious update (Manopt, with ``strict_inc_func(t) = 1e-4 t``): store
       the pair iff <s, s> != 0 and <s, y>/<s, s> >= 1e-4 ||g_k||, where g_k is
       the gradient at the *old* point; then also gamma = <s, y>/<y, y>.
       Either way every stored pair is transported to T_{x_{k+1}} M with the
       manifold's ``transport`` (so the two-loop recursion only ever works in
       the current tangent space). When the memory is full the oldest pair is
       dropped. A rejected line-search step (||s|| = 0) never stores a pair
       (in Manopt it gives 0/0 = NaN, which fails the test in the same way).
    5. Stopping: ||grad F(x)|| < ``tolerance`` or the iteration budget. As in
       Manopt, a step shorter than ``min_step_size`` (1e-10) first clears the
       memory (restart as steepest descent with the current gamma) and stops
       only if the next step is also that short.

    Deviation from Manopt: a guard resets the memory to p = -g if <g, p> >= 0.
    With rho_i > 0 and gamma > 0 (guaranteed by the cautious test) the
    two-loop operator is positive definite, so this only catches floating-point
    breakdown; it never triggered in the tests.

    Work is counted for the runner's table: ``grad_evals`` = full gradients
    computed x sum(problem.local_sizes), ``floats`` = 0 (nothing is
    communicated). The iterate x_{t+1} is yielded right after its line search,
    before its gradient is computed, so the row of x_t reports t full
    gradients (those at x_0, ..., x_{t-1}), the convention of
    ``rfl.algorithms.centralized`` too. ``cost_evals`` (attribute) counts cost
    evaluations, including the line search's.
    """

    name = "rlbfgs"
    label = "RLBFGS"
    style = {"color": "tab:brown", "ls": ":"}
    plot_order = 8

    def __init__(self, problem: Problem, memory: int = 30, tolerance: float = 1e-6,
                 max_iterations: int = 1000, *, contraction: float = 0.5,
                 sufficient_decrease: float = 1e-4, ls_max_steps: int = 25,
                 min_step_size: float = 1e-10, cautious: float = 1e-4):
        if memory < 0:
            raise ValueError(f"memory must be >= 0, got {memory}")
        self.check_problem(problem)
        self.problem = problem
        self.manifold = problem.manifold
        self.memory = int(memory)
        self.tolerance = float(tolerance)
        self.max_iterations = int(max_iterations)
        self.contraction = float(contraction)
        self.sufficient_decrease = float(sufficient_decrease)
        self.ls_max_steps = int(ls_max_steps)
        self.min_step_size = float(min_step_size)
        self.cautious = float(cautious)
        self._reset_stats()

    # ---- bookkeeping --------------------------------------------------------
    def _reset_stats(self):
        self.cost_evals = 0          # cost evaluations (line search included)
        self.grad_count = 0          # full gradients computed
        self.iterations = 0
        self.accepted_pairs = 0      # cautious updates accepted
        self.rejected_pairs = 0
        self.stop_reason: str | None = None
        self.x = None
        self.cost_value = np.nan
        self.grad_norm_value = np.nan

    @property
    def full_gradient_cost(self) -> int:
        return int(np.sum(self.problem.local_sizes))

    def _cost(self, x):
        self.cost_evals += 1
        return float(self.problem.cost(x))

    def _grad(self, x):
        self.grad_count += 1
        return self.manifold.euclidean_to_riemannian_gradient(x[None], self.problem.egrad(x)[None])[0]

    def _inner(self, x, u, v):
        return float(self.manifold.inner(x[None], u[None], v[None])[0])

    def _transport_many(self, x, y, vs):
        """Transport the stack vs: (m, *point_shape), m >= 1, from T_x to T_y in one batched call."""
        m = vs.shape[0]
        xs = np.broadcast_to(x, (m,) + x.shape)
        ys = np.broadcast_to(y, (m,) + y.shape)
        return self.manifold.transport(xs, ys, vs)

    # ---- the pieces of one iteration ---------------------------------------
    def _direction(self, x, g, S, Y, rho, gamma):
        """p = -H g by the L-BFGS two-loop recursion (Manopt's getDirection)."""
        q = g.copy()
        k = len(rho)
        a = np.empty(k)
        for i in range(k - 1, -1, -1):
            a[i] = rho[i] * self._inner(x, S[i], q)
            q = q - a[i] * Y[i]
        r = gamma * q
        for i in range(k):
            omega = rho[i] * self._inner(x, Y[i], r)
            r = r + (a[i] - omega) * S[i]
        return -r

    def _line_search(self, x, p, f0, df0):
        """Manopt's linesearch_hint with hint alpha = 1: returns (alpha, x_new, f_new)."""
        m = self.manifold
        alpha = 1.0
        x_new = m.retraction(x[None], alpha * p[None])[0]
        f_new = self._cost(x_new)
        evals = 1
        # "not <=": a trial whose cost is NaN (e.g. the retraction overflowed) is no decrease
        while not f_new <= f0 + self.sufficient_decrease * alpha * df0:
            alpha *= self.contraction
            x_new = m.retraction(x[None], alpha * p[None])[0]
            f_new = self._cost(x_new)
            evals += 1
            if evals >= self.ls_max_steps:
                break
        if not f_new <= f0:
            return 0.0, x, f0
        return alpha, x_new, f_new

    # ---- drivers --------------------------------------------------------------
    def iterate(self, x0: np.ndarray, rounds: int, rng=None):
        """Yield ``(t, x_{t+1}, Counters)`` after each of at most ``rounds`` iterations.

        Stops early (fewer rows) once ||grad F|| < tolerance, or when two
        consecutive steps are shorter than ``min_step_size``. ``rng`` is unused
        (the method is deterministic); ``max_iterations`` bounds ``solve`` only.
        After the generator is exhausted, ``x``, ``cost_value``,
        ``grad_norm_value``, ``iterations`` and ``stop_reason`` describe the
        final state.
        """
        self._reset_stats()
        m = self.manifold
        per_grad = self.full_gradient_cost
        shape = m.point_shape

        x = np.array(x0, dtype=float)
        f = self._cost(x)
        g = self._grad(x)
        gnorm = float(m.norm(x[None], g[None])[0])
        S = np.empty((0,) + shape)
        Y = np.empty((0,) + shape)
        rho = np.empty(0)
        gamma = 1.0
        last_step = np.inf
        ultimatum = False
        self.x, self.cost_value, self.grad_norm_value = x, f, gnorm

        if gnorm < self.tolerance:
            self.stop_reason = "tolerance"
            return
        for t in range(rounds):
            if last_step < self.min_step_size:
                if ultimatum:
                    self.stop_reason = "min_step_size"
                    return
                S, Y, rho = S[:0], Y[:0], rho[:0]   # restart from the current point
                ultimatum = True
            else:
                ultimatum = False

            p = self._direction(x, g, S, Y, rho, gamma)
            df0 = self._inner(x, g, p)
            if not df0 < 0:                          # guard, see class docstring
                S, Y, rho = S[:0], Y[:0], rho[:0]
                p = -g
                df0 = -gnorm ** 2
            alpha, x_new, f_new = self._line_search(x, p, f, df0)
            step = alpha * p
            last_step = alpha * float(m.norm(x[None], p[None])[0])
            self.iterations = t + 1

            yield t, x_new, Counters(grad_evals=self.grad_count * per_grad)   # floats: 0

            g_new = self._grad(x_new)
            gnorm_new = float(m.norm(x_new[None], g_new[None])[0])
            # s_k, y_k in T_{x_new}: one batched transport for step and old gradient
            sk, tg = self._transport_many(x, x_new, np.stack([step, g]))
            yk = g_new - tg
            norm_sk = float(m.norm(x_new[None], sk[None])[0])
            accept = False
            if norm_sk > 0:
                sk, yk = sk / norm_sk, yk / norm_sk
                inner_sy = self._inner(x_new, sk, yk)
                inner_ss = float(m.norm(x_new[None], sk[None])[0]) ** 2
                inner_yy = self._inner(x_new, yk, yk)
                # <s, y> > 0 and <y, y> > 0 as well: the cautious test alone accepts y_k = 0 at
                # gnorm = 0, and <y, y> rounds to 0 (Lorentz: by cancellation) for tiny y_k
                accept = (inner_ss != 0 and inner_sy > 0 and inner_yy > 0
                          and inner_sy / inner_ss >= self.cautious * gnorm)
            if len(rho):
                SY = self._transport_many(x, x_new, np.concatenate([S, Y]))
                S, Y = SY[:len(rho)], SY[len(rho):]
            if accept:
                self.accepted_pairs += 1
                gamma = inner_sy / inner_yy
                if self.memory > 0:
                    S = np.concatenate([S, sk[None]])[-self.memory:]
                    Y = np.concatenate([Y, yk[None]])[-self.memory:]
                    rho = np.append(rho, 1.0 / inner_sy)[-self.memory:]
            else:
                self.rejected_pairs += 1

            x, f, g, gnorm = x_new, f_new, g_new, gnorm_new
            self.x, self.cost_value, self.grad_norm_value = x, f, gnorm
            if gnorm < self.tolerance:
                self.stop_reason = "tolerance"
                return
        self.stop_reason = "max_iterations"

    def solve(self, x0: np.ndarray):
        """Run to convergence (or ``max_iterations``): returns ``(x, info)``.

        info: iterations, cost, grad_norm, grad_evals (per-sample, all
        gradients computed), gradients (full gradients computed), cost_evals,
        accepted_pairs, rejected_pairs, stop_reason, time (seconds).
        """
        tic = time.perf_counter()
        for _ in self.iterate(x0, self.max_iterations):
            pass
        info = {
            "iterations": self.iterations,
            "cost": self.cost_value,
            "grad_norm": self.grad_norm_value,
            "grad_evals": self.grad_count * self.full_gradient_cost,
            "gradients": self.grad_count,
            "cost_evals": self.cost_evals,
            "accepted_pairs": self.accepted_pairs,
            "rejected_pairs": self.rejected_pairs,
            "stop_reason": self.stop_reason,
            "time": time.perf_counter() - tic,
        }
        return self.x, info

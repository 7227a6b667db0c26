"""The compiled row pass of problem (5.3) (``rfl.problems._kernels.task_pass``, behind
``MultitaskFeatures._task_pass``) against a plain per-task loop on the valid rows: w_ij from
least squares (lambda = 0) or the ridge normal equations, the residual values and the envelope
gradient (1/T) sum_j X_ij^T (X_ij U w_ij - y_ij) w_ij^T."""

from __future__ import annotations

import numpy as np
import pytest

from rfl.problems import _kernels
from rfl.problems.multitask import MultitaskFeatures


def _padded(rng, S, N, D, m, d):
    """X (S, N, D, m), y (S, N, D) standard normal on the first d[i, j] rows, zero beyond."""
    mask = np.arange(D)[None, None, :] < d[:, :, None]
    X = rng.standard_normal((S, N, D, m)) * mask[..., None]
    y = rng.standard_normal((S, N, D)) * mask
    return X, y


def _oracle(X, y, d, U, agents, tasks, lam):
    """Per row and per selected task, on the task's valid rows only: w (s, T, r), grad
    (s, m, r), fit and h (s, T), and the largest condition number of the tasks' r x r
    systems U^T X^T X U + 2 lambda I (the problem solves these normal equations, whose
    rounding error grows like eps times it; lstsq here does not)."""
    s, T = tasks.shape
    m, r = U.shape[1:]
    w = np.zeros((s, T, r))
    grad = np.zeros((s, m, r))
    fit = np.zeros((s, T))
    kappa = 1.0
    for i in range(s):
        a = agents[i]
        for j in range(T):
            t = tasks[i, j]
            n = d[a, t]
            Xv, yv = X[a, t, :n], y[a, t, :n]
            XU = Xv @ U[i]
            if lam == 0:
                wj = np.linalg.lstsq(XU, yv, rcond=None)[0]
            else:
                wj = np.linalg.solve(XU.T @ XU + 2 * lam * np.eye(r), XU.T @ yv)
            res = XU @ wj - yv
            kappa = max(kappa, np.linalg.cond(XU.T @ XU + 2 * lam * np.eye(r)))
            w[i, j] = wj
            fit[i, j] = 0.5 * res @ res
            grad[i] += np.outer(Xv.T @ res, wj)
        grad[i] /= T
    h = fit + lam * np.einsum("str,str->st", w, w)
    return w, grad, fit, h, kappa


def _close(got, want, kappa, what=""):
    """Equal up to the normal equations' rounding: 100 eps kappa of the largest entry."""
    tol = 100 * np.finfo(float).eps * kappa * max(1.0, np.abs(want).max())
    err = np.abs(got - want).max()
    assert err <= tol, f"{what}: max error {err:.2e} > {tol:.2e}"


def _stiefel(rng, s, m, r):
    return np.linalg.qr(rng.standard_normal((s, m, r)))[0]


# r = 2 (no block of five), 5 (one block), 7 (a block and two single columns); m not a
# multiple of the vector width; d from r (the fewest rows with lambda = 0) to D.
@pytest.mark.parametrize("m, r, D", [(9, 2, 7), (13, 5, 12), (11, 7, 10)])
@pytest.mark.parametrize("lam", [0.0, 0.3])
def test_task_pass_matches_a_per_task_loop(m, r, D, lam):
    rng = np.random.default_rng(100 + m + r)
    S, N = 4, 6
    d = rng.integers(r, D + 1, size=(S, N))
    d[0, 0], d[1, 2], d[3, 5] = r, D, r                      # both ends present
    X, y = _padded(rng, S, N, D, m, d)
    p = MultitaskFeatures(X, y, d, r, lam=lam, gradient="rows")
    cases = {
        "all agents, a mini-batch": (np.arange(S), np.sort(rng.permuted(np.tile(np.arange(N), (S, 1)), axis=1)[:, :3], axis=1)),
        "repeated, unordered agents": (np.array([2, 0, 2, 3, 0]), rng.integers(0, N, size=(5, 4))),
        "non-consecutive agents, repeated tasks": (np.array([3, 1]), np.array([[5, 5, 0], [2, 4, 2]])),
        "one task": (np.array([1]), np.array([[3]])),
    }
    for label, (agents, tasks) in cases.items():
        U = _stiefel(rng, len(agents), m, r)
        want = _oracle(X, y, d, U, agents, tasks, lam)
        got = p._task_pass(U, agents, tasks, grad=True, values=True)
        kappa = want[4]
        for k, ref in zip(("w", "grad"), want):
            _close(got[k], ref, kappa, f"{label}: {k}")
        for k, ref in zip(("fit", "h"), want[2:]):
            # a task with d_ij = r rows and lambda = 0 is fitted exactly: its 0.5 ||res||^2 is
            # the square of rounding errors (~1e-27 here), whatever the order of the sums
            np.testing.assert_allclose(got[k], ref, rtol=1e-9, atol=1e-20, err_msg=f"{label}: {k}")
        _close(p.minibatch_egrad(U, agents, tasks), want[1], kappa, label)
        _close(p.task_coefficients(U, agents, tasks), want[0], kappa, label)
        np.testing.assert_allclose(p.minibatch_cost(U, agents, tasks), want[3].mean(axis=1), rtol=1e-9, atol=1e-20)
    # tasks = all N tasks of each agent (local_egrad, local_cost)
    agents = np.array([1, 3, 0])
    U = _stiefel(rng, 3, m, r)
    want = _oracle(X, y, d, U, agents, np.tile(np.arange(N), (3, 1)), lam)
    _close(p.local_egrad(U, agents), want[1], want[4], "local_egrad")
    np.testing.assert_allclose(p.local_cost(U, agents), want[3].mean(axis=1), rtol=1e-9, atol=1e-20)
    # one point U for every agent (the global pass: a broadcast x)
    U0 = _stiefel(rng, 1, m, r)[0]
    want = _oracle(X, y, d, np.broadcast_to(U0, (S, m, r)), np.arange(S), np.tile(np.arange(N), (S, 1)), lam)
    _close(p.egrad(U0), want[1].mean(axis=0), want[4], "egrad")
    np.testing.assert_allclose(p.cost(U0), want[3].mean(), rtol=1e-10)
    np.testing.assert_allclose(p.data_fit(U0), want[2].mean(), rtol=1e-10)
    _close(p.coefficients(U0), want[0], want[4], "coefficients")


def test_task_pass_returns_only_what_is_asked():
    rng = np.random.default_rng(7)
    d = np.full((2, 3), 4)
    X, y = _padded(rng, 2, 3, 5, 6, d)
    p = MultitaskFeatures(X, y, d, 2, gradient="rows")
    U = _stiefel(rng, 2, 6, 2)
    assert set(p._task_pass(U, np.arange(2))) == {"w"}
    assert set(p._task_pass(U, np.arange(2), grad=True)) == {"w", "grad"}
    assert set(p._task_pass(U, np.arange(2), values=True)) == {"w", "h", "fit"}


def test_padded_rows_are_never_read():
    """NaN in every padded row (beyond d_ij) of a copy handed straight to the kernel: the
    results are finite and equal to those from the zero-padded data."""
    rng = np.random.default_rng(8)
    S, N, D, m, r = 3, 5, 9, 12, 5
    d = rng.integers(r, D + 1, size=(S, N))
    d[0, 1] = D
    X, y = _padded(rng, S, N, D, m, d)
    pad = np.arange(D)[None, None, :] >= d[:, :, None]
    Xn, yn = X.copy(), y.copy()
    Xn[pad], yn[pad] = np.nan, np.nan
    agents = np.array([2, 0, 1, 0], dtype=np.intp)
    tasks = np.ascontiguousarray(rng.integers(0, N, size=(4, 3)), dtype=np.intp)
    ut = np.ascontiguousarray(_stiefel(rng, 4, m, r).swapaxes(1, 2))
    outs = []
    for Xa, ya in ((X, y), (Xn, yn)):
        w, g, f = np.empty((4, 3, r)), np.empty((4, m, r)), np.empty((4, 3))
        assert _kernels.task_pass(Xa, ya, d, agents, tasks, ut, 0.2, w, g, f) == -1
        outs.append((w, g, f))
    for a, b in zip(*outs):
        assert np.all(np.isfinite(b))
        np.testing.assert_array_equal(b, a)


def test_singular_task_raises_like_solve():
    """lambda = 0 and a task whose rows are all zero: U^T X^T X U = 0 is singular."""
    rng = np.random.default_rng(9)
    d = np.full((2, 2), 3)
    X, y = _padded(rng, 2, 2, 4, 5, d)
    X[1, 1], y[1, 1] = 0.0, 0.0
    p = MultitaskFeatures(X, y, d, 2, gradient="rows")
    U = _stiefel(rng, 2, 5, 2)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix: the r x r system of task 1 of agent 1"):
        p.minibatch_egrad(U, np.array([0, 1]), np.array([[0, 1], [0, 1]]))
    p.minibatch_egrad(U, np.array([0, 1]), np.array([[0, 1], [0, 0]]))       # the others solve
    with pytest.raises(np.linalg.LinAlgError, match="task 1 of agent 1"):   # the first row, first task
        p.minibatch_egrad(U[:1], np.array([1]), np.array([[1, 0]]))
    lam = MultitaskFeatures(X, y, d, 2, lam=0.1, gradient="rows")            # 2 lambda I: regular
    assert np.all(np.isfinite(lam.minibatch_egrad(U[:1], np.array([1]), np.array([[1]]))))


def test_bad_indices_are_refused_before_the_kernel():
    rng = np.random.default_rng(10)
    d = np.full((2, 3), 3)
    X, y = _padded(rng, 2, 3, 4, 5, d)
    p = MultitaskFeatures(X, y, d, 2, gradient="rows")
    U = _stiefel(rng, 1, 5, 2)
    with pytest.raises(IndexError, match="out of bounds for size 3"):
        p.minibatch_egrad(U, np.array([0]), np.array([[3]]))
    with pytest.raises(IndexError, match="out of bounds for size 2"):
        p.minibatch_egrad(U, np.array([2]), np.array([[0]]))
    with pytest.raises(ValueError, match=r"x: expected \(1, 5, 2\)"):
        p.minibatch_egrad(U[..., :1], np.array([0]), np.array([[0]]))

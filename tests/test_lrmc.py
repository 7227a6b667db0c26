"""Low-rank matrix completion on Gr(r, m) (``rfl.problems.lrmc``, data ``rfl.data.lrmc``):
the shared problem contract, and the mathematics checked against plain per-column loops built
on ``np.linalg.lstsq`` (not on the problem's kernel): the value function, its envelope
gradient, the invariances, the noise-free ground truth, and the two test-RMSE protocols."""

from __future__ import annotations

import numpy as np
import pytest

from rfl.data import lrmc as data
from rfl.problems.lrmc import LowRankMatrixCompletion as LRMC
from rfl.testing.problem import ProblemCase, ProblemContract

SMALL = {"m": 12, "n": 24, "r": 2, "S": 3, "OS": 2.0, "noise": 0.1, "test_fraction": 0.2}


class TestContract(ProblemContract):
    def problem_cases(self):
        return [ProblemCase(LRMC, dict(LRMC.test_params)),
                ProblemCase(LRMC, {"m": 9, "n": 10, "r": 3, "S": 2, "OS": 1.5, "noise": 0.0}, seed=2)]


def make(seed=0, **params):
    p = {**SMALL, **params}
    arrays = LRMC.generate(np.random.default_rng(seed), **p)
    return arrays, LRMC.from_arrays(arrays, p)


def entries(arrays, prefix=""):
    """{(agent, column): (rows, values)} of the training (or ``test_``) entries."""
    rows, vals, count = arrays[prefix + "rows"], arrays[prefix + "vals"], arrays[prefix + "count"]
    return {(j, c): (rows[j, c, :count[j, c]], vals[j, c, :count[j, c]])
            for j in range(rows.shape[0]) for c in range(rows.shape[1])}


def lstsq_fit(U, rows, y):
    """w = argmin ||U[rows] w - y|| (minimum norm) and the residual."""
    w = np.linalg.lstsq(U[rows], y, rcond=None)[0]
    return w, U[rows] @ w - y


# ---- data --------------------------------------------------------------------------------------
def test_entries_are_the_budgets_disjoint_and_the_noisy_ground_truth():
    p = {**SMALL, "noise": 0.0}
    arrays, _ = make(**p)
    m, n, r = p["m"], p["n"], p["r"]
    assert arrays["count"].sum() == data.n_train(m, n, r, p["OS"]) == round(2.0 * r * (m + n - r))
    assert arrays["test_count"].sum() == data.n_test(m, n, p["test_fraction"])
    assert arrays["count"].min() >= r                       # each column can be fitted
    M = arrays["A"] @ arrays["B"].reshape(n, r).T
    train, test = entries(arrays), entries(arrays, "test_")
    for (j, c), (rows, y) in train.items():
        col = j * arrays["rows"].shape[1] + c               # agent j holds consecutive columns
        assert len(set(rows)) == len(rows)
        assert not set(rows) & set(test[j, c][0])            # disjoint training and test entries
        np.testing.assert_array_equal(y, M[rows, col])
        np.testing.assert_array_equal(test[j, c][1], M[test[j, c][0], col])


def test_noise_is_added_to_every_observed_entry():
    a0, _ = make(noise=0.0)
    a1, _ = make(noise=0.5)
    diff = (a1["vals"] - a0["vals"])[np.arange(a0["vals"].shape[2]) < a0["count"][..., None]]
    assert np.all(diff != 0) and 0.3 < diff.std() < 0.7


@pytest.mark.parametrize("params, key", [({"n": 25}, "n"), ({"OS": 0.5}, "OS"),
                                         ({"test_fraction": 0.9}, "test_fraction"), ({"r": 12}, "r")])
def test_bad_params_are_refused_naming_the_key(params, key):
    assert key in [k for k, _ in LRMC.check_params({**SMALL, **params})]


# ---- cost and gradient against per-column least squares ----------------------------------------
def test_cost_and_gradient_are_the_value_function_and_its_envelope_gradient():
    arrays, problem = make(seed=3)
    rng = np.random.default_rng(4)
    U = problem.manifold.random_point(rng, 1)[0]
    S, N = arrays["count"].shape
    h = np.zeros((S, N))
    G = np.zeros((S,) + U.shape)
    for (j, c), (rows, y) in entries(arrays).items():
        w, res = lstsq_fit(U, rows, y)
        h[j, c] = 0.5 * res @ res
        G[j][rows] += np.outer(res, w) / N                 # P_Omega(U w - x) w^T
    np.testing.assert_allclose(problem.local_cost(np.broadcast_to(U, (S,) + U.shape), np.arange(S)),
                               h.mean(axis=1), rtol=1e-10)
    np.testing.assert_allclose(problem.cost(U), h.mean(), rtol=1e-10)
    np.testing.assert_allclose(problem.egrad(U), G.mean(axis=0), rtol=1e-9, atol=1e-12)
    # a mini-batch of columns 0 and 2 of agent 1
    g = problem.minibatch_egrad(U[None], np.array([1]), np.array([[0, 2]]))[0]
    want = np.zeros_like(U)
    for c in (0, 2):
        rows, y = entries(arrays)[1, c]
        w, res = lstsq_fit(U, rows, y)
        want[rows] += np.outer(res, w) / 2
    np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-12)


def test_cost_is_a_function_of_the_subspace_and_the_gradient_is_horizontal():
    _, problem = make(seed=5)
    rng = np.random.default_rng(6)
    U = problem.manifold.random_point(rng, 1)[0]
    Q = np.linalg.qr(rng.standard_normal((2, 2)))[0]
    G = rng.standard_normal((2, 2)) + 2 * np.eye(2)           # any invertible change of basis
    np.testing.assert_allclose(problem.cost(U @ Q), problem.cost(U), rtol=1e-10)
    np.testing.assert_allclose(problem.cost(U @ G), problem.cost(U), rtol=1e-9)
    np.testing.assert_allclose(problem.egrad(U @ Q), problem.egrad(U) @ Q, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(U.T @ problem.egrad(U), 0, atol=1e-12)


def test_noise_free_ground_truth_is_a_zero_of_every_error():
    _, problem = make(seed=7, noise=0.0)
    U = problem.U_star
    assert problem.cost(U) <= 1e-25
    metrics = problem.extra_metrics(U)
    assert metrics["rel_error"] <= 1e-13
    assert metrics["test_rmse"] <= 1e-13 and metrics["test_rmse_refit"] <= 1e-13
    V = problem.manifold.random_point(np.random.default_rng(8), 1)[0]
    assert problem.cost(V) > 1e-3 and problem.extra_metrics(V)["rel_error"] > 1e-2


# ---- metrics -----------------------------------------------------------------------------------
def test_relative_error_is_that_of_the_completed_matrix():
    arrays, problem = make(seed=9)
    U = problem.manifold.random_point(np.random.default_rng(10), 1)[0]
    S, N = arrays["count"].shape
    n, r = S * N, U.shape[1]
    W = np.zeros((n, r))
    for (j, c), (rows, y) in entries(arrays).items():
        W[j * N + c] = lstsq_fit(U, rows, y)[0]
    M = arrays["A"] @ arrays["B"].reshape(n, r).T
    np.testing.assert_allclose(problem.rel_error(U), np.linalg.norm(U @ W.T - M) / np.linalg.norm(M),
                               rtol=1e-10)


@pytest.mark.parametrize("test_fraction", [0.2, 0.02])    # 0.02: columns with fewer than r test entries
def test_held_out_and_refitted_test_rmse(test_fraction):
    arrays, problem = make(seed=11, test_fraction=test_fraction)
    U = problem.manifold.random_point(np.random.default_rng(12), 1)[0]
    train, test = entries(arrays), entries(arrays, "test_")
    held, refit, k = 0.0, 0.0, 0
    for key, (rows, y) in test.items():
        w = lstsq_fit(U, *train[key])[0]                    # fitted on the training entries
        held += np.sum((U[rows] @ w - y) ** 2)
        refit += np.sum(lstsq_fit(U, rows, y)[1] ** 2)      # refitted on the test entries
        k += len(rows)
    assert (test_fraction == 0.02) == (arrays["test_count"].min() < 2)
    np.testing.assert_allclose(problem.test_rmse(U), np.sqrt(held / k), rtol=1e-10)
    np.testing.assert_allclose(problem.test_rmse(U, refit=True), np.sqrt(refit / k), rtol=1e-9, atol=1e-14)
    assert problem.test_rmse(U, refit=True) < problem.test_rmse(U)   # refitting minimises it


def test_malformed_arrays_are_refused_before_any_work():
    arrays, _ = make()
    bad = dict(arrays, rows=arrays["rows"] + SMALL["m"])          # a row past m
    with pytest.raises(ValueError, match="observed rows"):
        LRMC.from_arrays(bad, SMALL)
    bad = dict(arrays, count=np.minimum(arrays["count"], 1))      # fewer than r entries
    with pytest.raises(ValueError, match="observed entries"):
        LRMC.from_arrays(bad, SMALL)
    bad = dict(arrays, test_count=arrays["test_count"] + 99)      # counts beyond the padding
    with pytest.raises(ValueError, match="test entries"):
        LRMC.from_arrays(bad, SMALL)

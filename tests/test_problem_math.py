"""Mathematics of the problems that the shared contract leaves open: the sign conventions of the
closed-form optima (each column's largest-|.| entry positive), distances to a minimiser set
that is closed under column sign flips (checked by brute force over the signs, including a
column orthogonal to the optimum's), FedLSA's local squared error by a plain loop, the
multitask coefficients of a subset of tasks against a per-task ridge solve, the test NMSE of
tasks without test rows, and the defaults of the generators (the papers' sizes and noise)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rfl.data import garnet, lrmc as lrmc_data
from rfl.data import multitask as multitask_data
from rfl.problems.cpesph import CPESph
from rfl.problems.kpca import KPCA
from rfl.problems.lrmc import LowRankMatrixCompletion as LRMC
from rfl.problems.lsa import FederatedLSA
from rfl.problems.mbcfsti import MBCFSti
from rfl.problems.multitask import MultitaskFeatures, SchoolMultitask, nmse_column
from rfl.problems.pca_sphere import PCASphere


def largest_entries_positive(x):
    x = np.atleast_2d(x.T).T if x.ndim == 1 else x
    cols = x if x.ndim == 2 else x[:, None]
    return all(cols[np.argmax(np.abs(cols[:, k])), k] > 0 for k in range(cols.shape[1]))


# ---- sign conventions and distances ------------------------------------------------------------
def test_closed_form_optima_make_each_columns_largest_entry_positive():
    mb = MBCFSti.from_arrays(MBCFSti.generate(np.random.default_rng(0), d=6, p=3, S=2, N=4))
    X = mb.closed_form_optimum()
    assert largest_entries_positive(X)
    w, v = np.linalg.eigh(mb.A_bar)
    for k in range(3):                    # +-v_k, the k-th smallest eigenvalue's eigenvector
        assert abs(abs(X[:, k] @ v[:, k]) - 1) < 1e-12
    kp = KPCA(np.random.default_rng(1).standard_normal((2, 20, 6)), 3)
    X = kp.closed_form_optimum()
    assert largest_entries_positive(X)
    w, v = np.linalg.eigh(kp.A_bar)
    for k in range(3):                    # the k-th largest
        assert abs(abs(X[:, k] @ v[:, -1 - k]) - 1) < 1e-12
    cp = CPESph(np.random.default_rng(2).standard_normal((2, 10, 6)))
    x = cp.closed_form_optimum()
    assert x[np.argmax(np.abs(x))] > 0 and abs(abs(x @ np.linalg.eigh(cp.C)[1][:, -1]) - 1) < 1e-12


def test_mbcfsti_distance_is_the_nearest_sign_pattern():
    mb = MBCFSti.from_arrays(MBCFSti.generate(np.random.default_rng(3), d=5, p=3, S=2, N=4))
    x_star = mb.closed_form_optimum()
    signs = [np.array(s, float) for s in itertools.product([1, -1], repeat=3)]
    for y in mb.manifold.random_point(np.random.default_rng(4), 6):
        best = min(np.linalg.norm(y * s - x_star) for s in signs)
        assert abs(mb.distance_to_optimum(y, x_star) - best) < 1e-14
    # a column orthogonal to the optimum's: both signs are as far, sqrt(2) for that column
    y = x_star.copy()
    y[:, 1] = np.linalg.svd(x_star.T)[2][-1]          # a unit vector orthogonal to span(x_star)
    y[:, 0] = -y[:, 0]
    assert abs(mb.distance_to_optimum(y, x_star) - np.sqrt(2)) < 1e-14


# ---- FedLSA ----------------------------------------------------------------------------------
def test_lsa_local_cost_is_the_squared_error_to_the_agents_own_fixed_point():
    arrays = garnet.generate(np.random.default_rng(5), 3, "heterogeneous", n_states=6, n_features=3, pool=20)
    p = FederatedLSA.from_arrays(arrays)
    agents = np.array([2, 0, 2])
    x = np.random.default_rng(6).standard_normal((3, 3))
    want = [sum((x[i, k] - p.theta_star_local[c][k]) ** 2 for k in range(3)) for i, c in enumerate(agents)]
    np.testing.assert_allclose(p.local_cost(x, agents), want, rtol=1e-14)
    # theta*_c solves A_bar_c theta = b_bar_c, and is where agent c's error vanishes
    np.testing.assert_allclose(p.A_bar_local[1] @ p.theta_star_local[1], p.b_bar_local[1], atol=1e-12)
    assert p.local_cost(p.theta_star_local[[1]], np.array([1]))[0] == 0.0
    note = FederatedLSA.local_sizes_note({"n_agents": 3, "oracle": "exact"})
    assert "A_bar_c theta - b_bar_c" in note and "LSA" in note


# ---- parameters: defaults ----------------------------------------------------------------------
def test_lrmc_defaults_are_OS_6_and_a_tenth_of_the_entries_for_testing():
    """m = n = 40, r = 3: 6 * 231 training + 160 test entries fit the 1600 (7 * 231 would not)."""
    p = {"m": 40, "n": 40, "r": 3, "S": 4}
    assert lrmc_data.n_train(40, 40, 3, 6.0) + lrmc_data.n_test(40, 40, 0.1) <= 1600
    assert LRMC.check_params(p) == []
    assert LRMC.check_params({**p, "OS": 7.0}) != []
    arrays = LRMC.generate(np.random.default_rng(7), **p)
    assert arrays["count"].sum() == lrmc_data.n_train(40, 40, 3, 6.0)
    assert arrays["test_count"].sum() == lrmc_data.n_test(40, 40, 0.1)


def test_pca_sphere_defaults_to_one_shard():
    assert PCASphere.check_params({"S": 3, "N": 7}) == []
    assert PCASphere.check_params({"S": 3, "N": 7, "shards": 2})[0][0] == "N"


def test_kpca_message_states_the_largest_allowed_size():
    msg = KPCA.check_params({"S": 7, "r": 2, "split": "iid", "n_per_agent": 300})[0][1]
    assert msg.endswith(f"n_per_agent <= {1740 // 7}")


def test_multitask_generator_defaults_are_the_papers():
    """Section 5.2: task sizes uniform in 10..50, noise 1e-6 (so U* fits almost exactly)."""
    a = MultitaskFeatures.generate(np.random.default_rng(8), S=10, N=40, m=3, r=1)
    assert a["d"].min() == 10 and a["d"].max() == 50 and a["X"].shape[2] == 50
    p = MultitaskFeatures.from_arrays(a)
    assert p.cost(a["U_star"]) < 1e-9 < p.cost(p.manifold.random_point(np.random.default_rng(9), 1)[0])


# ---- multitask: coefficients and test NMSE -----------------------------------------------------
def _ridge_w(U, X, y, lam):
    """argmin_w 0.5 ||X U w - y||^2 + lam ||w||^2 by a plain solve of the normal equations."""
    A = U.T @ X.T @ X @ U + 2 * lam * np.eye(U.shape[1])
    return np.linalg.solve(A, U.T @ X.T @ y)


@pytest.mark.parametrize("gradient", ["gram", "rows"])
def test_task_coefficients_of_selected_tasks(gradient):
    a = multitask_data.generate(np.random.default_rng(10), S=3, N=4, m=5, r=2, d_min=3, d_max=6, noise=0.1)
    p = MultitaskFeatures(a["X"], a["y"], a["d"], 2, lam=0.2, gradient=gradient)
    U = p.manifold.random_point(np.random.default_rng(11), 2)
    agents, tasks = np.array([2, 0]), np.array([[3, 1], [0, 0]])
    w = p.task_coefficients(U, agents, tasks)
    assert w.shape == (2, 2, 2)
    for i, c in enumerate(agents):
        for k, t in enumerate(tasks[i]):
            n = a["d"][c, t]
            np.testing.assert_allclose(w[i, k], _ridge_w(U[i], a["X"][c, t, :n], a["y"][c, t, :n], 0.2),
                                       rtol=1e-10)
    every = p.task_coefficients(U, agents)
    assert every.shape == (2, 4, 2)
    np.testing.assert_allclose(every[0, [3, 1]], w[0], rtol=1e-12)


def _split_with_an_untested_task(seed):
    a = multitask_data.generate(np.random.default_rng(seed), S=2, N=3, m=4, r=2, d_min=5, d_max=5, noise=0.1)
    b = multitask_data.generate(np.random.default_rng(seed + 1), S=2, N=3, m=4, r=2, d_min=1, d_max=4, noise=0.1)
    n_test = b["d"].copy()
    n_test[1, 2] = 0
    X_test, y_test = b["X"].copy(), b["y"].copy()
    X_test[1, 2], y_test[1, 2] = 0.0, 0.0
    return {"X_train": a["X"], "y_train": a["y"], "n_train": a["d"],
            "X_test": X_test, "y_test": y_test, "n_test": n_test}


def test_test_nmse_skips_tasks_without_test_rows():
    split = _split_with_an_untested_task(12)
    p = SchoolMultitask.from_arrays(split, {"r": 2, "lam": 0.05})
    U = p.manifold.random_point(np.random.default_rng(13), 1)[0]
    labels = np.concatenate([split["y_test"][j, t, :n] for (j, t), n in np.ndenumerate(split["n_test"])])
    var = labels.var()
    per_task, pooled, rows = [], 0.0, 0
    for (j, t), n in np.ndenumerate(split["n_test"]):
        if n == 0:
            continue
        w = _ridge_w(U, split["X_train"][j, t], split["y_train"][j, t], 0.05)
        res = split["X_test"][j, t, :n] @ U @ w - split["y_test"][j, t, :n]
        per_task.append(res @ res / n)
        pooled += res @ res
        rows += n
    assert len(per_task) == 5
    got = p.extra_metrics(U)
    assert got["test_nmse_taskmean"] == pytest.approx(np.mean(per_task) / var, rel=1e-10)
    assert got["test_nmse"] == pytest.approx(pooled / rows / var, rel=1e-10)
    assert p.test_nmse(U, normalisation="task_mean") == pytest.approx(np.mean(per_task) / var, rel=1e-10)
    # the cached variance is that of the stored split, on a second call too
    assert p.extra_metrics(U) == got


def test_constant_test_labels_are_refused_by_both_normalisations():
    split = _split_with_an_untested_task(14)
    valid = np.arange(split["y_test"].shape[2]) < split["n_test"][..., None]
    split["y_test"] = np.where(valid, 2.0, 0.0)
    p = SchoolMultitask.from_arrays(split, {"r": 2, "lam": 0.05})
    U = p.manifold.random_point(np.random.default_rng(15), 1)[0]
    for call in (lambda: p.test_nmse(U, normalisation="task_mean"), lambda: p.extra_metrics(U)):
        with pytest.raises(ValueError, match=r"^var\(y_test\) is zero; NMSE undefined$"):
            call()


def test_nmse_column_names_the_bad_option():
    with pytest.raises(ValueError, match=r"^test NMSE protocol 'oracle' is not known; allowed: heldout, refit_on_test$"):
        nmse_column("oracle")
    with pytest.raises(ValueError, match=r"^test NMSE normalisation 'max' is not known; allowed: pooled, task_mean$"):
        nmse_column("heldout", "max")


def test_predictions_on_given_test_rows():
    split = _split_with_an_untested_task(16)
    p = MultitaskFeatures(split["X_train"], split["y_train"], split["n_train"], 2, lam=0.05)
    U = p.manifold.random_point(np.random.default_rng(17), 1)[0]
    pred = p.predict(U, split["X_test"])
    for (j, t), n in np.ndenumerate(split["n_test"]):
        w = _ridge_w(U, split["X_train"][j, t], split["y_train"][j, t], 0.05)
        np.testing.assert_allclose(pred[j, t], split["X_test"][j, t] @ U @ w, rtol=1e-10, atol=1e-14)
    with pytest.raises(ValueError, match="^no test data: pass X_test or build the problem with from_school$"):
        p.predict(U)

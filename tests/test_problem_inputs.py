"""Inputs the problems refuse (wrong shapes, missing dimensions, unknown options) with an
error that says what was expected, and the small pieces of the problems that the contract does
not reach: FedLSA's transitions and run predictions, the mini-batch container's array protocol,
and the metrics without their data (NaN, not a number made up)."""

from __future__ import annotations

import numpy as np
import pytest

from rfl.data import garnet
from rfl.data import multitask as multitask_data
from rfl.problems import MiniBatch
from rfl.problems._batching import chunk_agents, is_consecutive, selected_indices
from rfl.problems.cfmspd import CFMSPD, frechet_mean_fixed_point
from rfl.problems.kpca import KPCA
from rfl.problems.lrmc import LowRankMatrixCompletion as LRMC
from rfl.problems.lsa import FederatedLSA
from rfl.problems.mbcfsti import MBCFSti
from rfl.problems.multitask import MultitaskFeatures, SchoolMultitask, nmse_column


# ---- shapes and dimensions -------------------------------------------------------------------
def test_matrix_problems_refuse_non_square_or_flat_samples():
    with pytest.raises(ValueError, match=r"Z must have shape \(S, N, d, d\), got \(2, 3, 2, 3\)"):
        CFMSPD(np.zeros((2, 3, 2, 3)))
    with pytest.raises(ValueError, match=r"\(S, N, d, d\), got \(2, 3, 4\)"):
        CFMSPD(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match=r"A must have shape \(S, N, d, d\), got \(2, 3, 2, 3\)"):
        MBCFSti(np.zeros((2, 3, 2, 3)), 1)
    with pytest.raises(ValueError, match=r"A must have shape"):
        MBCFSti(np.zeros((2, 3, 4)), 1)
    with pytest.raises(ValueError, match=r"Z must have shape \(S, N, d\), got \(2, 3\)"):
        KPCA(np.zeros((2, 3)), 1)


def test_the_dimension_comes_from_params_or_arrays_or_a_named_error():
    A = MBCFSti.generate(np.random.default_rng(0), d=4, p=2, S=2, N=3)
    assert MBCFSti.from_arrays(A).p == 2                             # the generator's p
    assert MBCFSti.from_arrays(A, {"p": 3}).p == 3                   # params win
    assert MBCFSti.from_arrays({"A": A["A"], "p": np.array(1)}, {"S": 2}).p == 1
    with pytest.raises(KeyError, match="MBCFSti needs p"):
        MBCFSti.from_arrays({"A": A["A"]}, {"S": 2})
    Z = np.random.default_rng(1).standard_normal((2, 5, 4))
    with pytest.raises(KeyError, match="KPCA needs r"):
        KPCA.from_arrays({"Z": Z}, {"S": 2})
    assert KPCA.from_arrays({"Z": Z, "r": np.array(2)}, {"S": 2}).r == 2
    assert KPCA.from_arrays({"Z": Z}, {"r": 3}).r == 3


def test_karcher_iteration_that_cannot_converge_says_so():
    Z = CFMSPD.generate(np.random.default_rng(2), d=2, S=2, N=3, D_W=1.0)["Z"]
    with pytest.raises(RuntimeError, match=r"tol=1e-30 in 2 iterations"):
        frechet_mean_fixed_point(Z, tol=1e-30, max_iter=2)
    assert CFMSPD(Z).closed_form_optimum() is None


# ---- low-rank matrix completion ----------------------------------------------------------------
def _lrmc(seed=0, **kw):
    p = {"m": 10, "n": 12, "r": 2, "S": 3, "OS": 1.5, "noise": 0.0, "test_fraction": 0.2, **kw}
    arrays = LRMC.generate(np.random.default_rng(seed), **p)
    return arrays, p


def test_lrmc_refuses_inconsistent_entries():
    a, p = _lrmc()
    args = lambda **kw: {**{k: a[k] for k in ("rows", "vals", "count", "A", "B")}, **kw}  # noqa: E731
    with pytest.raises(ValueError, match="expected rows, vals"):
        LRMC(**args(vals=a["vals"][:, :, :-1]))
    with pytest.raises(ValueError, match="expected rows, vals"):
        LRMC(**args(count=a["count"][:, :-1]))
    with pytest.raises(ValueError, match="expected rows, vals"):
        LRMC(**args(B=a["B"][:, :, :1]))
    few = a["count"].copy()
    few[0, 0] = 1                                                     # r = 2 entries needed
    with pytest.raises(ValueError, match=r"r = 2 to D = \d+ observed entries.*\[1, "):
        LRMC(**args(count=few))
    many = a["count"].copy()
    many[0, 0] = a["rows"].shape[2] + 1
    with pytest.raises(ValueError, match="observed entries"):
        LRMC(**args(count=many))
    bad = a["rows"].copy()
    bad[0, 0, 0] = 10
    with pytest.raises(ValueError, match=r"observed rows must lie in \[0, 10\), got \[0, 10\]"):
        LRMC(**args(rows=bad))
    bad[0, 0, 0] = -1
    with pytest.raises(ValueError, match=r"observed rows must lie in \[0, 10\)"):
        LRMC(**args(rows=bad))
    t = {k: a["test_" + k] for k in ("rows", "vals", "count")}
    LRMC(**args(), test_rows=t["rows"], test_vals=t["vals"], test_count=t["count"])
    for name, value in (("test_rows", t["rows"][:, :-1]), ("test_count", t["count"][:, :-1]),
                        ("test_count", t["count"] + t["rows"].shape[2]),
                        ("test_rows", t["rows"] + 10), ("test_rows", t["rows"] - 11)):
        kw = {"test_rows": t["rows"], "test_vals": t["vals"], "test_count": t["count"], name: value}
        with pytest.raises(ValueError, match=r"test entries: expected rows \(S, N, D_test\) in \[0, 10\)"):
            LRMC(**args(), **kw)


def test_lrmc_refuses_points_agents_and_columns_out_of_range():
    a, p = _lrmc()
    problem = LRMC.from_arrays(a, p)
    U = problem.manifold.random_point(np.random.default_rng(1), 2)
    with pytest.raises(ValueError, match=r"x must have shape \(2, 10, 2\), got \(2, 2, 10\)"):
        problem.minibatch_egrad(U.swapaxes(1, 2), np.array([0, 1]), np.array([[0], [1]]))
    for agents in ([0, 3], [-1, 0]):
        with pytest.raises(IndexError, match=r"agent indices must lie in \[0, 3\)"):
            problem.minibatch_egrad(U, np.array(agents), np.array([[0], [1]]))
    for cols in ([[0], [4]], [[-1], [0]]):
        with pytest.raises(IndexError, match=r"column indices must lie in \[0, 4\)"):
            problem.minibatch_egrad(U, np.array([0, 1]), np.array(cols))
    # the last column and agent are in range
    g = problem.minibatch_egrad(U[[0, 0]], np.array([2, 2]), np.array([[3], [3]]))
    np.testing.assert_array_equal(g[0], g[1])


def test_lrmc_without_test_entries_reports_nan_and_plants_span_a():
    a, p = _lrmc(seed=3)
    train = {k: a[k] for k in ("rows", "vals", "count", "A", "B")}
    problem = LRMC.from_arrays(train, p)
    U = problem.manifold.random_point(np.random.default_rng(4), 1)[0]
    assert np.isnan(problem.test_rmse(U)) and np.isnan(problem.test_rmse(U, refit=True))
    metrics = problem.extra_metrics(U)
    assert set(metrics) == set(LRMC.metrics) and np.isnan(metrics["test_rmse"])
    assert np.isfinite(metrics["rel_error"])
    (cand,) = problem.reference_candidates()
    np.testing.assert_allclose(cand.T @ cand, np.eye(2), atol=1e-12)
    # span(cand) = span(A): the projection of A onto it is A
    np.testing.assert_allclose(cand @ (cand.T @ a["A"]), a["A"], atol=1e-12)
    cand[:] = 0                                                       # a copy, not the problem's
    assert np.linalg.norm(problem.reference_candidates()[0]) > 0


def test_lrmc_coefficients_are_a_copy_of_the_fitted_ones():
    a, p = _lrmc(seed=5)
    problem = LRMC.from_arrays(a, p)
    U = problem.U_star
    W = problem.coefficients(U)
    assert W.shape == (3, 4, 2)
    # noise-free: U_star W^T reproduces A B^T on every column
    M = a["A"] @ a["B"].reshape(12, 2).T
    np.testing.assert_allclose(U @ W.reshape(12, 2).T, M, atol=1e-10)
    W[:] = 0
    assert np.abs(problem.coefficients(U)).max() > 0


# ---- multitask -------------------------------------------------------------------------------
def _tasks(seed=0, **kw):
    p = {"S": 2, "N": 3, "m": 4, "r": 2, "d_min": 3, "d_max": 5, "noise": 0.1, **kw}
    return multitask_data.generate(np.random.default_rng(seed), **p), p


def test_multitask_refuses_bad_task_arrays():
    a, p = _tasks()
    X, y, d = a["X"], a["y"], a["d"]
    with pytest.raises(ValueError, match=r"training data: expected X \(S, N, D, m\)"):
        MultitaskFeatures(X[0], y, d, 2)
    with pytest.raises(ValueError, match="training data: expected X"):
        MultitaskFeatures(X, y[:, :, :-1], d, 2)
    with pytest.raises(ValueError, match="training data: expected X"):
        MultitaskFeatures(X, y, d[:, :-1], 2)
    D = X.shape[2]
    for bad in (-1, D + 1):
        dd = d.copy()
        dd[0, 0] = bad
        with pytest.raises(ValueError, match=rf"task sizes must lie in \[0, {D}\]"):
            MultitaskFeatures(X, y, dd, 2, lam=0.1)
    with pytest.raises(ValueError, match="lambda must be non-negative, got -0.5"):
        MultitaskFeatures(X, y, d, 2, lam=-0.5)
    with pytest.raises(ValueError, match=r"gradient='fast'; allowed: auto, gram, rows"):
        MultitaskFeatures(X, y, d, 2, gradient="fast")
    with pytest.raises(ValueError, match=r"need r \(params\['r'\]"):
        MultitaskFeatures.from_arrays({"X": X, "y": y, "d": d})
    assert MultitaskFeatures.from_arrays({"X": X, "y": y, "d": d, "r": np.array(1)}).r == 1
    assert MultitaskFeatures.from_arrays({"X": X, "y": y, "d": d, "lam": np.array(0.5)}, r=1).lam == 0.5
    with pytest.raises(KeyError, match="need S and N"):
        MultitaskFeatures.local_sizes_from({"S": 2})
    with pytest.raises(KeyError, match="need S and N"):
        MultitaskFeatures.local_sizes_from({"N": 2})


def _school_split(seed=0):
    """A School-like split of synthetic tasks: training and test rows of the same tasks."""
    a, _ = _tasks(seed, d_min=5, d_max=5)
    b, _ = _tasks(seed + 1, d_min=2, d_max=4)
    return {"X_train": a["X"], "y_train": a["y"], "n_train": a["d"],
            "X_test": b["X"], "y_test": b["y"], "n_test": b["d"]}


def test_school_needs_a_split_and_r():
    split = _school_split()
    with pytest.raises(ValueError, match="a School problem is built from a split_school dict"):
        SchoolMultitask.from_arrays({"X": split["X_train"]}, {"r": 2})
    with pytest.raises(ValueError, match="a School problem needs the subspace dimension r"):
        SchoolMultitask.from_arrays(split, {"lam": 0.1})
    p = SchoolMultitask.from_arrays(split, {"r": 2})
    assert p.lam == pytest.approx(1e-3)                              # SCHOOL_LAMBDA by default
    bad = {**split, "X_test": split["X_test"][:, :, :, :-1], "y_test": split["y_test"]}
    with pytest.raises(ValueError, match="do not match training data"):
        SchoolMultitask.from_arrays(bad, {"r": 2})


def test_test_nmse_needs_test_data_that_match_the_tasks():
    split = _school_split(2)
    p = SchoolMultitask.from_arrays(split, {"r": 2, "lam": 0.1})
    U = p.manifold.random_point(np.random.default_rng(3), 1)[0]
    q = MultitaskFeatures(split["X_train"], split["y_train"], split["n_train"], 2, lam=0.1)
    with pytest.raises(ValueError, match="no test data"):
        q.predict(U)
    with pytest.raises(ValueError, match="need X_test, y_test and n_test"):
        q.test_nmse(U)
    with pytest.raises(ValueError, match="need X_test, y_test and n_test"):
        q.test_nmse(U, split["X_test"], split["y_test"])
    wrong = split["X_test"][:1]
    with pytest.raises(ValueError, match=r"X_test \(1, "):
        q.test_nmse(U, wrong, split["y_test"][:1], split["n_test"][:1])
    with pytest.raises(ValueError, match=r"X_test \(1, "):
        q.predict(U, wrong)
    # given explicitly, the same test data give the same NMSE as the stored ones
    assert q.test_nmse(U, split["X_test"], split["y_test"], split["n_test"]) == pytest.approx(p.test_nmse(U))
    np.testing.assert_allclose(q.predict(U, split["X_test"]), p.predict(U))
    with pytest.raises(ValueError, match="test NMSE protocol 'oracle' is not known; allowed: heldout, refit_on_test"):
        p.test_nmse(U, protocol="oracle")
    with pytest.raises(ValueError, match="normalisation 'max' is not known; allowed: pooled, task_mean"):
        p.test_nmse(U, normalisation="max")
    assert nmse_column("refit_on_test", "task_mean") == "test_nmse_refit_taskmean"
    assert nmse_column("heldout") == "test_nmse"


def test_constant_test_labels_have_no_nmse():
    split = _school_split(4)
    split["X_test"] = np.where(split["y_test"][..., None] != 0, split["X_test"], 0.0)
    valid = np.arange(split["y_test"].shape[2]) < split["n_test"][..., None]
    split["y_test"] = np.where(valid, 1.5, 0.0)                     # every valid label 1.5
    p = SchoolMultitask.from_arrays(split, {"r": 2, "lam": 0.1})
    U = p.manifold.random_point(np.random.default_rng(5), 1)[0]
    with pytest.raises(ValueError, match="var\\(y_test\\) is zero"):
        p.test_nmse(U, normalisation="task_mean")
    with pytest.raises(ValueError, match="var\\(y_test\\) is zero"):
        p.extra_metrics(U)


def test_subspace_distance_without_a_planted_subspace_is_nan():
    a, p = _tasks(6)
    q = MultitaskFeatures(a["X"], a["y"], a["d"], 2)
    U = q.manifold.random_point(np.random.default_rng(7), 1)[0]
    assert np.isnan(q.extra_metrics(U)["subspace_dist"]) and q.reference_candidates() == []
    assert q.closed_form_optimum() is None


def test_school_finds_its_file_only_in_the_mirror(monkeypatch, tmp_path):
    from rfl.data import school

    monkeypatch.setenv(school.MIRROR_ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match=f"set {school.MIRROR_ENV} to a directory holding "
                                                f"{school.ILEA_FILENAME}.*got {tmp_path}"):
        SchoolMultitask.find_raw_inputs()
    monkeypatch.setenv(school.MIRROR_ENV, "  ")
    with pytest.raises(FileNotFoundError, match="got nothing"):
        SchoolMultitask.find_raw_inputs()


# ---- FedLSA ------------------------------------------------------------------------------------
def _lsa(oracle="pool", pool=30, n_agents=3, seed=0):
    arrays = garnet.generate(np.random.default_rng(seed), n_agents, "heterogeneous", n_states=6,
                             n_features=3, pool=pool if oracle == "pool" else 0)
    return arrays, FederatedLSA.from_arrays(arrays, {"oracle": oracle})


def test_lsa_oracles_and_their_local_sizes():
    arrays, _ = _lsa()
    with pytest.raises(ValueError, match=r"oracle must be one of \('pool', 'exact'\), got 'magic'"):
        FederatedLSA.from_arrays(arrays, {"oracle": "magic"})
    empty, exact = _lsa("exact")
    with pytest.raises(ValueError, match="the pool oracle needs at least one transition"):
        FederatedLSA.from_arrays(empty)
    np.testing.assert_array_equal(exact.local_sizes, [1, 1, 1])
    assert FederatedLSA.local_sizes_from({"n_agents": 3, "oracle": "exact"}) == [1, 1, 1]
    assert FederatedLSA.local_sizes_from({"n_agents": 2}) == [garnet.DEFAULT_POOL] * 2
    assert "once per local step" in FederatedLSA.local_sizes_note({"n_agents": 3, "oracle": "exact"})
    assert FederatedLSA.local_sizes_note({"n_agents": 3}) == ""
    assert FederatedLSA.local_sizes_note({"n_agents": 3, "oracle": "pool"}) == ""
    # the exact oracle's mini-batch field is the mean field, whatever the batch
    x = np.random.default_rng(1).standard_normal((2, 3))
    agents = np.array([2, 0])
    np.testing.assert_array_equal(exact.minibatch_egrad(x, agents, np.array([[0], [0]])),
                                  exact.local_egrad(x, agents))
    # the generator draws no pool for the exact oracle
    gen = FederatedLSA.generate(np.random.default_rng(0), "homogeneous", 2, oracle="exact",
                                n_states=6, n_features=3)
    assert gen["states"].shape == (2, 0)
    gen = FederatedLSA.generate(np.random.default_rng(0), "homogeneous", 2, pool=5, n_states=6,
                                n_features=3)
    assert gen["states"].shape == (2, 5)


def test_lsa_transitions_are_the_pool_entries_and_their_rewards():
    arrays, p = _lsa(pool=20)
    agents, batch = np.array([2, 0, 2]), np.array([[3, 19], [0, 7], [5, 5]])
    s, s_next, r = p.transitions(agents, batch)
    for row, c in enumerate(agents):
        for k, j in enumerate(batch[row]):
            assert s[row, k] == arrays["states"][c, j] and s_next[row, k] == arrays["next_states"][c, j]
            # r_c(s) = R_c(s, policy(s))
            assert r[row, k] == arrays["R"][c, s[row, k], arrays["policy"][s[row, k]]]


def test_lsa_predictions_only_for_fixed_steps_and_full_participation():
    _, p = _lsa()
    fixed = {"rule": "fixed", "alpha": 0.1}
    assert p.predictions({}) == {}
    assert p.predictions({"algorithm": {"K": 3}, "step": {"rule": "decaying", "alpha": 0.1}}) == {}
    assert p.predictions({"algorithm": {"K": None}, "step": fixed}) == {}
    assert p.predictions({"algorithm": {"K": 3, "participation": 2}, "step": fixed}) == {}
    full = p.predictions({"algorithm": {"K": 3, "participation": 3}, "step": fixed})
    assert full == p.predictions({"algorithm": {"K": 3}, "step": fixed})
    bias, sq = p.fedlsa_bias(0.1, 3)
    assert full["eta"] == 0.1 and full["H"] == 3 and full["oracle"] == "pool"
    assert full["fedlsa_bias"] == bias.tolist() and full["fedlsa_bias_sq"] == sq
    assert "batch_size" not in full                        # no batch size: no pool plateau
    # the contraction of the mean one-round map sum_c p_c (I - eta A_c)^H, by a plain loop
    M = sum(np.linalg.matrix_power(np.eye(3) - 0.1 * A, 3) for A in p.A_bar_local) / 3
    assert full["fedlsa_round_contraction"] == pytest.approx(max(abs(np.linalg.eigvals(M))), rel=1e-12)
    _, e = _lsa("exact")
    ex = e.predictions({"algorithm": {"K": 3, "batch_size": 1}, "step": fixed})
    assert ex["oracle"] == "exact" and "fedlsa_plateau_pool" not in ex


def test_lsa_stationary_pool_refuses_a_batch_outside_the_pool():
    _, p = _lsa(pool=10)
    for B in (0, 11):
        with pytest.raises(ValueError, match=rf"batch size B={B} must be in \[1, pool size 10\]"):
            p.fedlsa_stationary_pool(0.1, 2, B)
    assert np.isfinite(p.fedlsa_stationary_pool(0.1, 2, 10)["plateau"])
    assert np.isfinite(p.fedlsa_stationary_pool(0.1, 2, 1)["plateau"])


def test_lsa_stationary_pool_without_a_stationary_law_is_infinite():
    _, p = _lsa(pool=10)
    huge = p.fedlsa_stationary_pool(50.0, 2, 3)                        # a step that diverges
    assert huge["contraction"] >= 1
    assert all(huge[k] == np.inf for k in ("plateau", "bias_sq", "variance"))
    pred = p.predictions({"algorithm": {"K": 2, "batch_size": 3}, "step": {"rule": "fixed", "alpha": 50.0}})
    assert pred["fedlsa_plateau_pool"] is None and pred["fedlsa_second_moment_contraction"] >= 1


# ---- the mini-batch container ---------------------------------------------------------------
def test_minibatch_behaves_as_its_index_array():
    idx = np.array([[3, 0], [1, 2]])
    mb = MiniBatch(4, indices=idx)
    assert len(mb) == 2 and mb.shape == (2, 2) and mb.n == 4
    np.testing.assert_array_equal(mb[1], idx[1])
    np.testing.assert_array_equal(mb[:, 0], idx[:, 0])
    assert [list(r) for r in mb] == [[3, 0], [1, 2]]
    assert np.asarray(mb, dtype=float).dtype == float
    np.testing.assert_array_equal(np.asarray(mb), idx)
    # selected_indices of a MiniBatch of another n: checked as an index array (IndexError)
    with pytest.raises(IndexError, match="index 3 is out of bounds for size 3"):
        selected_indices(mb, 3, 2)


def test_consecutive_runs_and_chunk_sizes():
    assert not is_consecutive(np.array([], dtype=int))
    assert is_consecutive(np.array([4])) and is_consecutive(np.array([2, 3, 4, 5]))
    assert not is_consecutive(np.array([2, 4])) and not is_consecutive(np.array([3, 2]))
    assert not is_consecutive(np.array([2, 5, 3, 4, 6]))          # span s - 1, not increasing
    assert chunk_agents(100, 50, 1000) == 10
    assert chunk_agents(100, 5, 1000) == 5                         # at most s
    assert chunk_agents(10_000, 5, 1000) == 1                      # at least one
    assert chunk_agents(0, 5, 1000) == 5

"""MovieLens-1M for LRMC (rfl.data.movielens, problem lrmc_movielens): the ratings.dat reader
on small files of the same format made here, the z-scoring, the seeded per-user 80/20 split,
the packing into columns, the pinned source's checksum error, and the lambda > 0 cost of the
authors' ConstructRFLLRMCProb_Grass_ against a dense least-squares oracle and finite
differences."""

import hashlib
import math
import subprocess
import sys

import numpy as np
import pytest

from rfl.data import movielens
from rfl.data.sources import SOURCES, ChecksumMismatchError, verified
from rfl.problems.lrmc import LowRankMatrixCompletion, LowRankMatrixCompletionMovieLens
from rfl.data.generated import write_ratings_lines

#: user, movie, rating, timestamp: user 1 has 5 ratings, user 2 has 3, user 3 has 7, user 4 none
TABLE = [(1, 3, 5, 978300760), (1, 1, 3, 978302109), (1, 6, 3, 978301968), (1, 2, 4, 978300275),
         (1, 5, 5, 978824291), (2, 6, 5, 978298413), (2, 2, 5, 978299026), (2, 4, 2, 978299773),
         (3, 1, 1, 978294008), (3, 2, 2, 978297068), (3, 3, 3, 978298709), (3, 4, 4, 978295200),
         (3, 5, 5, 978298000), (3, 6, 1, 978298100), (3, 7, 2, 978298200)]


def write_ratings(path, rows=TABLE):
    return write_ratings_lines(path, rows)


def test_read_ratings(tmp_path):
    table = movielens.read_ratings(write_ratings(tmp_path / "ratings.dat"))
    assert table.dtype == np.int64 and table.shape == (15, 4)
    np.testing.assert_array_equal(table, np.array(TABLE))


@pytest.mark.parametrize("line", ["1::2::3", "1::2::x::4", "1:2:3:4", "1::2::3::4::5"])
def test_a_bad_line_is_named(tmp_path, line):
    path = tmp_path / "ratings.dat"
    path.write_text("1::1::5::978300760\n" + line + "\n")
    with pytest.raises(ValueError, match=r"line 2 is not UserID::MovieID::Rating::Timestamp"):
        movielens.read_ratings(path)


def test_zscore_is_matlab_normalize():
    """(r - mean) / std with the n - 1 divisor: for 1, 2, 3, 4, 5 the std is sqrt(2.5)."""
    z = movielens.zscore(np.array([1, 2, 3, 4, 5]))
    np.testing.assert_allclose(z, (np.arange(1, 6) - 3) / np.sqrt(2.5), rtol=1e-15)


def test_split_per_user_takes_ceil_of_80_percent_of_each_user():
    users = np.repeat([7, 2, 9, 4], [5, 3, 20, 35])
    np.random.default_rng(0).shuffle(users)
    train = movielens.split_per_user(users, np.random.default_rng(1))
    for u, n in ((7, 5), (2, 3), (9, 20), (4, 35)):
        assert train[users == u].sum() == math.ceil(0.8 * n)
    again = movielens.split_per_user(users, np.random.default_rng(1))
    np.testing.assert_array_equal(train, again)                  # seeded
    other = movielens.split_per_user(users, np.random.default_rng(2))
    assert not np.array_equal(train, other)                      # random within each user


def test_generate_packs_users_as_columns_dealt_in_blocks(tmp_path):
    table = movielens.read_ratings(write_ratings(tmp_path / "ratings.dat"))
    out = movielens.generate(np.random.default_rng(3), table, S=2, lam=0.01, n_users=4, n_movies=7)
    z = movielens.zscore(table[:, 2])
    # agents hold users (1, 2) and (3, 4); ceil(0.8 n) training ratings: 4, 3, 6, 0
    np.testing.assert_array_equal(out["count"], [[4, 3], [6, 0]])
    np.testing.assert_array_equal(out["test_count"], [[1, 0], [1, 0]])
    assert float(out["lam"]) == 0.01 and int(out["m"]) == 7
    seen = {}
    for key in ("", "test_"):
        for a in range(2):
            for c in range(2):
                n = out[key + "count"][a, c]
                rows = out[key + "rows"][a, c, :n]
                assert np.all(np.diff(rows) > 0)                         # ascending movies
                for row, val in zip(rows, out[key + "vals"][a, c, :n]):
                    user = 2 * a + c + 1
                    i = next(k for k, t in enumerate(TABLE) if t[0] == user and t[1] == row + 1)
                    assert val == pytest.approx(z[i], abs=1e-15)
                    assert (user, row) not in seen                      # train, test disjoint
                    seen[(user, row)] = key
    assert len(seen) == len(TABLE)


def test_the_source_is_pinned_by_the_authors_git_blob_id(tmp_path):
    """A ratings.dat with other content is refused with a one-line ChecksumMismatchError;
    the pin is the git blob id sha1(b'blob <len>\\0' + content) of the authors' file."""
    src = SOURCES["movielens_ratings"]
    assert src.git_blob == "77a7c4b150f588c23bb9e1f068aa996c0b413695"
    assert src.url.endswith("a07b5576a6b9b8b8ea05eb38fba23fc076e8ac8a/RFedAGS/data/ml_1m/ratings.dat")
    path = write_ratings(tmp_path / "ratings.dat")
    content = path.read_bytes()
    blob = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
    with pytest.raises(ChecksumMismatchError) as err:
        verified("movielens_ratings", path)
    assert blob in str(err.value) and "77a7c4b1" in str(err.value)
    assert "\n" not in str(err.value)


def test_rfl_data_refuses_a_wrong_ratings_file_in_one_line(tmp_path):
    """``rfl data`` on a ratings.dat that is not the pinned one: one line, exit status 2."""
    import json
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"name": "movielens", "instance": "fixed", "problem": "lrmc_movielens",
                                "seed": 1, "params": {"r": 2, "S": 2}}))
    ratings = write_ratings(tmp_path / "ratings.dat")
    proc = subprocess.run([sys.executable, "-m", "rfl.cli", "data", str(spec),
                           str(tmp_path / "out.npz"), str(ratings)], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rfl: error:") and "git_blob" in lines[0]


# ---- the lambda > 0 cost (ConstructRFLLRMCProb_Grass_) ---------------------------------------
def _problem(tmp_path, lam, rng):
    """lrmc_movielens' class on a random 9-movie, 4-user table (some users with fewer ratings
    than r = 3), 2 agents."""
    rows = []
    for user, n in zip(range(1, 5), (2, 6, 9, 4)):
        for movie in rng.choice(9, n, replace=False) + 1:
            rows.append((user, movie, rng.integers(1, 6), 978300000))
    table = np.array(rows)
    arrays = movielens.generate(rng, table, S=2, lam=lam, n_users=4, n_movies=9)
    arrays["r"] = np.array(3)
    return LowRankMatrixCompletionMovieLens.from_arrays(arrays), arrays, table


def _dense_fit(U, rows, y, lam):
    """min_w 0.5 ||U_Omega w - y||^2 + 0.5 lam ||U_Omega^c w||^2 by a stacked least squares."""
    mask = np.zeros(U.shape[0], dtype=bool)
    mask[rows] = True
    A = np.vstack([U[rows], np.sqrt(lam) * U[~mask]])
    b = np.concatenate([y, np.zeros((~mask).sum())])
    w = np.linalg.lstsq(A, b, rcond=None)[0]
    return w, 0.5 * np.sum((A @ w - b) ** 2)


def test_lambda_cost_against_a_dense_oracle(tmp_path):
    rng = np.random.default_rng(5)
    lam = 0.05
    P, arrays, _ = _problem(tmp_path, lam, rng)
    U = P.manifold.random_point(rng, 1)[0]
    total, ws = 0.0, []
    for a in range(2):
        for c in range(2):
            n = arrays["count"][a, c]
            w, h = _dense_fit(U, arrays["rows"][a, c, :n], arrays["vals"][a, c, :n], lam)
            total += h / 4
            ws.append(w)
    assert P.cost(U) == pytest.approx(total, rel=1e-12)
    np.testing.assert_allclose(P.coefficients(U).reshape(4, 3), np.array(ws), atol=1e-12)


def test_lambda_gradient_by_finite_differences(tmp_path):
    """egrad is the Euclidean gradient of the GL(r)-invariant extension (finite differences in
    any direction, also off St), and it is horizontal: U^T egrad = 0."""
    rng = np.random.default_rng(6)
    P, _, _ = _problem(tmp_path, 0.1, rng)
    U = P.manifold.random_point(rng, 1)[0]
    G = P.egrad(U)
    np.testing.assert_allclose(U.T @ G, 0, atol=1e-12)
    for _ in range(3):
        D = rng.standard_normal(U.shape)
        h = 1e-6
        fd = (P.cost(U + h * D) - P.cost(U - h * D)) / (2 * h)
        assert np.sum(G * D) == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_both_test_rmse_protocols(tmp_path):
    """test_rmse: w fitted on a user's training ratings, scored on the test ratings;
    test_rmse_refit: the authors' RMSE, w refitted (with lambda) on the test ratings."""
    rng = np.random.default_rng(7)
    lam = 0.02
    P, arrays, _ = _problem(tmp_path, lam, rng)
    U = P.manifold.random_point(rng, 1)[0]
    sq_h = sq_r = 0.0
    n_test = arrays["test_count"].sum()
    for a in range(2):
        for c in range(2):
            n, k = arrays["count"][a, c], arrays["test_count"][a, c]
            w, _ = _dense_fit(U, arrays["rows"][a, c, :n], arrays["vals"][a, c, :n], lam)
            t_rows, t_y = arrays["test_rows"][a, c, :k], arrays["test_vals"][a, c, :k]
            sq_h += np.sum((U[t_rows] @ w - t_y) ** 2)
            w2, _ = _dense_fit(U, t_rows, t_y, lam)
            sq_r += np.sum((U[t_rows] @ w2 - t_y) ** 2)
    assert P.test_rmse(U) == pytest.approx(np.sqrt(sq_h / n_test), rel=1e-12)
    assert P.test_rmse(U, refit=True) == pytest.approx(np.sqrt(sq_r / n_test), rel=1e-12)
    assert np.isnan(P.rel_error(U)) and P.metrics == ("test_rmse", "test_rmse_refit")


def test_lambda_zero_is_the_synthetic_problem_unchanged():
    """lam = 0 leaves the cost of the synthetic LRMC as it was (w = (U_c^T U_c)^{-1} U_c^T y)."""
    rng = np.random.default_rng(8)
    arrays = LowRankMatrixCompletion.generate(rng, **LowRankMatrixCompletion.test_params)
    P = LowRankMatrixCompletion.from_arrays(arrays)
    U = P.manifold.random_point(rng, 1)[0]
    total = 0.0
    S, N, _ = arrays["rows"].shape
    for a in range(S):
        for c in range(N):
            n = arrays["count"][a, c]
            _, h = _dense_fit(U, arrays["rows"][a, c, :n], arrays["vals"][a, c, :n], 0.0)
            total += h / (S * N)
    assert P.cost(U) == pytest.approx(total, rel=1e-12)

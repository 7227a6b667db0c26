"""Synthetic PCA on St(d, r) (``rfl.problems.pca_stiefel``): the shared problem contract, the
authors' data construction (blocks of rows of growing scale) and their cost up to the factor 2."""

from __future__ import annotations

import numpy as np
import pytest

from rfl.problems.pca_stiefel import PCAStiefelSynthetic as PCA
from rfl.problems.pca_stiefel import row_scales
from rfl.testing.problem import ProblemCase, ProblemContract


class TestContract(ProblemContract):
    def problem_cases(self):
        return [ProblemCase(PCA, dict(PCA.test_params)),
                ProblemCase(PCA, {"d": 5, "r": 1, "S": 2, "N": 4, "block": 4, "scales": [0.5, 400.0]}, seed=1)]


def test_agents_hold_consecutive_rows_scaled_by_their_block():
    # the authors' agent study in miniature: blocks of 2 rows scaled by b / 8, N = 4 rows per agent
    params = {"d": 3, "r": 1, "S": 3, "N": 4, "block": 2, "n_blocks": 8}
    Z = PCA.generate(np.random.default_rng(0), **params)["Z"]
    g = np.random.default_rng(0).standard_normal((12, 3))
    for j in range(3):
        for i in range(4):
            b = (4 * j + i) // 2 + 1                            # 1-based block of row 4 j + i
            np.testing.assert_array_equal(Z[j, i], g[4 * j + i] * b / 8)
    np.testing.assert_array_equal(row_scales(2, 3, 3, scales=[0.5, 400.0]), [0.5] * 3 + [400.0] * 3)
    np.testing.assert_array_equal(row_scales(1, 4, 2), [0.5, 0.5, 1.0, 1.0])   # n_blocks: those used


def test_cost_is_half_the_authors_and_the_optimum_the_leading_eigenvectors():
    params = {"d": 6, "r": 2, "S": 3, "N": 5, "block": 5, "n_blocks": 3}
    arrays = PCA.generate(np.random.default_rng(1), **params)
    problem = PCA.from_arrays(arrays, params)
    X = problem.manifold.random_point(np.random.default_rng(2), 1)[0]
    # the authors': (1/S) sum_j (1/N) sum_i -||z_ji^T X||^2, a loop over rows
    theirs = np.mean([np.mean([-np.sum((z @ X) ** 2) for z in Zj]) for Zj in arrays["Z"]])
    np.testing.assert_allclose(problem.cost(X), theirs / 2, rtol=1e-12)
    pooled = arrays["Z"].reshape(-1, 6)
    lam = np.linalg.eigvalsh(pooled.T @ pooled / 15)[::-1]
    np.testing.assert_allclose(problem.optimal_value(), -0.5 * lam[:2].sum(), rtol=1e-12)
    np.testing.assert_allclose(problem.cost(problem.closed_form_optimum()), -0.5 * lam[:2].sum(), rtol=1e-12)


@pytest.mark.parametrize("params, key", [({"r": 7}, "r"), ({"n_blocks": 2}, "n_blocks"),
                                         ({"scales": [1.0]}, "scales")])
def test_bad_params_are_refused_naming_the_key(params, key):
    base = {"d": 6, "r": 2, "S": 3, "N": 4, "block": 4, "n_blocks": 3}
    assert key in [k for k, _ in PCA.check_params({**base, **params})]


def test_a_zero_scale_gives_agents_of_zero_rows_that_leave_the_optimum_alone():
    # the authors' agent study at S = 150, 200: agents past the pool's filled blocks hold zeros
    params = {"d": 4, "r": 1, "S": 3, "N": 4, "block": 4, "scales": [1.0, 2.0, 0.0]}
    assert PCA.check_params(params) == []
    arrays = PCA.generate(np.random.default_rng(3), **params)
    assert not arrays["Z"][2].any() and arrays["Z"][:2].all()
    problem = PCA.from_arrays(arrays, params)
    pooled = arrays["Z"][:2].reshape(-1, 4)                       # the two agents with data
    lam = np.linalg.eigvalsh(pooled.T @ pooled / 12)[::-1]        # ... over all S N = 12 rows
    np.testing.assert_allclose(problem.optimal_value(), -0.5 * lam[0], rtol=1e-12)

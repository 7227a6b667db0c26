"""The DRSGD/DRGTA code's decentralised PCA (``rfl.problems.pca_eigengap``): the shared problem
contract, the geometric eigenvalues of the pooled matrix, rows split evenly, the optimum."""

from __future__ import annotations

import numpy as np
import pytest

from rfl.problems.pca_eigengap import PCAEigengap as P
from rfl.testing.problem import ProblemCase, ProblemContract


class TestContract(ProblemContract):
    def problem_cases(self):
        return [ProblemCase(P, dict(P.test_params))]


def test_eigenvalues_fall_by_the_eigengap_and_agents_hold_consecutive_rows():
    params = {"d": 7, "r": 2, "S": 4, "N": 9, "eigengap": 0.6}
    Z = P.generate(np.random.default_rng(0), **params)["Z"]
    A = np.random.default_rng(0).standard_normal((36, 7))          # the same draw, by hand
    u, s, vt = np.linalg.svd(A, full_matrices=False)
    want = (u * (s[0] * 0.6 ** (np.arange(7) / 2))) @ vt
    np.testing.assert_allclose(Z.reshape(36, 7), want, atol=1e-12)
    np.testing.assert_allclose(Z[1], want[9:18], atol=1e-12)
    lam = P.from_arrays({"Z": Z, "r": np.array(2)}, params).eigenvalues()
    np.testing.assert_allclose(lam[1:] / lam[:-1], 0.6, rtol=1e-9)   # lambda_{i+1} / lambda_i = g
    problem = P.from_arrays({"Z": Z, "r": np.array(2)}, params)
    x = problem.closed_form_optimum()
    assert problem.distance_to_optimum(vt[:2].T, x) == pytest.approx(0.0, abs=1e-7)


@pytest.mark.parametrize("params, key", [({"r": 8}, "r"), ({"d": 40}, "d")])
def test_bad_params_are_refused_naming_the_key(params, key):
    base = {"d": 7, "r": 2, "S": 4, "N": 9, "eigengap": 0.6}
    assert key in [k for k, _ in P.check_params({**base, **params})]

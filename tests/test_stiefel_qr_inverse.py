"""The inverse of the QR retraction on St(p, n) (``Stiefel.inverse_retraction_qr``) against
its definition: R_X(V) = qf(X + V) from numpy's QR, and V tangent at X."""

import numpy as np
import pytest

from rfl.manifolds import Stiefel


def _tangent(M, rng, x, norm):
    u = M.projection(x, rng.standard_normal(x.shape))
    return norm * u / np.linalg.norm(u, axis=(-2, -1), keepdims=True)


@pytest.mark.parametrize("n,p", [(25, 2), (64, 3), (20, 5), (6, 1), (4, 4)])
@pytest.mark.parametrize("norm", [1e-6, 1e-2, 0.5, 1.5])
def test_inverse_qr_retraction_round_trip(n, p, norm):
    """R_X^{-1}(R_X(V)) = V to 1e-10 (relative to |V| + 1), at the paper's sizes St(25, 2),
    St(64, 3), at Fed_manifold's kPCA size St(20, 5) and at the edge cases p = 1, n = p."""
    rng = np.random.default_rng(n * 10 + p)
    M = Stiefel(n, p, retraction="qr", transport="projection")
    x = M.random_point(rng, 6)
    v = _tangent(M, rng, x, norm)
    y = M.retraction(x, v)
    back = M.inverse_retraction_qr(x, y)
    assert np.abs(back - v).max() < 1e-10 * (1 + norm)
    # what it returns is a tangent vector whose retraction is y (for any y near x)
    z = M.random_point(rng, 6)
    near = M.retraction(x, 0.3 * M.projection(x, z - x))
    w = M.inverse_retraction_qr(x, near)
    assert np.abs(M.projection(x, w) - w).max() < 1e-12
    assert np.abs(M.retraction(x, w) - near).max() < 1e-12


def test_inverse_qr_retraction_solves_for_the_triangular_factor():
    """V = Y R - X with R the upper-triangular factor of X + V = Y R (positive diagonal), as
    numpy's QR of X + V gives it."""
    rng = np.random.default_rng(3)
    M = Stiefel(9, 4, retraction="qr")
    x = M.random_point(rng, 3)
    v = _tangent(M, rng, x, 0.8)
    y = M.retraction(x, v)
    v_back = M.inverse_retraction_qr(x, y)
    r = np.swapaxes(y, -1, -2) @ (x + v_back)
    for j in range(3):
        q, r_np = np.linalg.qr(x[j] + v[j])
        sign = np.sign(np.diag(r_np))
        np.testing.assert_allclose(r[j], sign[:, None] * r_np, rtol=0, atol=1e-12)
        assert np.allclose(np.tril(r[j], -1), 0, atol=1e-12) and np.all(np.diag(r[j]) > 0)


def test_tangent_mean_runs_with_the_qr_retraction():
    """offers('tangent_mean', 'qr'); the tangent mean of points R_X(V_j) with sum_j p_j V_j = 0
    is X (R_X(0) = X), and RFedAvg / RFedSVRG accept the geometry."""
    from rfl.algorithms import RFedAvg, RFedSVRG
    from rfl.algorithms.aggregation import tangent_mean
    from rfl.testing.strategy import _mbcfsti
    assert Stiefel.offers("tangent_mean", "qr") and not Stiefel.offers("log", "qr")
    rng = np.random.default_rng(4)
    M = Stiefel(8, 3, retraction="qr", transport="projection")
    x = M.random_point(rng, 1)[0]
    v = _tangent(M, rng, np.repeat(x[None], 2, 0), 0.4)
    pts = M.retraction(np.repeat(x[None], 3, 0), np.stack([v[0], v[1], -(v[0] + v[1])]))
    np.testing.assert_allclose(tangent_mean(M, x, pts, np.full(3, 1 / 3)), x, rtol=0, atol=1e-12)
    problem = _mbcfsti(retraction="qr", transport="projection")
    for cls in (RFedAvg, RFedSVRG):
        cls.check_problem(problem)


@pytest.mark.parametrize("name", ["rfedavg", "rfedsvrg"])
@pytest.mark.parametrize("participation", [None, 3], ids=["all-agents", "partial"])
def test_tangent_mean_strategies_with_qr_match_reference_loops(name, participation):
    """RFedAvg and RFedSVRG on MBCFSti with the QR retraction and its inverse against the
    per-agent loops, whose inverse solves the p(p+1)/2 x p(p+1)/2 system in one piece."""
    from rfl.algorithms import AgentSampler, Fixed
    from rfl.registry import ALGORITHMS
    from rfl.testing.reference_loops import REFERENCE_LOOPS
    from rfl.testing.strategy import _mbcfsti
    problem = _mbcfsti(retraction="qr", transport="projection")
    cls = ALGORITHMS[name]
    alg = cls(problem, Fixed(0.03), 3, 4, participation)
    x0 = problem.initial_point(np.random.default_rng(2))
    vec = [x0] + [np.array(x, copy=True) for _, x, _ in alg.iterate(x0, 5, np.random.default_rng(8))]
    sampler = AgentSampler(np.random.default_rng(8), problem.local_sizes, 4, participation)
    ref = REFERENCE_LOOPS[name](problem, x0, Fixed(0.03), 3, 5, sampler)
    np.testing.assert_allclose(np.array(vec), np.array(ref), rtol=0, atol=1e-12)
    assert np.abs(vec[-1] - vec[0]).max() > 1e-3

"""Hyperbolic structured prediction on WordNet mammals (rfl/problems/hsp.py, rfl/data/wordnet.py):
the shared problem contract, and closed forms of the weighted Fréchet mean in H^2."""

import numpy as np
import pytest

from rfl.algorithms.rlbfgs import RLBFGS
from rfl.data import wordnet
from rfl.manifolds import Lorentz
from rfl.problems.hsp import HSP
from rfl.testing.problem import ProblemCase, ProblemContract


def _files():
    try:
        return HSP.find_raw_inputs()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))


class TestHSPContract(ProblemContract):
    def problem_cases(self):
        return [ProblemCase(HSP, {"S": 9}), ProblemCase(HSP, {"S": 4, "test_node": 7})]


def _two_point(a, b, rng):
    M = Lorentz(2)
    y = M.random_point(rng, 2)
    return M, y, HSP(y[None], np.array([[a, b]]), y[0])


@pytest.mark.parametrize("a,b", [(1.0, 1.0), (0.3, 0.7), (2.0, 0.5)])
def test_two_point_frechet_mean_is_on_the_geodesic(a, b):
    """argmin a d^2(x, y1) + b d^2(x, y2) is Exp_{y1}(b/(a+b) Log_{y1} y2): the Riemannian
    gradient vanishes there, and RLBFGS from a random start finds it."""
    rng = np.random.default_rng(1)
    M, y, p = _two_point(a, b, rng)
    x = M.exp(y[:1], b / (a + b) * M.log(y[:1], y[1:]))[0]
    assert p.grad_norm(x) < 1e-12
    x_hat, _ = RLBFGS(p, tolerance=1e-12, max_iterations=200).solve(M.random_point(rng)[0])
    assert M.dist(x_hat[None], x[None])[0] < 1e-9
    # F at the minimiser: a b / (a + b) d(y1, y2)^2 / 2 (mean over the 2 samples)
    d = M.dist(y[:1], y[1:])[0]
    assert p.cost(x) == pytest.approx(a * b / (a + b) * d * d / 2, rel=1e-12)


def test_egrad_converts_to_minus_two_log():
    """The Euclidean gradient of one term, converted, is -2 alpha Log_x(y) / N."""
    rng = np.random.default_rng(2)
    M = Lorentz(2)
    y = M.random_point(rng, 3)
    alpha = np.array([[0.5, -0.2, 1.5]])
    p = HSP(y[None], alpha, y[0])
    x = M.random_point(rng, 1)
    g = M.euclidean_to_riemannian_gradient(x, p.local_egrad(x, np.array([0])))[0]
    want = sum(-2 * alpha[0, i] * M.log(x, y[i:i + 1])[0] for i in range(3)) / 3
    np.testing.assert_allclose(g, want, atol=1e-12)
    # at x = y_i the term's gradient is 0 (d / sinh d -> 1, Log = 0)
    np.testing.assert_allclose(
        M.euclidean_to_riemannian_gradient(y[:1], HSP(y[None, :1], alpha[:, :1], y[0])
                                           .local_egrad(y[:1], np.array([0]))), 0, atol=1e-12)


def test_kernel_weights_solve_the_ridge_system():
    rng = np.random.default_rng(3)
    W = rng.standard_normal((6, 3)) * 0.05
    w = rng.standard_normal(3) * 0.05
    alpha = wordnet.kernel_weights(w, W, 0.03, 1e-5)
    K = np.exp(-((W[:, None] - W[None]) ** 2).sum(-1) / (2 * 0.03 ** 2))
    kw = np.exp(-((W - w) ** 2).sum(-1) / (2 * 0.03 ** 2))
    np.testing.assert_allclose((K + 1e-5 * np.eye(6)) @ alpha, kw, atol=1e-12)
    # a training point's own features, with a kernel far narrower than the spacing: e_i/(1+lam)
    np.testing.assert_allclose(wordnet.kernel_weights(W[2], W, 1e-4, 1e-5),
                               np.eye(6)[2] / (1 + 1e-5), atol=1e-12)


def test_generate_follows_the_authors_split():
    """Node 100 (primate) is held out, the other 1179 nodes go in file order to 9 agents of 131;
    the embeddings are the Poincaré points mapped to H^2."""
    features, poincare = _files()
    W = wordnet.read_xlsx(features)
    P = wordnet.read_xlsx(poincare)
    a = HSP.generate(None, features, poincare, S=9)
    assert a["Y"].shape == (9, 131, 3) and a["alpha"].shape == (9, 131)
    M = Lorentz(2)
    np.testing.assert_allclose(M.to_poincare(a["y_true"][None])[0], P[99], atol=1e-12)
    np.testing.assert_allclose(M.to_poincare(a["Y"][0, 98:100]), P[[98, 100]], atol=1e-12)
    np.testing.assert_allclose(M.to_poincare(a["Y"][8, -1:]), P[-1:], atol=1e-12)
    np.testing.assert_allclose(a["alpha"][1], wordnet.kernel_weights(W[99], W[132:263], 0.03, 1e-5))
    assert np.all(M.distance_from_manifold(a["Y"].reshape(-1, 3)) < 1e-9)


def test_reference_optimum_predicts_near_primate():
    """RLBFGS converges (gradient 1e-9) to the same point from two starts; the prediction
    lies closer to primate's embedding than most training nodes."""
    features, poincare = _files()
    p = HSP.from_arrays(HSP.generate(None, features, poincare, S=9), {})
    solver = RLBFGS(p, tolerance=1e-10, max_iterations=300)
    x1, _ = solver.solve(p.reference_candidates()[0])
    x2, _ = solver.solve(p.manifold.random_point(np.random.default_rng(0))[0])
    assert p.grad_norm(x1) < 1e-9 and p.grad_norm(x2) < 1e-9
    assert p.manifold.dist(x1[None], x2[None])[0] < 1e-7
    d_pred = p.extra_metrics(x1)["dist_true"]
    d_nodes = p.manifold.dist(np.broadcast_to(p.y_true, p._Yflat.shape), p._Yflat)
    assert d_pred < np.quantile(d_nodes, 0.1)


def test_check_params_refuses_more_agents_than_nodes():
    assert HSP.check_params({"S": 2000})[0][0] == "S"
    assert HSP.check_params({"S": 9}) == []


# ---- the ridge bound: kernel weights that do not depend on rounding -----------------
def test_the_ridge_bound_rests_on_lambda_max_at_most_N_and_keeps_half_the_digits():
    """lam_min(N) = N sqrt(eps) / (1 - sqrt(eps)): with K's eigenvalues in [0, N] (Gershgorin:
    unit diagonal, entries in (0, 1]; checked on every agent's K of the real data) the
    condition number of K + lam_min I is at most 1 + N / lam_min = 1 / sqrt(eps)."""
    eps = np.finfo(float).eps
    for N in (1, 131, 1179):
        lam = wordnet.lam_min(N)
        assert (1 + N / lam) * eps == pytest.approx(np.sqrt(eps), rel=1e-12)
    features, _ = _files()
    W = wordnet.read_xlsx(features)
    keep = np.delete(np.arange(wordnet.N_NODES), 99)
    for S in (1, 9):
        N = keep.size // S
        for block in keep[:S * N].reshape(S, N):
            mu = np.linalg.eigvalsh(wordnet.gaussian_kernel(W[block], W[block], 0.03))
            # eigvalsh's own error is at most about N eps ||K||: the bounds hold to that
            assert mu.max() <= N * (1 + N * eps) and mu.min() >= -N * N * eps


def test_kernel_weights_at_the_bound_agree_with_an_eigendecomposition():
    """At lam = lam_min(N) the weights keep their digits whatever the algorithm: LU through
    ``np.linalg.solve`` and V diag(1 / (mu + lam)) V^T k_w (a symmetric eigensolver, other
    rounding) agree within the forward-error bound n kappa eps, kappa the computed condition
    number (mu_max + lam) / (mu_min + lam) -- not within one machine's difference."""
    features, _ = _files()
    W = wordnet.read_xlsx(features)
    eps = np.finfo(float).eps
    block, w = np.arange(131), W[1000]
    N = block.size
    lam = wordnet.lam_min(N)
    alpha = wordnet.kernel_weights(w, W[block], 0.03, lam)
    K = wordnet.gaussian_kernel(W[block], W[block], 0.03)
    kw = wordnet.gaussian_kernel(W[block], w[None], 0.03)[:, 0]
    mu, V = np.linalg.eigh(K)
    oracle = V @ ((V.T @ kw) / (np.maximum(mu, 0) + lam))
    kappa = (mu.max() + lam) / (max(mu.min(), 0) + lam)
    assert kappa * eps <= np.sqrt(eps) * (1 + 1e-6)
    assert np.linalg.norm(alpha - oracle) <= N * kappa * eps * np.linalg.norm(oracle)
    # and below the bound the two disagree beyond it: the bound is where the digits go
    tiny = 1e-16
    a2 = np.linalg.solve(K + tiny * np.eye(N), kw)
    o2 = V @ ((V.T @ kw) / (np.maximum(mu, 0) + tiny))
    assert np.linalg.norm(a2 - o2) > N * np.sqrt(eps) * np.linalg.norm(o2)


def test_kernel_weights_refuse_a_ridge_below_the_bound():
    rng = np.random.default_rng(3)
    W, w = rng.standard_normal((6, 3)), rng.standard_normal(3)
    assert np.all(np.isfinite(wordnet.kernel_weights(w, W, 1.0, wordnet.lam_min(6))))
    with pytest.raises(ValueError, match=r"lam = 1e-10 is below .* for N = 6 nodes"):
        wordnet.kernel_weights(w, W, 1.0, 1e-10)
    with pytest.raises(ValueError, match="lam = nan"):
        wordnet.kernel_weights(w, W, 1.0, float("nan"))


@pytest.mark.parametrize("S", [1, 9, 1179])
def test_check_params_refuses_a_ridge_below_the_bound_for_its_N(S):
    N = (wordnet.N_NODES - 1) // S
    bound = wordnet.lam_min(N)
    assert HSP.check_params({"S": S, "lam": bound}) == []
    assert HSP.check_params({"S": S, "lam": 2 * bound}) == []
    (key, msg), = HSP.check_params({"S": S, "lam": bound * (1 - 1e-9)})
    assert key == "lam" and f"N = {N} nodes" in msg and "allowed: lam >= " in msg
    assert f"= {bound:.4g}" in msg
    # the default 1e-5 (HSPHyper_WordNet_Fixed.m) is allowed for S >= 2, not for one agent
    assert (HSP.check_params({"S": S}) == []) == (wordnet.lam_min(N) <= 1e-5)
    assert (S == 1) == (wordnet.lam_min(N) > 1e-5)

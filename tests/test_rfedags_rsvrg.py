"""RFedAGS with local RSVRG steps (option local_method: rsvrg; the authors' localMethod
'RSVRG'): the shared strategy contract with that option, the full-batch identity with plain
RFedAGS, the gradient count, and the stream against the authors' form where the transport
inverts itself."""

import numpy as np
import pytest

from rfl.algorithms import AgentSampler, Fixed, RFedAGS
from rfl.testing.strategy import StrategyContract, _cpesph, _mbcfsti


class TestRFedAGSRSVRGContract(StrategyContract):
    strategies = ["rfedags"]
    options = {"local_method": "rsvrg"}


def _run(alg, x0, rounds, seed):
    out, counts = [x0], []
    for _, x, c in alg.iterate(x0, rounds, np.random.default_rng(seed)):
        out.append(np.array(x, copy=True))
        counts.append(c.grad_evals)
    return np.array(out), counts


@pytest.mark.parametrize("make,alpha", [(_cpesph, 1.0), (_mbcfsti, 0.03)], ids=["cpesph", "mbcfsti"])
@pytest.mark.parametrize("participation", [None, 3], ids=["all-agents", "partial"])
def test_full_batches_give_plain_rfedags(make, alpha, participation):
    """B = N_j: grad f_{j,B} = grad f_j, the correction grad f_{j,B}(x_t) - grad f_j(x_t)
    vanishes, and the run is plain RFedAGS with full batches (same draws)."""
    problem = make()
    N = int(problem.local_sizes.min())
    assert np.all(problem.local_sizes == N)
    x0 = problem.initial_point(np.random.default_rng(1))
    plain, _ = _run(RFedAGS(problem, Fixed(alpha), 4, N, participation), x0, 5, 3)
    vr, counts = _run(RFedAGS(problem, Fixed(alpha), 4, N, participation, local_method="rsvrg"), x0, 5, 3)
    np.testing.assert_allclose(vr, plain, rtol=0, atol=1e-12)
    assert np.abs(plain[-1] - plain[0]).max() > 1e-3
    s = participation or problem.n_agents
    assert counts[0] == s * (N + 2 * N * 3)                     # N_j + 2 B (K - 1) per agent


def test_variance_reduction_differs_from_sgd_with_small_batches():
    problem = _cpesph()
    x0 = problem.initial_point(np.random.default_rng(1))
    plain, _ = _run(RFedAGS(problem, Fixed(1.0), 4, 3), x0, 3, 3)
    vr, _ = _run(RFedAGS(problem, Fixed(1.0), 4, 3, local_method="rsvrg"), x0, 3, 3)
    assert np.abs(vr - plain).max() > 1e-6


def test_stream_matches_the_authors_form_under_parallel_transport():
    """On the sphere with parallel transport (Gamma_{x -> x_t} inverts Gamma_{x_t -> x}) the
    stream of line 9 equals the authors' localRSVRG stream
    -alpha g_j - alpha sum_{k>=1} (Gamma_{x_k -> x_t} grad f_B(x_k) - (grad f_B(x_t) - g_j)),
    rebuilt here per agent from the problem's gradients."""
    from rfl.testing.reference_loops import single_point_ops
    problem = _cpesph()
    ops = single_point_ops(problem.manifold)
    alpha, K, B = 1.0, 4, 3
    x_t = problem.initial_point(np.random.default_rng(2))
    alg = RFedAGS(problem, Fixed(alpha), K, B, local_method="rsvrg")
    agents, zeta = alg.gradient_streams(x_t, 0, AgentSampler(np.random.default_rng(5), problem.local_sizes, B))
    sampler = AgentSampler(np.random.default_rng(5), problem.local_sizes, B)
    agents_ref = sampler.participants()
    np.testing.assert_array_equal(agents, agents_ref)

    def rgrad(x, j, batch):
        return ops.euclidean_to_riemannian_gradient(x, problem.minibatch_egrad(x[None], np.array([j]), batch[None])[0])

    g = {j: ops.euclidean_to_riemannian_gradient(x_t, problem.local_egrad(x_t[None], np.array([j]))[0])
         for j in agents}
    x = {j: x_t.copy() for j in agents}
    stream = {j: -alpha * g[j] for j in agents}
    for k in range(K):
        batches = sampler.batches(agents)
        for row, j in enumerate(agents):
            b = batches[row]
            if k == 0:
                eta = -alpha * g[j]
            else:
                tmp1 = rgrad(x_t, j, b) - g[j]
                tmp2 = rgrad(x[j], j, b)
                eta = -alpha * (tmp2 - ops.transport(x_t, x[j], tmp1))
                stream[j] = stream[j] - alpha * (ops.transport(x[j], x_t, tmp2) - tmp1)
            x[j] = ops.retraction(x[j], eta)
    np.testing.assert_allclose(zeta, np.array([stream[j] for j in agents]), rtol=0, atol=1e-12)

"""Full-batch gradients by the cheaper product: kPCA's -A_i X with the precomputed
A_i = Z_i^T Z_i / N (2 d^2 r flops per agent) or Z_i^T (Z_i X) (4 N d r), CPESph's -2 C_i x
likewise; both equal the explicit mean over the samples, and per-agent arrays are read
without copies when all agents take part."""

import numpy as np
import pytest

from rfl.algorithms import AgentSampler
from rfl.problems import CPESph, KPCA
from rfl.problems import _batching
from rfl.problems._batching import agent_rows, is_full_batch


def _kpca(N, d=8, r=2, S=4, seed=0):
    Z = np.random.default_rng(seed).standard_normal((S, N, d))
    return KPCA(Z, r)


def _x(p, seed=1):
    return np.linalg.qr(np.random.default_rng(seed).standard_normal((p.Z.shape[0], p.d, p.r)))[0]


def _oracle(p, x):
    """-(1/N) sum_j z_j (z_j^T X) per agent, a plain loop over the samples."""
    S, N, _ = p.Z.shape
    return np.array([-sum(np.outer(z, z @ x[i]) for z in p.Z[i]) / N for i in range(S)])


@pytest.mark.parametrize("N,want", [(3, "samples"), (4, "gram"), (50, "gram")])
def test_kpca_picks_the_product_with_fewer_flops(N, want):
    """d = 8: 2 d^2 r = 256 r against 4 N d r = 32 N r, the precomputed A_i from N = d/2 = 4."""
    p = _kpca(N)
    assert p.full_batch_product == want


@pytest.mark.parametrize("N", [3, 4, 50])
def test_both_products_give_the_full_gradient(N, monkeypatch):
    p = _kpca(N)
    x = _x(p)
    want = _oracle(p, x)
    agents = np.arange(p.Z.shape[0])
    full = AgentSampler(np.random.default_rng(0), p.local_sizes, N).batches(agents)
    for product in ("gram", "samples"):
        monkeypatch.setattr(KPCA, "full_batch_product", property(lambda self, product=product: product))
        for g in (p.local_egrad(x, agents), p.minibatch_egrad(x, agents, full),
                  p.minibatch_egrad(x, agents, np.argsort(np.random.default_rng(2).random((4, N)), axis=1))):
            np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_the_gram_product_does_not_read_the_samples(monkeypatch):
    """With N >= d/2 a full batch never goes through the samples' kernel; a partial one does."""
    p = _kpca(50)
    x = _x(p)
    agents = np.arange(4)
    calls = []
    real = _batching.gram_apply
    monkeypatch.setattr("rfl.problems.kpca.gram_apply", lambda *a: calls.append(1) or real(*a))
    p.minibatch_egrad(x, agents, np.broadcast_to(np.arange(50), (4, 50)))
    p.local_egrad(x, agents)
    assert calls == []
    p.minibatch_egrad(x, agents, np.tile(np.arange(49), (4, 1)))
    assert calls == [1]


def test_cpesph_full_batch_is_the_sample_mean():
    Z = np.random.default_rng(4).standard_normal((3, 20, 6))
    p = CPESph(Z)
    x = np.random.default_rng(5).standard_normal((3, 6))
    want = np.array([-2 * sum(z * (z @ x[i]) for z in Z[i]) / 20 for i in range(3)])
    full = np.broadcast_to(np.arange(20), (3, 20))
    for g in (p.minibatch_egrad(x, np.arange(3), full), p.local_egrad(x, np.arange(3))):
        np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_agent_rows_is_a_view_for_consecutive_agents():
    a = np.arange(60.0).reshape(5, 3, 4)
    for agents in (np.arange(5), np.arange(1, 4), np.array([2])):
        v = agent_rows(a, agents)
        assert np.shares_memory(v, a)
        np.testing.assert_array_equal(v, a[agents])
    for agents in (np.array([0, 2]), np.array([3, 1]), np.array([1, 1])):
        np.testing.assert_array_equal(agent_rows(a, agents), a[agents])


def test_is_full_batch():
    assert is_full_batch(None, 4)
    assert is_full_batch(np.array([[3, 1, 0, 2], [0, 1, 2, 3]]), 4)
    assert not is_full_batch(np.array([[3, 1, 1, 2]]), 4)             # a repeat, a sample missing
    assert not is_full_batch(np.array([[0, 1, 2]]), 4)

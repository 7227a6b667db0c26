"""The mini-batch kernels (compiled ``rfl.problems._kernels`` and the numpy gather of
``batch_chunks``) against plain per-agent sums over the batch, for every way a batch comes
(the sampler's MiniBatch, an index array, None for all samples) and every code path of the
compiled loops (B below, at and above their unrolling; repeated and unordered agents)."""

import numpy as np
import pytest

from rfl.algorithms import AgentSampler
from rfl.data.cpesph import generate as cpesph_data
from rfl.data.mbcfsti import generate as mbcfsti_data
from rfl.problems import CPESph, MBCFSti, MiniBatch
from rfl.problems._batching import batch_chunks, gram_apply

S, N = 7, 20
AGENTS = [np.arange(S), np.array([5, 1, 1, 3])]


def _batches(B, seed=0):
    """The sampler's MiniBatch for all S agents, and the same batch as a plain index array."""
    mb = AgentSampler(np.random.default_rng(seed), np.full(S, N), B).batches(np.arange(S))
    return mb, np.array(mb.indices)


def test_minibatch_mask_and_indices_agree():
    mb, idx = _batches(5)
    assert not mb.holds_mask and mb.shape == (S, 5) and len(mb) == S        # drawn as indices
    assert np.all(np.diff(idx, axis=1) > 0)                                 # ascending rows
    np.testing.assert_array_equal(idx, np.nonzero(mb.mask)[1].reshape(S, 5))
    back = MiniBatch(N, indices=idx[:, ::-1])
    assert not back.holds_mask
    np.testing.assert_array_equal(back.mask, mb.mask)
    assert back.holds_mask
    with pytest.raises(ValueError, match="exactly one of mask and indices"):
        MiniBatch(N)
    with pytest.raises(ValueError, match="needs size"):
        MiniBatch(N, mask=mb.mask)


@pytest.mark.parametrize("size, word", [(4, "more"), (6, "fewer")])
def test_mask_with_the_wrong_count_is_refused(size, word):
    """The compiled mask -> indices conversion writes B entries per row: a row holding another
    number of samples is an error, never a write past the end."""
    mb, _ = _batches(5)
    with pytest.raises(ValueError, match=f"selects {word} than B"):
        MiniBatch(N, mask=mb.mask, size=size).indices


@pytest.mark.parametrize("B", [1, 2, 7, 20])
@pytest.mark.parametrize("q", [1, 3])
@pytest.mark.parametrize("agents", AGENTS)
def test_gram_apply_equals_per_agent_sum(B, q, agents):
    Z = cpesph_data(np.random.default_rng(1), d=5, nu=0.3, S=S, N=N)["Z"]
    x = np.random.default_rng(2).standard_normal((agents.size, 6, q))
    mb, idx = _batches(B)
    mb_rows = MiniBatch(N, mask=mb.mask[agents], size=B)                    # the agents' rows
    idx = idx[agents]
    expected = np.stack([sum(np.outer(Z[a, b], Z[a, b]) for b in idx[r]) @ x[r]
                         for r, a in enumerate(agents)])
    for batch in (mb_rows, idx, idx - N):                                   # negative: from the end
        out = gram_apply(Z, agents, batch, x)
        assert out.shape == x.shape and out.flags.c_contiguous
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    every = np.stack([Z[a].T @ Z[a] @ x[r] for r, a in enumerate(agents)])
    np.testing.assert_allclose(gram_apply(Z, agents, None, x), every, rtol=1e-12, atol=1e-12)


def test_repeated_samples_count_twice():
    Z = cpesph_data(np.random.default_rng(1), d=5, nu=0.3, S=S, N=N)["Z"]
    x = np.ones((1, 6, 1))
    twice = gram_apply(Z, np.array([2]), np.array([[5, 5]]), x)
    np.testing.assert_allclose(twice, 2 * gram_apply(Z, np.array([2]), np.array([[5]]), x), rtol=1e-14)


def test_indices_out_of_range_raise_before_reading():
    Z = np.zeros((S, N, 3))
    with pytest.raises(IndexError):
        gram_apply(Z, np.arange(2), np.array([[0, N], [1, 2]]), np.zeros((2, 3, 1)))
    with pytest.raises(IndexError):
        gram_apply(Z, np.array([0, S]), np.array([[0, 1], [1, 2]]), np.zeros((2, 3, 1)))
    A = mbcfsti_data(np.random.default_rng(4), d=3, p=2, S=S, N=N)["A"]
    with pytest.raises(IndexError):
        MBCFSti(A, 2).batch_mean(np.arange(2), np.array([[0, -N - 1], [1, 2]]))


@pytest.mark.parametrize("chunk", [None, 1])                                # one chunk; one agent each
@pytest.mark.parametrize("agents", AGENTS)
def test_batch_chunks_gathers_the_batch(chunk, agents):
    Z = np.random.default_rng(3).standard_normal((S, N, 2, 3))
    _, idx = _batches(6)
    idx = idx[agents]
    got = np.empty((agents.size, 6, 2, 3))
    for i, j, rows in batch_chunks(Z, agents, idx, chunk_bytes=chunk):
        got[i:j] = rows
    np.testing.assert_array_equal(got, np.stack([Z[a, idx[r]] for r, a in enumerate(agents)]))
    every = np.empty((agents.size, N, 2, 3))
    for i, j, rows in batch_chunks(Z, agents, None, chunk_bytes=chunk):
        every[i:j] = rows
    np.testing.assert_array_equal(every, Z[agents])


@pytest.mark.parametrize("B", [1, 3, 8, 9, 17, 20])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("agents", AGENTS)
def test_mbcfsti_batch_mean_equals_per_agent_mean(B, symmetric, agents):
    """Packed upper triangles (symmetric A) and full matrices; B below, at and above the
    eight-sample unrolling of ``_kernels.row_sums``."""
    A = mbcfsti_data(np.random.default_rng(4), d=5, p=2, S=S, N=N)["A"]
    if not symmetric:
        A = A + np.triu(np.ones((5, 5)), 1)
    prob = MBCFSti(A, 2)
    assert (prob._packed is not None) == symmetric
    mb, idx = _batches(B, seed=3)
    mb_rows = MiniBatch(N, mask=mb.mask[agents], size=B)
    idx = idx[agents]
    expected = np.stack([A[a, idx[r]].mean(axis=0) for r, a in enumerate(agents)])
    for batch in (mb_rows, idx):
        np.testing.assert_allclose(prob.batch_mean(agents, batch), expected, rtol=1e-12, atol=1e-12)
    x = prob.manifold.random_point(np.random.default_rng(5), agents.size)
    np.testing.assert_allclose(prob.minibatch_egrad(x, agents, idx),
                               2 * expected @ x * prob.h, rtol=1e-12, atol=1e-12)


def test_cpesph_gradient_same_for_mask_and_indices():
    Z = cpesph_data(np.random.default_rng(5), d=5, nu=0.3, S=S, N=N)["Z"]
    prob = CPESph(Z)
    x = prob.manifold.random_point(np.random.default_rng(6), S)
    mb, idx = _batches(10)
    np.testing.assert_allclose(prob.minibatch_egrad(x, np.arange(S), mb),
                               prob.minibatch_egrad(x, np.arange(S), idx), rtol=1e-13, atol=1e-14)

"""The mini-batch kernels read the same samples whichever way the batch comes (the sampler's
mask, an index array) and whichever path reads them (gather, dense, chunked): each equals a
plain per-agent sum over the batch."""

import numpy as np
import pytest

from rfl.algorithms import AgentSampler
from rfl.data.cpesph import generate as cpesph_data
from rfl.data.mbcfsti import generate as mbcfsti_data
from rfl.problems import CPESph, MBCFSti, MiniBatch
from rfl.problems._batching import batch_chunks, gram_apply

S, N = 7, 12


def _batches(B, seed=0):
    """The sampler's MiniBatch for all S agents, and the same batch as a plain index array."""
    mb = AgentSampler(np.random.default_rng(seed), np.full(S, N), B).batches(np.arange(S))
    return mb, np.array(mb.indices)


def test_minibatch_mask_and_indices_agree():
    mb, idx = _batches(5)
    assert mb.holds_mask and mb.shape == (S, 5) and len(mb) == S
    assert np.all(np.diff(idx, axis=1) > 0)                                 # ascending rows
    back = MiniBatch(N, indices=idx[:, ::-1])
    assert not back.holds_mask
    np.testing.assert_array_equal(back.mask, mb.mask)
    np.testing.assert_array_equal(back.weights(), mb.mask.astype(float))
    assert back.holds_mask
    with pytest.raises(ValueError, match="exactly one of mask and indices"):
        MiniBatch(N)
    with pytest.raises(ValueError, match="needs size"):
        MiniBatch(N, mask=mb.mask)


@pytest.mark.parametrize("B", [2, 6, 11])
@pytest.mark.parametrize("agents", [np.arange(S), np.array([5, 1, 1, 3])])
def test_gram_apply_equals_per_agent_sum(B, agents):
    Z = cpesph_data(np.random.default_rng(1), d=5, nu=0.3, S=S, N=N)["Z"]
    x = np.random.default_rng(2).standard_normal((agents.size, 6, 2))
    mb, idx = _batches(B)
    mb_rows = MiniBatch(N, mask=mb.mask[agents], size=B)                    # the agents' rows
    idx = idx[agents]
    expected = np.stack([sum(np.outer(Z[a, b], Z[a, b]) for b in idx[r]) @ x[r]
                         for r, a in enumerate(agents)])
    for batch in (mb_rows, idx):
        np.testing.assert_allclose(gram_apply(Z, agents, batch, x), expected, rtol=1e-12, atol=1e-12)
    for dense in (True, False):
        for chunk in (None, 1):                                             # one chunk; one agent each
            out = np.empty((agents.size, 2, 6))
            for i, j, rows, w in batch_chunks(Z, agents, mb_rows, dense=dense, chunk_bytes=chunk):
                zx = rows @ x[i:j]
                if w is not None:
                    zx *= w[..., None]
                out[i:j] = zx.swapaxes(-1, -2) @ rows
            np.testing.assert_allclose(out.swapaxes(-1, -2), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("B", [3, 9])
def test_mbcfsti_batch_mean_equals_per_agent_mean(B, monkeypatch):
    A = mbcfsti_data(np.random.default_rng(4), d=5, p=2, S=S, N=N)["A"]
    prob = MBCFSti(A, 2)
    agents = np.arange(S)
    mb, idx = _batches(B, seed=3)
    expected = np.stack([A[a, idx[a]].mean(axis=0) for a in agents])
    np.testing.assert_allclose(prob.batch_mean(agents, mb), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(prob.batch_mean(agents, idx), expected, rtol=1e-12, atol=1e-12)
    monkeypatch.setattr(MBCFSti, "CHUNK_BYTES", 1)                          # one agent per chunk
    np.testing.assert_allclose(prob.batch_mean(agents, mb), expected, rtol=1e-12, atol=1e-12)


def test_mask_batches_of_small_selections_read_all_samples_when_B_is_large():
    """The dense path's choice: a mask and B >= N/2 (CPESph at paper size) streams all N samples;
    an index array of the same small selection, or a mask with B < N/2, gathers."""
    Z = np.zeros((S, N, 3))
    for B, mask, dense in ((8, True, True), (8, False, False), (4, True, False)):
        mb, idx = _batches(B)
        batch = mb if mask else idx
        (_, _, rows, w), = batch_chunks(Z, np.arange(S), batch)
        assert (w is not None) == dense and rows.shape[1] == (N if dense else B)


def test_cpesph_gradient_same_for_mask_and_indices():
    Z = cpesph_data(np.random.default_rng(5), d=5, nu=0.3, S=S, N=N)["Z"]
    prob = CPESph(Z)
    x = prob.manifold.random_point(np.random.default_rng(6), S)
    mb, idx = _batches(10)
    np.testing.assert_allclose(prob.minibatch_egrad(x, np.arange(S), mb),
                               prob.minibatch_egrad(x, np.arange(S), idx), rtol=1e-13, atol=1e-14)

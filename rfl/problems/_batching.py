"""Reading the agents' mini-batches from memory: shared by the problems' batched kernels.

A mini-batch gradient of agent j reads the B samples ``data[j, batch[j]]`` out of its N
(``data: (S, N, *sample_shape)``). Two ways to read them, both in chunks of agents so that no
temporary of the size of the whole selection (s, B, *sample_shape) is ever formed:

- **gather**: the selected samples of a chunk are copied (``np.take``) into a reused buffer
  of about ``CHUNK_BYTES``; the copy is then read from cache. Reads B samples per agent, but
  scattered samples stream from memory at roughly half the bandwidth of contiguous ones
  (measured on the 2-core development machine: 11 vs 26 GB/s for 5 kB samples, half selected).
- **dense**: all N samples of a chunk of agents (a view when the agents are consecutive, no
  copy) with per-sample weights, the multiplicity of each sample in the batch (0 or 1 for the
  sampler's batches); the kernel contracts the weights against the samples. Reads N samples
  per agent, contiguously.

``dense`` is chosen when B >= DENSE_FRACTION * N and the selection exceeds GATHER_BYTES: on the
development machine the two cost the same at B / N ~ 1/4 (MBCFSti, S = 1000: gather 3.8 ms vs dense 5.0 ms at B = 10 of 50,
8.3 vs 5.2 ms at B = 15); and for a smaller selection when B >= MASK_DENSE_FRACTION * N and the
batch is the sampler's ``MiniBatch`` mask (its weights are then one conversion away, while
its indices need a search). Both give the same numbers up to the order of summation.

A batch is a ``MiniBatch`` (the sampler's: the (s, N) selection mask, indices on demand) or any
(s, B) array of indices (tests, callers by hand); the kernels accept both.
"""

from __future__ import annotations

import math

import numpy as np

#: bytes of agents' samples handled per chunk (fits the last-level cache, amortises numpy's
#: per-call overhead over several agents)
CHUNK_BYTES = 4 << 20
#: read all N samples with weights when B >= DENSE_FRACTION * N (see the module docstring)
DENSE_FRACTION = 0.25
#: ... unless the selection is this small: copying it costs less than the weights (CPESph at
#: paper size, 133 kB: gather 11 us, weights and checks 9 us + a 25% larger product)
GATHER_BYTES = 256 << 10
#: ... but with the sampler's mask at hand (no weights to build, indices to search for), read all
#: N samples of a small selection too when B >= MASK_DENSE_FRACTION * N (RFedAGS round at paper
#: size, development machine: CPESph, B/N = 0.8: 0.60 -> 0.46 ms; kPCA, B/N = 0.29: gather
#: 1.08 ms, dense 1.20 ms)
MASK_DENSE_FRACTION = 0.5


class MiniBatch:
    """B distinct sample indices per agent for one local step (Algorithm 1, line 6).

    mask: (s, N) bool, True for the selected samples of each row (exactly B per row), or
    indices: (s, B) int, the selected samples; either one determines the other (N: ``n``;
    with a mask, ``size`` is B).
    As an array (``np.asarray``, indexing, ``shape``) it is the (s, B) indices, each row
    sorted ascending when derived from the mask.
    """

    __slots__ = ("_mask", "_indices", "n", "shape")

    def __init__(self, n: int, mask: np.ndarray | None = None, indices: np.ndarray | None = None,
                 size: int | None = None):
        if (mask is None) == (indices is None):
            raise ValueError("a MiniBatch needs exactly one of mask and indices")
        if mask is not None and size is None:
            raise ValueError("a MiniBatch from a mask needs size, the B selected samples per row")
        self.n = int(n)
        self._mask, self._indices = mask, indices
        if indices is not None:
            self.shape = indices.shape
        else:                                    # size: B, the True entries of each row
            self.shape = (mask.shape[0], int(size))

    @property
    def holds_mask(self) -> bool:
        """Whether the mask is at hand (drawn as such, or derived already)."""
        return self._mask is not None

    @property
    def indices(self) -> np.ndarray:
        """Selected sample indices: ``(s, B)``."""
        if self._indices is None:
            self._indices = np.nonzero(self._mask)[1].reshape(self.shape)
        return self._indices

    @property
    def mask(self) -> np.ndarray:
        """Selection mask: ``(s, N)`` bool."""
        if self._mask is None:
            mask = np.zeros((self.shape[0], self.n), dtype=bool)
            np.put_along_axis(mask, self._indices, True, axis=1)
            self._mask = mask
        return self._mask

    def weights(self) -> np.ndarray:
        """Multiplicity of each sample in the batch (0 or 1): ``(s, N)`` float."""
        return self.mask.astype(float)

    def __array__(self, dtype=None, copy=None):
        return self.indices if dtype is None else self.indices.astype(dtype)

    def __getitem__(self, key):
        return self.indices[key]

    def __len__(self) -> int:
        return self.shape[0]

    def __iter__(self):
        return iter(self.indices)


def checked_indices(idx, n: int) -> np.ndarray:
    """``idx`` as an int array in [0, n), with numpy's indexing rules (negative indices count
    from the end; IndexError outside [-n, n)), for ``np.take(..., mode="clip")``, which would
    otherwise clip silently."""
    idx = np.asarray(idx)
    if idx.size:
        lo, hi = idx.min(), idx.max()
        if lo < -n or hi >= n:
            raise IndexError(f"index {lo if lo < -n else hi} is out of bounds for size {n}")
        if lo < 0:
            idx = idx % n
    return idx


def is_consecutive(agents: np.ndarray) -> bool:
    """Whether ``agents`` is a run a, a + 1, ..., a + s - 1 (then data[agents] is a view):
    strictly increasing with span s - 1."""
    s = agents.shape[0]
    if s == 0:
        return False
    return int(agents[-1]) - int(agents[0]) == s - 1 and (s < 3 or bool((agents[1:] > agents[:-1]).all()))


def chunk_agents(per_agent_bytes: int, s: int, chunk_bytes: int | None = None) -> int:
    """Agents per chunk: about ``chunk_bytes`` (default ``CHUNK_BYTES``) of their samples, at
    least one, at most s."""
    chunk_bytes = CHUNK_BYTES if chunk_bytes is None else chunk_bytes
    return int(max(1, min(s, chunk_bytes // max(1, per_agent_bytes))))


def use_dense(batch: np.ndarray, n: int) -> bool:
    """Dense path for a (s, B) batch out of n samples per agent."""
    return batch.shape[1] >= DENSE_FRACTION * n


def holds_mask(batch, n: int) -> bool:
    """Whether ``batch`` is a ``MiniBatch`` of n samples already held as a mask (the sampler's):
    then its weights cost one conversion, and its indices a search of the mask."""
    return isinstance(batch, MiniBatch) and batch.n == n and batch.holds_mask


def sample_weights(batch, n: int) -> np.ndarray:
    """Multiplicity of each of the n samples in each row of ``batch: (s, B)``: ``(s, n)`` float.
    A ``MiniBatch`` of n samples gives its mask as it is; indices follow numpy's rules
    (negative ones count from the end; IndexError outside)."""
    if isinstance(batch, MiniBatch) and batch.n == n:
        return batch.weights()
    batch = np.asarray(batch)
    s = batch.shape[0]
    batch = checked_indices(batch, n)
    flat = (batch + (np.arange(s) * n)[:, None]).ravel()
    weights = np.zeros(s * n)
    weights[flat] = 1.0
    if weights.sum() != flat.size:                       # repeated indices: count them
        weights = np.bincount(flat, minlength=s * n).astype(float)
    return weights.reshape(s, n)


def batch_chunks(data: np.ndarray, agents: np.ndarray, batch: np.ndarray | None,
                 dense: bool | None = None, chunk_bytes: int | None = None):
    """Yield ``(i, j, rows, weights)`` over chunks of rows i:j of ``agents``.

    data: (S, N, *sample_shape); agents: (s,) agent indices (any order, repeats allowed);
    batch: (s, B) sample indices into each agent's N samples, or None for all N samples.
    ``rows``: (j - i, T, *sample_shape), the samples of agents[i:j]: T = B selected ones
    (gather) with ``weights`` None, or T = N with ``weights`` (j - i, N) multiplicities
    (dense; also when batch is None, with weights None: every sample once). ``rows`` may be a
    view of ``data`` or a reused buffer: use it before advancing the generator.
    """
    S, N = data.shape[:2]
    sample_shape = data.shape[2:]
    s = agents.shape[0]
    sample_bytes = data.itemsize * math.prod(sample_shape)
    if batch is not None and dense is None:
        B = batch.shape[1]
        dense = use_dense(batch, N) and (s * B * sample_bytes > GATHER_BYTES
                                         or (holds_mask(batch, N) and B >= MASK_DENSE_FRACTION * N))
    if batch is None or dense:
        weights = None if batch is None else sample_weights(batch, N)
        c = chunk_agents(N * sample_bytes, s, chunk_bytes)
        view = is_consecutive(agents) and 0 <= agents[0] and agents[-1] < S
        if c >= s:                                               # one chunk
            yield 0, s, data[agents[0]:agents[0] + s] if view else data[agents], weights
            return
        agents = checked_indices(agents, S)
        buf = None if view else np.empty((c, N) + sample_shape, dtype=data.dtype)
        for i in range(0, s, c):
            j = min(i + c, s)
            if view:
                rows = data[agents[i]:agents[i] + (j - i)]
            else:
                rows = np.take(data, agents[i:j], axis=0, out=buf[:j - i], mode="clip")
            yield i, j, rows, None if weights is None else weights[i:j]
        return
    B = batch.shape[1]
    c = chunk_agents(B * sample_bytes, s, chunk_bytes)
    batch = checked_indices(batch, N)
    flat_data = data.reshape((S * N,) + sample_shape)
    if c >= s:                    # one chunk: a plain gather (take checks the agents' range)
        yield 0, s, np.take(flat_data, batch + (agents * N)[:, None], axis=0), None
        return
    agents = checked_indices(agents, S)
    flat = batch + (agents * N)[:, None]                                # (s, B) rows of flat_data
    buf = np.empty((c * B,) + sample_shape, dtype=data.dtype)
    for i in range(0, s, c):
        j = min(i + c, s)
        rows = np.take(flat_data, flat[i:j].ravel(), axis=0, out=buf[:(j - i) * B], mode="clip")
        yield i, j, rows.reshape((j - i, B) + sample_shape), None


def gram_apply(data: np.ndarray, agents: np.ndarray, batch: np.ndarray | None,
               x: np.ndarray) -> np.ndarray:
    """sum_{b in batch_j} z_b z_b^T X_j for each agent j: the mini-batch term of quadratic
    costs -(z^T X)(X^T z) (CPESph, kPCA). data: (S, N, n) rows z; agents: (s,); batch: (s, B)
    (None: all N rows); x: (s, n, r) -> (s, n, r).

    Two products per agent, Z_b X then (Z_b X)^T Z_b, on chunks of agents read once
    (``batch_chunks``: the selected rows, or all N rows with the products weighted by each
    row's multiplicity in the batch)."""
    out = np.empty(x.shape)
    out_t = out.swapaxes(-1, -2)                                  # (s, r, n) view
    for i, j, rows, w in batch_chunks(data, agents, batch):
        zx = rows @ x[i:j]                                        # Z_b X: (c, T, r)
        if w is not None:
            zx *= w[..., None]
        np.matmul(zx.swapaxes(-1, -2), rows, out=out_t[i:j])      # sum_b (X^T z_b) z_b^T
    return out

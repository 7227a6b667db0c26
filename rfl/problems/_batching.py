"""Reading the agents' mini-batches from memory: shared by the problems' batched kernels.

A mini-batch gradient of agent j reads the B samples ``data[j, batch[j]]`` out of its N
(``data: (S, N, *sample_shape)``). Two ways to read them:

- **compiled** (``rfl.problems._kernels``, inputs checked by ``kernel_inputs``): a numba loop
  over the agents reads each selected sample once, where it lies, and keeps the agent's sum in cache
  (``gram_apply`` here: CPESph, kPCA; MBCFSti's mean of matrices). Used where the per-sample
  work is a few products and sums.
- **gather** (``batch_chunks``): the selected samples of a chunk of agents are copied
  (``np.take``) into a reused buffer of about ``CHUNK_BYTES`` and handed to numpy, for kernels
  with heavier per-sample work (CFMSPD: one eigendecomposition per sample). Chunks bound the
  temporaries: no array of the whole selection (s, B, *sample_shape) is ever formed.

A batch is a ``MiniBatch`` (the sampler's: (s, B) indices, the (s, N) selection mask on demand)
or any (s, B) array of indices (tests, callers by hand); both paths accept both.
"""

from __future__ import annotations

import math

import numpy as np


def kernels():
    """``rfl.problems._kernels``, imported on first use: numba's import (~0.2 s, ~60 MB) is
    paid only by the processes that run a compiled kernel."""
    from . import _kernels
    return _kernels

#: bytes of agents' samples handled per chunk (fits the last-level cache, amortises numpy's
#: per-call overhead over several agents)
CHUNK_BYTES = 4 << 20

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
            self._indices = kernels().mask_indices(np.ascontiguousarray(self._mask), self.shape[1])
        return self._indices

    @property
    def mask(self) -> np.ndarray:
        """Selection mask: ``(s, N)`` bool."""
        if self._mask is None:
            mask = np.zeros((self.shape[0], self.n), dtype=bool)
            np.put_along_axis(mask, self._indices, True, axis=1)
            self._mask = mask
        return self._mask

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
    return max(1, min(s, chunk_bytes // max(1, per_agent_bytes)))


def batch_chunks(data: np.ndarray, agents: np.ndarray, batch: np.ndarray | None,
                 chunk_bytes: int | None = None):
    """Yield ``(i, j, rows)`` over chunks of rows i:j of ``agents``.

    data: (S, N, *sample_shape); agents: (s,) agent indices (any order, repeats allowed);
    batch: (s, B) sample indices into each agent's N samples, or None for all N samples.
    ``rows``: (j - i, T, *sample_shape), the samples of agents[i:j]: the B selected ones
    (gathered), or all T = N (batch None). ``rows`` may be a view of ``data`` or a reused
    buffer: use it before advancing the generator.
    """
    S, N = data.shape[:2]
    sample_shape = data.shape[2:]
    s = agents.shape[0]
    sample_bytes = data.itemsize * math.prod(sample_shape)
    if batch is None:
        c = chunk_agents(N * sample_bytes, s, chunk_bytes)
        view = is_consecutive(agents) and 0 <= agents[0] and agents[-1] < S
        if c >= s:                                               # one chunk
            yield 0, s, data[agents[0]:agents[0] + s] if view else data[agents]
            return
        agents = checked_indices(agents, S)
        buf = None if view else np.empty((c, N) + sample_shape, dtype=data.dtype)
        for i in range(0, s, c):
            j = min(i + c, s)
            if view:
                rows = data[agents[i]:agents[i] + (j - i)]
            else:
                rows = np.take(data, agents[i:j], axis=0, out=buf[:j - i], mode="clip")
            yield i, j, rows
        return
    B = batch.shape[1]
    c = chunk_agents(B * sample_bytes, s, chunk_bytes)
    batch = checked_indices(batch, N)
    flat_data = data.reshape((S * N,) + sample_shape)
    if c >= s:                    # one chunk: a plain gather (take checks the agents' range)
        yield 0, s, np.take(flat_data, batch + (agents * N)[:, None], axis=0)
        return
    agents = checked_indices(agents, S)
    flat = batch + (agents * N)[:, None]                                # (s, B) rows of flat_data
    buf = np.empty((c * B,) + sample_shape, dtype=data.dtype)
    for i in range(0, s, c):
        j = min(i + c, s)
        rows = np.take(flat_data, flat[i:j].ravel(), axis=0, out=buf[:(j - i) * B], mode="clip")
        yield i, j, rows.reshape((j - i, B) + sample_shape)


def selected_indices(batch, n: int, s: int) -> np.ndarray:
    """The batch's sample indices as a C-contiguous intp array ``(s, B)`` in [0, n), for the
    compiled kernels (``rfl.problems._kernels``, which do not check bounds): a ``MiniBatch``
    of n samples as it is; an index array checked (numpy's rules: negative indices count from
    the end, IndexError outside); None: all n samples of each of the s rows."""
    if batch is None:
        return np.ascontiguousarray(np.broadcast_to(np.arange(n, dtype=np.intp), (s, n)))
    if isinstance(batch, MiniBatch) and batch.n == n:
        idx = batch.indices
    else:
        idx = checked_indices(np.asarray(batch), n)
    return np.ascontiguousarray(idx, dtype=np.intp)


def kernel_inputs(agents, batch, S: int, N: int) -> tuple[np.ndarray, np.ndarray]:
    """What the compiled kernels take, checked (they do not check bounds): the agents as a
    C-contiguous intp array ``(s,)`` in [0, S) (numpy's rules, IndexError outside), and the
    batch as ``selected_indices`` ``(s, B)`` in [0, N)."""
    agents = np.ascontiguousarray(checked_indices(np.asarray(agents), S), dtype=np.intp)
    return agents, selected_indices(batch, N, agents.shape[0])


def gram_apply(data: np.ndarray, agents: np.ndarray, batch: np.ndarray | None,
               x: np.ndarray) -> np.ndarray:
    """sum_{b in batch_j} z_b z_b^T X_j for each agent j: the mini-batch term of quadratic
    costs -(z^T X)(X^T z) (CPESph, kPCA). data: (S, N, n) rows z; agents: (s,); batch: (s, B)
    (None: all N rows); x: (s, n, r) -> (s, n, r).

    Two products per selected row, X^T z_b then (X^T z_b) z_b^T, accumulated per agent by the
    compiled ``_kernels.gram_rows`` (``gram_rows_vector`` for r = 1), which reads each selected
    row once where it lies."""
    S, N, n = data.shape
    agents, idx = kernel_inputs(agents, batch, S, N)
    data = np.ascontiguousarray(data, dtype=float)
    if x.shape[-1] == 1:
        out = np.empty(x.shape[:-1])
        kernels().gram_rows_vector(data, agents, idx, np.ascontiguousarray(x[..., 0], dtype=float), out)
        return out[..., None]
    xt = np.ascontiguousarray(np.swapaxes(x, -1, -2), dtype=float)
    out = np.empty(xt.shape)
    kernels().gram_rows(data, agents, idx, xt, out)
    return np.ascontiguousarray(out.swapaxes(-1, -2))


def local_gram(data: np.ndarray) -> np.ndarray:
    """Each agent's mean outer product (1/N) Z_j^T Z_j, exactly symmetric: data (S, N, n) ->
    (S, n, n). One BLAS product per agent: ``np.einsum`` would loop in C without BLAS, 4-10x
    slower at MNIST's size (S = 60, N = 160, n = 784: seconds per problem load)."""
    data = np.asarray(data, dtype=float)
    out = np.matmul(data.swapaxes(-1, -2), data)
    out += out.swapaxes(-1, -2)
    out *= 0.5 / data.shape[-2]
    return out


def agent_rows(arr: np.ndarray, agents: np.ndarray) -> np.ndarray:
    """``arr[agents]`` for per-agent arrays ``arr: (S, ...)``, as a view (no copy) when the agents
    are consecutive (all agents, in order, being the common case): ``(s, ...)``."""
    agents = np.asarray(agents)
    if agents.ndim == 1 and is_consecutive(agents) and 0 <= agents[0] and agents[-1] < arr.shape[0]:
        return arr[int(agents[0]):int(agents[0]) + agents.shape[0]]
    return arr[agents]


def is_full_batch(batch, n: int) -> bool:
    """Whether ``batch`` selects every one of the n samples of each row, once: None, a
    ``MiniBatch`` of B = n (its rows are distinct), or an (s, n) index array whose sorted rows
    are 0..n-1 (an O(s n) check, against the gradient's O(s n d))."""
    if batch is None:
        return True
    if isinstance(batch, MiniBatch):
        return batch.n == n and batch.shape[1] == n
    idx = np.asarray(batch)
    if idx.ndim != 2 or idx.shape[1] != n:
        return False
    return bool(np.array_equal(np.sort(idx % n if idx.size and idx.min() < 0 else idx),
                               np.broadcast_to(np.arange(n), idx.shape)))

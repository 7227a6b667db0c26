"""Compiled mini-batch kernels: each reads only the B selected samples of each agent, once.

In numpy, a mini-batch sum over many small agents either copies the selected samples first
(a second pass over them) or streams all N samples of each agent with 0/1 weights (twice the
bytes at B = N/2); a Python loop over the agents costs microseconds per agent. These numba
loops read the selected samples where they lie, several of them in flight at once (scattered
reads need that to approach the streaming bandwidth), and keep each agent's sum in cache.

They run on one thread, so results do not depend on the number of cores. Reassociation
(``FASTMATH``) lets the compiler vectorise the sums; it changes only the order of summation.
Inputs are trusted (no bounds checks inside): callers check them with
``_batching.kernel_inputs``. Shapes: data (S, N, k); agents (s,) intp; idx (s, B) intp, each
row's samples (a repeated index counts twice).
"""

from __future__ import annotations

import os
import tempfile


def _numba_cache_dir() -> None:
    """Where numba caches the compiled kernels: beside this file (its __pycache__) when that is
    writable, else (a read-only install) a user cache directory, set as NUMBA_CACHE_DIR before
    numba is imported; a NUMBA_CACHE_DIR the user set is kept."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    here = os.path.dirname(os.path.abspath(__file__))
    pycache = os.path.join(here, "__pycache__")
    target = pycache if os.path.isdir(pycache) else here
    if os.access(target, os.W_OK | os.X_OK):
        return
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for root in (base, tempfile.gettempdir()):
        path = os.path.join(root, "rfl", "numba")
        try:
            os.makedirs(path, exist_ok=True)
        except OSError:
            continue
        if os.access(path, os.W_OK | os.X_OK):
            os.environ["NUMBA_CACHE_DIR"] = path
            return


_numba_cache_dir()

import numba  # noqa: E402
import numpy as np  # noqa: E402

#: reassociation (vectorised sums) and fused multiply-add; no assumptions about NaN or inf
FASTMATH = {"reassoc", "contract"}
_jit = numba.njit(cache=True, nogil=True, boundscheck=False, fastmath=FASTMATH)


@_jit
def _sum_rows(data, a, sel, acc):
    """acc = sum_b data[a, sel[b]]: acc (k,). Sixteen (then eight) selected samples are summed
    per pass over acc, so that as many reads from memory are in flight at once: scattered
    samples of a few kB stream one at a time at about a third of the streaming bandwidth, and
    at the streaming bandwidth sixteen at a time (MBCFSti at S = 1000 on the development
    machine, 1, 8, 16 in flight: ~1.5, 1.12, 1.0 x the memory limit)."""
    B = sel.shape[0]
    k = acc.shape[0]
    acc[:] = 0.0
    b = 0
    while b + 16 <= B:
        z0 = data[a, sel[b]]
        z1 = data[a, sel[b + 1]]
        z2 = data[a, sel[b + 2]]
        z3 = data[a, sel[b + 3]]
        z4 = data[a, sel[b + 4]]
        z5 = data[a, sel[b + 5]]
        z6 = data[a, sel[b + 6]]
        z7 = data[a, sel[b + 7]]
        y0 = data[a, sel[b + 8]]
        y1 = data[a, sel[b + 9]]
        y2 = data[a, sel[b + 10]]
        y3 = data[a, sel[b + 11]]
        y4 = data[a, sel[b + 12]]
        y5 = data[a, sel[b + 13]]
        y6 = data[a, sel[b + 14]]
        y7 = data[a, sel[b + 15]]
        for t in range(k):
            acc[t] += ((((z0[t] + z1[t]) + (z2[t] + z3[t])) + ((z4[t] + z5[t]) + (z6[t] + z7[t])))
                       + (((y0[t] + y1[t]) + (y2[t] + y3[t])) + ((y4[t] + y5[t]) + (y6[t] + y7[t]))))
        b += 16
    while b + 8 <= B:
        z0 = data[a, sel[b]]
        z1 = data[a, sel[b + 1]]
        z2 = data[a, sel[b + 2]]
        z3 = data[a, sel[b + 3]]
        z4 = data[a, sel[b + 4]]
        z5 = data[a, sel[b + 5]]
        z6 = data[a, sel[b + 6]]
        z7 = data[a, sel[b + 7]]
        for t in range(k):
            acc[t] += ((z0[t] + z1[t]) + (z2[t] + z3[t])) + ((z4[t] + z5[t]) + (z6[t] + z7[t]))
        b += 8
    while b < B:
        z0 = data[a, sel[b]]
        for t in range(k):
            acc[t] += z0[t]
        b += 1


@_jit
def row_sums(data, agents, idx, pos, out):
    """out[r, e] = sum_b data[agents[r], idx[r, b], pos[e]]: data (S, N, k), pos (m,) in
    [0, k) (a packed triangle's entries laid out as the full matrix, or arange(k)), out (s, m).
    The sum (``_sum_rows``) stays in cache until it is written out through ``pos``."""
    s = idx.shape[0]
    m = pos.shape[0]
    acc = np.empty(data.shape[2])
    for r in range(s):
        _sum_rows(data, agents[r], idx[r], acc)
        o = out[r]
        for e in range(m):
            o[e] = acc[pos[e]]
    return out


@_jit
def packed_sums_apply(data, agents, idx, xt, out):
    """out[r] = X_r^T M_r with M_r = sum_b of the symmetric d x d matrices whose upper
    triangles, row by row, are data[agents[r], idx[r, b]]: data (S, N, d (d + 1) / 2),
    xt (s, p, d) = X^T per row, out (s, p, d) (the transpose of M_r X_r).

    Each agent's sum (``_sum_rows``) is unpacked into a d x d scratch matrix that stays in
    cache, so the (s, d, d) sums are never written to memory."""
    s = idx.shape[0]
    p, d = xt.shape[1], xt.shape[2]
    acc = np.empty(data.shape[2])
    m = np.empty((d, d))
    for r in range(s):
        _sum_rows(data, agents[r], idx[r], acc)
        off = 0
        for i in range(d):
            for j in range(i, d):
                v = acc[off + j - i]
                m[i, j] = v
                m[j, i] = v
            off += d - i
        for c in range(p):
            xc = xt[r, c]
            oc = out[r, c]
            for i in range(d):
                mi = m[i]
                v = 0.0
                for j in range(d):
                    v += mi[j] * xc[j]
                oc[i] = v
    return out


@_jit
def gram_rows(data, agents, idx, xt, out):
    """out[r] = sum_b (X_r^T z_b) z_b^T, z_b = data[agents[r], idx[r, b]]: the transpose of
    sum_b z_b z_b^T X_r. data (S, N, n); xt (s, q, n) = X^T per row; out (s, q, n).
    Two samples per pass (``gram_rows_vector`` for q = 1)."""
    s, B = idx.shape
    n = data.shape[2]
    q = xt.shape[1]
    for r in range(s):
        a = agents[r]
        out[r] = 0.0
        b = 0
        while b + 2 <= B:
            z = data[a, idx[r, b]]
            y = data[a, idx[r, b + 1]]
            for c in range(q):
                xr = xt[r, c]
                o = out[r, c]
                pz = 0.0
                py = 0.0
                for t in range(n):
                    pz += xr[t] * z[t]
                    py += xr[t] * y[t]
                for t in range(n):
                    o[t] += pz * z[t] + py * y[t]
            b += 2
        if b < B:
            z = data[a, idx[r, b]]
            for c in range(q):
                xr = xt[r, c]
                o = out[r, c]
                pz = 0.0
                for t in range(n):
                    pz += xr[t] * z[t]
                for t in range(n):
                    o[t] += pz * z[t]
    return out


@_jit
def gram_rows_vector(data, agents, idx, x, out):
    """``gram_rows`` for one column: out[r] = sum_b (z_b . x_r) z_b. x, out: (s, n).
    Written out rather than sharing a helper with ``gram_rows``: both the generic loop with
    q = 1 and a shared inlined helper measured 1.2-1.7x slower (CPESph at S = 1000)."""
    s, B = idx.shape
    n = data.shape[2]
    for r in range(s):
        a = agents[r]
        o = out[r]
        o[:] = 0.0
        xr = x[r]
        b = 0
        while b + 2 <= B:
            z = data[a, idx[r, b]]
            y = data[a, idx[r, b + 1]]
            pz = 0.0
            py = 0.0
            for t in range(n):
                pz += xr[t] * z[t]
                py += xr[t] * y[t]
            for t in range(n):
                o[t] += pz * z[t] + py * y[t]
            b += 2
        if b < B:
            z = data[a, idx[r, b]]
            pz = 0.0
            for t in range(n):
                pz += xr[t] * z[t]
            for t in range(n):
                o[t] += pz * z[t]
    return out


@_jit
def mask_indices(mask, B):
    """The column indices of the True entries of each row of ``mask: (s, N)``, ascending:
    ``(s, B)``. ValueError when a row does not hold exactly B of them."""
    s, N = mask.shape
    idx = np.empty((s, B), dtype=np.intp)
    for r in range(s):
        c = 0
        for b in range(N):
            if mask[r, b]:
                if c == B:
                    raise ValueError("a row of the mask selects more than B samples")
                idx[r, c] = b
                c += 1
        if c != B:
            raise ValueError("a row of the mask selects fewer than B samples")
    return idx

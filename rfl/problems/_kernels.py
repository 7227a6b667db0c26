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


# ---- counter-based mini-batch draws (``rfl.algorithms.sampling.batch_indices``) ----------
# Philox4x64-10 (Salmon, Moraes, Dror & Shaw, "Parallel random numbers: as easy as 1, 2, 3",
# SC 2011; the generator behind numpy.random.Philox): a keyed bijection of a 256-bit counter,
# so the words at any counter are computed directly, without a state to carry. All arithmetic
# stays in uint64 (numba turns a mix of uint64 and int64 into float64).
_U32 = np.uint64(32)
_LO32 = np.uint64(0xFFFFFFFF)
_TWO32 = np.uint64(1 << 32)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_PHILOX_M0 = np.uint64(0xD2E7470EE14C6C93)
_PHILOX_M1 = np.uint64(0xCA5A826395121157)
_PHILOX_W0 = np.uint64(0x9E3779B97F4A7C15)
_PHILOX_W1 = np.uint64(0xBB67AE8584CAA73B)


@_jit
def _mulhilo64(a, b):
    """(high, low) 64-bit words of the 128-bit product a * b of two uint64."""
    a_lo, a_hi = a & _LO32, a >> _U32
    b_lo, b_hi = b & _LO32, b >> _U32
    t = a_lo * b_lo
    u = a_hi * b_lo + (t >> _U32)
    w = a_lo * b_hi + (u & _LO32)
    hi = a_hi * b_hi + (u >> _U32) + (w >> _U32)
    return hi, a * b


@_jit
def philox4x64(c0, c1, c2, c3, k0, k1, out):
    """Philox4x64-10 of counter (c0, c1, c2, c3) under key (k0, k1), all uint64: the four
    output words in ``out: (4,) uint64`` (Random123's philox4x64_R with R = 10)."""
    for rnd in range(10):
        if rnd > 0:
            k0 = k0 + _PHILOX_W0
            k1 = k1 + _PHILOX_W1
        hi0, lo0 = _mulhilo64(_PHILOX_M0, c0)
        hi1, lo1 = _mulhilo64(_PHILOX_M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    out[0] = c0
    out[1] = c1
    out[2] = c2
    out[3] = c3


@_jit
def floyd_batches(k0, k1, draw, agents, sizes, B, out):
    """B distinct samples of each agent, uniformly among the B-subsets of [0, N_j), ascending:
    ``out: (s, B) int64``, row r for agent j = agents[r], N_j = sizes[r].

    Floyd's algorithm (Bentley & Floyd, "Programming pearls: a sample of brilliance", CACM
    1987): for i = N - B, ..., N - 1 take t uniform in [0, i] and add t, or i if t is taken
    already; B uniform integers, each subset has probability 1 / C(N, B). The integers come
    from agent j's own Philox stream, counters (block, j, draw, 0) under key (k0, k1), eight
    32-bit words per block, so row r depends on (key, draw, j, N_j, B) only. t uniform in
    [0, n) from a word x: Lemire's multiply-shift (x n) >> 32, the words whose low half
    (x n) mod 2^32 < 2^32 mod n redrawn (exactly uniform; "Fast random integer generation in
    an interval", ACM TOMACS 2019; the division for 2^32 mod n only when the low half is < n). Membership: a scratch bitmap of N entries, cleared again
    after the row (O(B)). Rows come out ascending: a scan of the bitmap when N <= 8 B (O(N)),
    a sort of the B indices otherwise."""
    s = agents.shape[0]
    n_max = 0
    for r in range(s):
        if sizes[r] > n_max:
            n_max = sizes[r]
    taken = np.zeros(n_max, dtype=np.bool_)
    scan = np.empty(n_max + 1, dtype=np.int64)
    words = np.empty(4, dtype=np.uint64)
    dr = np.uint64(draw)
    for r in range(s):
        n = sizes[r]
        row = out[r]
        if B == n:
            for b in range(B):
                row[b] = b
            continue
        j = np.uint64(agents[r])
        block = np.uint64(0)
        w = 8                                     # 32-bit words used of the current block
        for b in range(B):
            i = n - B + b
            span = np.uint64(i + 1)
            threshold = _ZERO                     # 2^32 mod span, computed only when needed
            while True:
                if w == 8:
                    philox4x64(block, j, dr, _ZERO, k0, k1, words)
                    block += _ONE
                    w = 0
                word = words[w >> 1]
                x = (word >> _U32) if (w & 1) else (word & _LO32)
                w += 1
                m = x * span
                low = m & _LO32
                if low >= span:                   # >= 2^32 mod span: accepted, no division
                    break
                if threshold == _ZERO:
                    threshold = (_TWO32 - span) % span
                if low >= threshold:
                    break
            t = np.int64(m >> _U32)
            t += np.int64(taken[t]) * (i - t)     # taken already: i (no branch to mispredict)
            taken[t] = True
            row[b] = t
        if n <= 8 * B:                            # branch-free scan through a scratch row
            c = 0
            for t in range(n):
                scan[c] = t
                c += np.int64(taken[t])
                taken[t] = False
            row[:] = scan[:B]
        else:
            for b in range(B):
                taken[row[b]] = False
            row.sort()
    return out


@_jit
def lsa_field(phi, dphi, r, n_pool, agents, idx, x, out):
    """Mini-batch mean of the TD(0) / LSA field A(Z) x - b(Z) = phi(s) [(phi(s) - gamma
    phi(s'))^T x - r(s)] per agent row (``rfl.problems.lsa``): ``out: (s, d)``.

    phi, dphi: (N n_pool, d) phi(s) and phi(s) - gamma phi(s') of every pool transition, r:
    (N n_pool,) r_c(s), flat over (agent, pool index); row a reads transitions
    agents[a] n_pool + idx[a, b], b < B."""
    s, B = idx.shape
    d = x.shape[1]
    for a in range(s):
        base = agents[a] * n_pool
        for k in range(d):
            out[a, k] = 0.0
        for b in range(B):
            j = base + idx[a, b]
            td = -r[j]
            for k in range(d):
                td += dphi[j, k] * x[a, k]
            for k in range(d):
                out[a, k] += td * phi[j, k]
        for k in range(d):
            out[a, k] /= B
    return out


# ---- multitask feature learning, the row path (``rfl.problems.multitask``) ------------------
@_jit
def _xu_row5(x, u, p, xuT, k, m):
    """xuT[p:p + 5, k] = U[:, p:p + 5]^T x: five dot products in one pass over the row x (m,),
    u = U^T (r, m)."""
    u0 = u[p]
    u1 = u[p + 1]
    u2 = u[p + 2]
    u3 = u[p + 3]
    u4 = u[p + 4]
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    a4 = 0.0
    for q in range(m):
        z = x[q]
        a0 += u0[q] * z
        a1 += u1[q] * z
        a2 += u2[q] * z
        a3 += u3[q] * z
        a4 += u4[q] * z
    xuT[p, k] = a0
    xuT[p + 1, k] = a1
    xuT[p + 2, k] = a2
    xuT[p + 3, k] = a3
    xuT[p + 4, k] = a4


@_jit
def _xu_rows5(x, w, u, p, xuT, yuT, k, m):
    """``_xu_row5`` on two rows x, w at once (of two tasks: two ascending streams), each
    u[q] loaded once for both: xuT[p:p + 5, k] = U[:, p:p + 5]^T x, yuT[p:p + 5, k] the same
    for w."""
    u0 = u[p]
    u1 = u[p + 1]
    u2 = u[p + 2]
    u3 = u[p + 3]
    u4 = u[p + 4]
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    a4 = 0.0
    b0 = 0.0
    b1 = 0.0
    b2 = 0.0
    b3 = 0.0
    b4 = 0.0
    for q in range(m):
        v0 = u0[q]
        v1 = u1[q]
        v2 = u2[q]
        v3 = u3[q]
        v4 = u4[q]
        z = x[q]
        a0 += v0 * z
        a1 += v1 * z
        a2 += v2 * z
        a3 += v3 * z
        a4 += v4 * z
        z = w[q]
        b0 += v0 * z
        b1 += v1 * z
        b2 += v2 * z
        b3 += v3 * z
        b4 += v4 * z
    xuT[p, k] = a0
    xuT[p + 1, k] = a1
    xuT[p + 2, k] = a2
    xuT[p + 3, k] = a3
    xuT[p + 4, k] = a4
    yuT[p, k] = b0
    yuT[p + 1, k] = b1
    yuT[p + 2, k] = b2
    yuT[p + 3, k] = b3
    yuT[p + 4, k] = b4


@_jit
def _xu_task(xt, k0, n, u, xuT, r, m):
    """xuT[:, k] = U^T xt[k] for k0 <= k < n, one row at a time."""
    for k in range(k0, n):
        x = xt[k]
        p = 0
        while p + 5 <= r:
            _xu_row5(x, u, p, xuT, k, m)
            p += 5
        while p < r:
            up = u[p]
            v = 0.0
            for q in range(m):
                v += up[q] * x[q]
            xuT[p, k] = v
            p += 1


@_jit
def _xu_task_pair(xt, nx, wt, nw, u, xuT, wuT, r, m):
    """``_xu_task`` for two tasks xt (nx rows) and wt (nw rows) of the same U: their first
    min(nx, nw) rows in pairs (``_xu_rows5``), the rest of the longer one alone."""
    n = min(nx, nw)
    for k in range(n):
        x = xt[k]
        w = wt[k]
        p = 0
        while p + 5 <= r:
            _xu_rows5(x, w, u, p, xuT, wuT, k, m)
            p += 5
        while p < r:
            up = u[p]
            v = 0.0
            c = 0.0
            for q in range(m):
                v += up[q] * x[q]
                c += up[q] * w[q]
            xuT[p, k] = v
            wuT[p, k] = c
            p += 1
    _xu_task(xt, n, nx, u, xuT, r, m)
    _xu_task(wt, n, nw, u, wuT, r, m)


@_jit
def _lu_solve(a, b, w, r):
    """w = a^{-1} b by Gaussian elimination with partial pivoting (LAPACK's gesv, the method
    of ``np.linalg.solve``); a (r, r) and b (r,) are overwritten. False when a pivot is exactly
    zero (a singular), as gesv's info > 0."""
    for k in range(r):
        piv = k
        big = abs(a[k, k])
        for i in range(k + 1, r):
            v = abs(a[i, k])
            if v > big:
                big = v
                piv = i
        if big == 0.0:
            return False
        if piv != k:
            for j in range(r):
                t = a[k, j]
                a[k, j] = a[piv, j]
                a[piv, j] = t
            t = b[k]
            b[k] = b[piv]
            b[piv] = t
        for i in range(k + 1, r):
            f = a[i, k] / a[k, k]
            for j in range(k + 1, r):
                a[i, j] -= f * a[k, j]
            b[i] -= f * b[k]
    for i in range(r - 1, -1, -1):
        v = b[i]
        for j in range(i + 1, r):
            v -= a[i, j] * w[j]
        w[i] = v / a[i, i]
    return True


@_jit
def task_pass(X, y, d, agents, tasks, ut, lam2, w_out, grad_out, fit_out):
    """Problem (5.3) of ``rfl.problems.multitask`` on the selected tasks, from their valid rows
    only: for row i (agent a = agents[i], U = ut[i]^T) and each task t = tasks[i, j] with
    rows X_t = X[a, t, :d[a, t]], y_t = y[a, t, :d[a, t]],

        w_j = (U^T X_t^T X_t U + lam2 I)^{-1} U^T X_t^T y_t   -> w_out[i, j]   (lam2 = 2 lambda)
        res_j = X_t U w_j - y_t,  fit_out[i, j] = 0.5 ||res_j||^2            (if fit_out has rows)
        grad_out[i] = (1/T) sum_j X_t^T res_j w_j^T                          (if grad_out has rows)

    X (S, N, D, m), y (S, N, D), d (S, N) int64, agents (s,), tasks (s, T), T >= 1, ut (s, r, m)
    = U^T per row, w_out (s, T, r), grad_out (s, m, r) or (0, m, r), fit_out (s, T) or (0, T).
    Returns -1, or i T + j of the first task whose r x r system is singular (a zero pivot).

    Per task, two passes over its rows and nothing else (the padded rows are never read):
    the first computes xu_k = U^T x_k (r dot products per row, five in one pass over the
    row) into a (r, D) scratch, for two tasks of the agent at once (``_xu_task_pair``: two
    ascending streams, each U^T row loaded once for both), and then the r x r system from
    it; the second (``_task_finish``), over rows now in L1/L2, takes res_k = xu_k . w - y_k
    and g = sum_k res_k x_k, four rows per pass over g; the agent's sum of g w^T stays in a
    (r, m) scratch.

    Measured (one thread; MultitaskLarge of ``benchmarks/bench_limits.py``, S = 1000, B = 25, m
    = 100, r = 5, D = 50): 77 ms per mini-batch gradient, against 157 ms for a numpy gather of
    the padded rows + one GEMM per agent; the valid rows (605 MB) stream in 20 ms at the
    streaming bandwidth, but read task by task (24 kB runs, the padding skipped) they take ~34
    ms even in a loop that only sums them; with the rows in cache the kernel would take ~50 ms
    (10 ms at S = 200). The variants tried, at S = 200 (this kernel 15 ms, one task at a time 17
    ms, the numpy path 30 ms): the first pass on blocks of four rows of one task (20
    accumulators; that pass 1.5x faster with the rows in cache, but four interleaved streams 800
    bytes apart are read from memory at two thirds of the rate of one: 21 ms), the same with
    software prefetches of the rows ahead or of the next task (19-21 ms), with each task's rows
    copied to a scratch first (17 ms), four tasks at once instead of two (pass alone: 10.1
    against 9.4 ms), the r x r system accumulated row by row in the first pass instead of r (r +
    1) / 2 dot products over the task's rows (20 ms), and the second pass of each task
    interleaved with the first pass of the next (20 ms).
    """
    s, T = tasks.shape
    D, m = X.shape[2], X.shape[3]
    r = ut.shape[1]
    want_grad = grad_out.shape[0] > 0
    want_fit = fit_out.shape[0] > 0
    xuT = np.empty((2, r, D))
    res = np.empty(D)
    a = np.empty((r, r))
    b = np.empty(r)
    w = np.empty(r)
    g = np.empty(m)
    gt = np.empty((r, m))
    for i in range(s):
        ag = agents[i]
        u = ut[i]
        if want_grad:
            gt[:] = 0.0
        for j0 in range(0, T, 2):
            pair = j0 + 1 < T
            t0 = tasks[i, j0]
            if pair:
                t1 = tasks[i, j0 + 1]
                _xu_task_pair(X[ag, t0], d[ag, t0], X[ag, t1], d[ag, t1], u, xuT[0], xuT[1], r, m)
            else:
                _xu_task(X[ag, t0], 0, d[ag, t0], u, xuT[0], r, m)
            for h in range(2 if pair else 1):
                j = j0 + h
                t = tasks[i, j]
                if not _task_finish(X[ag, t], y[ag, t], d[ag, t], xuT[h], lam2, w, a, b, res, g,
                                    gt, want_grad, want_fit):
                    return i * T + j
                for p in range(r):
                    w_out[i, j, p] = w[p]
                if want_fit:
                    fit_out[i, j] = 0.5 * b[0]
        if want_grad:
            go = grad_out[i]
            for p in range(r):
                gp = gt[p]
                for q in range(m):
                    go[q, p] = gp[q] / T
    return -1


@_jit
def _task_finish(xt, yt, n, xuT, lam2, w, a, b, res, g, gt, want_grad, want_fit):
    """``task_pass`` for one task after its first pass (xuT (r, D) = U^T X_t^T): w (r,) from
    the r x r system (scratch a (r, r), b (r,)); with want_grad, gt (r, m) += g w^T, g = X_t^T
    res over the rows xt (n, m), four rows per pass over g; with want_fit, b[0] = ||res||^2.
    False (nothing added) when the system is singular."""
    r = xuT.shape[0]
    m = xt.shape[1]
    for p in range(r):
        zp = xuT[p]
        v = 0.0
        for k in range(n):
            v += zp[k] * yt[k]
        b[p] = v
        for q in range(p, r):
            zq = xuT[q]
            v = 0.0
            for k in range(n):
                v += zp[k] * zq[k]
            a[p, q] = v
            a[q, p] = v
        a[p, p] += lam2
    if not _lu_solve(a, b, w, r):
        return False
    if not (want_grad or want_fit):
        return True
    for k in range(n):
        res[k] = -yt[k]
    for p in range(r):
        zp = xuT[p]
        wp = w[p]
        for k in range(n):
            res[k] += zp[k] * wp
    if want_fit:
        v = 0.0
        for k in range(n):
            v += res[k] * res[k]
        b[0] = v
    if not want_grad:
        return True
    g[:] = 0.0
    k = 0
    while k + 4 <= n:
        x0 = xt[k]
        x1 = xt[k + 1]
        x2 = xt[k + 2]
        x3 = xt[k + 3]
        r0 = res[k]
        r1 = res[k + 1]
        r2 = res[k + 2]
        r3 = res[k + 3]
        for q in range(m):
            g[q] += (r0 * x0[q] + r1 * x1[q]) + (r2 * x2[q] + r3 * x3[q])
        k += 4
    while k < n:
        x0 = xt[k]
        r0 = res[k]
        for q in range(m):
            g[q] += r0 * x0[q]
        k += 1
    for p in range(r):
        wp = w[p]
        gp = gt[p]
        for q in range(m):
            gp[q] += wp * g[q]
    return True


@_jit
def floyd_batches_keys(keys, draw, agents, sizes, B, out):
    """``floyd_batches`` under each of R keys: ``out: (R, s, B) int64``, out[r] the batches
    of key (keys[r], 0) (the replicas of ``rfl.algorithms.replicas``), row for row what R
    calls of ``floyd_batches`` give."""
    for r in range(keys.shape[0]):
        floyd_batches(keys[r], _ZERO, draw, agents, sizes, B, out[r])
    return out

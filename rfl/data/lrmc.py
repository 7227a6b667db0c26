"""Synthetic low-rank matrix completion data (the RFedAGS authors' ``LRMCGrass_Syn`` study).

The ground truth is M = A B^T in R^{m x n}, A: (m, r) and B: (n, r) with i.i.d. N(0, 1)
entries (rank r; the authors' script: m = 200, n = 2000 columns, r = 5, no prescribed
condition number). A matrix of rank r has r (m + n - r) degrees of freedom; the training
set Omega holds OS times that many entries (the authors' oversampling OS = 6: 65 850 of the
400 000 entries, 16.5%), each observed with additive noise, x_ij = M_ij + noise * e_ij
(noise = 1e-6). A disjoint test set holds round(test_fraction * m n) further entries of the
complement, observed the same way; the authors' synthetic script has no test set (it measures
the relative error of the completed matrix against M, see ``rfl.problems.lrmc``).

Sampling. The authors draw Omega uniformly among all m n entries. Here each column first gets
min(r, m) entries uniformly from its rows, then the rest of the budget is drawn uniformly from
the remaining entries (and likewise for the test set, from what Omega left, when the test budget
covers r entries per column). With lambda = 0 a column's coefficients w are unique only when it
has at least r observed entries; at the authors' size a column has 33 entries on average and
P(fewer than 5) is about 1e-9 per column, so the two schemes agree in practice, while toy sizes
never produce a singular fit.

Storage (per column, padded to the largest count D; a padded slot has row 0, value 0 and
``valid`` False), columns dealt to the S agents in consecutive blocks of n / S (the authors'
order: agent j holds columns j n/S .. (j+1) n/S - 1):

- ``rows``, ``vals``, ``count``: training entries, (S, N, D) int64 / float64 and (S, N) int64;
- ``test_rows``, ``test_vals``, ``test_count``: test entries, the same layout (own D);
- ``A``: (m, r), ``B``: (S, N, r) the factors of M (column c = B[j, i] of agent j's i-th column).

Random draws, in this order: A, B, the training entries, their noise, the test entries, their
noise.
"""

from __future__ import annotations

import numpy as np


def degrees_of_freedom(m: int, n: int, r: int) -> int:
    """r (m + n - r): the dimension of the m x n matrices of rank r."""
    return r * (m + n - r)


def n_train(m: int, n: int, r: int, OS: float) -> int:
    """|Omega| = round(OS r (m + n - r)) training entries."""
    return int(round(OS * degrees_of_freedom(m, n, r)))


def n_test(m: int, n: int, test_fraction: float) -> int:
    """round(test_fraction m n) test entries."""
    return int(round(test_fraction * m * n))


def _draw_entries(rng, free: np.ndarray, count: int, per_column: int) -> np.ndarray:
    """``count`` entries among the True ones of ``free`` (m, n): first ``per_column`` uniformly
    in each column's free rows (when every column has that many), then the rest uniformly among
    all free entries left. Returns the (m, n) mask of the chosen entries."""
    m, n = free.shape
    chosen = np.zeros_like(free)
    if per_column and per_column * n <= count and free.sum(axis=0).min() >= per_column:
        keys = np.where(free, rng.random((m, n)), np.inf)              # random order among free rows
        first = np.argsort(keys, axis=0)[:per_column]                  # (per_column, n)
        chosen[first, np.arange(n)] = True
    left = np.flatnonzero(free.ravel() & ~chosen.ravel())
    extra = count - int(chosen.sum())
    chosen.ravel()[rng.choice(left, size=extra, replace=False)] = True
    return chosen


def _pack(mask: np.ndarray, X: np.ndarray, S: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column, the rows of ``mask`` and the values of ``X`` there, padded: rows, vals
    (S, N, D) and count (S, N); columns in order, N = n / S per agent."""
    n = mask.shape[1]
    count = mask.sum(axis=0)
    D = max(1, int(count.max()))
    order = np.argsort(~mask, axis=0, kind="stable")[:D]               # observed rows first, ascending
    rows = order.T.copy()                                              # (n, D)
    valid = np.arange(D)[None, :] < count[:, None]
    rows[~valid] = 0
    vals = np.where(valid, X[rows, np.arange(n)[:, None]], 0.0)
    N = n // S
    return (rows.reshape(S, N, D).astype(np.int64), vals.reshape(S, N, D),
            count.reshape(S, N).astype(np.int64))


def generate(rng: np.random.Generator, m: int, n: int, r: int, S: int, OS: float = 6.0,
             noise: float = 1e-6, test_fraction: float = 0.1) -> dict[str, np.ndarray]:
    """The arrays of the module docstring. Raises ValueError when n is not a multiple of S or
    the training and test budgets do not fit in the m n entries."""
    if n % S:
        raise ValueError(f"n = {n} columns must be a multiple of S = {S} agents")
    k_train, k_test = n_train(m, n, r, OS), n_test(m, n, test_fraction)
    if k_train < r * n or k_train + k_test > m * n:
        raise ValueError(f"{k_train} training + {k_test} test entries: need r n = {r * n} <= "
                         f"training and training + test <= m n = {m * n}")
    A = rng.standard_normal((m, r))
    B = rng.standard_normal((n, r))
    M = A @ B.T
    train = _draw_entries(rng, np.ones((m, n), dtype=bool), k_train, r)
    X = np.where(train, M + noise * rng.standard_normal((m, n)), 0.0)
    test = _draw_entries(rng, ~train, k_test, r)
    X_test = np.where(test, M + noise * rng.standard_normal((m, n)), 0.0)
    rows, vals, count = _pack(train, X, S)
    test_rows, test_vals, test_count = _pack(test, X_test, S)
    return {"rows": rows, "vals": vals, "count": count, "test_rows": test_rows,
            "test_vals": test_vals, "test_count": test_count, "A": A,
            "B": B.reshape(S, n // S, r)}

"""Synthetic data of MBCFSti (paper Section 5.1).

A_ij = B + B^T with B a d x d standard normal matrix, i.i.d. over all agents i
and samples j. Hence A is symmetric with E[A_kl] = 0, Var[A_kk] = 4 and
Var[A_kl] = 2 (k != l).

With ``heterogeneity = h > 0`` (not in the paper; for the heterogeneity study) agent i's
matrices get a common offset: A_ij = B_ij + B_ij^T + h (C_i + C_i^T), C_i standard normal
and drawn after all B, so h = 0 reproduces the i.i.d. data exactly; the agents' local
minimisers then differ from the global one (client drift).

The arrays also carry ``p`` (0-d int array): the problem's size p cannot be
read off A, and ``Problem.from_arrays`` receives only the arrays and the
geometry.
"""

from __future__ import annotations

import numpy as np


def generate(rng: np.random.Generator, d: int, p: int, S: int, N: int,
             heterogeneity: float = 0.0) -> dict[str, np.ndarray]:
    """Return ``{"A": (S, N, d, d), "p": ()}``, agent i's symmetric matrices in ``A[i]``."""
    if not 1 <= p <= d:
        raise ValueError(f"need 1 <= p <= d, got d={d}, p={p}")
    if S < 1 or N < 1:
        raise ValueError(f"need S, N >= 1, got S={S}, N={N}")
    B = rng.standard_normal((S, N, d, d))
    A = B + B.swapaxes(-1, -2)
    if heterogeneity:
        C = rng.standard_normal((S, 1, d, d))
        A = A + heterogeneity * (C + C.swapaxes(-1, -2))
    return {"A": np.ascontiguousarray(A), "p": np.array(p)}

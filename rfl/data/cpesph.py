"""Synthetic data of CPESph (paper Section 5.1, following [HHJM24]).

For each agent i: Sigma_i = diag{1, 1-1.1nu, 1-1.2nu, 1-1.3nu, 1-1.4nu,
|y_1|/(d+1), ..., |y_{d-4}|/(d+1)} of size (d+1), y ~ N(0, 1);
Z_i = U_i Sigma_i V with U_i (N x (d+1)) with orthonormal columns and
V ((d+1) x (d+1)) orthogonal, both the Q factor of a Gaussian matrix (Matlab
``orth``). V is shared by all agents (i.i.d. agents, as in the paper); with
``heterogeneous=True`` every agent draws its own V_i. The samples z_{i,j} are
the rows of Z_i.
"""

from __future__ import annotations

import numpy as np


def orth(a: np.ndarray) -> np.ndarray:
    """Orthonormal basis of the column space of a full-rank a: (..., m, n), m >= n."""
    q, r = np.linalg.qr(a)
    # fix the sign so the basis is a deterministic function of a
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def generate(rng: np.random.Generator, d: int, nu: float, S: int, N: int,
             heterogeneous: bool = False) -> dict[str, np.ndarray]:
    """Return ``{"Z": (S, N, d+1)}``, agent i's samples in ``Z[i]``."""
    n = d + 1
    if d < 5:
        raise ValueError(f"d must be at least 5 (Sigma has 5 fixed leading entries), got {d}")
    if N < n:
        raise ValueError(f"N must be at least d+1={n} for U_i to have orthonormal columns, got {N}")
    lead = np.array([1.0, 1 - 1.1 * nu, 1 - 1.2 * nu, 1 - 1.3 * nu, 1 - 1.4 * nu])
    tail = np.abs(rng.standard_normal((S, n - 5))) / n
    sigma = np.concatenate([np.broadcast_to(lead, (S, 5)), tail], axis=1)      # (S, n)
    U = orth(rng.standard_normal((S, N, n)))                                     # (S, N, n)
    if heterogeneous:
        V = orth(rng.standard_normal((S, n, n)))                                 # (S, n, n)
    else:
        V = np.broadcast_to(orth(rng.standard_normal((n, n))), (S, n, n))
    Z = (U * sigma[:, None, :]) @ V                                              # U Sigma V
    return {"Z": np.ascontiguousarray(Z)}

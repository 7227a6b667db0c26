"""WordNet mammals for hyperbolic structured prediction (the authors' ``HSPHyper_WordNet``).

Two pinned files (``rfl.data.sources``): ``features.xlsx``, one row of 3 features per node,
and ``poincare_points.xlsx``, the node's 2-D Poincaré-disk embedding; 1180 nodes, in the same
order (``names.xlsx``: node 100, 1-based, is ``primate.n.02``). Read with openpyxl.

``kernel_weights`` are the structured-prediction weights alpha(w) of Ciliberto et al.'s
estimator, kernel ridge regression with a Gaussian kernel: alpha = (K + lam I)^{-1} k_w,
K_il = k(w_i, w_l), (k_w)_i = k(w, w_i), k(a, b) = exp(-||a - b||^2 / (2 sigma^2)).
"""

from __future__ import annotations

import numpy as np

from rfl.data.sources import verified
from rfl.manifolds.lorentz import poincare_to_lorentz

N_NODES = 1180

#: sqrt of float64's machine epsilon: a ridge lam >= N ROOT_EPS / (1 - ROOT_EPS) bounds the
#: condition number of K + lam I (eigenvalues in [lam, N + lam]: K is positive semidefinite
#: with unit diagonal and entries in (0, 1], so lambda_max(K) <= N by Gershgorin) by
#: 1 + N / lam <= 1 / ROOT_EPS, and a backward-stable solve then keeps at least half of the
#: digits of alpha whatever the BLAS kernel or thread count (Higham, "Accuracy and Stability of
#: Numerical Algorithms", 2nd ed., Thm 7.2 with the backward error of LU, Chapter 9). Below it
#: the weights are set by rounding: with lam = 1e-16 (which does not even change K's unit
#: diagonal) max |alpha| for S = 9 was 35 to 4458 depending on the OpenBLAS kernel and thread
#: count, and the weighted Frechet mean of such weights lies so far out (coordinates 1e15 to
#: 1e87) that RLBFGS's trial steps overflowed cosh in the Lorentz Exp map.
ROOT_EPS = float(np.sqrt(np.finfo(float).eps))


def lam_min(N: int) -> float:
    """The smallest ridge for N nodes per agent: N sqrt(eps) / (1 - sqrt(eps))."""
    return N * ROOT_EPS / (1.0 - ROOT_EPS)


def read_xlsx(path) -> np.ndarray:
    """The numeric cells of the first sheet of an .xlsx file: ``(rows, cols)`` float64."""
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    try:
        rows = [list(r) for r in book.worksheets[0].iter_rows(values_only=True)]
    finally:
        book.close()
    out = np.array(rows, dtype=float)
    if out.ndim != 2 or not np.all(np.isfinite(out)):
        raise ValueError(f"{path}: expected a table of numbers, got shape {out.shape}")
    return out


def load(features_path, poincare_path) -> tuple[np.ndarray, np.ndarray]:
    """Features ``(1180, 3)`` and Lorentz embeddings ``(1180, 3)`` (Poincaré disk -> H^2),
    each file checked against its pinned sha256 first."""
    W = read_xlsx(verified("wordnet_features", features_path))
    P = read_xlsx(verified("wordnet_poincare", poincare_path))
    if W.shape[0] != N_NODES or P.shape != (N_NODES, 2):
        raise ValueError(f"expected {N_NODES} nodes with 2-D embeddings, got features "
                         f"{W.shape} and embeddings {P.shape}")
    return W, poincare_to_lorentz(P)


def gaussian_kernel(a: np.ndarray, b: np.ndarray, sigma: float) -> np.ndarray:
    """k(a_i, b_l) = exp(-||a_i - b_l||^2 / (2 sigma^2)): ``(n, p) x (m, p) -> (n, m)``."""
    sq = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    return np.exp(-sq / (2.0 * sigma ** 2))


def kernel_weights(w: np.ndarray, W: np.ndarray, sigma: float, lam: float) -> np.ndarray:
    """alpha = (K + lam I)^{-1} k_w for the test features ``w: (p,)`` and training features
    ``W: (n, p)``: ``(n,)``. ``lam`` below ``lam_min(n)`` raises ValueError (the weights would
    be set by rounding)."""
    if not lam >= lam_min(W.shape[0]):
        raise ValueError(f"lam = {lam:g} is below N sqrt(eps) / (1 - sqrt(eps)) = "
                         f"{lam_min(W.shape[0]):.4g} for N = {W.shape[0]} nodes")
    K = gaussian_kernel(W, W, sigma)
    kw = gaussian_kernel(W, w[None, :], sigma)[:, 0]
    return np.linalg.solve(K + lam * np.eye(W.shape[0]), kw)


def generate(features_path, poincare_path, S: int, test_node: int, sigma: float,
             lam: float) -> dict[str, np.ndarray]:
    """One HSP instance: the test node ``test_node`` (1-based, as in the authors' order) is
    held out; the other nodes, in file order, are dealt in consecutive blocks of
    N = floor(1179 / S) to the S agents (the remainder, none for S = 9, is dropped), and each
    agent computes alpha from its own block only.

    Returns ``Y: (S, N, 3)`` Lorentz embeddings, ``alpha: (S, N)``, ``y_true: (3,)`` the held-out
    node's embedding."""
    W, Y = load(features_path, poincare_path)
    if not 1 <= test_node <= N_NODES:
        raise ValueError(f"test_node={test_node}; allowed: 1..{N_NODES}")
    keep = np.delete(np.arange(N_NODES), test_node - 1)
    N = keep.size // S
    blocks = keep[:S * N].reshape(S, N)
    w = W[test_node - 1]
    alpha = np.stack([kernel_weights(w, W[b], sigma, lam) for b in blocks])
    return {"Y": Y[blocks], "alpha": alpha, "y_true": Y[test_node - 1]}

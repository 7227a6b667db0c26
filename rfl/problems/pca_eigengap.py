"""Decentralised PCA on St(d, r) with a set eigengap: the DRSGD/DRGTA code's quadratic (Chen,
Garcia, Hong, Shahrampour, ICML 2021; ``Quadratic_object/Quadratic.py``, ``synthetic_data``).

Data (theirs): A = randn(S N, d), thin SVD A = U diag(s) V^T, singular values replaced by
s_1 g^{i/2} (i = 0..d-1, g = ``eigengap``), so the eigenvalues of A^T A fall geometrically,
lambda_{i+1} / lambda_i = g; agent j holds rows j N .. (j + 1) N - 1 (their
``partition_data_mat`` with S N rows split evenly). X* = the r leading right singular
vectors.

Cost: kPCA's (``rfl.problems.kpca``), f_j(X) = -1/2 tr(X^T A_j X), A_j = (1/N) Z_j^T Z_j.
The authors' local cost is -1/2 ||A_j X||_F^2 = N f_j (no 1/N) and their global one the mean
of theirs, so a gradient step beta of theirs is a step N beta here; a one-sample gradient is
the same in both (their DRSGD with batch size 1 takes the same steps as ours at B = 1).
"""

from __future__ import annotations

import numpy as np

from .base import COUNT, object_schema
from .kpca import KPCA
from .pca_stiefel import RowsPerAgent


def eigengap_rows(rng: np.random.Generator, n_rows: int, d: int, eigengap: float) -> np.ndarray:
    """(n_rows, d): a standard normal matrix with its singular values set to
    s_1 eigengap^{i/2} (the authors' ``synthetic_data``)."""
    A = rng.standard_normal((n_rows, d))
    u, s, vt = np.linalg.svd(A, full_matrices=False)
    s = s[0] * float(eigengap) ** (np.arange(s.shape[0]) / 2.0)
    return (u * s) @ vt


class PCAEigengap(RowsPerAgent, KPCA):
    """Z: (S, N, d), rows of one matrix with geometric eigenvalues (module docstring)."""

    name = "pca_eigengap"
    params_schema = object_schema(
        required={"d": COUNT, "r": COUNT, "S": COUNT, "N": COUNT,
                  "eigengap": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}},
        description="S agents of N rows of one S N x d matrix whose squared singular values fall "
                    "by the factor eigengap (the DRSGD/DRGTA code's Quadratic)")
    test_params = {"d": 6, "r": 2, "S": 4, "N": 5, "eigengap": 0.8}

    @classmethod
    def generate(cls, rng, d, r, S, N, eigengap):
        """``{"Z": (S, N, d), "r": ()}``."""
        return {"Z": eigengap_rows(rng, S * N, d, eigengap).reshape(S, N, d), "r": np.array(int(r))}

    @classmethod
    def check_params(cls, params):
        """r <= d <= S N (the rows must span R^d for d singular values)."""
        d, r, S, N = (params[k] for k in ("d", "r", "S", "N"))
        out = []
        if r > d:
            out.append(("r", f"{r} is larger than d = {d}; allowed: 1..{d}"))
        if d > S * N:
            out.append(("d", f"{d} columns for S N = {S * N} rows; allowed: d <= S N"))
        return out

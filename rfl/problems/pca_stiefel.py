"""PCA on the Stiefel manifold with synthetic agents of growing scale (the RFedAGS authors'
``PCAStief_Syn`` studies, problem of their ``ConstructRFLPCAProb_St_``).

The cost is kPCA's (``rfl.problems.kpca``): f_j(X) = -1/2 tr(X^T A_j X), A_j = (1/N) Z_j^T Z_j
on St(d, r), F = sum_j p_j f_j, X* the r leading eigenvectors of the pooled A. The authors'
cost is -tr(X^T A_j X) (no 1/2) and their Euclidean gradient -2 A_j X, so their step alpha is
ours 2 alpha, and their optimality gap is twice ours; the iterates are the same.

Data (the authors' construction, no centring): a pool of rows z ~ s_b N(0, I_d) in consecutive
blocks of ``block`` rows, block b = 1, 2, ... scaled by s_b = b / n_blocks; agent j holds rows
j N .. (j + 1) N - 1 of the pool. With the authors' numbers:

- more agents (``PCAStief_Syn_numagentincreas``): 200 blocks of 500 rows, N = 1000 rows per
  agent, S = 60 .. 200 agents (agent j's rows have scale about j / 100: each added agent is
  noisier than the ones before);
- more local data (``..._localdatasizeincreas``): 100 blocks of 2000 rows, S = 100, N = 400 ..
  2000 (a larger N also reaches blocks of larger scale);
- larger dimension (``..._mandimincreas``): 50 blocks of 1000 rows, S = 50, N = 100, (d, r) from
  (1000, 5) to (4000, 10) (their pool is 50 000 x 4000 and a study takes its first d columns;
  the rows here are drawn with d columns directly: the same distribution);
- RFedAGS vs the tangent mean (``..._AGSvsTM``): two agents of N = 60 rows, block = 60 rows,
  scales given explicitly (1/2 and 400, ``scales``), d = 50, r = 1.

``scales`` (a list, one per block) overrides the b / n_blocks rule. A scale may be 0: the
authors' agent study fills a pool of 200 000 rows with its 200 blocks of 500 (100 000 rows),
so for S = 150 and 200 the agents past the 100th hold rows of zeros. Draw: one (S N, d) standard
normal array, rows scaled by their block's factor.
"""

from __future__ import annotations

import numpy as np

from .base import COUNT, MAX_SCALE, SCALE, object_schema
from .kpca import KPCA


def row_scales(S: int, N: int, block: int, n_blocks: int | None = None,
               scales: list | None = None) -> np.ndarray:
    """(S N,) scale of each pooled row: its block b (0-based: row // block) scaled by
    scales[b], or (b + 1) / n_blocks (n_blocks default: the blocks the S N rows cover)."""
    b = np.arange(S * N) // block
    if scales is not None:
        return np.asarray(scales)[b]
    n = int(b.max()) + 1 if n_blocks is None else int(n_blocks)
    return (b + 1) / n


class RowsPerAgent:
    """Size declarations of a PCA problem whose S agents hold N rows of R^d each (mixed into
    ``PCAStiefelSynthetic`` and ``PCAEigengap``)."""

    @classmethod
    def memory_bytes(cls, params):
        """Z: S N d float64, and the S d^2 local matrices A_j."""
        return (params["S"] * params["N"] * params["d"] + params["S"] * params["d"] ** 2) * 8

    @staticmethod
    def local_sizes_from(params: dict):
        """(S,) local sizes: N rows per agent."""
        return [int(params["N"])] * int(params["S"])


class PCAStiefelSynthetic(RowsPerAgent, KPCA):
    """Z: (S, N, d) synthetic rows of growing scale (module docstring); kPCA's cost on St(d, r)."""

    name = "pca_stiefel"
    params_schema = object_schema(
        required={"d": {"type": "integer", "minimum": 1}, "r": COUNT, "S": COUNT, "N": COUNT,
                  "block": COUNT},
        optional={"n_blocks": COUNT,
                  "scales": {"type": "array", "minItems": 1, "items": SCALE}},   # 0: rows of zeros
        description="S agents of N rows in R^d from blocks of `block` rows; block b scaled by "
                    "b / n_blocks, or by scales[b]")
    test_params = {"d": 6, "r": 2, "S": 3, "N": 8, "block": 4, "n_blocks": 10}

    @classmethod
    def generate(cls, rng, d, r, S, N, block, n_blocks=None, scales=None):
        """``{"Z": (S, N, d), "r": ()}``: standard normal rows times their block's scale."""
        z = rng.standard_normal((S * N, d)) * row_scales(S, N, block, n_blocks, scales)[:, None]
        return {"Z": z.reshape(S, N, d), "r": np.array(int(r))}

    @classmethod
    def check_params(cls, params):
        """r <= d; block <= S N; the S N rows within n_blocks blocks, or one scale per block
        they cover; the smallest scale 1 / n_blocks no smaller than 1 / MAX_SCALE."""
        out = []
        d, r, S, N, block = (params[k] for k in ("d", "r", "S", "N", "block"))
        if r > d:
            out.append(("r", f"{r} is larger than d = {d}; allowed: 1..{d}"))
        if block > S * N:
            return out + [("block", f"{block} rows is more than the S N = {S * N} rows; "
                                    f"allowed: 1..{S * N}")]
        if params.get("n_blocks", 1) > MAX_SCALE:
            out.append(("n_blocks", f"{params['n_blocks']} blocks make the first block's scale "
                                    f"1 / n_blocks smaller than 1 / {MAX_SCALE:g}; allowed: "
                                    f"n_blocks <= {MAX_SCALE:g}"))
        needed = -(-S * N // block)
        if "scales" in params and len(params["scales"]) < needed:
            out.append(("scales", f"{len(params['scales'])} scales for the {needed} blocks of "
                                  f"{block} rows that S N = {S * N} rows cover; allowed: at least {needed}"))
        if "n_blocks" in params and params["n_blocks"] < needed:
            out.append(("n_blocks", f"{params['n_blocks']} blocks of {block} rows hold fewer than "
                                    f"S N = {S * N} rows; allowed: n_blocks >= {needed}"))
        return out


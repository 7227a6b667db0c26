"""Data of federated kPCA (Li & Ma 2022; Zhang et al.): scikit-learn's bundled digits.

``sklearn.datasets.load_digits()`` holds 1797 images of 8 x 8 pixels (64 features, integer
values 0..16) of the digits 0..9; it ships with scikit-learn, so no download is needed. The
class sizes are 178, 182, 177, 183, 181, 182, 181, 179, 174, 180 (smallest: 174, digit 8).

Class-balanced pool. Both splits draw their samples from the same class-balanced pool: from
each class c a seeded random subset of q samples (a seeded shuffle within the class, first q
kept), q = ceil(S N / 10) <= 174, laid out label-sorted (class 0 block, class 1 block, ...);
the first S N samples of this sequence are used, so at most 9 samples of the last class are cut
(none when 10 divides S N). The remainder of the 1797 images is dropped: the 57 images above 174
per class and the classes' surplus over q. Equal N per agent; the default N is the largest one
the pool allows, N = 1740 // S (S = 10: N = 174, all of the 1740-image pool is used).
Consequence: for one seed the "iid" and "label" splits hold the *same* pooled sample set,
hence the same pooled covariance, the same global cost F and the same optimum; they differ
only in how the samples are dealt to the agents.

Splits.
  * ``"iid"``: a seeded random permutation of the used samples, dealt to the agents in
    consecutive chunks of N (a uniformly random equal-size partition).
  * ``"label"`` (heterogeneous): the label-sorted sequence itself is dealt in consecutive
    chunks of N. With S = 10 each agent holds exactly one digit (agent c holds digit c); with
    S = 5 exactly two; with S = 20 half of one digit each; in general an agent holds
    the digits its chunk of the sequence covers (at most ceil(N / q) + 1 classes).

Preprocessing. Pixel values are multiplied by ``scale`` (default 1/16, mapping 0..16 onto
[0, 1]). With ``center=True`` the data are centred *globally*: the pooled mean of the S N used
samples (returned as ``mean``) is subtracted from every sample, so that sum_i (1/N) Z_i^T Z_i / S
is the pooled (biased, 1/(S N)) covariance matrix, i.e. F is the centralised PCA cost. Agent
i's matrix A_i = (1/N) Z_i^T Z_i is then its second moment about the *global* mean, equal to
its own covariance plus (m_i - m)(m_i - m)^T (m_i its local mean); under the label split this
between-agent term is a large part of the heterogeneity. No per-agent centring is offered:
it would drop the between-agent scatter and change F away from the pooled PCA cost.

The arrays also carry ``r`` (0-d int array), the problem's number of components, so that
``KPCA.from_arrays`` works without the dataset parameters (the data do not depend on r).
"""

from __future__ import annotations

import math

import numpy as np

#: number of features (8 x 8 pixels), digit classes, and images of the smallest class (digit 8)
N_FEATURES = 64
N_CLASSES = 10
MIN_CLASS_SIZE = 174
#: size of the class-balanced pool: 10 classes x 174 images
POOL_SIZE = N_CLASSES * MIN_CLASS_SIZE
SPLITS = ("iid", "label")


def default_n_per_agent(S: int) -> int:
    """The largest equal local size the class-balanced pool allows: 1740 // S."""
    if S < 1:
        raise ValueError(f"need S >= 1, got S={S}")
    n = POOL_SIZE // S
    if n < 1:
        raise ValueError(f"S={S} agents exceed the {POOL_SIZE} images of the pool")
    return n


def n_per_agent_from(params: dict) -> int:
    """N of a dataset's parameters: ``n_per_agent`` when given (and not None), else the default."""
    n = params.get("n_per_agent")
    return int(n) if n is not None else default_n_per_agent(int(params["S"]))


def load_raw() -> tuple[np.ndarray, np.ndarray]:
    """The bundled digits: pixel values ``(1797, 64)`` float64 in 0..16 and labels ``(1797,)``."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    return np.asarray(digits.data, dtype=np.float64), np.asarray(digits.target, dtype=np.int64)


def generate(rng: np.random.Generator, S: int, r: int, split: str = "iid",
             n_per_agent: int | None = None, center: bool = True,
             scale: float = 1.0 / 16.0) -> dict[str, np.ndarray]:
    """Return the agents' samples of the digits data.

    ``{"Z": (S, N, 64) float64, "labels": (S, N) int64, "indices": (S, N) int64 (rows of
    load_digits().data), "mean": (64,) the subtracted pooled mean of the scaled pixels (zeros
    when ``center`` is False), "r": ()}``; ``Z[i]`` holds agent i's samples.
    """
    if not 1 <= r <= N_FEATURES:
        raise ValueError(f"need 1 <= r <= {N_FEATURES}, got r={r}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    N = default_n_per_agent(S) if n_per_agent is None else int(n_per_agent)
    if N < 1 or S * N > POOL_SIZE:
        raise ValueError(f"need 1 <= n_per_agent and S * n_per_agent <= {POOL_SIZE}, "
                         f"got S={S}, n_per_agent={N}")
    data, target = load_raw()
    n_used = S * N
    q = math.ceil(n_used / N_CLASSES)
    # label-sorted sequence: a seeded random subset of q images from each class, class by class
    sorted_idx = np.concatenate([rng.permutation(np.flatnonzero(target == c))[:q]
                                 for c in range(N_CLASSES)])[:n_used]
    if split == "iid":
        idx = sorted_idx[rng.permutation(n_used)]
    else:
        idx = sorted_idx
    idx = idx.reshape(S, N)
    Z = data[idx] * float(scale)                                       # (S, N, 64)
    mean = Z.reshape(n_used, N_FEATURES).mean(axis=0) if center else np.zeros(N_FEATURES)
    Z = Z - mean
    return {"Z": np.ascontiguousarray(Z, dtype=np.float64), "labels": target[idx],
            "indices": idx.astype(np.int64), "mean": mean, "r": np.array(int(r))}

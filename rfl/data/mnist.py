"""MNIST for PCA on the sphere (the authors' ``PCASphere_MNIST``), from the pinned idx files.

Upstream uses the 60000 training images, which are missing from the authors' repository (only
the training labels are there); here the 10000 test images (``t10k``, LeCun's distribution)
stand in. Preprocessing as the authors' partition notebook: pixels scaled to [0, 1], then
standardised with MNIST's global mean 0.1307 and standard deviation 0.3081 (torchvision's
``Normalize``); no per-pixel centring. Agents: the notebook's pathological non-i.i.d. split
(sort by label, cut into S * shards equal shards, shuffle the shards, deal ``shards`` of them
to each agent); upstream's ``noniid_small`` has 8 shards (classes) per agent.
"""

from __future__ import annotations

import gzip

import numpy as np

from rfl.data.sources import verified

MEAN, STD = 0.1307, 0.3081


def read_idx(path) -> np.ndarray:
    """An idx file (gzip): magic 0x0000 08 <ndim>, big-endian int32 sizes, then uint8 data."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if raw[:2] != b"\x00\x00" or raw[2] != 0x08:
        raise ValueError(f"{path}: not an idx file of unsigned bytes (magic {raw[:4].hex()})")
    ndim = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says {shape}, found {data.size} bytes of data")
    return data.reshape(shape)


def load_test(images_path, labels_path) -> tuple[np.ndarray, np.ndarray]:
    """Standardised test images ``(10000, 784)`` float64 and labels ``(10000,)``."""
    X = read_idx(verified("mnist_test_images", images_path)).reshape(-1, 784)
    y = read_idx(verified("mnist_test_labels", labels_path))
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"{X.shape[0]} images but {y.shape[0]} labels")
    return (X / 255.0 - MEAN) / STD, y.astype(np.int64)


def shard_split(labels: np.ndarray, S: int, N: int, shards: int,
                rng: np.random.Generator) -> np.ndarray:
    """Indices ``(S, N)`` of each agent's images: a seeded random subset of S * N images
    (the rest dropped) sorted by label (stable), cut into S * shards shards of N / shards
    consecutive images, shuffled, and dealt ``shards`` to each agent."""
    if N % shards:
        raise ValueError(f"N={N} is not a multiple of shards={shards}")
    keep = np.sort(rng.choice(labels.size, S * N, replace=False))
    keep = keep[np.argsort(labels[keep], kind="stable")]
    pieces = keep.reshape(S * shards, N // shards)[rng.permutation(S * shards)]
    return pieces.reshape(S, N)

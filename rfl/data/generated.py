"""Small seeded files in the formats of the real data the loaders read, for the loaders' tests
and the ``source: generated`` datasets of ``pca_stiefel_cifar10``, ``cfmspd_pathmnist`` and
``lrmc_movielens`` (the smoke config runs them end to end through the real readers):

- ``cifar-10-python.tar.gz``: a gzipped tar of ``cifar-10-batches-py/data_batch_1..5`` and
  ``test_batch``, each a protocol-2 pickle of a dict with ``data`` (n x 3072 uint8) and
  ``labels`` (a list of ints 0..9) (``rfl.data.cifar10``);
- ``RI.mat``: a MATLAB v5 file holding a cell vector ``RI`` of 9 x 9 SPD matrices
  (``rfl.data.pathmnist``);
- ``ratings.dat``: lines ``UserID::MovieID::Rating::Timestamp`` (``rfl.data.movielens``).

The contents are random (uniform pixels, Wishart-like matrices, uniform ratings): they exercise
the readers and the problems, they say nothing about the real data.
"""

from __future__ import annotations

import io
import pickle
import tarfile
from pathlib import Path

import numpy as np

#: what a run's metadata says of a generated fixture (``Problem.data_notes``)
NOTE = "generated fixture (format of {file}), not the real data"


def notes(arrays) -> dict:
    """The run metadata ``data`` of a data instance: ``source`` and ``note`` when its arrays
    came from a generated fixture (their ``fixture``: the file's name), else nothing."""
    if "fixture" not in arrays:
        return {}
    return {"source": "generated", "note": NOTE.format(file=str(arrays["fixture"]))}


def seed_from(rng: np.random.Generator) -> int:
    """The seed of a fixture drawn from a data stream (one draw)."""
    return int(rng.integers(2**32))


# ---- CIFAR-10 (python version) ---------------------------------------------------------------
def cifar10_batch_pickle(data, labels, bytes_keys: bool = False) -> bytes:
    """A batch as the python version holds it (protocol 2, a dict of data and labels);
    ``bytes_keys``: the keys as bytes, as a pickle written by Python 2 may carry them."""
    d = {"batch_label": "training batch", "data": np.asarray(data, dtype=np.uint8),
         "labels": [int(v) for v in labels]}
    if bytes_keys:
        d = {k.encode(): v for k, v in d.items()}
    return pickle.dumps(d, protocol=2)


def write_tarball(path, members: dict[str, bytes]) -> bytes:
    """A gzipped tar of ``cifar-10-batches-py/<name>`` for each of ``members``; its bytes."""
    path = Path(path)
    with tarfile.open(path, "w:gz") as tar:
        for name, raw in members.items():
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return path.read_bytes()


def write_cifar10_tarball(path, n_per_batch: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A ``cifar-10-python.tar.gz`` of 5 training batches of ``n_per_batch`` uniform random
    images each (the third batch with bytes keys) and a test batch (the first 4 images); the
    labels cycle through 0..9 in a random order (balanced as the real ones). Returns the
    training pixels ``(5 n_per_batch, 3072)`` uint8 and labels, in batch order."""
    rng = np.random.default_rng(seed)
    n = 5 * n_per_batch
    data = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
    labels = np.resize(np.arange(10), n)[rng.permutation(n)]
    members = {f"data_batch_{k + 1}": cifar10_batch_pickle(
        data[k * n_per_batch:(k + 1) * n_per_batch], labels[k * n_per_batch:(k + 1) * n_per_batch],
        bytes_keys=(k == 2)) for k in range(5)}
    members["test_batch"] = cifar10_batch_pickle(data[:4], labels[:4])
    write_tarball(path, members)
    return data, labels


# ---- PathMNIST RI.mat ------------------------------------------------------------------------
def random_spd(rng: np.random.Generator, n: int, d: int = 9) -> np.ndarray:
    """``(n, d, d)`` SPD matrices G G^T + 0.1 I, G standard normal."""
    g = rng.standard_normal((n, d, d))
    return g @ g.swapaxes(1, 2) + 0.1 * np.eye(d)


def write_cells(path, matrices, variable: str = "RI", column: bool = True) -> None:
    """A v5 .mat file holding ``matrices`` as a cell array ``variable`` (n x 1, or 1 x n)."""
    import scipy.io

    cells = np.empty((len(matrices), 1) if column else (1, len(matrices)), dtype=object)
    for k, m in enumerate(matrices):
        cells.flat[k] = m
    scipy.io.savemat(path, {variable: cells})


def write_pathmnist_mat(path, n: int, seed: int) -> np.ndarray:
    """An ``RI.mat`` of ``n`` random 9 x 9 SPD matrices (``random_spd``); returns them."""
    mats = random_spd(np.random.default_rng(seed), n)
    write_cells(path, mats)
    return mats


# ---- MovieLens-1M ratings.dat ----------------------------------------------------------------
def write_ratings_lines(path, rows) -> Path:
    """``ratings.dat`` with one ``UserID::MovieID::Rating::Timestamp`` line per row."""
    path = Path(path)
    path.write_text("".join("::".join(map(str, r)) + "\n" for r in rows))
    return path


def write_movielens_ratings(path, users: int, movies: int, seed: int,
                            per_user: tuple[int, int] = (20, 40)) -> np.ndarray:
    """A ``ratings.dat`` in which each user 1..``users`` rates between ``per_user`` distinct
    movies of 1..``movies`` (at least 20 each, as in ml-1m; at most ``movies``) 1..5 stars,
    lines in user order. Returns the ``(n, 4)`` table written."""
    rng = np.random.default_rng(seed)
    lo, hi = min(per_user[0], movies), min(per_user[1], movies)
    rows = []
    for user in range(1, users + 1):
        n = int(rng.integers(lo, hi + 1))
        for movie in np.sort(rng.choice(movies, n, replace=False)) + 1:
            rows.append((user, int(movie), int(rng.integers(1, 6)), 978300000 + len(rows)))
    write_ratings_lines(path, rows)
    return np.array(rows, dtype=np.int64)

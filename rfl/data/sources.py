"""Pinned raw-data sources: the data files of the authors' own code for the newer version of
the RFedAGS paper (the zhenwei-huang/RFedAGS repository at one commit) and CIFAR-10 from its
home page.

A problem reads raw files by name (``Problem.raw_inputs``); every name here is one
:class:`Source`: a pinned URL, its checksums (sha256 where known; else the git blob id the
commit lists the file by and, for a standard distribution, its publisher's md5) and where it
lies in a local mirror folder. :func:`fetch` returns a verified copy in a cache folder, taken
from (in this order) the cache itself, a mirror (``mirror`` argument, the config key
``anchors.mirror``, or the source's environment variable: ``RFL_ANCHORS_MIRROR``, for CIFAR-10
``RFL_CIFAR10_MIRROR``) or a download with pooch; :func:`verified` checks a file again when a
generator reads it. A file with a wrong checksum is never parsed: in the cache it is deleted, in
a mirror it is left alone and refused. :func:`locate` says, without any network access, whether
a copy is already on this machine (the workflow skips an experiment whose data are not).

The School data keep their own module (``rfl.data.school``), with the same errors.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import tempfile
import urllib.parse
import warnings
from dataclasses import dataclass
from pathlib import Path

from rfl.data.checksums import digests, mismatches
from rfl.data.school import ChecksumMismatchError, DataUnavailableError

__all__ = ["Source", "SOURCES", "MIRROR_ENV", "CIFAR10_MIRROR_ENV", "fetch", "verified", "locate",
           "how_to_get", "reachable", "url_reachable",
           "find_in_mirror", "find_all_in_mirror", "ChecksumMismatchError", "DataUnavailableError"]

#: environment variable naming the mirror folder (a copy of the anchors' data/ folder)
MIRROR_ENV = "RFL_ANCHORS_MIRROR"
#: environment variable naming a folder that holds cifar-10-python.tar.gz
CIFAR10_MIRROR_ENV = "RFL_CIFAR10_MIRROR"
_COMMIT = "a07b5576a6b9b8b8ea05eb38fba23fc076e8ac8a"
_PREFIX = f"https://raw.githubusercontent.com/zhenwei-huang/RFedAGS/{_COMMIT}/RFedAGS/data/"
_DOWNLOAD_TIMEOUT = (10, 60)


@dataclass(frozen=True)
class Source:
    """One pinned raw file: ``url``, ``sha256`` and ``size`` (bytes) where known, ``subpath``
    (its path under the mirror folder and under the cache folder), and the other pins: the
    ``git_blob`` id of the pinned commit's file, a publisher's ``md5``. ``mirror_env`` names the
    environment variable of its offline mirror."""

    name: str
    url: str
    sha256: str | None
    size: int | None
    subpath: str
    description: str = ""
    git_blob: str | None = None
    md5: str | None = None
    mirror_env: str = MIRROR_ENV

    @property
    def pins(self) -> dict[str, str | None]:
        """The checksums a copy must match (None: not pinned)."""
        return {"sha256": self.sha256, "md5": self.md5, "git_blob": self.git_blob}

    def expected(self) -> str:
        """The pinned checksums and size, as a message names them."""
        out = ", ".join(f"{k} {v}" for k, v in self.pins.items() if v is not None)
        return out + (f" ({self.size} bytes)" if self.size is not None else "")


def _source(name, upstream, sha256, size, subpath, description, **pins):
    return name, Source(name, _PREFIX + upstream, sha256, size, subpath, description, **pins)


#: every pinned source, by the name problems use in ``raw_inputs``
SOURCES: dict[str, Source] = dict([
    _source("mnist_test_images", "mnist/data/MNIST/raw/t10k-images-idx3-ubyte.gz",
            "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", 1648877,
            "mnist/t10k-images-idx3-ubyte.gz", "MNIST test images, 10000 x 28 x 28 (idx3, gzip)"),
    _source("mnist_test_labels", "mnist/data/MNIST/raw/t10k-labels-idx1-ubyte.gz",
            "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", 4542,
            "mnist/t10k-labels-idx1-ubyte.gz", "MNIST test labels (idx1, gzip)"),
    _source("mnist_train_labels", "mnist/data/MNIST/raw/train-labels-idx1-ubyte.gz",
            "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", 28881,
            "mnist/train-labels-idx1-ubyte.gz", "MNIST training labels (idx1, gzip)"),
    _source("mnist_train_images", "mnist/data/MNIST/raw/train-images-idx3-ubyte.gz", None, None,
            "mnist/train-images-idx3-ubyte.gz", "MNIST training images, 60000 x 28 x 28 (idx3, gzip)",
            git_blob="b50e4b6bccdebde3d57f575c7fbeb24bec277f10",
            md5="f68b3c2dcbeaaa9fbdd348bbdeb94873"),           # torchvision's md5 of LeCun's file
    _source("pathmnist_ri", "pathmnist/RI.mat", None, None, "pathmnist/RI.mat",
            "PathMNIST region covariances: a MATLAB cell array of 9 x 9 SPD matrices (v5 .mat)",
            git_blob="2d7e8137ccf517303b4cd6290d5c834b9e05ece0"),
    ("cifar10_python", Source(
        "cifar10_python", "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz", None, None,
        "cifar10/cifar-10-python.tar.gz",
        "CIFAR-10, python version: data_batch_1..5 and test_batch (pickles) in a tar.gz",
        md5="c58f30108f718f92721af3b95e74349a", mirror_env=CIFAR10_MIRROR_ENV)),
    _source("wordnet_features", "hsp_le/features.xlsx",
            "c5bfd7645833c830036feaf30371d865462b970ef41fff6ef7e5036181a2c127", 46373,
            "hsp_le/features.xlsx", "WordNet mammals: one row of features per node"),
    _source("wordnet_poincare", "hsp_le/poincare_points.xlsx",
            "38c502f7bd968c74ecbd0ec83aed4de2c5ce575439da8756638616c34aa2f0c9", 39076,
            "hsp_le/poincare_points.xlsx", "WordNet mammals: 2-D Poincaré-disk embedding per node"),
    _source("wordnet_names", "hsp_le/names.xlsx",
            "5fecca83fae954210db25063553c51f465e25ee39655fcee4353319da6b1c5f1", 19696,
            "hsp_le/names.xlsx", "WordNet mammals: node names"),
    # ---- MovieLens-1M (LRMCGrass_MovieLens) ----
    _source("movielens_ratings", "ml_1m/ratings.dat", None, None, "ml_1m/ratings.dat",
            "MovieLens-1M ratings: UserID::MovieID::Rating::Timestamp per line (GroupLens ml-1m.zip "
            "holds the same file)", git_blob="77a7c4b150f588c23bb9e1f068aa996c0b413695"),
])


def source(name: str) -> Source:
    """The source called ``name``; a clear error naming the known ones otherwise."""
    try:
        return SOURCES[name]
    except KeyError:
        raise KeyError(f"unknown raw-data source {name!r}; allowed: {', '.join(SOURCES)}") from None


def _how_to(src: Source, dest: Path) -> str:
    where = (f"a copy of the anchors' data/ folder, holding {src.subpath}" if src.mirror_env == MIRROR_ENV
             else f"a folder holding {Path(src.subpath).name}")
    return (f"To provide it offline, set {src.mirror_env}"
            + (" (or the config key `anchors.mirror`)" if src.mirror_env == MIRROR_ENV else "")
            + f" to {where}, or place the file at {dest}. Expected {src.expected()}, "
            f"source {src.url}.")


def _env_folder(variable: str) -> Path | None:
    value = os.environ.get(variable, "").strip()
    return Path(value).expanduser() if value else None


def _mirrors(mirror, src: Source) -> list[Path]:
    """The folders searched for ``src``: ``mirror`` (if given), then its environment variable's."""
    folders = [Path(mirror).expanduser()] if mirror is not None else []
    env = _env_folder(src.mirror_env)
    return folders + ([env] if env is not None and env not in folders else [])


def _in_folder(folder: Path, src: Source) -> Path | None:
    """``<folder>/<subpath>``, else ``<folder>/<file name>``, whichever exists."""
    for cand in (folder / src.subpath, folder / Path(src.subpath).name):
        if cand.is_file():
            return cand
    return None


def find_in_mirror(name: str, mirror: str | os.PathLike | None = None) -> Path | None:
    """The mirror copy of source ``name`` (``<mirror>/<subpath>`` or ``<mirror>/<file name>``,
    mirror: the argument, then the source's environment variable) if one exists, else None.
    Not verified: see :func:`verified`."""
    src = source(name)
    for folder in _mirrors(mirror, src):
        found = _in_folder(folder, src)
        if found is not None:
            return found
    return None


def locate(name: str, cache_path: str | os.PathLike | None = None,
           mirror: str | os.PathLike | None = None) -> Path | None:
    """A copy of source ``name`` already on this machine: ``cache_path`` if it exists, else the
    mirror copy (:func:`find_in_mirror`); None if neither. No network access, no checksum (the
    fetch and read steps verify)."""
    if cache_path is not None and Path(cache_path).is_file():
        return Path(cache_path)
    return find_in_mirror(name, mirror)


def how_to_get(name: str) -> str:
    """One line: how to provide source ``name`` (its mirror variable, or internet)."""
    src = source(name)
    return f"set {src.mirror_env}=<dir> or run with internet"


@functools.lru_cache(maxsize=None)
def _host_reachable(host: str, port: int, timeout: float) -> bool:
    try:
        socket.create_connection((host, port), timeout=timeout).close()
        return True
    except OSError:
        return False


def reachable(name: str, timeout: float = 3.0) -> bool:
    """Whether the host of source ``name``'s URL accepts a TCP connection within ``timeout``
    seconds (no request is sent; one probe per host and process)."""
    return url_reachable(source(name).url, timeout)


def url_reachable(url: str, timeout: float = 3.0) -> bool:
    """Whether the host of ``url`` accepts a TCP connection within ``timeout`` seconds (one
    probe per host and process)."""
    parts = urllib.parse.urlsplit(url)
    return _host_reachable(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80),
                           timeout)


def find_all_in_mirror(names, what: str) -> list[Path]:
    """The mirror copies of the sources ``names`` (a problem's ``find_raw_inputs``); raises
    FileNotFoundError naming ``what`` and the mirror variable when one is missing."""
    found = [find_in_mirror(n) for n in names]
    if None in found:
        missing = [n for n, f in zip(names, found) if f is None]
        envs = sorted({source(n).mirror_env for n in missing})
        raise FileNotFoundError(f"{what}: set {' or '.join(envs)} to a folder holding "
                                f"{', '.join(source(n).subpath for n in missing)} (not found)")
    return found


def _in_mirror(path: Path) -> bool:
    """Whether ``path`` lies in a mirror folder named by an environment variable (never deleted)."""
    for variable in {s.mirror_env for s in SOURCES.values()}:
        folder = _env_folder(variable)
        if folder is None:
            continue
        try:
            path.resolve().relative_to(folder.resolve())
            return True
        except (ValueError, OSError):
            continue
    return False


def _bad(src: Source, path: Path) -> tuple[str, str, str] | None:
    """The first pinned checksum (then the size) the file at ``path`` does not match, else None."""
    wrong = mismatches(digests(path), src.pins)
    if not wrong and src.size is not None and path.stat().st_size != src.size:
        wrong = [("size", str(src.size), str(path.stat().st_size))]
    return wrong[0] if wrong else None


def verified(name: str, path: str | os.PathLike) -> Path:
    """``path`` if it holds source ``name`` (every pinned checksum), checked each time a
    generator reads it. Another content (a truncated, altered or stale copy) raises
    :class:`ChecksumMismatchError`; the file is deleted unless it lies in a mirror."""
    src = source(name)
    path = Path(path)
    try:
        bad = _bad(src, path)
    except OSError as exc:
        raise DataUnavailableError(f"cannot read {path} ({name}): {exc.strerror or exc}; "
                                   + _how_to(src, path)) from None
    if bad is None:
        return path
    kind, expected, actual = bad
    size = path.stat().st_size
    deleted = not _in_mirror(path)
    if deleted:
        path.unlink()
    raise ChecksumMismatchError(
        f"{path} ({name}) has {kind} {actual} ({size} bytes), expected {expected}: "
        f"a truncated or altered copy; "
        + ("it was deleted and not used; rerun the workflow to fetch it again. " if deleted else
           f"it lies in the mirror ${src.mirror_env} and was not used; replace it with a good copy. ")
        + _how_to(src, path), expected=expected, actual=actual, source=str(path))


def _copy_verified(src: Source, origin: Path, dest: Path) -> Path:
    """Copy ``origin`` next to ``dest`` under a temporary name, check the pins, rename."""
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, open(origin, "rb") as inp:
            shutil.copyfileobj(inp, out)
        bad = _bad(src, tmp)
        if bad is not None:
            kind, expected, actual = bad
            raise ChecksumMismatchError(
                f"mirror copy {origin} ({src.name}) has {kind} {actual}, expected {expected}; "
                f"it was not used. " + _how_to(src, dest),
                expected=expected, actual=actual, source=str(origin))
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            tmp.unlink()
    return dest


def _pooch_hash(src: Source) -> str | None:
    """The checksum pooch checks while downloading: sha256, else md5, else none (the git blob
    id is checked after)."""
    if src.sha256:
        return f"sha256:{src.sha256}"
    return f"md5:{src.md5}" if src.md5 else None


def fetch(name: str, dest: str | os.PathLike, mirror: str | os.PathLike | None = None) -> Path:
    """A verified copy of source ``name`` at ``dest``: the file already there if it matches
    every pin (a wrong one is deleted with a warning), else copied from a mirror (``mirror``,
    then the source's environment variable) if one holds the file, else downloaded with pooch
    (hash-checked, short timeouts) and checked against every pin.

    Raises ChecksumMismatchError (a mirror or downloaded copy with a wrong checksum) or
    DataUnavailableError (no copy anywhere; the message says how to provide one)."""
    src = source(name)
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    notes = []
    if dest.is_file():
        bad = _bad(src, dest)
        if bad is None:
            return dest
        dest.unlink()
        msg = f"existing {dest} had {bad[0]} {bad[2]}, expected {bad[1]}; it was deleted"
        warnings.warn(msg, RuntimeWarning, stacklevel=2)
        notes.append(msg + ".")
    for folder in _mirrors(mirror, src):
        origin = _in_folder(folder, src)
        if origin is not None:
            return _copy_verified(src, origin, dest)
        notes.append(f"mirror {folder} has no {src.subpath}.")

    import pooch
    import requests

    try:
        out = Path(pooch.retrieve(src.url, known_hash=_pooch_hash(src), fname=dest.name,
                                  path=dest.parent,
                                  downloader=pooch.HTTPDownloader(progressbar=False,
                                                                  timeout=_DOWNLOAD_TIMEOUT)))
    except ValueError as exc:              # pooch: hash mismatch, the download already deleted
        raise ChecksumMismatchError(f"download of {src.url} ({name}) failed verification: {exc}",
                                    expected=src.expected(), actual=None, source=src.url) from exc
    except (requests.exceptions.RequestException, OSError) as exc:
        raise DataUnavailableError(
            f"could not obtain {name}: download from {src.url} failed "
            f"({type(exc).__name__}: {exc}). " + " ".join(notes) + " " + _how_to(src, dest)) from exc
    bad = _bad(src, out)                   # the pins pooch did not check (the git blob id)
    if bad is not None:
        out.unlink()
        kind, expected, actual = bad
        raise ChecksumMismatchError(
            f"download of {src.url} ({name}) has {kind} {actual}, expected {expected}; it was "
            f"deleted and not used. " + _how_to(src, dest),
            expected=expected, actual=actual, source=src.url)
    return out

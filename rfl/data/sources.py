"""Pinned raw-data sources: the data files of the authors' own code for the newer version of
the RFedAGS paper (the zhenwei-huang/RFedAGS repository at one commit).

A problem reads raw files by name (``Problem.raw_inputs``); every name here is one
:class:`Source`: a pinned URL, its sha256 and size, and where it lies in a local mirror
folder. :func:`fetch` returns a verified copy in a cache folder, taken from (in this order) the
cache itself, the mirror (``mirror`` argument, the config key ``anchors.mirror``, or the
environment variable ``RFL_ANCHORS_MIRROR``) or a download with pooch; :func:`verified`
checks a file again when a generator reads it. A file with the wrong sha256 is never parsed:
in the cache it is deleted, in the mirror it is left alone and refused.

The School data keep their own module (``rfl.data.school``), with the same errors.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from rfl.data.school import ChecksumMismatchError, DataUnavailableError, sha256_of

__all__ = ["Source", "SOURCES", "MIRROR_ENV", "fetch", "verified", "find_in_mirror", "find_all_in_mirror",
           "ChecksumMismatchError", "DataUnavailableError"]

#: environment variable naming the mirror folder (a copy of the anchors' data/ folder)
MIRROR_ENV = "RFL_ANCHORS_MIRROR"
_COMMIT = "a07b5576a6b9b8b8ea05eb38fba23fc076e8ac8a"
_PREFIX = f"https://raw.githubusercontent.com/zhenwei-huang/RFedAGS/{_COMMIT}/RFedAGS/data/"
_DOWNLOAD_TIMEOUT = (10, 60)


@dataclass(frozen=True)
class Source:
    """One pinned raw file: ``url``, ``sha256``, ``size`` (bytes) and ``subpath``, its path
    under the mirror folder and under the cache folder."""

    name: str
    url: str
    sha256: str
    size: int
    subpath: str
    description: str = ""


def _source(name, upstream, sha256, size, subpath, description):
    return name, Source(name, _PREFIX + upstream, sha256, size, subpath, description)


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
    _source("wordnet_features", "hsp_le/features.xlsx",
            "c5bfd7645833c830036feaf30371d865462b970ef41fff6ef7e5036181a2c127", 46373,
            "hsp_le/features.xlsx", "WordNet mammals: one row of features per node"),
    _source("wordnet_poincare", "hsp_le/poincare_points.xlsx",
            "38c502f7bd968c74ecbd0ec83aed4de2c5ce575439da8756638616c34aa2f0c9", 39076,
            "hsp_le/poincare_points.xlsx", "WordNet mammals: 2-D Poincaré-disk embedding per node"),
    _source("wordnet_names", "hsp_le/names.xlsx",
            "5fecca83fae954210db25063553c51f465e25ee39655fcee4353319da6b1c5f1", 19696,
            "hsp_le/names.xlsx", "WordNet mammals: node names"),
])


def source(name: str) -> Source:
    """The source called ``name``; a clear error naming the known ones otherwise."""
    try:
        return SOURCES[name]
    except KeyError:
        raise KeyError(f"unknown raw-data source {name!r}; allowed: {', '.join(SOURCES)}") from None


def _how_to(src: Source, dest: Path) -> str:
    return (f"To provide it offline, set {MIRROR_ENV} (or the config key `anchors.mirror`) to a "
            f"folder holding {src.subpath} (a copy of the anchors' data/ folder), or place the "
            f"file at {dest}. Expected sha256 {src.sha256} ({src.size} bytes), source {src.url}.")


def _mirror(mirror) -> Path | None:
    if mirror is None:
        mirror = os.environ.get(MIRROR_ENV, "").strip() or None
    return None if mirror is None else Path(mirror).expanduser()


def find_in_mirror(name: str, mirror: str | os.PathLike | None = None) -> Path | None:
    """``<mirror>/<subpath>`` of source ``name`` if it exists (mirror: argument, else
    $RFL_ANCHORS_MIRROR), else None. Not verified: see :func:`verified`."""
    folder = _mirror(mirror)
    if folder is None:
        return None
    path = folder / source(name).subpath
    return path if path.is_file() else None


def find_all_in_mirror(names, what: str) -> list[Path]:
    """The mirror copies of the sources ``names`` (a problem's ``find_raw_inputs``); raises
    FileNotFoundError naming ``what`` and the mirror variable when one is missing."""
    found = [find_in_mirror(n) for n in names]
    if None in found:
        raise FileNotFoundError(f"{what}: set {MIRROR_ENV} to a copy of the anchors' data/ folder")
    return found


def _in_mirror(path: Path) -> bool:
    folder = _mirror(None)
    if folder is None:
        return False
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except (ValueError, OSError):
        return False


def verified(name: str, path: str | os.PathLike) -> Path:
    """``path`` if it holds source ``name`` (its pinned sha256), checked each time a generator
    reads it. Another sha256 (a truncated, altered or stale copy) raises
    :class:`ChecksumMismatchError`; the file is deleted unless it lies in the mirror."""
    src = source(name)
    path = Path(path)
    try:
        actual = sha256_of(path)
    except OSError as exc:
        raise DataUnavailableError(f"cannot read {path} ({name}): {exc.strerror or exc}; "
                                   + _how_to(src, path)) from None
    if actual == src.sha256:
        return path
    size = path.stat().st_size
    deleted = not _in_mirror(path)
    if deleted:
        path.unlink()
    raise ChecksumMismatchError(
        f"{path} ({name}) has sha256 {actual} ({size} bytes), expected {src.sha256} "
        f"({src.size} bytes): a truncated or altered copy; "
        + ("it was deleted and not used; rerun the workflow to fetch it again. " if deleted else
           f"it lies in the mirror ${MIRROR_ENV} and was not used; replace it with a good copy. ")
        + _how_to(src, path), expected=src.sha256, actual=actual, source=str(path))


def _copy_verified(src: Source, origin: Path, dest: Path) -> Path:
    """Copy ``origin`` next to ``dest`` under a temporary name, check the sha256, rename."""
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, open(origin, "rb") as inp:
            shutil.copyfileobj(inp, out)
        actual = sha256_of(tmp)
        if actual != src.sha256:
            raise ChecksumMismatchError(
                f"mirror copy {origin} ({src.name}) has sha256 {actual}, expected {src.sha256}; "
                f"it was not used. " + _how_to(src, dest),
                expected=src.sha256, actual=actual, source=str(origin))
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            tmp.unlink()
    return dest


def fetch(name: str, dest: str | os.PathLike, mirror: str | os.PathLike | None = None) -> Path:
    """A verified copy of source ``name`` at ``dest``: the file already there if its sha256 is
    right (a wrong one is deleted with a warning), else copied from the mirror (``mirror``,
    else $RFL_ANCHORS_MIRROR) if it holds the file, else downloaded with pooch (hash-checked,
    short timeouts).

    Raises ChecksumMismatchError (a mirror or downloaded copy with the wrong sha256) or
    DataUnavailableError (no copy anywhere; the message says how to provide one)."""
    src = source(name)
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    notes = []
    if dest.is_file():
        actual = sha256_of(dest)
        if actual == src.sha256:
            return dest
        dest.unlink()
        msg = f"existing {dest} had sha256 {actual}, expected {src.sha256}; it was deleted"
        warnings.warn(msg, RuntimeWarning, stacklevel=2)
        notes.append(msg + ".")
    folder = _mirror(mirror)
    if folder is not None:
        origin = folder / src.subpath
        if origin.is_file():
            return _copy_verified(src, origin, dest)
        notes.append(f"mirror {folder} has no {src.subpath}.")

    import pooch
    import requests

    try:
        out = pooch.retrieve(src.url, known_hash=f"sha256:{src.sha256}", fname=dest.name,
                             path=dest.parent,
                             downloader=pooch.HTTPDownloader(progressbar=False,
                                                             timeout=_DOWNLOAD_TIMEOUT))
        return Path(out)
    except ValueError as exc:              # pooch: hash mismatch, the download already deleted
        raise ChecksumMismatchError(f"download of {src.url} ({name}) failed verification: {exc}",
                                    expected=src.sha256, actual=None, source=src.url) from exc
    except (requests.exceptions.RequestException, OSError) as exc:
        raise DataUnavailableError(
            f"could not obtain {name}: download from {src.url} failed "
            f"({type(exc).__name__}: {exc}). " + " ".join(notes) + " " + _how_to(src, dest)) from exc

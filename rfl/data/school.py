"""School (ILEA) data for the real-world experiment of the RFedAGS paper (Section 5.2).

Data: the Inner London Education Authority exam records (Goldstein 1991):
15362 students in 139 secondary schools, one regression task per school, the
target is the exam score. The pinned URL and sha256 are below, the fixed-width
record format in :func:`parse_ilea` and the 28-feature encoding in
:func:`encode_features` (after the PROVENANCE.md that accompanies a mirror copy,
its section 1 cited below); the file used is ``ILEA567.DAT``. The data files are
never copied into this repository: :func:`fetch_ilea` places a verified copy in a
caller-chosen directory, :func:`locate` says whether one is on this machine.

Pipeline::

    path = fetch_ilea(dest_dir, mirror=None)      # verified ILEA567.DAT
    records = parse_ilea(path)                    # dict of int arrays, length 15362
    X, y, school = encode_features(records)       # (15362, 28), (15362,), (15362,)
    split = split_school(X, y, school, rng=np.random.default_rng(seed))
    save_school_split("split.npz", split)

Seeded school-to-agent rule (the paper only says "S = 6 and N = 23 (implying
that one of the schools is ignored)"; it names neither the dropped school nor
the mapping, so this rule is our choice). ``split_school`` draws from ``rng``
in exactly this order:

1. ``perm = rng.permutation(U)`` over the U distinct school ids sorted
   ascending (U = 139 for the real data), giving ``order = schools[perm]``.
   The first ``S * N`` schools of ``order`` are dealt to agents in order:
   agent ``s`` (0-based) holds task ``j`` = school ``order[s * N + j]``
   (agent 0 gets ``order[0:23]``, agent 1 ``order[23:46]``, ...). The
   remaining ``U - S * N`` schools (for the paper, the single school
   ``order[138]``) are dropped.
2. Then, for the kept schools in (agent, task) order, ``p = rng.permutation(n)``
   over that school's n students (in file order); the students at positions
   ``p[:n_train]`` go to training and ``p[n_train:]`` to testing, with
   ``n_train = min(floor(train_fraction * n + 0.5), n - 1)`` (round half up;
   for 0.8 this equals Python's ``round(0.8 * n)`` because ``0.8 n`` is never
   a tie), so every kept school has at least one test student. Within a task,
   rows are stored in ascending original (file) order.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = [
    "ILEA_URL",
    "ILEA_SHA256",
    "ILEA_FILENAME",
    "ILEA_N_STUDENTS",
    "ILEA_N_SCHOOLS",
    "N_FEATURES",
    "MIRROR_ENV",
    "DataUnavailableError",
    "ChecksumMismatchError",
    "fetch_ilea",
    "locate",
    "how_to_get",
    "verified_ilea",
    "parse_ilea",
    "encode_features",
    "load_school",
    "split_school",
    "save_school_split",
    "load_school_split",
    "unpad",
    "nmse",
]

#: Pinned raw GitHub URL of ILEA567.DAT (PROVENANCE.md section 1, SheffieldML/GPmat).
ILEA_URL = (
    "https://raw.githubusercontent.com/SheffieldML/GPmat/"
    "4b5914a38ecbad9fb7a13a3392970bfc28c9d911/datasets/data/ILEA567.DAT"
)
#: sha256 of ILEA567.DAT (276515 bytes), PROVENANCE.md.
ILEA_SHA256 = "ceb04bd41d5c15b2040213b10da19abcbdcbc6137a9a02d5cb4cd0c561ca04b8"
ILEA_FILENAME = "ILEA567.DAT"
ILEA_N_STUDENTS = 15362
ILEA_N_SCHOOLS = 139
#: Feature dimension m = 28 (paper Section 5.2; 27 attributes + 1 bias).
N_FEATURES = 28
#: Environment variable naming a local mirror directory holding ILEA567.DAT.
MIRROR_ENV = "RFL_SCHOOL_MIRROR"

# Connect / read timeouts (seconds) for the download, so that an offline
# machine fails fast instead of hanging.
_DOWNLOAD_TIMEOUT = (10, 60)


class DataUnavailableError(RuntimeError):
    """A data file (ILEA567.DAT here, a pinned source in ``rfl.data.sources``) is neither in the
    cache, nor in a mirror, nor downloadable; the message says how to provide it."""


class ChecksumMismatchError(ValueError):
    """A candidate ILEA567.DAT has the wrong sha256; it was deleted, never parsed."""

    def __init__(self, message: str, *, expected: str, actual: str | None, source: str):
        super().__init__(message)
        self.expected = expected
        self.actual = actual
        self.source = source


# ---------------------------------------------------------------------------
# Download / mirror
# ---------------------------------------------------------------------------


def sha256_of(path: Path) -> str:
    """The sha256 hex digest of the file at ``path`` (read in 1 MiB pieces); every pinned
    source (School here, the anchors' files in ``rfl.data.sources``) is checked with it."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _how_to(dest: Path) -> str:
    return (
        f"To provide the School data offline, either set the environment variable "
        f"{MIRROR_ENV} (or the config key `school.mirror`) to a directory holding "
        f"{ILEA_FILENAME} (as <dir>/{ILEA_FILENAME} or <dir>/raw/{ILEA_FILENAME}), "
        f"or place the file at {dest}. "
        f"Expected sha256: {ILEA_SHA256} (276515 bytes; source {ILEA_URL})."
    )


def _find_in_mirror(mirror: Path) -> Path | None:
    for cand in (mirror / ILEA_FILENAME, mirror / "raw" / ILEA_FILENAME):
        if cand.is_file():
            return cand
    return None


def locate(cache_path: str | os.PathLike | None = None,
           mirror: str | os.PathLike | None = None) -> Path | None:
    """A copy of ILEA567.DAT already on this machine, looked for as :func:`fetch_ilea` does:
    ``cache_path`` if it exists, else in the mirror (``mirror``, else $RFL_SCHOOL_MIRROR);
    None if neither. No network access, no checksum (the fetch and data steps verify)."""
    if cache_path is not None and Path(cache_path).is_file():
        return Path(cache_path)
    if mirror is None:
        mirror = os.environ.get(MIRROR_ENV, "").strip() or None
    return None if mirror is None else _find_in_mirror(Path(mirror).expanduser())


def how_to_get() -> str:
    """One line: how to provide ILEA567.DAT (as ``rfl.data.sources.how_to_get`` says it)."""
    return f"set {MIRROR_ENV}=<dir> or run with internet"


def _copy_from_mirror(src: Path, dest: Path) -> Path:
    """Copy src to a temporary file next to dest, verify sha256, os.replace."""
    fd, tmp_name = tempfile.mkstemp(
        dir=dest.parent, prefix=f".{ILEA_FILENAME}.", suffix=".part"
    )
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, open(src, "rb") as inp:
            shutil.copyfileobj(inp, out)
            out.flush()
            os.fsync(out.fileno())
        actual = sha256_of(tmp)
        if actual != ILEA_SHA256:
            raise ChecksumMismatchError(
                f"Mirror copy {src} has sha256 {actual}, expected {ILEA_SHA256}; "
                f"the copy was deleted and not used. " + _how_to(dest),
                expected=ILEA_SHA256,
                actual=actual,
                source=str(src),
            )
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; make the cached copy readable
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            tmp.unlink()
    return dest


def _download(url: str, dest: Path) -> Path:
    """Download with pooch (verifies sha256, writes atomically); fail fast offline."""
    import pooch

    downloader = pooch.HTTPDownloader(progressbar=False, timeout=_DOWNLOAD_TIMEOUT)
    out = pooch.retrieve(
        url,
        known_hash=f"sha256:{ILEA_SHA256}",
        fname=dest.name,
        path=dest.parent,
        downloader=downloader,
    )
    return Path(out)


def fetch_ilea(dest_dir: str | os.PathLike, mirror: str | os.PathLike | None = None) -> Path:
    """Return a sha256-verified local copy ``dest_dir/ILEA567.DAT`` (PROVENANCE.md section 1).

    Order: (1) an existing ``dest_dir/ILEA567.DAT`` with the right sha256 is
    returned as is (one with a wrong sha256 is deleted with a warning naming
    both hashes, and the next sources are tried); (2) if a mirror directory is
    given (``mirror``, else the environment variable ``RFL_SCHOOL_MIRROR``) and
    holds ``<mirror>/ILEA567.DAT`` or ``<mirror>/raw/ILEA567.DAT``, it is copied
    to a temporary file in ``dest_dir``, verified and renamed with
    ``os.replace``; (3) otherwise it is downloaded from :data:`ILEA_URL` with
    ``pooch.retrieve`` (hash-checked, short timeouts).

    Raises
    ------
    ChecksumMismatchError
        A mirror or downloaded copy has the wrong sha256 (the message names
        both hashes; the bad copy is deleted and never parsed).
    DataUnavailableError
        No valid local copy, no usable mirror and the download failed; the
        message says how to provide the file.
    """
    dest_dir = Path(dest_dir)
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / ILEA_FILENAME

    notes: list[str] = []
    if dest.is_file():
        actual = sha256_of(dest)
        if actual == ILEA_SHA256:
            return dest
        dest.unlink()
        msg = (
            f"Existing {dest} had sha256 {actual}, expected {ILEA_SHA256}; "
            f"it was deleted."
        )
        warnings.warn(msg, RuntimeWarning, stacklevel=2)
        notes.append(msg)

    if mirror is None:
        env = os.environ.get(MIRROR_ENV, "").strip()
        mirror = env or None
    if mirror is not None:
        mirror = Path(mirror).expanduser()
        src = _find_in_mirror(mirror)
        if src is not None:
            return _copy_from_mirror(src, dest)
        notes.append(
            f"Mirror directory {mirror} holds neither {ILEA_FILENAME} nor raw/{ILEA_FILENAME}."
        )

    import requests

    try:
        return _download(ILEA_URL, dest)
    except ValueError as exc:  # pooch: hash mismatch (downloaded temp file already deleted)
        raise ChecksumMismatchError(
            f"Download of {ILEA_URL} failed verification: {exc}",
            expected=ILEA_SHA256,
            actual=None,
            source=ILEA_URL,
        ) from exc
    except (requests.exceptions.RequestException, OSError) as exc:
        if dest.exists() and sha256_of(dest) != ILEA_SHA256:
            dest.unlink()
        detail = " ".join(notes)
        raise DataUnavailableError(
            f"Could not obtain {ILEA_FILENAME}: download from {ILEA_URL} failed "
            f"({type(exc).__name__}: {exc}). "
            + (detail + " " if detail else "")
            + _how_to(dest)
        ) from exc


def _in_mirror(path: Path) -> bool:
    """Whether ``path`` lies in the mirror named by $RFL_SCHOOL_MIRROR (never deleted here)."""
    mirror = os.environ.get(MIRROR_ENV, "").strip()
    if not mirror:
        return False
    try:
        path.resolve().relative_to(Path(mirror).expanduser().resolve())
        return True
    except (ValueError, OSError):
        return False


def verified_ilea(path: str | os.PathLike) -> Path:
    """``path`` if it holds the pinned ILEA567.DAT (sha256 :data:`ILEA_SHA256`).

    A file with another sha256 (a truncated, edited or stale copy) is deleted, unless it lies
    in the mirror directory ($RFL_SCHOOL_MIRROR), and :class:`ChecksumMismatchError` says how
    to get a good copy: the data step never parses it.
    """
    path = Path(path)
    try:
        actual = sha256_of(path)
    except OSError as exc:
        raise DataUnavailableError(f"cannot read {path}: {exc.strerror or exc}; "
                                   + _how_to(path)) from None
    if actual == ILEA_SHA256:
        return path
    size = path.stat().st_size
    deleted = not _in_mirror(path)
    if deleted:
        path.unlink()
    raise ChecksumMismatchError(
        f"{path} has sha256 {actual} ({size} bytes), expected {ILEA_SHA256} (276515 bytes): "
        f"a truncated or altered copy; "
        + ("it was deleted and not used; rerun the workflow to fetch it again, or set "
           f"{MIRROR_ENV} to a directory holding a good {ILEA_FILENAME}" if deleted else
           f"it lies in the mirror ${MIRROR_ENV} and was not used; replace it with a good copy"),
        expected=ILEA_SHA256, actual=actual, source=str(path))


# ---------------------------------------------------------------------------
# Parsing and encoding
# ---------------------------------------------------------------------------

#: Fixed-width fields (0-based slice, name, allowed range), PROVENANCE.md section 1.
_FIELDS: tuple[tuple[slice, str, int, int], ...] = (
    (slice(0, 1), "year", 1, 3),
    (slice(1, 4), "school", 1, 139),
    (slice(4, 6), "score", 0, 99),
    (slice(6, 8), "fsm", 0, 99),
    (slice(8, 10), "vr1", 0, 99),
    (slice(10, 11), "gender", 0, 1),
    (slice(11, 12), "vrband", 0, 3),  # 0 = undocumented/missing (15 students)
    (slice(12, 14), "ethnic", 1, 11),
    (slice(14, 15), "school_gender", 1, 3),
    (slice(15, 16), "denomination", 1, 3),
)
_LINE_WIDTH = 16


def parse_ilea(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Parse the fixed-width ILEA567.DAT records (PROVENANCE.md section 1).

    Each line holds exactly 16 columns (CRLF line ends, the last line LF):
    year(1) school(2-4) score(5-6) fsm(7-8) vr1(9-10) gender(11) vrband(12)
    ethnic(13-14) school_gender(15) denomination(16), right-aligned fields
    padded with spaces.

    Returns a dict with keys ``year, school, score, fsm, vr1, gender, vrband,
    ethnic, school_gender, denomination``, each an int64 array of shape
    ``(15362,)`` in file order.

    Raises ValueError (with the 1-based line number) for a wrong line width, a
    non-integer or out-of-range field, a row count other than 15362, or a
    school column that is not 139 contiguous schools 1..139 in order.
    """
    path = Path(path)
    raw = path.read_bytes()
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not an ASCII file ({exc})") from exc
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # trailing newline
    n = len(lines)
    if n != ILEA_N_STUDENTS:
        raise ValueError(f"{path}: expected {ILEA_N_STUDENTS} records, found {n} lines")
    out = {name: np.empty(n, dtype=np.int64) for _, name, _, _ in _FIELDS}
    for i, line in enumerate(lines):
        if line.endswith("\r"):
            line = line[:-1]
        if len(line) != _LINE_WIDTH:
            raise ValueError(
                f"{path}, line {i + 1}: expected {_LINE_WIDTH} fixed-width columns, "
                f"got {len(line)} characters: {line!r}"
            )
        for sl, name, lo, hi in _FIELDS:
            field = line[sl]
            s = field.strip()
            if not s.isdigit():
                raise ValueError(
                    f"{path}, line {i + 1}: field {name!r} (columns {sl.start + 1}-{sl.stop}) "
                    f"is not a non-negative integer: {field!r}"
                )
            v = int(s)
            if not lo <= v <= hi:
                raise ValueError(
                    f"{path}, line {i + 1}: field {name!r} = {v} outside [{lo}, {hi}]"
                )
            out[name][i] = v
    school = out["school"]
    uniq = np.unique(school)
    if uniq.size != ILEA_N_SCHOOLS or not np.array_equal(uniq, np.arange(1, ILEA_N_SCHOOLS + 1)):
        raise ValueError(
            f"{path}: expected {ILEA_N_SCHOOLS} schools coded 1..{ILEA_N_SCHOOLS}, "
            f"found {uniq.size} distinct codes"
        )
    if np.any(np.diff(school) < 0) or np.any(np.diff(school) > 1):
        bad = int(np.flatnonzero((np.diff(school) < 0) | (np.diff(school) > 1))[0]) + 2
        raise ValueError(
            f"{path}, line {bad}: rows are not grouped by school in order 1..{ILEA_N_SCHOOLS}"
        )
    return out


def _one_hot(codes: np.ndarray, values: Sequence[int]) -> np.ndarray:
    return (codes[:, None] == np.asarray(values)[None, :]).astype(np.float64)


def encode_features(
    records: Mapping[str, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """28-column encoding of PROVENANCE.md section 3 (= ``school_b.mat`` ``x.T``).

    Columns (0-based): 0-2 year one-hot (1985, 1986, 1987); 3 % free school
    meals (raw); 4 % VR band 1 in school (raw); 5-6 gender (female, male);
    7-9 student VR band one-hot for codes 1, 2, 3 (all zero for code 0);
    10-20 ethnic group codes 1..11; 21-23 school gender (mixed, male, female);
    24-26 denomination (maintained, CofE, RC); 27 bias 1. Paper Section 5.2:
    "replace all categorical attributes with binary variables ... m = 28".

    Returns ``X`` (n_students, 28) float64, ``y`` (n_students,) float64 exam
    score, ``school`` (n_students,) int64 school id.
    """
    r = {k: np.asarray(v) for k, v in records.items()}
    n = r["score"].shape[0]
    cols = [
        _one_hot(r["year"], (1, 2, 3)),
        r["fsm"].astype(np.float64)[:, None],
        r["vr1"].astype(np.float64)[:, None],
        _one_hot(r["gender"], (1, 0)),
        _one_hot(r["vrband"], (1, 2, 3)),
        _one_hot(r["ethnic"], range(1, 12)),
        _one_hot(r["school_gender"], (1, 2, 3)),
        _one_hot(r["denomination"], (1, 2, 3)),
        np.ones((n, 1)),
    ]
    X = np.hstack(cols)
    assert X.shape == (n, N_FEATURES)
    y = r["score"].astype(np.float64)
    school = r["school"].astype(np.int64)
    return X, y, school


def load_school(
    dest_dir: str | os.PathLike, mirror: str | os.PathLike | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``encode_features(parse_ilea(fetch_ilea(dest_dir, mirror)))``: X (15362, 28), y, school."""
    return encode_features(parse_ilea(fetch_ilea(dest_dir, mirror)))


# ---------------------------------------------------------------------------
# Federated split (Section 5.2: 80/20 per school, S = 6 agents x N = 23 tasks)
# ---------------------------------------------------------------------------

_SPLIT_KEYS = (
    "X_train", "y_train", "n_train", "idx_train",
    "X_test", "y_test", "n_test", "idx_test",
    "school_ids", "dropped_schools", "train_fraction",
)


def split_school(
    X: np.ndarray,
    y: np.ndarray,
    school: np.ndarray,
    *,
    rng: np.random.Generator | int,
    train_fraction: float = 0.8,
    n_agents: int = 6,
    tasks_per_agent: int = 23,
) -> dict[str, np.ndarray]:
    """Per-school random train/test split and school-to-agent assignment (Section 5.2).

    Uses the seeded rule of the module docstring (``rng`` is a
    ``np.random.Generator``; an int is turned into ``np.random.default_rng(int)``).
    With S = n_agents, N = tasks_per_agent, d = X.shape[1], and d_tr / d_te the
    largest per-task train / test sizes, returns a dict of plain arrays
    (``np.savez``-able without pickle):

    - ``X_train`` (S, N, d_tr, d) float64, ``y_train`` (S, N, d_tr) float64,
      zero padded beyond ``n_train`` (S, N) int64;
    - ``idx_train`` (S, N, d_tr) int64: row indices into X (ascending, -1 padding);
    - ``X_test``, ``y_test``, ``n_test``, ``idx_test``: the same for testing;
    - ``school_ids`` (S, N) int64: school of agent s, task j;
    - ``dropped_schools`` (U - S*N,) int64: schools not used (one for the paper);
    - ``train_fraction``: 0-d float64.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    school = np.asarray(school)
    if X.ndim != 2 or y.shape != (X.shape[0],) or school.shape != (X.shape[0],):
        raise ValueError(
            f"expected X (n, d), y (n,), school (n,); got {X.shape}, {y.shape}, {school.shape}"
        )
    if not 0.0 < train_fraction < 1.0:
        raise ValueError(f"train_fraction must be in (0, 1), got {train_fraction}")
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng)
    S, N = int(n_agents), int(tasks_per_agent)
    schools = np.unique(school)  # sorted ascending
    U = schools.size
    if S * N > U:
        raise ValueError(f"n_agents * tasks_per_agent = {S * N} exceeds the {U} schools")

    # Step 1: school permutation -> agents, dropped.
    order = schools[rng.permutation(U)]
    kept = order[: S * N].reshape(S, N)
    dropped = np.sort(order[S * N:]).astype(np.int64)

    # Step 2: per-school student permutation, in (agent, task) order.
    tr_idx: list[list[np.ndarray]] = []
    te_idx: list[list[np.ndarray]] = []
    for s in range(S):
        tr_row, te_row = [], []
        for j in range(N):
            rows = np.flatnonzero(school == kept[s, j])
            n = rows.size
            if n < 2:
                raise ValueError(f"school {kept[s, j]} has {n} student(s); need >= 2")
            n_tr = min(max(int(math.floor(train_fraction * n + 0.5)), 1), n - 1)
            p = rng.permutation(n)
            tr_row.append(np.sort(rows[p[:n_tr]]))
            te_row.append(np.sort(rows[p[n_tr:]]))
        tr_idx.append(tr_row)
        te_idx.append(te_row)

    def pack(idx: list[list[np.ndarray]]):
        sizes = np.array([[a.size for a in row] for row in idx], dtype=np.int64)
        dmax = int(sizes.max())
        Xp = np.zeros((S, N, dmax, X.shape[1]))
        yp = np.zeros((S, N, dmax))
        ip = np.full((S, N, dmax), -1, dtype=np.int64)
        for s in range(S):
            for j in range(N):
                a = idx[s][j]
                Xp[s, j, : a.size] = X[a]
                yp[s, j, : a.size] = y[a]
                ip[s, j, : a.size] = a
        return Xp, yp, sizes, ip

    X_tr, y_tr, n_tr_, i_tr = pack(tr_idx)
    X_te, y_te, n_te_, i_te = pack(te_idx)
    return {
        "X_train": X_tr, "y_train": y_tr, "n_train": n_tr_, "idx_train": i_tr,
        "X_test": X_te, "y_test": y_te, "n_test": n_te_, "idx_test": i_te,
        "school_ids": kept.astype(np.int64),
        "dropped_schools": dropped,
        "train_fraction": np.array(float(train_fraction)),
    }


def save_school_split(path: str | os.PathLike, split: Mapping[str, Any]) -> Path:
    """Write ``split`` with ``np.savez`` atomically (temp file in the same dir, then os.replace).

    The file is written to exactly ``path`` (no ``.npz`` suffix is appended).
    Object arrays are refused so that :func:`load_school_split` can use
    ``allow_pickle=False``.
    """
    path = Path(path)
    arrays = {k: np.asarray(v) for k, v in split.items()}
    for k, v in arrays.items():
        if v.dtype == object:
            raise ValueError(f"split[{k!r}] is an object array; cannot save without pickle")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def load_school_split(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read a split written by :func:`save_school_split` (``np.load(allow_pickle=False)``)."""
    with np.load(Path(path), allow_pickle=False) as z:
        out = {k: z[k] for k in z.files}
    missing = [k for k in _SPLIT_KEYS if k not in out]
    if missing:
        raise ValueError(f"{path}: not a School split file, missing keys {missing}")
    return out


def unpad(values: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Concatenate the valid entries of a padded (S, N, d_max, ...) array, (agent, task) order.

    ``sizes`` is (S, N) (e.g. ``split["n_test"]``); returns (sizes.sum(), ...).
    """
    values = np.asarray(values)
    sizes = np.asarray(sizes)
    if values.shape[:2] != sizes.shape:
        raise ValueError(f"values {values.shape} and sizes {sizes.shape} disagree")
    parts = [values[s, j, : sizes[s, j]] for s in range(sizes.shape[0]) for j in range(sizes.shape[1])]
    return np.concatenate(parts, axis=0)


def nmse(y_pred: Any, y_true: Any) -> float:
    """Normalised mean squared error of Section 5.2: ``MSE(y_pred, y_true) / var(y_true)``.

    MSE is pooled over all test students of all tasks,
    ``sum_ij sum_k (yhat_ij(k) - y_ij(k))^2 / sum_ij d_ij``, and ``var`` is the
    population variance (``np.var``, ddof=0) of all those true labels. Inputs
    are arrays of any (equal) shape, or sequences of per-task arrays, which are
    flattened and concatenated (use :func:`unpad` for padded splits).
    """

    def flat(a: Any) -> np.ndarray:
        if isinstance(a, (list, tuple)):
            if len(a) == 0:
                return np.empty(0)
            return np.concatenate([np.ravel(np.asarray(t, dtype=np.float64)) for t in a])
        return np.ravel(np.asarray(a, dtype=np.float64))

    p, t = flat(y_pred), flat(y_true)
    if p.shape != t.shape:
        raise ValueError(f"y_pred has {p.size} values, y_true has {t.size}")
    if t.size == 0:
        raise ValueError("nmse of empty arrays")
    var = float(np.var(t))
    if var == 0.0:
        raise ValueError("var(y_true) is zero; NMSE undefined")
    return float(np.mean((p - t) ** 2) / var)

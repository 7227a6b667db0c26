"""Tests for rfl.data.school (School/ILEA data, paper Section 5.2; PROVENANCE.md).

Tests that need the real files look in $RFL_SCHOOL_MIRROR or the default
shared copy ``<repo>/../shared/datasets/school`` and skip when it is absent.
The data files are only ever copied into pytest's tmp_path.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

from rfl.data import school as sch

DEFAULT_SHARED = Path(__file__).resolve().parents[1].parent / "shared/datasets/school"

# Per-school student counts 1..139 (PROVENANCE.md section 1).
COUNTS = [
    200, 91, 95, 212, 40, 57, 47, 113, 160, 182, 215, 113, 25, 34, 110, 123, 103, 182, 107, 137,
    86, 45, 146, 201, 36, 67, 146, 68, 137, 251, 92, 189, 180, 103, 165, 119, 145, 73, 234, 105,
    140, 100, 129, 140, 35, 198, 175, 136, 176, 46, 91, 157, 50, 150, 184, 65, 154, 88, 76, 181,
    74, 168, 94, 131, 181, 48, 64, 175, 46, 62, 140, 249, 81, 116, 30, 22, 109, 57, 74, 81, 150,
    107, 60, 83, 92, 100, 116, 96, 130, 47, 60, 151, 55, 29, 163, 135, 90, 110, 179, 72, 43, 155,
    73, 159, 115, 107, 69, 83, 34, 129, 212, 51, 120, 38, 125, 157, 54, 128, 77, 39, 42, 102, 39,
    97, 96, 97, 185, 64, 112, 232, 31, 59, 238, 215, 151, 28, 79, 72, 23,
]


def _shared_dir() -> Path:
    env = os.environ.get(sch.MIRROR_ENV, "").strip()
    return Path(env) if env else DEFAULT_SHARED


def _sha256_bytes(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


@pytest.fixture(scope="module")
def shared_dir() -> Path:
    return _shared_dir()


@pytest.fixture(scope="module")
def real_dat(shared_dir) -> Path:
    for cand in (shared_dir / "raw" / sch.ILEA_FILENAME, shared_dir / sch.ILEA_FILENAME):
        if cand.is_file():
            return cand
    pytest.skip(f"needs the School data, not found under {shared_dir}: set {sch.MIRROR_ENV} to a "
                f"directory holding {sch.ILEA_FILENAME}")


@pytest.fixture(scope="module")
def real_records(real_dat):
    return sch.parse_ilea(real_dat)


@pytest.fixture
def no_network(monkeypatch):
    """Make every download attempt fail like an offline machine; unset the mirror env."""
    import pooch
    import requests

    calls = []

    def offline(*args, **kwargs):
        calls.append((args, kwargs))
        raise requests.exceptions.ConnectionError("Failed to resolve 'raw.githubusercontent.com'")

    monkeypatch.setattr(pooch, "retrieve", offline)
    monkeypatch.delenv(sch.MIRROR_ENV, raising=False)
    return calls


# ---------------------------------------------------------------------------
# synthetic fixed-width files (parser tests that need no real data)
# ---------------------------------------------------------------------------

_WIDTHS = (
    ("year", 1), ("school", 3), ("score", 2), ("fsm", 2), ("vr1", 2), ("gender", 1),
    ("vrband", 1), ("ethnic", 2), ("school_gender", 1), ("denomination", 1),
)


def _synthetic_records(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = sum(COUNTS)
    school = np.repeat(np.arange(1, 140), COUNTS)
    return {
        "year": rng.integers(1, 4, n),
        "school": school,
        "score": rng.integers(1, 71, n),
        "fsm": rng.integers(8, 92, n),
        "vr1": rng.integers(3, 44, n),
        "gender": rng.integers(0, 2, n),
        "vrband": rng.integers(0, 4, n),
        "ethnic": rng.integers(1, 12, n),
        "school_gender": rng.integers(1, 4, n),
        "denomination": rng.integers(1, 4, n),
    }


def _format_lines(rec) -> list[str]:
    n = len(rec["school"])
    return ["".join(f"{int(rec[k][i]):>{w}d}" for k, w in _WIDTHS) for i in range(n)]


def _write_dat(path: Path, lines: list[str]) -> Path:
    # CRLF line ends except the last line, which ends in LF (as ILEA567.DAT).
    path.write_bytes(("\r\n".join(lines) + "\n").encode("ascii"))
    return path


@pytest.fixture(scope="module")
def synthetic_lines():
    rec = _synthetic_records()
    return rec, _format_lines(rec)


def test_parse_synthetic_roundtrip(tmp_path, synthetic_lines):
    rec, lines = synthetic_lines
    out = sch.parse_ilea(_write_dat(tmp_path / "s.dat", lines))
    assert set(out) == set(rec)
    for k in rec:
        assert out[k].shape == (15362,)
        assert np.issubdtype(out[k].dtype, np.integer)
        np.testing.assert_array_equal(out[k], rec[k], err_msg=k)


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda L: L.__setitem__(5, L[5][:-1]), r"line 6: expected 16 fixed-width columns, got 15"),
        (lambda L: L.__setitem__(7, L[7] + "1"), r"line 8: expected 16 fixed-width columns, got 17"),
        (lambda L: L.__setitem__(9, L[9][:4] + "x1" + L[9][6:]), r"line 10: field 'score'.*not a non-negative integer"),
        (lambda L: L.__setitem__(11, L[11][:12] + "12" + L[11][14:]), r"line 12: field 'ethnic' = 12 outside \[1, 11\]"),
        (lambda L: L.__setitem__(3, ""), r"line 4: expected 16 fixed-width columns, got 0"),
        (lambda L: L.pop(), r"expected 15362 records, found 15361"),
        (lambda L: L.append(L[-1]), r"expected 15362 records, found 15363"),
    ],
    ids=["short-line", "long-line", "non-numeric", "out-of-range", "blank-line", "missing-row", "extra-row"],
)
def test_parse_malformed_raises(tmp_path, synthetic_lines, mutate, match):
    lines = list(synthetic_lines[1])
    mutate(lines)
    with pytest.raises(ValueError, match=match):
        sch.parse_ilea(_write_dat(tmp_path / "bad.dat", lines))


def test_parse_wrong_school_structure(tmp_path, synthetic_lines):
    rec, _ = synthetic_lines
    # only 138 schools: relabel school 139 as 138
    r = dict(rec)
    r["school"] = np.where(rec["school"] == 139, 138, rec["school"])
    with pytest.raises(ValueError, match=r"expected 139 schools coded 1..139, found 138"):
        sch.parse_ilea(_write_dat(tmp_path / "a.dat", _format_lines(r)))
    # 139 schools but not grouped in order (swap first and last line)
    lines = _format_lines(rec)
    lines[0], lines[-1] = lines[-1], lines[0]
    with pytest.raises(ValueError, match=r"not grouped by school"):
        sch.parse_ilea(_write_dat(tmp_path / "b.dat", lines))


def test_parse_non_ascii(tmp_path):
    p = tmp_path / "bin.dat"
    p.write_bytes(b"\xff\xfe" * 10)
    with pytest.raises(ValueError, match="not an ASCII file"):
        sch.parse_ilea(p)


def test_encode_synthetic_structure(synthetic_lines):
    rec, _ = synthetic_lines
    X, y, school = sch.encode_features(rec)
    assert X.shape == (15362, 28) and X.dtype == np.float64
    assert y.shape == (15362,) and y.dtype == np.float64
    np.testing.assert_array_equal(school, rec["school"])
    for lo, hi in [(0, 3), (5, 7), (10, 21), (21, 24), (24, 27)]:
        np.testing.assert_array_equal(X[:, lo:hi].sum(axis=1), 1.0)
    vr_sum = X[:, 7:10].sum(axis=1)
    np.testing.assert_array_equal(vr_sum, (rec["vrband"] != 0).astype(float))
    np.testing.assert_array_equal(X[:, 3], rec["fsm"])
    np.testing.assert_array_equal(X[:, 4], rec["vr1"])
    np.testing.assert_array_equal(X[:, 27], 1.0)


# ---------------------------------------------------------------------------
# real data
# ---------------------------------------------------------------------------


def test_shared_copy_checksum(real_dat):
    assert hashlib.sha256(real_dat.read_bytes()).hexdigest() == sch.ILEA_SHA256


def test_parse_real_counts(real_records):
    r = real_records
    assert set(r) == {"year", "school", "score", "fsm", "vr1", "gender", "vrband",
                      "ethnic", "school_gender", "denomination"}
    assert all(v.shape == (15362,) for v in r.values())
    np.testing.assert_array_equal(np.bincount(r["school"])[1:], COUNTS)
    np.testing.assert_array_equal(np.bincount(r["year"])[1:], [4915, 4514, 5933])
    np.testing.assert_array_equal(np.bincount(r["vrband"]), [15, 2988, 4102, 8257])
    assert r["score"].min() == 1 and r["score"].max() == 70


def test_encoding_reproduces_school_b(real_records, shared_dir):
    scipy_io = pytest.importorskip("scipy.io")
    mat = shared_dir / "argyriou_school_splits" / "school_b.mat"
    if not mat.is_file():
        pytest.skip(f"{mat} not found")
    m = scipy_io.loadmat(mat)
    X, y, school = sch.encode_features(real_records)
    assert m["x"].shape == (28, 15362)
    np.testing.assert_array_equal(X, m["x"].T.astype(np.float64))
    np.testing.assert_array_equal(y, m["y"].ravel().astype(np.float64))
    first_rows = np.flatnonzero(np.r_[True, np.diff(school) != 0]) + 1
    np.testing.assert_array_equal(first_rows, m["task_indexes"].ravel())
    # the 15 students with VR band code 0 have all-zero VR columns
    assert int((X[:, 7:10].sum(axis=1) == 0).sum()) == 15


# ---------------------------------------------------------------------------
# fetch_ilea
# ---------------------------------------------------------------------------


def _assert_only(dest_dir: Path, names: set[str]):
    assert {p.name for p in dest_dir.iterdir()} == names


@pytest.mark.parametrize("layout", ["root", "raw"])
def test_fetch_from_mirror(tmp_path, real_dat, no_network, layout):
    mirror = tmp_path / "mirror"
    sub = mirror if layout == "root" else mirror / "raw"
    sub.mkdir(parents=True)
    (sub / sch.ILEA_FILENAME).write_bytes(real_dat.read_bytes())
    dest_dir = tmp_path / "dest"
    out = sch.fetch_ilea(dest_dir, mirror=mirror)
    assert out == dest_dir / sch.ILEA_FILENAME
    assert hashlib.sha256(out.read_bytes()).hexdigest() == sch.ILEA_SHA256
    _assert_only(dest_dir, {sch.ILEA_FILENAME})  # no temporary files left
    assert no_network == []
    # second call: the verified copy is reused without any mirror or network
    assert sch.fetch_ilea(dest_dir) == out
    assert no_network == []


def test_fetch_mirror_from_env_shared_layout(tmp_path, real_dat, no_network, monkeypatch):
    # RFL_SCHOOL_MIRROR pointing at a shared/datasets/school-like dir (file under raw/)
    mirror = real_dat.parent.parent if real_dat.parent.name == "raw" else real_dat.parent
    monkeypatch.setenv(sch.MIRROR_ENV, str(mirror))
    out = sch.fetch_ilea(tmp_path)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == sch.ILEA_SHA256
    assert no_network == []
    X, y, school = sch.load_school(tmp_path)
    assert X.shape == (15362, 28) and np.unique(school).size == 139


def test_fetch_corrupted_mirror_rejected(tmp_path, no_network, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    shared = _shared_dir() / "raw" / sch.ILEA_FILENAME
    good = shared.read_bytes() if shared.is_file() else b"1  1172418031 1111\r\n" * 10  # any bytes
    bad = bytearray(good)
    bad[4] = ord("9") if bad[4] != ord("9") else ord("8")  # change one exam score digit
    bad = bytes(bad)
    (mirror / sch.ILEA_FILENAME).write_bytes(bad)
    bad_sha = _sha256_bytes(bad)
    assert bad_sha != sch.ILEA_SHA256

    parsed = []
    monkeypatch.setattr(sch, "parse_ilea", lambda p: parsed.append(p))
    dest_dir = tmp_path / "dest"
    with pytest.raises(sch.ChecksumMismatchError) as ei:
        sch.load_school(dest_dir, mirror=mirror)
    msg = str(ei.value)
    assert sch.ILEA_SHA256 in msg and bad_sha in msg
    assert ei.value.expected == sch.ILEA_SHA256 and ei.value.actual == bad_sha
    assert parsed == []  # never parsed
    _assert_only(dest_dir, set())  # deleted from dest, no temporary left
    assert no_network == []  # a bad mirror is an error, not a reason to download


def test_fetch_stale_dest_is_replaced(tmp_path, real_dat, no_network):
    dest_dir = tmp_path / "dest"
    dest_dir.mkdir()
    stale = b"not the ILEA file\n"
    (dest_dir / sch.ILEA_FILENAME).write_bytes(stale)
    with pytest.warns(RuntimeWarning) as rec:
        out = sch.fetch_ilea(dest_dir, mirror=real_dat.parent)
    msg = " ".join(str(w.message) for w in rec)
    assert _sha256_bytes(stale) in msg and sch.ILEA_SHA256 in msg
    assert hashlib.sha256(out.read_bytes()).hexdigest() == sch.ILEA_SHA256
    _assert_only(dest_dir, {sch.ILEA_FILENAME})


@pytest.mark.parametrize("with_empty_mirror", [False, True])
def test_fetch_offline_without_mirror(tmp_path, no_network, with_empty_mirror):
    dest_dir = tmp_path / "dest"
    mirror = None
    if with_empty_mirror:
        mirror = tmp_path / "empty_mirror"
        mirror.mkdir()
    with pytest.raises(sch.DataUnavailableError) as ei:
        sch.fetch_ilea(dest_dir, mirror=mirror)
    msg = str(ei.value)
    assert isinstance(ei.value, RuntimeError)
    for needle in (sch.MIRROR_ENV, "school.mirror", str(dest_dir / sch.ILEA_FILENAME),
                   sch.ILEA_SHA256, "ConnectionError"):
        assert needle in msg, needle
    if with_empty_mirror:
        assert str(mirror) in msg
    assert len(no_network) == 1  # exactly one download attempt, no retries
    _assert_only(dest_dir, set())


def test_fetch_builtin_connection_error(tmp_path, monkeypatch):
    monkeypatch.delenv(sch.MIRROR_ENV, raising=False)

    def boom(url, dest):
        raise ConnectionError("network is unreachable")

    monkeypatch.setattr(sch, "_download", boom)
    with pytest.raises(sch.DataUnavailableError, match="network is unreachable"):
        sch.fetch_ilea(tmp_path)


def test_download_call_is_pinned_and_fails_fast(tmp_path, monkeypatch):
    import pooch

    monkeypatch.delenv(sch.MIRROR_ENV, raising=False)
    seen = {}

    def fake_retrieve(url, known_hash=None, fname=None, path=None, downloader=None, **kw):
        seen.update(url=url, known_hash=known_hash, fname=fname, path=Path(path), downloader=downloader)
        p = Path(path) / fname
        p.write_bytes(b"x")
        return str(p)

    monkeypatch.setattr(pooch, "retrieve", fake_retrieve)
    sch.fetch_ilea(tmp_path)
    assert seen["url"] == sch.ILEA_URL
    assert seen["known_hash"] == "sha256:" + sch.ILEA_SHA256
    assert seen["fname"] == sch.ILEA_FILENAME and seen["path"] == tmp_path
    timeout = seen["downloader"].kwargs["timeout"]
    assert timeout is not None and max(np.atleast_1d(timeout)) <= 60


def test_download_hash_mismatch_reported(tmp_path, monkeypatch):
    import pooch

    monkeypatch.delenv(sch.MIRROR_ENV, raising=False)
    bad = "0" * 64

    def fake_retrieve(*a, **k):  # what pooch raises after deleting the temp download
        raise ValueError(f"SHA256 hash of downloaded file (ILEA567.DAT) does not match the "
                         f"known hash: expected {sch.ILEA_SHA256}, got {bad}.")

    monkeypatch.setattr(pooch, "retrieve", fake_retrieve)
    with pytest.raises(sch.ChecksumMismatchError) as ei:
        sch.fetch_ilea(tmp_path)
    assert sch.ILEA_SHA256 in str(ei.value) and bad in str(ei.value)
    _assert_only(tmp_path, set())


# ---------------------------------------------------------------------------
# split
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def synth_xy():
    rng = np.random.default_rng(123)
    school = np.repeat(np.arange(1, 140), COUNTS)
    X = rng.normal(size=(school.size, 28))
    y = rng.normal(size=school.size)
    return X, y, school


def test_split_structure_and_sizes(synth_xy):
    X, y, school = synth_xy
    sp = sch.split_school(X, y, school, rng=np.random.default_rng(7))
    S, N = 6, 23
    assert sp["school_ids"].shape == (S, N)
    assert sp["n_train"].shape == (S, N) and sp["n_test"].shape == (S, N)
    for v in sp.values():
        assert v.dtype != object
    used = sp["school_ids"].ravel()
    assert np.unique(used).size == 138
    assert sp["dropped_schools"].shape == (1,)
    assert set(used) | set(sp["dropped_schools"]) == set(range(1, 140))
    assert sp["dropped_schools"][0] not in used
    d_tr, d_te = sp["X_train"].shape[2], sp["X_test"].shape[2]
    assert sp["X_train"].shape == (S, N, d_tr, 28) and sp["X_test"].shape == (S, N, d_te, 28)
    for s in range(S):
        for j in range(N):
            rows = np.flatnonzero(school == sp["school_ids"][s, j])
            n = rows.size
            ntr, nte = sp["n_train"][s, j], sp["n_test"][s, j]
            assert ntr == round(0.8 * n) and nte == n - ntr and nte >= 1
            tr = sp["idx_train"][s, j, :ntr]
            te = sp["idx_test"][s, j, :nte]
            assert np.all(sp["idx_train"][s, j, ntr:] == -1) and np.all(sp["idx_test"][s, j, nte:] == -1)
            assert np.intersect1d(tr, te).size == 0
            np.testing.assert_array_equal(np.sort(np.r_[tr, te]), rows)
            np.testing.assert_array_equal(sp["X_train"][s, j, :ntr], X[tr])
            np.testing.assert_array_equal(sp["y_train"][s, j, :ntr], y[tr])
            np.testing.assert_array_equal(sp["X_test"][s, j, :nte], X[te])
            np.testing.assert_array_equal(sp["y_test"][s, j, :nte], y[te])
            assert not sp["X_train"][s, j, ntr:].any() and not sp["y_test"][s, j, nte:].any()


def test_split_follows_documented_rule(synth_xy):
    X, y, school = synth_xy
    sp = sch.split_school(X, y, school, rng=np.random.default_rng(11))
    order = np.arange(1, 140)[np.random.default_rng(11).permutation(139)]
    np.testing.assert_array_equal(sp["school_ids"], order[:138].reshape(6, 23))
    np.testing.assert_array_equal(sp["dropped_schools"], [order[138]])


def test_split_deterministic_and_seed_dependent(synth_xy):
    X, y, school = synth_xy
    a = sch.split_school(X, y, school, rng=np.random.default_rng(2024))
    b = sch.split_school(X, y, school, rng=np.random.default_rng(2024))
    c = sch.split_school(X, y, school, rng=np.random.default_rng(2025))
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert not np.array_equal(a["school_ids"], c["school_ids"])
    # the student-level 80/20 split differs too (compare by school id)
    def train_sets(sp):
        return {int(sp["school_ids"][s, j]): tuple(sp["idx_train"][s, j, : sp["n_train"][s, j]])
                for s in range(6) for j in range(23)}
    ta, tc = train_sets(a), train_sets(c)
    common = set(ta) & set(tc)
    assert len(common) >= 137
    assert any(ta[k] != tc[k] for k in common)


def test_split_small_school_edge_cases():
    X = np.zeros((5, 28))
    y = np.arange(5.0)
    two = sch.split_school(X[:2], y[:2], np.array([1, 1]), rng=0, n_agents=1, tasks_per_agent=1)
    assert two["n_train"][0, 0] == 1 and two["n_test"][0, 0] == 1
    with pytest.raises(ValueError, match="need >= 2"):
        sch.split_school(X[:3], y[:3], np.array([1, 1, 2]), rng=0, n_agents=2, tasks_per_agent=1)
    with pytest.raises(ValueError, match="exceeds"):
        sch.split_school(X, y, np.array([1, 1, 2, 2, 2]), rng=0, n_agents=3, tasks_per_agent=1)


def test_split_real_data(real_records):
    X, y, school = sch.encode_features(real_records)
    sp = sch.split_school(X, y, school, rng=np.random.default_rng(0))
    assert int(sp["n_train"].sum() + sp["n_test"].sum()) == 15362 - COUNTS[sp["dropped_schools"][0] - 1]
    assert sp["X_train"].shape[-1] == 28


def test_save_load_roundtrip(tmp_path, synth_xy):
    X, y, school = synth_xy
    sp = sch.split_school(X, y, school, rng=np.random.default_rng(5))
    path = tmp_path / "out" / "school_split.npz"
    sch.save_school_split(path, sp)
    _assert_only(path.parent, {"school_split.npz"})
    back = sch.load_school_split(path)
    assert set(back) == set(sp)
    for k in sp:
        assert back[k].dtype == sp[k].dtype, k
        np.testing.assert_array_equal(back[k], sp[k], err_msg=k)
    with np.load(path, allow_pickle=False) as z:  # readable without pickle
        assert set(z.files) == set(sp)
    # overwrite in place (atomic replace) works
    sch.save_school_split(path, sp)
    _assert_only(path.parent, {"school_split.npz"})
    with pytest.raises(ValueError, match="object array"):
        sch.save_school_split(tmp_path / "bad.npz", {"a": np.array([None, 1], dtype=object)})
    assert not (tmp_path / "bad.npz").exists()


# ---------------------------------------------------------------------------
# NMSE
# ---------------------------------------------------------------------------


def test_nmse_reference_values(synth_xy):
    X, y, school = synth_xy
    sp = sch.split_school(X, y, school, rng=np.random.default_rng(3))
    yt = sch.unpad(sp["y_test"], sp["n_test"])
    assert yt.shape == (int(sp["n_test"].sum()),)
    assert sch.nmse(yt, yt) == 0.0
    assert sch.nmse(np.full_like(yt, yt.mean()), yt) == pytest.approx(1.0, rel=1e-12)


def test_nmse_definition():
    tasks_true = [np.array([1.0, 2.0, 3.0]), np.array([4.0, 6.0])]
    tasks_pred = [np.array([1.0, 2.0, 4.0]), np.array([4.0, 4.0])]
    # pooled MSE = (0 + 0 + 1 + 0 + 4) / 5 = 1; population var of [1,2,3,4,6] = 2.96
    assert sch.nmse(tasks_pred, tasks_true) == pytest.approx(1.0 / 2.96, rel=1e-12)
    assert sch.nmse(np.concatenate(tasks_pred), np.concatenate(tasks_true)) == sch.nmse(tasks_pred, tasks_true)
    with pytest.raises(ValueError):
        sch.nmse([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="zero"):
        sch.nmse([1.0, 2.0], [3.0, 3.0])

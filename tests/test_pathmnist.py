"""PathMNIST region covariances (rfl/data/pathmnist.py, rfl/problems/cfmspd_pathmnist.py): a
MATLAB cell array of 9 x 9 SPD matrices the tests write with scipy.io.savemat, read back; the
square roots; the agents' draw; the pin (git blob id only) and the Fréchet mean on commuting
matrices against its closed form."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import requests
import scipy.io
import scipy.linalg

from rfl.data import pathmnist, sources
from rfl.data.checksums import git_blob_id
from rfl.data.sources import ChecksumMismatchError, Source
from rfl.problems.cfmspd_pathmnist import CFMSPDPathMNIST
from rfl.data.generated import random_spd, write_cells


@pytest.fixture
def tiny_ri(monkeypatch, tmp_path):
    """A mirror holding pathmnist/RI.mat with 30 random SPD matrices, the source pinned to its
    git blob id; no network."""
    mats = random_spd(np.random.default_rng(0), 30)
    mirror = tmp_path / "mirror"
    (mirror / "pathmnist").mkdir(parents=True)
    path = mirror / "pathmnist" / "RI.mat"
    write_cells(path, mats)
    real = sources.SOURCES["pathmnist_ri"]
    monkeypatch.setitem(sources.SOURCES, "pathmnist_ri", Source(
        real.name, real.url, None, None, real.subpath, git_blob=git_blob_id(path)))
    monkeypatch.setenv(sources.MIRROR_ENV, str(mirror))

    def offline(*args, **kwargs):
        raise requests.exceptions.ConnectionError("no network in this test")

    import pooch
    monkeypatch.setattr(pooch, "retrieve", offline)
    return path, mats


def test_the_pin_is_the_git_blob_id_of_the_authors_commit():
    src = sources.SOURCES["pathmnist_ri"]
    assert src.git_blob == "2d7e8137ccf517303b4cd6290d5c834b9e05ece0"
    assert src.url == ("https://raw.githubusercontent.com/zhenwei-huang/RFedAGS/"
                       "a07b5576a6b9b8b8ea05eb38fba23fc076e8ac8a/RFedAGS/data/pathmnist/RI.mat")
    assert sources._pooch_hash(src) is None and src.sha256 is None


@pytest.mark.parametrize("column", [True, False])
def test_read_ri_returns_the_cells(tmp_path, column):
    mats = random_spd(np.random.default_rng(1), 5)
    write_cells(tmp_path / "r.mat", mats, column=column)
    np.testing.assert_array_equal(pathmnist.read_ri(tmp_path / "r.mat"), mats)


def test_read_ri_errors(tmp_path):
    p = tmp_path / "r.mat"
    write_cells(p, random_spd(np.random.default_rng(1), 2), variable="X")
    with pytest.raises(ValueError, match="no variable 'RI'; it holds X"):
        pathmnist.read_ri(p)
    bad = random_spd(np.random.default_rng(1), 3)
    bad[1] = -bad[1]
    write_cells(p, bad)
    with pytest.raises(ValueError, match=r"RI\{2\} is not positive definite"):
        pathmnist.read_ri(p)
    write_cells(p, [np.eye(3)])
    with pytest.raises(ValueError, match=r"shape \(3, 3\)"):
        pathmnist.read_ri(p)
    scipy.io.savemat(p, {"RI": np.eye(9)})
    with pytest.raises(ValueError, match="not a cell vector"):
        pathmnist.read_ri(p)


def test_spd_sqrt_squares_back_and_is_the_principal_root():
    Z = random_spd(np.random.default_rng(2), 4)
    R = pathmnist.spd_sqrt(Z)
    np.testing.assert_allclose(R @ R, Z, rtol=1e-10, atol=1e-10)
    assert np.all(np.linalg.eigvalsh(R) > 0)
    np.testing.assert_allclose(R[1], scipy.linalg.sqrtm(Z[1]).real, rtol=1e-8, atol=1e-10)


def test_generate_draws_distinct_matrices_in_blocks(tiny_ri):
    path, mats = tiny_ri
    Z = CFMSPDPathMNIST.generate(np.random.default_rng(5), path, S=4, N=6)["Z"]
    assert Z.shape == (4, 6, 9, 9)
    squares = (Z @ Z).reshape(24, 9, 9)
    which = [int(np.argmin(np.abs(mats - q).max(axis=(1, 2)))) for q in squares]
    np.testing.assert_allclose(squares, mats[which], rtol=1e-9, atol=1e-9)
    assert len(set(which)) == 24                                 # without replacement
    idx = np.random.default_rng(5).choice(30, 24, replace=False)  # the draw, dealt in blocks
    assert which == idx.tolist()
    with pytest.raises(ValueError, match="the file holds 30"):
        CFMSPDPathMNIST.generate(np.random.default_rng(5), path, S=4, N=8)


def test_the_frechet_mean_of_commuting_square_roots_is_their_geometric_mean():
    """Z_k = c_k I (square roots of c_k^2 I): the affine-invariant mean is exp(mean log c_k) I;
    the gradient vanishes there and not at the arithmetic mean."""
    c = np.array([0.5, 1.0, 2.0, 8.0, 3.0, 0.25])
    Z = (c[:, None, None] * np.eye(9)).reshape(2, 3, 9, 9)
    p = CFMSPDPathMNIST(Z)
    geo = np.exp(np.mean(np.log(c))) * np.eye(9)
    assert np.abs(p.egrad(geo)).max() < 1e-12
    assert np.abs(p.egrad(np.mean(c) * np.eye(9))).max() > 1e-2
    assert p.cost(geo) == pytest.approx(9 * np.mean((np.log(c) - np.log(c).mean()) ** 2))


def test_wrong_bytes_are_refused(tiny_ri, tmp_path):
    path, _ = tiny_ri
    path.write_bytes(path.read_bytes() + b"\0")
    with pytest.raises(ChecksumMismatchError, match="has git_blob"):
        sources.fetch("pathmnist_ri", tmp_path / "c" / "pathmnist" / "RI.mat")
    with pytest.raises(ChecksumMismatchError, match="lies in the mirror"):
        pathmnist.load(path)
    assert path.exists()


def test_cli_fetch_of_wrong_bytes_is_one_line_exit_2(tmp_path):
    mirror = tmp_path / "m"
    (mirror / "pathmnist").mkdir(parents=True)
    write_cells(mirror / "pathmnist" / "RI.mat", random_spd(np.random.default_rng(0), 2))
    spec = tmp_path / "anchors.json"
    spec.write_text(json.dumps({"mirror": str(mirror), "cache_dir": "x"}))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    out = tmp_path / "c" / "pathmnist" / "RI.mat"
    done = subprocess.run([sys.executable, "-m", "rfl", "fetch-source", str(spec), str(out)],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "2d7e8137ccf517303b4cd6290d5c834b9e05ece0" in lines[0]

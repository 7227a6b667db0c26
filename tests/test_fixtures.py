"""Generated files in the real formats (rfl/data/generated.py) and the ``source: generated``
datasets of the three loaders' problems: each file reads back through the real reader as what
was written, and each problem's generated instance is the real reader's output on that file
(computed here from the file by the reader's documented steps), with nothing fetched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from rfl.data import cifar10, movielens, pathmnist
from rfl.problems.cfmspd_pathmnist import CFMSPDPathMNIST
from rfl.problems.lrmc import LowRankMatrixCompletionMovieLens
from rfl.problems.pca_cifar10 import PCAStiefelCIFAR10
from rfl.data import generated as fixtures
from rfl.workflow import raw_inputs_of

REPO = Path(__file__).resolve().parents[1]


# ---- the files -------------------------------------------------------------------------------
def test_cifar10_tarball_reads_back_through_the_reader(tmp_path):
    data, labels = fixtures.write_cifar10_tarball(tmp_path / "c.tar.gz", 6, seed=3)
    assert data.shape == (30, 3072) and data.dtype == np.uint8
    got, y = cifar10.read_batches(tmp_path / "c.tar.gz")
    np.testing.assert_array_equal(got, data)
    np.testing.assert_array_equal(y, labels)
    assert np.bincount(labels, minlength=10).tolist() == [3] * 10          # balanced labels
    test, _ = cifar10.read_batches(tmp_path / "c.tar.gz", ("test_batch",))
    np.testing.assert_array_equal(test, data[:4])
    again, _ = fixtures.write_cifar10_tarball(tmp_path / "d.tar.gz", 6, seed=3)
    other, _ = fixtures.write_cifar10_tarball(tmp_path / "e.tar.gz", 6, seed=4)
    assert np.array_equal(again, data) and not np.array_equal(other, data)


def test_pathmnist_mat_reads_back_through_the_reader(tmp_path):
    mats = fixtures.write_pathmnist_mat(tmp_path / "RI.mat", 7, seed=2)
    assert mats.shape == (7, 9, 9)
    np.testing.assert_allclose(pathmnist.read_ri(tmp_path / "RI.mat"), mats, rtol=0, atol=1e-12)
    assert np.linalg.eigvalsh(mats).min() > 0


def test_movielens_ratings_read_back_and_look_like_ml_1m(tmp_path):
    table = fixtures.write_movielens_ratings(tmp_path / "ratings.dat", users=12, movies=50, seed=1)
    np.testing.assert_array_equal(movielens.read_ratings(tmp_path / "ratings.dat"), table)
    users, movies, stars = table[:, 0], table[:, 1], table[:, 2]
    counts = np.bincount(users, minlength=13)[1:]
    assert counts.min() >= 20 and counts.max() <= 40                      # every user >= 20
    assert len({(u, m) for u, m in table[:, :2]}) == len(table)            # one rating a pair
    assert movies.min() >= 1 and movies.max() <= 50 and set(stars) <= {1, 2, 3, 4, 5}


# ---- the problems under source: generated ----------------------------------------------------
def test_cifar10_generated_instance_is_the_readers_split_of_the_fixture(tmp_path):
    params = {"r": 2, "S": 4, "N": 10, "classes_per_client": 2, "source": "generated"}
    arrays = PCAStiefelCIFAR10.generate(np.random.default_rng(5), **params)
    seed = fixtures.seed_from(np.random.default_rng(5))
    data, labels = fixtures.write_cifar10_tarball(tmp_path / "c.tar.gz", 8, seed)
    X = (data / 255.0 - cifar10.MEAN[np.arange(3072) // 1024]) / cifar10.STD[np.arange(3072) // 1024]
    parts = cifar10.pathological_split(labels, 4, 2)
    for j in range(4):
        np.testing.assert_allclose(arrays["Z"][j], X[parts[j]], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(arrays["labels"][j], labels[parts[j]])
    problem = PCAStiefelCIFAR10.from_arrays(arrays, params)
    assert problem.data_notes() == {"source": "generated", "note": "generated fixture (format "
                                    "of cifar-10-python.tar.gz), not the real data"}
    assert PCAStiefelCIFAR10.from_arrays({k: v for k, v in arrays.items() if k != "fixture"},
                                         params).data_notes() == {}


def test_cifar10_optimum_from_the_samples_is_the_eigendecomposition():
    """Fewer images than features (300 here for a quick oracle): x* and the spectrum from the samples' SVD equal kPCA's
    eigendecomposition of the pooled A (the independent oracle)."""
    Z = np.random.default_rng(0).standard_normal((3, 4, 300)) * np.linspace(1, 3, 300)
    p = PCAStiefelCIFAR10(Z, 3)
    w, v = np.linalg.eigh(p.A_bar)
    np.testing.assert_allclose(p.eigenvalues(), w[::-1], rtol=0, atol=1e-9)
    x = p.closed_form_optimum()
    np.testing.assert_allclose(np.abs(x), np.abs(v[:, ::-1][:, :3]), rtol=0, atol=1e-9)
    assert np.all(x[np.argmax(np.abs(x), axis=0), np.arange(3)] > 0)
    assert p.optimal_value() == pytest.approx(-0.5 * w[::-1][:3].sum(), rel=1e-12)


def test_pathmnist_generated_instance_draws_from_the_fixture(tmp_path):
    arrays = CFMSPDPathMNIST.generate(np.random.default_rng(7), S=3, N=4, source="generated")
    rng = np.random.default_rng(7)
    mats = fixtures.write_pathmnist_mat(tmp_path / "RI.mat", 24, fixtures.seed_from(rng))
    idx = rng.choice(24, 12, replace=False)                 # the draw after the fixture's seed
    roots = arrays["Z"].reshape(12, 9, 9)
    np.testing.assert_allclose(roots @ roots, mats[idx], rtol=1e-9, atol=1e-9)
    assert CFMSPDPathMNIST.from_arrays(arrays, {"S": 3, "N": 4}).data_notes()["note"] == \
        "generated fixture (format of RI.mat), not the real data"


def test_movielens_generated_instance_packs_the_fixture(tmp_path):
    arrays = LowRankMatrixCompletionMovieLens.generate(np.random.default_rng(9), r=2, S=40,
                                                       source="generated")
    rng = np.random.default_rng(9)
    table = fixtures.write_movielens_ratings(tmp_path / "ratings.dat", 6040, 3952,
                                             fixtures.seed_from(rng), per_user=(20, 30))
    expected = movielens.generate(rng, table, 40, 1e-2)
    for key, value in expected.items():
        np.testing.assert_array_equal(arrays[key], value, err_msg=key)
    counts = (arrays["count"] + arrays["test_count"]).ravel()
    assert counts.min() >= 20 and counts.max() <= 30 and int(arrays["r"]) == 2
    problem = LowRankMatrixCompletionMovieLens.from_arrays(arrays)
    assert problem.data_notes()["source"] == "generated"


def test_generated_datasets_read_no_raw_file_and_check_their_own_sizes():
    for problem, params in (("pca_stiefel_cifar10", {"r": 2, "S": 4, "N": 10}),
                            ("cfmspd_pathmnist", {"S": 4, "N": 10}),
                            ("lrmc_movielens", {"r": 2, "S": 40})):
        assert raw_inputs_of(problem, {**params, "source": "generated"}) == ()
        assert len(raw_inputs_of(problem, params)) == 1
        assert raw_inputs_of(problem, {**params, "source": "pinned"}) == raw_inputs_of(problem, params)
    # CIFAR: S N = 50000 for the real tarball; a multiple of 5 (five batches) for a generated one
    assert PCAStiefelCIFAR10.check_params({"r": 2, "S": 4, "N": 10, "classes_per_client": 2,
                                           "source": "generated"}) == []
    assert "50000" in dict(PCAStiefelCIFAR10.check_params({"r": 2, "S": 4, "N": 10,
                                                           "classes_per_client": 2}))["N"]
    bad = dict(PCAStiefelCIFAR10.check_params({"r": 2, "S": 3, "N": 4, "classes_per_client": 2,
                                               "source": "generated"}))
    assert "multiple of 5" in bad["N"]


@pytest.mark.parametrize("dataset, value, says", [
    ("pathmnist_fm_generated", "real", "datasets.pathmnist_fm_generated.params.source: 'real' is "
                                       "not one of ['pinned', 'generated']"),
    ("cpesph", "generated", "datasets.cpesph.params: Additional properties are not allowed "
                            "('source' was unexpected)")])
def test_a_bad_source_is_refused_naming_the_key(tmp_path, dataset, value, says):
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg["datasets"][dataset]["params"]["source"] = value
    (tmp_path / "out").mkdir()
    cfg["output_dir"] = str(tmp_path / "out") + "/"
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    r = subprocess.run([sys.executable, "-m", "rfl.cli", "validate", str(tmp_path / "c.yaml")],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines[0] == "rfl: error: invalid configuration:" and len(lines) == 2
    assert says in lines[1]

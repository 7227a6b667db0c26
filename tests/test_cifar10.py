"""CIFAR-10 (rfl/data/cifar10.py, rfl/problems/pca_cifar10.py): the loader on a small tarball of
the same format that the tests write (pickled batches in cifar-10-batches-py/), the notebook's
normalisation and split, the safe unpickler, the pin and mirror variable, and the problem's
sample-based gradients against kPCA's gram-based ones."""

import hashlib
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import requests

from rfl.data import cifar10, sources
from rfl.data.sources import ChecksumMismatchError, DataUnavailableError, Source
from rfl.problems.kpca import KPCA
from rfl.problems.pca_cifar10 import PCAStiefelCIFAR10
from rfl.data.generated import cifar10_batch_pickle, write_cifar10_tarball, write_tarball

PER_BATCH = 8


@pytest.fixture
def tiny(monkeypatch, tmp_path):
    """A tarball of 5 training batches of 8 images (labels 0..9) and a test batch, in a mirror
    named by $RFL_CIFAR10_MIRROR; the source pinned to its md5; no network."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    data, labels = write_cifar10_tarball(mirror / "cifar-10-python.tar.gz", PER_BATCH, seed=0)
    raw = (mirror / "cifar-10-python.tar.gz").read_bytes()
    real = sources.SOURCES["cifar10_python"]
    monkeypatch.setitem(sources.SOURCES, "cifar10_python", Source(
        real.name, real.url, None, None, real.subpath, md5=hashlib.md5(raw).hexdigest(),
        mirror_env=real.mirror_env))
    monkeypatch.setenv(sources.CIFAR10_MIRROR_ENV, str(mirror))

    def offline(*args, **kwargs):
        raise requests.exceptions.ConnectionError("no network in this test")

    import pooch
    monkeypatch.setattr(pooch, "retrieve", offline)
    return mirror / "cifar-10-python.tar.gz", data, labels


def test_the_pin_is_the_publishers_md5_and_url():
    src = sources.SOURCES["cifar10_python"]
    assert src.md5 == "c58f30108f718f92721af3b95e74349a"
    assert src.url == "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    assert src.mirror_env == "RFL_CIFAR10_MIRROR"
    assert sources._pooch_hash(src) == "md5:c58f30108f718f92721af3b95e74349a"


def test_read_batches_in_order_and_normalised_per_channel(tiny):
    path, data, labels = tiny
    pixels, y = cifar10.read_batches(path)
    np.testing.assert_array_equal(pixels, data)          # data_batch_1..5 in order
    np.testing.assert_array_equal(y, labels)
    X, y2 = cifar10.load_train(path)
    # column 5 red, 1500 green (1024..2047), 3000 blue: (v / 255 - mean_c) / std_c
    for col, mean, std in ((5, 0.4914, 0.2023), (1500, 0.4822, 0.1994), (3000, 0.4465, 0.2010)):
        np.testing.assert_allclose(X[7, col], (data[7, col] / 255 - mean) / std)
    test_pixels, _ = cifar10.read_batches(path, ["test_batch"])
    assert test_pixels.shape == (4, 3072)


def test_a_pickle_that_would_run_code_is_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    raw = pickle.dumps({"data": Evil(), "labels": []}, protocol=2)
    path = tmp_path / "evil.tar.gz"
    write_tarball(path, {"data_batch_1": raw})
    with pytest.raises(pickle.UnpicklingError, match="refused global"):
        cifar10.read_batches(path, ["data_batch_1"])


def test_a_batch_of_the_wrong_shape_or_a_missing_member_is_an_error(tmp_path):
    path = tmp_path / "t.tar.gz"
    write_tarball(path, {"data_batch_1": cifar10_batch_pickle(np.zeros((2, 100), np.uint8), [0, 1])})
    with pytest.raises(ValueError, match=r"expected \(n, 3072\)"):
        cifar10.read_batches(path, ["data_batch_1"])
    with pytest.raises(ValueError, match="no cifar-10-batches-py/data_batch_2"):
        cifar10.read_batches(path, ["data_batch_2"])


def test_iid_divide_sizes():
    assert [len(g) for g in cifar10.iid_divide(list(range(10)), 3)] == [3, 3, 4]
    assert cifar10.iid_divide(list(range(6)), 3) == [[0, 1], [2, 3], [4, 5]]


def test_the_notebooks_split_at_the_real_size():
    """50000 labels, 5000 per class (as CIFAR-10's training set): 400 shards of 125, each of
    one label; client i gets the shards at positions 8i..8i+7 of numpy's seeded permutation."""
    labels = np.random.default_rng(1).permutation(np.repeat(np.arange(10), 5000))
    parts = cifar10.pathological_split(labels, 50, 8)
    assert len(parts) == 50 and all(p.size == 1000 for p in parts)
    assert np.unique(np.concatenate(parts)).size == 50000
    order = np.argsort(labels, kind="stable")
    perm = np.random.RandomState(2025).permutation(400)
    for i in (0, 17, 49):
        expected = np.concatenate([order[125 * k:125 * (k + 1)] for k in perm[8 * i:8 * i + 8]])
        np.testing.assert_array_equal(parts[i], expected)
        shards = labels[parts[i]].reshape(8, 125)
        assert np.all(shards == shards[:, :1])                  # one label per shard
    skew = [np.unique(labels[p]).size for p in parts]
    assert max(skew) <= 8 and np.mean(skew) > 5                 # slight skew: up to 8 classes


def test_generate_from_the_tarball(tiny):
    path, data, labels = tiny
    arrays = PCAStiefelCIFAR10.generate(np.random.default_rng(0), path, r=2, S=4, N=10,
                                        classes_per_client=2)
    Z, y = arrays["Z"], arrays["labels"]
    assert Z.shape == (4, 10, 3072) and int(arrays["r"]) == 2
    X = cifar10.normalise(data)
    parts = cifar10.pathological_split(labels, 4, 2)
    for j in range(4):
        np.testing.assert_array_equal(Z[j], X[parts[j]])
        np.testing.assert_array_equal(y[j], labels[parts[j]])
    with pytest.raises(ValueError, match="S \\* N = 20"):
        PCAStiefelCIFAR10.generate(np.random.default_rng(0), path, r=2, S=2, N=10)


def test_check_params():
    assert PCAStiefelCIFAR10.check_params({"r": 4, "S": 50, "N": 1000, "classes_per_client": 8}) == []
    errors = dict(PCAStiefelCIFAR10.check_params({"r": 4, "S": 40, "N": 1000}))
    assert "50000" in errors["N"]
    errors = dict(PCAStiefelCIFAR10.check_params({"r": 4, "S": 50, "N": 1000, "classes_per_client": 3}))
    assert "multiple" in errors["N"]


def test_sample_based_costs_and_gradients_are_kpcas():
    """Against kPCA (the local matrices A_j, an independent path): cost, local costs, full and
    mini-batch gradients, the optimum."""
    rng = np.random.default_rng(3)
    Z = rng.standard_normal((3, 7, 12)) * np.array([1.0, 2.0, 0.5])[:, None, None]
    ours, ref = PCAStiefelCIFAR10(Z, 2), KPCA(Z, 2)
    x = np.linalg.qr(rng.standard_normal((12, 2)))[0]
    xs = np.broadcast_to(x, (3, 12, 2))
    agents = np.arange(3)
    assert ours.cost(x) == pytest.approx(ref.cost(x), rel=1e-12)
    np.testing.assert_allclose(ours.local_cost(xs, agents), ref.local_cost(xs, agents), rtol=1e-12)
    np.testing.assert_allclose(ours.local_egrad(xs, agents), ref.local_egrad(xs, agents), rtol=1e-10)
    batch = np.array([[0, 3, 5], [1, 2, 6], [4, 5, 6]])
    np.testing.assert_allclose(ours.minibatch_egrad(xs, agents, batch),
                               ref.minibatch_egrad(xs, agents, batch), rtol=1e-10)
    np.testing.assert_allclose(ours.local_cost(xs[[2]], np.array([2])), ref.local_cost(xs[[2]], np.array([2])))
    assert ours.optimal_value() == pytest.approx(ref.optimal_value(), rel=1e-12)
    assert not hasattr(ours, "A_local")


def test_fetch_from_the_cifar10_mirror_variable(tiny, tmp_path):
    path, *_ = tiny
    out = sources.fetch("cifar10_python", tmp_path / "cache" / "cifar10" / "cifar-10-python.tar.gz")
    assert out.read_bytes() == path.read_bytes()
    assert sources.locate("cifar10_python") == path


def test_absent_names_the_file_and_the_variable(tiny, tmp_path, monkeypatch):
    monkeypatch.delenv(sources.CIFAR10_MIRROR_ENV)
    assert sources.locate("cifar10_python", tmp_path / "nothing") is None
    with pytest.raises(DataUnavailableError, match="RFL_CIFAR10_MIRROR"):
        sources.fetch("cifar10_python", tmp_path / "c" / "cifar-10-python.tar.gz")


def test_wrong_bytes_in_the_mirror_are_refused(tiny, tmp_path):
    path, *_ = tiny
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(ChecksumMismatchError, match="has md5"):
        sources.fetch("cifar10_python", tmp_path / "c" / "cifar-10-python.tar.gz")
    assert path.exists()                            # a mirror file is not ours to delete


def test_cli_fetch_of_wrong_bytes_is_one_line_exit_2(tmp_path):
    """The real pin, a mirror holding other bytes: `rfl: error: ...` on one line, exit 2."""
    mirror = tmp_path / "m"
    mirror.mkdir()
    (mirror / "cifar-10-python.tar.gz").write_bytes(b"not the tarball")
    spec = tmp_path / "anchors.json"
    spec.write_text(json.dumps({"mirror": None, "cache_dir": "x"}))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1]),
           sources.CIFAR10_MIRROR_ENV: str(mirror)}
    out = tmp_path / "c" / "cifar10" / "cifar-10-python.tar.gz"
    done = subprocess.run([sys.executable, "-m", "rfl", "fetch-source", str(spec), str(out)],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rfl: error:")
    assert "c58f30108f718f92721af3b95e74349a" in lines[0]

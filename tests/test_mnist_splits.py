"""The partition notebook's MNIST splits (rfl/data/mnist.py ``notebook_split``) and the dataset
param ``split`` of pca_sphere: which images, which shards, which seed, and which images stood in."""

import numpy as np
import pytest

from rfl.data import mnist, sources
from rfl.problems.pca_sphere import PCASphere

MIRROR = "/work/shared/anchors/rfedags-iclr2026/data"


def _labels(which):
    path = sources.find_in_mirror(f"mnist_{which}_labels")
    if path is None:
        pytest.skip(f"set {sources.MIRROR_ENV} to the anchors' data/ folder")
    return mnist.read_idx(path).astype(np.int64)


def _oracle_shards(labels, S, c, seed):
    """The notebook's pathological split, written as its steps read: per label (ascending) the
    indices in file order; floor/ceil groups; ``np.random.seed`` then ``np.random.shuffle`` of a
    Python list of lists; c groups per client. Returns each client's list of shards."""
    np.random.seed(seed)
    ordered = [i for k in range(10) for i in range(labels.size) if labels[i] == k]

    def groups(items, g):
        q, r = divmod(len(items), g)
        sizes = [q] * (g - r) + [q + 1] * r
        starts = np.concatenate([[0], np.cumsum(sizes)])
        return [items[starts[i]:starts[i + 1]] for i in range(g)]

    shards = groups(ordered, S * c)
    np.random.shuffle(shards)
    return groups(shards, S)


def test_iid_divide_sizes_and_order():
    parts = mnist.iid_divide(list(range(23)), 5)          # 23 = 2 * 4 + 3 * 5
    assert [len(p) for p in parts] == [4, 4, 5, 5, 5]
    assert sum(parts, []) == list(range(23))
    assert [len(p) for p in mnist.iid_divide(list(range(20)), 5)] == [4] * 5


@pytest.mark.parametrize("split,c", [("slight", 8), ("heavy", 4)])
def test_shard_splits_follow_the_notebook(split, c):
    """Shards of unequal sizes (997 images): each agent keeps the first q of each of its
    notebook shards, q the shortest shard's length."""
    labels = np.random.default_rng(3).integers(0, 10, 997)
    S = 6
    q = 997 // (S * c)
    got = mnist.notebook_split(labels, split, S, c * q)
    expected = [[shard[:q] for shard in client] for client in _oracle_shards(labels, S, c, 2025)]
    assert got.reshape(S, c, q).tolist() == expected
    assert {len(s) for client in _oracle_shards(labels, S, c, 2025) for s in client} == {q, q + 1}


@pytest.mark.parametrize("split,c", [("slight", 8), ("heavy", 4)])
def test_shard_splits_equal_the_notebook_at_full_size(split, c):
    """Shards of equal size (n = S c q): nothing is cut, the split is the notebook's exactly."""
    labels = np.random.default_rng(5).integers(0, 10, 6 * c * 7)
    got = mnist.notebook_split(labels, split, 6, c * 7)
    assert got.tolist() == [sum(client, []) for client in _oracle_shards(labels, 6, c, 2025)]
    assert mnist.notebook_split(labels, split, 6, c * 7, seed=1).tolist() != got.tolist()


def test_iid_split_is_the_notebook_permutation():
    labels = np.zeros(600, dtype=int)
    np.random.seed(2025)
    perm = np.random.permutation(600)
    got = mnist.notebook_split(labels, "iid", 6, 100)
    assert got.ravel().tolist() == perm.tolist()
    assert mnist.notebook_split(labels, "iid", 6, 40).tolist() == perm.reshape(6, 100)[:, :40].tolist()


def test_bad_sizes_are_refused():
    labels = np.zeros(600, dtype=int)
    assert mnist.max_per_agent(60000, 60, "slight") == 1000
    assert [mnist.max_per_agent(10000, 60, s) for s in ("iid", "slight", "heavy")] == [166, 160, 164]
    with pytest.raises(ValueError, match="N <= 100"):
        mnist.notebook_split(labels, "iid", 6, 101)
    with pytest.raises(ValueError, match="multiple of 4"):
        mnist.notebook_split(labels, "heavy", 6, 10)
    with pytest.raises(ValueError, match="allowed: iid, slight, heavy"):
        mnist.notebook_split(labels, "mild", 6, 10)


def test_training_labels_give_the_authors_sizes():
    """The 60000 training labels are pinned in the mirror: the three splits are 60 x 1000, every
    image used exactly once; each shard is a run of the label-sorted order (so holds at most two
    labels); i.i.d. clients hold every label, heavy ones fewer than slight ones."""
    y = _labels("train")
    order = np.argsort(y, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    n_labels = {}
    for split, c in (("iid", None), ("slight", 8), ("heavy", 4)):
        idx = mnist.notebook_split(y, split, 60, 1000)
        assert idx.shape == (60, 1000)
        assert np.array_equal(np.sort(idx.ravel()), np.arange(60000))
        if c is not None:
            runs = rank[idx].reshape(60, c, 1000 // c)
            assert np.all(np.diff(runs, axis=2) == 1)                       # contiguous shards
            assert np.all(runs[:, :, 0] % (1000 // c) == 0)                  # on the shard grid
            assert all(len(set(y[s])) <= 2 for s in idx.reshape(-1, 1000 // c))
        n_labels[split] = np.mean([len(set(y[row])) for row in idx])
    assert n_labels["iid"] == 10
    assert n_labels["heavy"] < n_labels["slight"] < n_labels["iid"]


def test_test_images_stand_in_at_60_x_160():
    y = _labels("test")
    for split in ("iid", "slight", "heavy"):
        idx = mnist.notebook_split(y, split, 60, 160)
        assert idx.shape == (60, 160) and np.unique(idx).size == 9600


def _fake_inputs(tmp_path):
    folder = tmp_path / "anchors" / "mnist"
    return [folder / "t10k-images", folder / "t10k-labels", folder / "train-labels-idx1-ubyte.gz"]


def test_generate_uses_the_training_images_when_had(monkeypatch, tmp_path):
    rng = np.random.default_rng(0)
    X_train, y_train = rng.standard_normal((60000, 784)), rng.integers(0, 10, 60000)
    seen = {}

    def fake_train(cache_dir=None, mirror=None, download=False):
        seen["train"] = (cache_dir, download)
        return X_train, y_train

    monkeypatch.setattr(mnist, "load_mnist_train", fake_train)
    monkeypatch.setattr(mnist, "load_test", lambda i, l: (X_train[:10000], y_train[:10000]))
    out = PCASphere.generate(rng, *_fake_inputs(tmp_path), S=60, N=1000, split="heavy")
    # looked for in the anchors cache the labels were fetched into (not their mnist/ folder)
    assert seen["train"] == (tmp_path / "anchors", True) and str(out["images"]) == "train"
    idx = mnist.notebook_split(y_train, "heavy", 60, 1000)
    np.testing.assert_array_equal(out["Z"], X_train[idx])
    p = PCASphere.from_arrays(out, {})
    assert p.data_notes()["images"] == "train" and p.data_notes()["split"] == "heavy"

    def absent(cache_dir=None, mirror=None, download=False):
        raise sources.DataUnavailableError("MNIST train split: train-images-idx3-ubyte.gz not found")

    monkeypatch.setattr(mnist, "load_mnist_train", absent)
    out = PCASphere.generate(rng, *_fake_inputs(tmp_path), S=60, N=160, split="heavy")
    assert str(out["images"]) == "test" and out["Z"].shape == (60, 160, 784)
    np.testing.assert_array_equal(out["Z"], X_train[mnist.notebook_split(y_train[:10000], "heavy", 60, 160)])
    assert "standing in" in PCASphere.from_arrays(out, {}).data_notes()["images_note"]
    with pytest.raises(ValueError, match="at most N = 164.*S = 60|train-images-idx3-ubyte.gz not found"):
        PCASphere.generate(rng, *_fake_inputs(tmp_path), S=60, N=1000, split="heavy")


def test_generate_reads_pinned_training_images_from_the_cache(monkeypatch, tmp_path):
    """End to end through main's loader: 6 training images pinned (by git blob id and md5) and
    placed in the anchors cache; no mirror, no network. The split is the notebook's split of
    those images, standardised as torchvision's Normalize; a copy with other bytes is refused."""
    import gzip
    import hashlib

    import pooch
    import requests

    def idx_gz(data):
        head = bytes([0, 0, 8, data.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in data.shape)
        return gzip.compress(head + data.astype(np.uint8).tobytes(), mtime=0)

    pixels = np.random.default_rng(1).integers(0, 256, size=(6, 28, 28), dtype=np.uint8)
    labels = np.array([3, 1, 4, 1, 5, 9], dtype=np.uint8)
    img, lab = idx_gz(pixels), idx_gz(labels)
    cache = tmp_path / "anchors"
    (cache / "mnist").mkdir(parents=True)
    (cache / "mnist" / "train-images-idx3-ubyte.gz").write_bytes(img)
    (cache / "mnist" / "train-labels-idx1-ubyte.gz").write_bytes(lab)
    real = sources.SOURCES["mnist_train_images"]
    monkeypatch.setitem(sources.SOURCES, "mnist_train_images", sources.Source(
        real.name, real.url, None, None, real.subpath,
        git_blob=hashlib.sha1(b"blob %d\0" % len(img) + img).hexdigest(),
        md5=hashlib.md5(img).hexdigest()))
    monkeypatch.setitem(sources.SOURCES, "mnist_train_labels", sources.Source(
        "mnist_train_labels", "https://example.invalid/l.gz", hashlib.sha256(lab).hexdigest(),
        len(lab), "mnist/train-labels-idx1-ubyte.gz"))
    monkeypatch.delenv(sources.MIRROR_ENV, raising=False)

    def offline(*args, **kwargs):
        raise requests.exceptions.ConnectionError("no network in this test")

    monkeypatch.setattr(pooch, "retrieve", offline)
    out = PCASphere.generate(np.random.default_rng(0), cache / "mnist" / "t10k-images",
                             cache / "mnist" / "t10k-labels",
                             cache / "mnist" / "train-labels-idx1-ubyte.gz", S=2, N=3, split="iid")
    assert str(out["images"]) == "train"
    perm = np.random.RandomState(2025).permutation(6).reshape(2, 3)   # the notebook's iid split
    expected = (pixels.reshape(6, 784)[perm] / 255.0 - 0.1307) / 0.3081
    np.testing.assert_allclose(out["Z"], expected, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(out["labels"], labels[perm])
    (cache / "mnist" / "train-images-idx3-ubyte.gz").write_bytes(img[:-1] + bytes([img[-1] ^ 1]))
    with pytest.raises(sources.ChecksumMismatchError):
        PCASphere.generate(np.random.default_rng(0), cache / "mnist" / "t10k-images",
                           cache / "mnist" / "t10k-labels",
                           cache / "mnist" / "train-labels-idx1-ubyte.gz", S=2, N=3, split="iid")


def test_anchors_folder_strips_the_sources_subpath(tmp_path):
    from rfl.problems.pca_sphere import anchors_folder

    assert anchors_folder(tmp_path / "cache" / "mnist" / "train-labels-idx1-ubyte.gz") == tmp_path / "cache"


def test_check_params_of_split():
    ok = {"S": 60, "N": 1000, "split": "slight"}
    assert PCASphere.check_params(ok) == []
    assert PCASphere.check_params({**ok, "N": 1008})[0][0] == "N"              # > 1000
    assert PCASphere.check_params({**ok, "N": 164})[0][0] == "N"               # not 8 | N
    assert PCASphere.check_params({**ok, "split": "heavy", "N": 164}) == []
    assert PCASphere.check_params({**ok, "shards": 8})[0][0] == "shards"


def test_report_names_the_images_each_experiment_used(tmp_path):
    """The reproduction report's provenance lists, per kind of images, the experiments whose
    runs recorded it (run metadata ``data``); runs without a note add nothing."""
    import json

    from rfl import io
    from rfl.problems.pca_sphere import IMAGES
    from rfl.reporting.reproduction import data_lines

    from rfl.testing.run_files import write_run

    def run(name, data):
        csv = tmp_path / f"{name}.csv"
        write_run(csv, {"excess_risk": np.ones(2)}, {}, **({"data": data} if data else {}))
        return str(csv)

    spec = {"runs": {"b_exp": [run("b", {"images": "test", "images_note": IMAGES["test"]})],
                     "a_exp": [run("a1", {"images": "train", "images_note": IMAGES["train"]}),
                               run("a2", {"images": "test", "images_note": IMAGES["test"]})],
                     "other": [run("c", {})]}}
    assert data_lines(spec) == [f"- data: {IMAGES['test']}: a_exp, b_exp",      # notes sorted
                                f"- data: {IMAGES['train']}: a_exp"]

"""PCA on the sphere with MNIST (the authors' ``PCASphere_MNIST``): the leading eigenvector of
the pooled second-moment matrix of the images,

    f_j(x) = -(1/N) sum_i (z_{j,i}^T x)^2 on S^783,    F = (1/S) sum_j f_j = -x^T C x,

CPESph's cost (rfl/problems/cpesph.py) on MNIST data instead of synthetic data: the same class,
another generator. Data: ``rfl.data.mnist`` (test images, standardised, shard split).
"""

from __future__ import annotations

from rfl.data import mnist

from .base import COUNT, object_schema
from .cpesph import CPESph


class PCASphere(CPESph):
    """Z: (S, N, 784) the agents' standardised images."""

    name = "pca_sphere"
    params_schema = object_schema(
        required={"S": COUNT, "N": COUNT},
        optional={"shards": {"type": "integer", "minimum": 1,
                             "description": "label-sorted shards per agent (8: upstream's noniid_small)"}},
        description="MNIST test images; N images for each of S agents")
    raw_inputs = ("mnist_test_images", "mnist_test_labels")
    test_params = {"S": 4, "N": 16, "shards": 2}

    @classmethod
    def find_raw_inputs(cls):
        from rfl.data.sources import find_all_in_mirror
        return find_all_in_mirror(cls.raw_inputs, "the MNIST files")

    @classmethod
    def check_params(cls, params):
        out = []
        shards = params.get("shards", 1)
        if params["N"] % shards:
            out.append(("N", f"{params['N']} is not a multiple of shards = {shards}; allowed: "
                             f"a multiple of shards"))
        if params["S"] * params["N"] > 10000:
            out.append(("N", f"S * N = {params['S'] * params['N']} exceeds the 10000 test "
                             f"images; allowed: S * N <= 10000"))
        return out

    @classmethod
    def memory_bytes(cls, params):
        return params["S"] * params["N"] * 784 * 8

    @classmethod
    def generate(cls, rng, images, labels, S, N, shards=1):
        """``{"Z": (S, N, 784)}``: the seeded shard split of the standardised test images."""
        X, y = mnist.load_test(images, labels)
        idx = mnist.shard_split(y, S, N, shards, rng)
        return {"Z": X[idx], "labels": y[idx]}

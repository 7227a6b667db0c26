"""PCA on the Stiefel manifold with CIFAR-10 (the authors' ``PCAStief_CIFAR10``): kPCA's cost
(``rfl.problems.kpca``) f_j(X) = -1/2 tr(X^T A_j X), A_j = (1/N) Z_j^T Z_j, on St(3072, r),
with agent j's rows the normalised training images of its pathological non-i.i.d. share
(``rfl.data.cifar10``; the authors: r = 4, 50 agents x 1000, 8 classes per agent). As for the
synthetic Stiefel PCA, the authors' cost has no 1/2: their step is ours 2 alpha.

At d = 3072 the local matrices A_j would take S d^2 doubles (3.8 GB for 50 agents), more than
the samples (S N d, 1.2 GB): this problem keeps only the pooled A (for the cost, the closed-form
optimum and its eigenvalues) and computes every local gradient and cost from the samples,
Z_j^T (Z_j X) and ||Z_j X||^2 (O(N d r) per agent).
"""

from __future__ import annotations

import numpy as np

from rfl.data import cifar10
from rfl.manifolds import Grassmann, Stiefel

from ._batching import gram_apply
from .base import COUNT, SOURCE, object_schema
from .kpca import KPCA


class PCAStiefelCIFAR10(KPCA):
    """Z: (S, N, 3072) the agents' normalised CIFAR-10 training images; kPCA's cost on St(3072, r)."""

    name = "pca_stiefel_cifar10"
    params_schema = object_schema(
        required={"r": {"type": "integer", "minimum": 1, "maximum": 64}, "S": COUNT, "N": COUNT},
        optional={"classes_per_client": {"type": "integer", "minimum": 1, "maximum": 10,
                                         "description": "label-sorted shards per agent (8: the "
                                                        "notebook's slight skew)"},
                  "split_seed": {"type": "integer", "minimum": 0, "maximum": 2**32 - 1,
                                 "description": "numpy legacy seed of the shard shuffle (2025: the notebook's)"},
                  "source": SOURCE},
        description="CIFAR-10 training images (all 50000): N for each of S agents, S N = 50000; "
                    "source generated: S N random images in a tarball of 5 batches of S N / 5")
    raw_inputs = ("cifar10_python",)
    test_params = {"r": 2, "S": 50, "N": 1000, "classes_per_client": 8}

    @classmethod
    def find_raw_inputs(cls):
        from rfl.data.sources import find_all_in_mirror
        return find_all_in_mirror(cls.raw_inputs, "CIFAR-10")

    @classmethod
    def check_params(cls, params):
        """The split deals all 50000 training images: S N = 50000, N a multiple of the shards."""
        out = []
        S, N = params["S"], params["N"]
        shards = params.get("classes_per_client", 8)
        if params.get("source") == "generated":
            if S * N % 5:
                out.append(("N", f"S * N = {S * N}; the generated tarball holds 5 batches of "
                                 f"S N / 5 images; allowed: S * N a multiple of 5"))
        elif S * N != 50000:
            out.append(("N", f"S * N = {S * N}; the split deals all 50000 training images; "
                             f"allowed: S * N = 50000"))
        if N % shards:
            out.append(("N", f"{N} is not a multiple of classes_per_client = {shards}; allowed: "
                             f"a multiple of classes_per_client"))
        if params["r"] > cifar10.FEATURES:
            out.append(("r", f"{params['r']} is larger than d = {cifar10.FEATURES}"))
        return out

    @classmethod
    def memory_bytes(cls, params):
        """Z: S N 3072 float64 and the pooled 3072 x 3072 A."""
        return (params["S"] * params["N"] * cifar10.FEATURES + cifar10.FEATURES ** 2) * 8

    @staticmethod
    def local_sizes_from(params: dict):
        return [int(params["N"])] * int(params["S"])

    @classmethod
    def generate(cls, rng, *tarball, r, S, N, classes_per_client=8,
                 split_seed=cifar10.NOTEBOOK_SEED, source="pinned"):
        """``{"Z": (S, N, 3072), "labels": (S, N), "r": ()}``: the notebook's split of the
        normalised training images (its own seeded shuffle: ``rng`` is not used). ``source``
        "generated": no input; a tarball of S N random images (``rfl.data.generated``, seeded
        by ``rng``) written to a temporary folder and read as the pinned one but its md5."""
        if source == "generated":
            import tempfile
            from pathlib import Path

            from rfl.data import generated
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "cifar-10-python.tar.gz"
                generated.write_cifar10_tarball(path, S * N // 5, generated.seed_from(rng))
                X, y = cifar10.read_train(path)
            out = cls.from_images(X, y, r, S, N, classes_per_client, split_seed)
            return {**out, "fixture": np.array(path.name)}
        X, y = cifar10.load_train(*tarball)
        return cls.from_images(X, y, r, S, N, classes_per_client, split_seed)

    @classmethod
    def from_arrays(cls, arrays, params=None, **geometry):
        problem = super().from_arrays(arrays, params, **geometry)
        from rfl.data.generated import notes
        problem.data = notes(arrays)
        return problem

    def data_notes(self) -> dict:
        """Whether the images are a generated fixture (run metadata ``data``)."""
        return dict(getattr(self, "data", {}))

    @staticmethod
    def from_images(X, y, r, S, N, classes_per_client=8, split_seed=cifar10.NOTEBOOK_SEED) -> dict:
        """The arrays of :meth:`generate` from normalised images ``X`` and labels ``y``."""
        if X.shape[0] != S * N:
            raise ValueError(f"{X.shape[0]} images, but S * N = {S * N}: the split deals them all")
        parts = cifar10.pathological_split(y, S, classes_per_client, split_seed)
        sizes = {p.size for p in parts}
        if sizes != {N}:
            raise ValueError(f"the split gives agents {sorted(sizes)} images, not N = {N}")
        idx = np.stack(parts)
        return {"Z": X[idx], "labels": y[idx], "r": np.array(int(r))}

    def __init__(self, Z, r, labels=None, retraction=None, transport=None):
        self.Z = np.asarray(Z, dtype=float)
        if self.Z.ndim != 3:
            raise ValueError(f"Z must have shape (S, N, d), got {self.Z.shape}")
        S, N, d = self.Z.shape
        self.d, self.r = d, int(r)
        self.manifold = Stiefel(d, self.r, retraction=retraction, transport=transport)
        self._grassmann = Grassmann(d, self.r)
        self.labels = None if labels is None else np.asarray(labels)
        self.local_sizes = np.full(S, N)
        flat = self.Z.reshape(S * N, d)            # equal N: the pooled A is (1/(S N)) Z^T Z
        A = flat.T @ flat
        self.A_bar = 0.5 * (A + A.T) / (S * N)

    def eigenvalues(self) -> np.ndarray:
        """Eigenvalues of the pooled A, descending ``(d,)``; with fewer images n than d from the
        singular values s of the pooled samples (A = V diag(s^2 / n) V^T, O(n^2 d) instead of
        an O(d^3) eigendecomposition), the other d - n zero."""
        flat = self.Z.reshape(-1, self.d)
        if flat.shape[0] >= self.d:
            return super().eigenvalues()
        s = np.linalg.svd(flat, compute_uv=False)
        return np.concatenate([s ** 2 / flat.shape[0], np.zeros(self.d - s.size)])

    def closed_form_optimum(self):
        """kPCA's X* (the r leading eigenvectors of A, signed); with fewer images than d the r
        leading right singular vectors of the pooled samples (see ``eigenvalues``)."""
        flat = self.Z.reshape(-1, self.d)
        if flat.shape[0] >= self.d:
            return super().closed_form_optimum()
        _, _, vt = np.linalg.svd(flat, full_matrices=False)
        return self.signed(vt[:self.r].T)

    @property
    def full_batch_product(self) -> str:
        """Always "samples": no local A_j is kept (module docstring)."""
        return "samples"

    def minibatch_egrad(self, x, agents, batch):
        """-(1/B) Z_b^T Z_b X: x (s, d, r), batch (s, B) -> (s, d, r)."""
        out = gram_apply(self.Z, np.asarray(agents), batch, np.asarray(x, dtype=float))
        out /= -batch.shape[1]
        return out

    def cost(self, x):
        """-1/2 tr(X^T A X), A X by one BLAS product (an einsum over 3072^2 r terms is 5x slower)."""
        return float(-0.5 * np.sum(x * (self.A_bar @ x)))

    def local_cost(self, x, agents):
        """-1/(2N) ||Z_j X_j||_F^2 for each agent: x (s, d, r) -> (s,)."""
        agents = np.asarray(agents)
        zx = np.matmul(self.Z[agents], np.asarray(x, dtype=float))
        return -0.5 * np.einsum("snr,snr->s", zx, zx) / self.Z.shape[1]

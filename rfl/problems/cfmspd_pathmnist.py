"""The Fréchet mean on SPD(9) of PathMNIST region covariances (the authors' ``FMCSPD_PATHMNIST``):
CFMSPD's cost (``rfl.problems.cfmspd``, squared affine-invariant distance, no 1/2) on the square
roots of the matrices of ``RI.mat`` (``rfl.data.pathmnist``), N for each of S agents. The
authors' cost has a factor 1/2 (their gradient -Log_X(Z)): their step is ours 2 alpha.
"""

from __future__ import annotations

import numpy as np

from rfl.data import pathmnist

from .base import COUNT, SOURCE, object_schema
from .cfmspd import CFMSPD


class CFMSPDPathMNIST(CFMSPD):
    """Z: (S, N, 9, 9) square roots of PathMNIST region covariances."""

    name = "cfmspd_pathmnist"
    params_schema = object_schema(
        required={"S": COUNT, "N": COUNT}, optional={"source": SOURCE},
        description="square roots of S N PathMNIST region covariances (RI.mat), N per agent; "
                    "source generated: drawn from an RI.mat of 2 S N random SPD matrices")
    raw_inputs = ("pathmnist_ri",)
    test_params = {"S": 50, "N": 400}

    @classmethod
    def find_raw_inputs(cls):
        from rfl.data.sources import find_all_in_mirror
        return find_all_in_mirror(cls.raw_inputs, "the PathMNIST covariances")

    @classmethod
    def check_params(cls, params):
        return []

    @classmethod
    def memory_bytes(cls, params):
        return params["S"] * params["N"] * pathmnist.D ** 2 * 8

    @classmethod
    def generate(cls, rng, *ri, S, N, source="pinned"):
        """``{"Z": (S, N, 9, 9)}``: square roots of S N matrices drawn from RI.mat with ``rng``.
        ``source`` "generated": no input; an RI.mat of 2 S N random SPD matrices
        (``rfl.data.generated``, seeded by ``rng``) written to a temporary folder and read as
        the pinned one but its checksum."""
        if source == "generated":
            import tempfile
            from pathlib import Path

            from rfl.data import generated
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "RI.mat"
                generated.write_pathmnist_mat(path, 2 * S * N, generated.seed_from(rng))
                matrices = pathmnist.read_ri(path)
            return {"Z": pathmnist.agent_samples(matrices, S, N, rng), "fixture": np.array(path.name)}
        return {"Z": pathmnist.agent_samples(pathmnist.load(*ri), S, N, rng)}

    @classmethod
    def from_arrays(cls, arrays, params=None, **geometry):
        problem = super().from_arrays(arrays, params, **geometry)
        from rfl.data.generated import notes
        problem.data = notes(arrays)
        return problem

    def data_notes(self) -> dict:
        """Whether the matrices come from a generated fixture (run metadata ``data``)."""
        return dict(getattr(self, "data", {}))

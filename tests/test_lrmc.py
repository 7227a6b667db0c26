"""Low-rank matrix completion (``rfl.problems.lrmc``) and the synthetic Stiefel PCA
(``rfl.problems.pca_stiefel``): the shared problem contract on several instances, and the
mathematics each adds (closed forms, per-column oracles, the two test-RMSE protocols)."""

from __future__ import annotations

import numpy as np
import pytest

from rfl.problems.lrmc import LowRankMatrixCompletion as LRMC
from rfl.problems.pca_stiefel import PCAStiefelSynthetic as PCASyn
from rfl.testing.problem import ProblemCase, ProblemContract, build


class TestContract(ProblemContract):
    def problem_cases(self):
        return [ProblemCase(LRMC, dict(LRMC.test_params)),
                ProblemCase(LRMC, {"m": 9, "n": 10, "r": 3, "S": 2, "OS": 1.5, "noise": 0.0}, seed=2),
                ProblemCase(PCASyn, dict(PCASyn.test_params)),
                ProblemCase(PCASyn, {"d": 5, "r": 1, "S": 2, "N": 4, "block": 4, "scales": [0.5, 400.0]},
                            seed=1)]

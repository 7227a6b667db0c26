"""RFedAGS round time on the paper's problems at paper size (Table 1)."""

import numpy as np

from rfl.algorithms import Fixed, RFedAGS
from rfl.data.cpesph import generate as generate_cpesph
from rfl.problems.cpesph import CPESph
from rfl.random import stream


class CPESphRound:
    """One RFedAGS round on CPESph, Table 1: d=25, S=10, N=80, B=64, alpha=1."""

    params = [5, 10, 20, 30]
    param_names = ["K"]

    def setup(self, K):
        Z = generate_cpesph(stream(2024, "data", "cpesph"), d=25, nu=1e-3, S=10, N=80)["Z"]
        self.problem = CPESph(Z, retraction="normalize", transport="parallel")
        self.algorithm = RFedAGS(self.problem, Fixed(1.0), K, 64)
        self.sampler = self.algorithm.sampler(np.random.default_rng(0))
        self.x = self.problem.initial_point(np.random.default_rng(1))

    def time_round(self, K):
        self.algorithm.round(self.x, 0, self.sampler)

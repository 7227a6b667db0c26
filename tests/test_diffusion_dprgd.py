"""Riemannian diffusion (with its non-cooperative and fusion-centre baselines), DPRGD and
iDPRGD through the shared strategy contract: each equals its per-agent reference loop
(rfl/testing/reference_loops.py) to rounding on small instances, on the contract's sphere
problem and on the streaming / dynamic problems they were written for (a fresh sample per
step from ``stream_batch``, the per-agent starts of ``initial_stack``)."""

import numpy as np
import pytest

from rfl.testing.strategy import CONTRACT_PROBLEMS, ContractProblem, StrategyContract


def _streaming_pca(**geometry):
    from rfl.problems.streaming_pca import StreamingPCA
    return StreamingPCA.from_arrays(StreamingPCA.generate(np.random.default_rng(2), n=6, p=2, S=5, T=8),
                                    {}, **geometry)


def _h2(**geometry):
    from rfl.problems.dynamic_frechet import DynamicFrechetH2
    params = {"S": 5, "K": 3, "T": 6, "T0": 2, "drift_from": 3}
    return DynamicFrechetH2.from_arrays(DynamicFrechetH2.generate(np.random.default_rng(4), **params),
                                        params, **geometry)


def _spd(**geometry):
    from rfl.problems.dynamic_frechet import DynamicFrechetSPD
    params = {"S": 5, "K": 3, "T": 6, "T0": 2, "drift_from": 3}
    return DynamicFrechetSPD.from_arrays(DynamicFrechetSPD.generate(np.random.default_rng(6), **params),
                                         params, **geometry)


PROBLEMS = [p for p in CONTRACT_PROBLEMS if p.name == "cpesph"] + [
    ContractProblem("streaming_pca", _streaming_pca, 0.3),
    ContractProblem("dynamic_frechet_h2", _h2, 0.5),
    ContractProblem("dynamic_frechet_spd", _spd, 0.5),
]


class TestStreamingStrategies(StrategyContract):
    strategies = ["diffusion", "noncooperative", "fusion_centre", "dprgd", "idprgd"]
    problems = PROBLEMS
    options = {"graph": {"name": "k_ring", "k": 2}, "weights": "metropolis_hastings"}

    def test_deterministic_for_a_seed(self, case):
        """On a streaming problem the samples are the data's (``stream_batch``), not the run's
        draws: another run seed gives the same iterates (a run's seed changes the data through
        the dataset's seed instead); elsewhere the contract's check."""
        cls, problem = self.setup_case(case)
        if not hasattr(problem, "stream_batch"):
            return super().test_deterministic_for_a_seed(case)
        x0 = self.x0(problem)
        alg = self.build(cls, case, problem, None)
        a, ca = self.run(alg, x0, self.rounds, self.seed)
        other, co = self.run(alg, x0, self.rounds, self.seed + 100)
        np.testing.assert_array_equal(np.array(a), np.array(other))
        assert ca == co

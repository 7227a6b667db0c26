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


def test_regret_columns_are_measured_before_each_step_and_summed():
    """iDPRGD on the dynamic H^2 mean: the round-t regret is the problem's regret of step t at
    the stack the data of step t meet (before the update), and dynamic_regret its running sum;
    the row t = 0 has dynamic_regret 0 and consensus error of the notebook's per-agent starts."""
    from rfl.algorithms import Fixed
    from rfl.algorithms.consensus import consensus_error, karcher_mean
    from rfl.registry import ALGORITHMS
    problem = _h2()
    alg = ALGORITHMS["idprgd"](problem, Fixed(0.5), 1, 3, None, graph={"name": "k_ring", "k": 2})
    sampler = alg.sampler(np.random.default_rng(0))
    start = alg.start_metrics(problem.init[0], np.random.default_rng(0))
    assert start["dynamic_regret"] == 0.0
    X0 = problem.initial_stack()
    want0 = consensus_error(problem.manifold, X0, karcher_mean(problem.manifold, X0), "frechet_consensus")
    assert start["consensus_error"] == pytest.approx(want0, rel=1e-9)
    alg.reset(problem.init[0])
    np.testing.assert_array_equal(alg.X, X0)
    total = 0.0
    for t in range(problem.horizon):
        before = problem.agent_metrics(alg.X.copy(), t)["regret"]
        r = alg.round(None, t, sampler)
        total += before
        assert r.metrics["regret"] == pytest.approx(before, rel=1e-12)
        assert r.metrics["dynamic_regret"] == pytest.approx(total, rel=1e-12)


def test_streaming_msd_is_measured_after_each_step():
    """Diffusion on streaming PCA: the round-t MSD is that of the stack after the step."""
    from rfl.algorithms import Fixed
    from rfl.registry import ALGORITHMS
    problem = _streaming_pca()
    alg = ALGORITHMS["diffusion"](problem, Fixed(0.3), 1, 1, None)
    sampler = alg.sampler(np.random.default_rng(0))
    alg.reset(problem.manifold.random_point(np.random.default_rng(1), 1)[0])
    for t in range(3):
        r = alg.round(None, t, sampler)
        assert r.metrics["msd"] == pytest.approx(problem.msd(alg.X), rel=1e-12)

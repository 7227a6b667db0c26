"""The straightforward implementation each vectorised algorithm is measured against: the
per-agent reference loops of the tests (``tests/reference_loops*.py``: a Python loop over
rounds, agents and local steps on single points, through pymanopt's single-point manifold
maps), one round at a time, consuming an ``AgentSampler`` exactly as the vectorised code.

The tests use these loops as oracles (tests/test_algorithms.py, test_rfedsvrg_rfedproj.py,
test_lsa.py); the benchmarks import the same functions, so a loop measured here is the loop
the results are checked against. Only the single-point Stiefel maps RFedAGS needs (polar
retraction, projection transport: pymanopt's) are added here.
"""

from __future__ import annotations

import numpy as np

from . import _common  # noqa: F401  (puts tests/ on sys.path)
from reference_loops import SphereOps, fedavg_loop, rfedags_loop, rfedavg_loop  # noqa: E402
from reference_loops_hetero import (StiefelOps, rfedproj_loop, rfedsvrg_loop,  # noqa: E402
                                    sphere_project)


class StiefelRetractionOps(StiefelOps):
    """Single-point St(p, n) maps from pymanopt: tangent projection, the named retraction
    (``polar``: SVD of X + V; ``qr``) and its transport (projection onto T_Y St)."""

    def __init__(self, n, p, retraction="polar"):
        from pymanopt.manifolds import Stiefel
        super().__init__(n, p)
        self.m = Stiefel(n, p, retraction=retraction)

    def retraction(self, x, u):
        return self.m.retraction(x, u)

    def transport(self, x, y, u):
        return self.m.transport(x, y, u)


def loop_ops(problem):
    """The single-point maps matching ``problem.manifold``'s geometry."""
    m = problem.manifold
    if m.name == "sphere":
        return SphereOps(m.n, m.retraction_name, m.transport_name)
    if m.name == "stiefel":
        if m.transport_name != "projection":
            raise NotImplementedError("the reference loops have the Stiefel projection transport only")
        return StiefelRetractionOps(m.n, m.p, m.retraction_name)
    raise NotImplementedError(f"no single-point reference maps for {m.name}")


def loop_round_function(name: str, problem, x0: np.ndarray, K: int, B: int, alpha: float,
                        seed: int = 0, **kwargs):
    """A callable running one round of the reference loop of algorithm ``name`` from x0."""
    from rfl.algorithms import AgentSampler, Fixed

    step = Fixed(alpha)
    sampler = AgentSampler(np.random.default_rng(seed), problem.local_sizes, B,
                           kwargs.get("participation"))
    if name == "rfedags":
        ops = loop_ops(problem)
        return lambda: rfedags_loop(problem, ops, x0, step, K, 1, sampler)
    if name == "rfedavg":
        ops = loop_ops(problem)
        return lambda: rfedavg_loop(problem, ops, x0, step, K, 1, sampler)
    if name == "rfedsvrg":
        ops = loop_ops(problem)
        return lambda: rfedsvrg_loop(problem, ops, x0, step, K, 1, sampler)
    if name == "rfedproj":
        m = problem.manifold
        if m.name == "sphere":
            ops, project = SphereOps(m.n), sphere_project
        else:
            ops = StiefelOps(m.n, m.p)
            project = ops.project
        server_step = kwargs.get("server_step", 1.0)
        return lambda: rfedproj_loop(problem, ops, project, x0, step, K, 1, sampler, server_step)
    if name == "fedavg":
        if problem.name == "lsa":
            from reference_loops_lsa import fedlsa_loop
            return lambda: fedlsa_loop(problem, x0, step, K, 1, sampler)
        return lambda: fedavg_loop(problem, x0, step, K, 1, sampler)
    if name == "scafflsa":
        from reference_loops_lsa import scafflsa_loop
        return lambda: scafflsa_loop(problem, x0, step, K, 1, sampler)
    raise NotImplementedError(f"no reference loop for {name!r}")

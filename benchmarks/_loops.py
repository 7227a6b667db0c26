"""The straightforward implementation each vectorised strategy is measured against: its
per-agent reference loop (``rfl.testing.reference_loops``: a Python loop over rounds, agents
and local steps on single points, through pymanopt's single-point manifold maps), one round
at a time, consuming an ``AgentSampler`` exactly as the vectorised code.

The tests use these loops as oracles (``rfl.testing.strategy``, tests/test_algorithms.py, ...);
the benchmarks take the same functions from the same table, so a loop measured here is the
loop the results are checked against.
"""

from __future__ import annotations

import numpy as np

from ._common import Skip


def loop_round_function(name: str, problem, x0: np.ndarray, K: int, B: int, alpha: float,
                        seed: int = 0, participation: int | None = None, **options):
    """A callable running one round of the reference loop of strategy ``name`` from x0
    (``options``: the strategy's declared options, e.g. RFedProj's server_step)."""
    from rfl.algorithms import AgentSampler, Fixed
    from rfl.registry import ALGORITHMS
    from rfl.testing.reference_loops import REFERENCE_LOOPS, single_point_ops

    loop = REFERENCE_LOOPS.get(name)
    if loop is None:
        raise Skip(f"no reference loop for {name!r}")
    ops = single_point_ops(problem.manifold)
    options = {**ALGORITHMS[name].option_defaults(), **options}
    step = Fixed(alpha)
    sampler = AgentSampler(np.random.default_rng(seed), problem.local_sizes, B, participation)
    return lambda: loop(problem, x0, step, K, 1, sampler, ops=ops, **options)

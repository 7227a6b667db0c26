"""``StrategyContract``: what every federated strategy must satisfy, run over the registry.

For every registered federated strategy (``rfl.registry.ALGORITHMS``) and every small
built-in problem it applies to (its ``requires`` offered by the problem's manifold, the
problem's field among its ``fields``; ``CONTRACT_PROBLEMS``):

* vectorised == the per-agent reference loop of ``rfl.testing.reference_loops`` for the
  same draws, with all agents and with partial participation;
* ``round`` results: the participants are the round's draw (sorted, distinct, s of them),
  the counters ``iterate`` yields are the sums of the rounds' ``grad_evals`` and ``floats``,
  at least the local work s K B, and ``iterate`` is ``reset`` + ``round`` round after round;
* determinism: the same seed gives the same iterates and counters, another seed other ones;
* every iterate is finite and on the manifold.

The reference loop runs on single points through ``single_point_ops``: pymanopt's or the
paper's maps for the built-in manifolds, the manifold's own batched maps one point at a time
for any other (a plug-in manifold needs nothing registered).

Over the whole registry (``strategies`` None), a strategy without a reference loop, or
without a problem it applies to, is skipped with the reason. A plug-in tests its strategy by
subclassing in its own test module; a strategy named there must have both, else its tests
fail saying which hook to define::

    from rfl.testing.reference_loops import reference_loop
    from rfl.testing.strategy import CONTRACT_PROBLEMS, ContractProblem, StrategyContract

    @reference_loop("mystrategy")            # the oracle: one agent, one point at a time
    def my_loop(problem, x1, step_size, K, rounds, sampler, ops=None, **options): ...

    class TestMyStrategy(StrategyContract):
        strategies = ["mystrategy"]          # default: every registered federated strategy
        problems = CONTRACT_PROBLEMS + [ContractProblem("mine", make, alpha)]   # optional

The geometry is the problem's default unless the ``ContractProblem`` sets it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest


@dataclass(frozen=True, eq=False)
class ContractProblem:
    """A small problem for the contract: ``make()`` builds it (cached), ``alpha`` is a fixed
    step that moves the iterates visibly in a few rounds without diverging."""

    name: str
    make: Callable
    alpha: float
    geometry: dict = field(default_factory=dict)

    def build(self):
        return _built(self)


@functools.cache
def _built(problem: ContractProblem):
    return problem.make(**problem.geometry)


def _cpesph(**geometry):
    from rfl.data.cpesph import generate
    from rfl.problems.cpesph import CPESph
    return CPESph(generate(np.random.default_rng(5), d=7, nu=0.2, S=6, N=15, heterogeneous=True)["Z"],
                  **geometry)


def _mbcfsti(**geometry):
    from rfl.data.mbcfsti import generate
    from rfl.problems.mbcfsti import MBCFSti
    return MBCFSti.from_arrays(generate(np.random.default_rng(3), d=8, p=3, S=5, N=10), **geometry)


def _lsa(**geometry):
    from rfl.data.garnet import generate
    from rfl.problems.lsa import FederatedLSA
    return FederatedLSA.from_arrays(generate(np.random.default_rng(1), 5, "heterogeneous", n_states=12,
                                             n_features=4, pool=40), **geometry)


#: the built-in problems: the sphere (Log, nearest point), Stiefel with the polar retraction
#: and the projection transport (tangent mean through the inverse retraction, nearest
#: point), and flat federated TD(0) (a linear field, not a gradient)
CONTRACT_PROBLEMS = [
    ContractProblem("cpesph", _cpesph, 1.0, {"retraction": "normalize", "transport": "parallel"}),
    ContractProblem("mbcfsti", _mbcfsti, 0.03, {"retraction": "polar", "transport": "projection"}),
    ContractProblem("lsa", _lsa, 1.0),
]


#: options the contract gives a strategy beyond its defaults, by name. ZO-RFedProj's forward
#: difference (f(P(x + mu u)) - f(x)) / mu divides the costs' rounding errors (~1e-16) by mu:
#: at its default mu = 1e-5 two correct orders of summation part by ~1e-11, above the
#: contract's 1e-12; at mu = 1e-3 they agree within it (the same code, another smoothing)
CONTRACT_OPTIONS = {"zorfedproj": {"mu": 1.0e-3}}


@dataclass(frozen=True)
class Case:
    """One strategy on one contract problem (``problem`` None: none applies; ``skip`` says why)."""

    name: str
    problem: ContractProblem | None
    skip: str | None = None

    @property
    def id(self) -> str:
        return f"{self.name}-{self.problem.name if self.problem else 'none'}"


class StrategyContract:
    """The federated strategy contract (module docstring); subclass to select strategies."""

    #: names of the strategies under test (None: every registered federated strategy)
    strategies: list[str] | None = None
    #: options given to the strategies under test and to their reference loops (beyond the
    #: declared defaults), e.g. ``{"local_method": "rsvrg"}`` for RFedAGS
    options: dict = {}
    problems: list[ContractProblem] = CONTRACT_PROBLEMS
    K = 3
    batch_size = 4
    rounds = 5
    seed = 11

    # ---- parametrisation ------------------------------------------------------------
    def strategy_names(self) -> list[str]:
        from rfl.registry import ALGORITHMS
        if self.strategies is not None:
            return list(self.strategies)
        return [n for n, cls in ALGORITHMS.items() if cls.federated]

    def cases(self) -> list[Case]:
        from rfl.registry import ALGORITHMS
        out = []
        for name in self.strategy_names():
            cls = ALGORITHMS[name]
            found = [p for p in self.problems if not cls.missing(p.build())]
            if not found:
                needs = ", ".join(sorted(cls.requires)) or "nothing"
                out.append(Case(name, None, f"{name}: none of the contract problems "
                                            f"({', '.join(p.name for p in self.problems)}) offers what it "
                                            f"requires ({needs}) with a field it follows "
                                            f"({', '.join(sorted(cls.fields))})"))
            out.extend(Case(name, p) for p in found)
        return out

    def pytest_generate_tests(self, metafunc):
        if "case" in metafunc.fixturenames:
            cases = self.cases()
            metafunc.parametrize("case", cases, ids=[c.id for c in cases])

    # ---- helpers ----------------------------------------------------------------------
    def options_for(self, cls) -> dict:
        """The options a strategy runs with: its defaults, ``CONTRACT_OPTIONS`` for it, then
        ``options``."""
        return {**cls.option_defaults(), **CONTRACT_OPTIONS.get(cls.name, {}), **self.options}

    def setup_case(self, case: Case):
        if case.skip:
            if self.strategies is not None:          # a strategy named for the contract: fail
                pytest.fail(f"{case.skip}; add a ContractProblem it applies to: problems = "
                            f"CONTRACT_PROBLEMS + [ContractProblem(name, make, alpha, geometry)]")
            pytest.skip(case.skip)
        from rfl.registry import ALGORITHMS
        return ALGORITHMS[case.name], case.problem.build()

    def partial(self, problem) -> int:
        """A participation strictly between 1 and S when S > 2 (S - 1 otherwise)."""
        S = problem.n_agents
        return max(1, min(S - 1, S // 2 + 1))

    def build(self, cls, case: Case, problem, participation):
        from rfl.algorithms import Fixed
        B = min(self.batch_size, int(np.min(problem.local_sizes)))
        return cls(problem, Fixed(case.problem.alpha), self.K_for(cls), B, participation,
                   **self.options_for(cls))

    def K_for(self, cls) -> int:
        """The local steps a strategy runs with: ``K``, and 1 for a decentralised strategy (one
        gradient step per round, ``rfl.algorithms.decentralised``)."""
        return 1 if getattr(cls, "decentralised", False) else self.K

    @staticmethod
    def skip_partial(cls, partial: bool) -> None:
        """A decentralised strategy has every agent in every round: no partial case."""
        if partial and getattr(cls, "decentralised", False):
            pytest.skip(f"{cls.name}: decentralised, every agent takes part in every round")

    def x0(self, problem):
        return problem.initial_point(np.random.default_rng(self.seed + 1))

    @staticmethod
    def run(alg, x0, rounds, seed):
        """[x_1, ..., x_{T+1}] and the (grad_evals, floats) after each round."""
        xs, counts = [x0], []
        for _, x, c in alg.iterate(x0, rounds, np.random.default_rng(seed)):
            xs.append(np.array(x, copy=True))
            counts.append((c.grad_evals, c.floats))
        return xs, counts

    # ---- the contract -------------------------------------------------------------------
    @pytest.mark.parametrize("partial", [False, True], ids=["all-agents", "partial"])
    def test_matches_reference_loop(self, case, partial):
        from rfl.algorithms import AgentSampler, Fixed
        from rfl.testing.reference_loops import REFERENCE_LOOPS
        cls, problem = self.setup_case(case)
        self.skip_partial(cls, partial)
        loop = REFERENCE_LOOPS.get(case.name)
        if loop is None:
            why = (f"{case.name}: no reference loop registered; define one with "
                   f"@rfl.testing.reference_loops.reference_loop({case.name!r}) in the test module")
            if self.strategies is not None:          # a strategy named for the contract: fail
                pytest.fail(why)
            pytest.skip(why)
        s = self.partial(problem) if partial else None
        alg = self.build(cls, case, problem, s)
        x0 = self.x0(problem)
        vec, _ = self.run(alg, x0, self.rounds, self.seed)
        sampler = AgentSampler(np.random.default_rng(self.seed), problem.local_sizes, alg.batch_size, s)
        ref = loop(problem, x0, Fixed(case.problem.alpha), alg.K, self.rounds, sampler,
                   **self.options_for(cls))
        scale = max(1.0, float(np.abs(np.array(ref)).max()))
        np.testing.assert_allclose(np.array(vec), np.array(ref), rtol=0, atol=1e-12 * scale)
        assert np.abs(vec[-1] - vec[0]).max() > 1e-3 * scale      # the iterates actually moved

    @pytest.mark.parametrize("partial", [False, True], ids=["all-agents", "partial"])
    def test_rounds_add_up_to_iterate(self, case, partial):
        cls, problem = self.setup_case(case)
        self.skip_partial(cls, partial)
        s = self.partial(problem) if partial else None
        x0 = self.x0(problem)
        xs, counts = self.run(self.build(cls, case, problem, s), x0, self.rounds, self.seed)
        alg = self.build(cls, case, problem, s)
        sampler = alg.sampler(np.random.default_rng(self.seed))
        drawn = []
        draw = sampler.participants

        def participants():
            agents = draw()
            drawn.append(agents.copy())
            return agents

        sampler.participants = participants
        alg.reset(x0)
        x, grad_evals, floats = x0, 0, 0
        n_agents = s or problem.n_agents
        for t in range(self.rounds):
            r = alg.round(x, t, sampler)
            assert len(drawn) == t + 1                              # one draw of participants per round
            np.testing.assert_array_equal(r.participants, drawn[-1])
            assert r.participants.shape == (n_agents,) and np.all(np.diff(r.participants) > 0)
            assert 0 <= r.participants[0] and r.participants[-1] < problem.n_agents
            assert isinstance(r.grad_evals, (int, np.integer)) and isinstance(r.floats, (int, np.integer))
            assert r.grad_evals >= n_agents * alg.K * alg.batch_size and r.floats >= 0
            grad_evals += r.grad_evals
            floats += r.floats
            x = r.x
            np.testing.assert_array_equal(x, xs[t + 1])
            assert (grad_evals, floats) == counts[t]

    def test_deterministic_for_a_seed(self, case):
        cls, problem = self.setup_case(case)
        s = None if getattr(cls, "decentralised", False) else self.partial(problem)
        x0 = self.x0(problem)
        alg = self.build(cls, case, problem, s)
        a, ca = self.run(alg, x0, self.rounds, self.seed)
        b, cb = self.run(alg, x0, self.rounds, self.seed)           # the same instance again: reset
        c, _ = self.run(self.build(cls, case, problem, s), x0, self.rounds, self.seed)
        np.testing.assert_array_equal(np.array(a), np.array(b))
        np.testing.assert_array_equal(np.array(a), np.array(c))
        assert ca == cb
        other, _ = self.run(alg, x0, self.rounds, self.seed + 100)
        assert np.abs(np.array(other) - np.array(a)).max() > 0

    def test_iterates_stay_on_the_manifold(self, case):
        cls, problem = self.setup_case(case)
        xs, _ = self.run(self.build(cls, case, problem, None), self.x0(problem), self.rounds, self.seed)
        xs = np.array(xs)
        assert np.all(np.isfinite(xs))
        assert problem.manifold.distance_from_manifold(xs).max() < 1e-10

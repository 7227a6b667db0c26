"""What every algorithm declares, and the federated round loop shared by every strategy.

An algorithm is a class that declares itself (``name``, ``label``, ``requires``, ``fields``,
``options``, ``style``, ``plot_order``: see ``Declared``); a concrete subclass that sets
``name`` in its class body is added to ``rfl.registry.ALGORITHMS`` when it is defined.

A federated strategy implements ``round(x_t, t, sampler) -> RoundResult`` for one outer
iteration, keeping whatever state it carries across rounds in itself (``reset(x0)`` sets it
up): it draws ``sampler.participants()`` once and the mini-batches of local step k as
``sampler.batches(agents, t, k)`` (so that every method of an experiment sees the same
batches at (t, k), ``rfl.algorithms.sampling``); ``FederatedStrategy.iterate`` drives the rounds and yields, after each, the new server
point and the cumulative cost counters that the run table records. A centralised solver
(``CentralizedSolver``) has its own ``iterate`` with the same rows.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .sampling import AgentSampler


@dataclass
class Counters:
    """Cumulative work of a run: sample gradients evaluated and floats communicated; and the
    latest round's participants (None for a centralised solver), for the simulated time
    (``rfl.simtime``)."""

    grad_evals: int = 0
    floats: int = 0
    participants: np.ndarray | None = None
    #: the latest round's extra metrics (the strategy's ``metrics`` columns), or None
    metrics: dict | None = None


@dataclass(frozen=True)
class RoundResult:
    """One round's outcome: the new server point x_{t+1} (``point_shape``), the round's
    participants (s,), the work of this round alone (sample gradients, floats sent), and the
    values of the strategy's ``metrics`` columns (None when it declares none)."""

    x: np.ndarray
    participants: np.ndarray
    grad_evals: int
    floats: int
    metrics: dict | None = None


class Declared:
    """The declarations every algorithm makes (class attributes), and its registration.

    name: config name; label: figure/table label; federated: a federated strategy (True)
    or a centralised solver (False); requires: manifold capabilities (``Manifold.offers``
    vocabulary) it needs; fields: kinds of local field it can follow ("gradient",
    "linear_field"); oracles: what it needs of the problem beyond its local field
    (``rfl.problems.base.ORACLES``, e.g. "sample_costs"; ``Problem.offers``); options: JSON-schema ``properties`` of its per-method options (beyond
    K, batch size and participation), each with its default; style: matplotlib style of its
    curves, ``{"color": colour or None (coloured by K), "ls": line style}``; plot_order:
    legend position; problem_labels: the label on a given problem, where the literature names
    the method after it (problem -> label; FedAvg on the LSA field is FedLSA).
    """

    name: ClassVar[str]
    label: ClassVar[str]
    federated: ClassVar[bool]
    requires: ClassVar[frozenset] = frozenset()
    fields: ClassVar[frozenset] = frozenset({"gradient"})
    oracles: ClassVar[frozenset] = frozenset()
    options: ClassVar[dict] = {}
    style: ClassVar[dict] = {"color": None, "ls": "-"}
    plot_order: ClassVar[int] = 100
    problem_labels: ClassVar[dict] = {}
    #: run-table columns the algorithm adds beyond the runner's (name -> definition); its
    #: rounds give their values (``RoundResult.metrics``), ``start_metrics`` those of t = 0
    metrics: ClassVar[dict] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        from rfl.registry import ALGORITHMS
        ALGORITHMS.declare(cls)

    @classmethod
    def contract_errors(cls, deep: bool = False) -> list[str]:
        """What this class lacks to be an algorithm (phrases; empty when nothing): a
        ``FederatedStrategy`` implementing ``round`` or a ``CentralizedSolver`` implementing
        ``iterate``; a ``label``; ``requires`` among the manifold capabilities, ``fields``
        among the problems' fields; ``options`` a mapping of JSON schemas (``deep``: valid
        ones, each default valid). Checked when a named subclass is created and, with
        ``deep``, by ``rfl validate`` for every algorithm a config uses."""
        from rfl.manifolds import Manifold
        from rfl.problems.base import FIELDS, ORACLES
        from rfl.registry import option_errors, unimplemented

        base = next((b for b in (FederatedStrategy, CentralizedSolver) if issubclass(cls, b)), None)
        if base is None:
            return ["is neither a FederatedStrategy nor a CentralizedSolver"]
        out = []
        missing = unimplemented(cls, base)
        if missing:
            out.append(f"does not implement {', '.join(missing)}")
        if not (isinstance(getattr(cls, "label", None), str) and cls.label):
            out.append("declares no label (a non-empty string)")
        for attr, allowed in (("requires", Manifold.CAPABILITIES), ("fields", FIELDS),
                              ("oracles", ORACLES)):
            value = getattr(cls, attr)
            if not (isinstance(value, (frozenset, set, tuple, list))
                    and all(isinstance(v, str) and v in allowed for v in value)):
                out.append(f"declares {attr} = {value!r}; allowed: a frozenset of "
                           f"{', '.join(allowed)}")
        return out + option_errors(cls.options, deep)

    @classmethod
    def summary(cls) -> str:
        """One line for ``rfl list``: label, kind, requires, fields, oracles (when any) and
        options with defaults."""
        oracles = f"oracles: {', '.join(sorted(cls.oracles))}; " if cls.oracles else ""
        kind = ("decentralised" if getattr(cls, "decentralised", False) else
                "federated" if cls.federated else "centralised")
        return (f"label: {cls.label}; {kind}; "
                f"requires: {', '.join(sorted(cls.requires)) or 'nothing'}; "
                f"fields: {', '.join(sorted(cls.fields))}; {oracles}"
                f"options: {_options_text(cls.options)}")

    @classmethod
    def missing(cls, problem) -> list[str]:
        """What ``problem`` lacks for this algorithm: manifold capabilities (asked of its
        manifold with its retraction), the kind of its local field and the oracles it needs
        of the problem, as readable phrases."""
        from rfl.problems.base import ORACLE_TEXT
        m = problem.manifold
        retraction = getattr(m, "retraction_name", None)
        out = [c for c in sorted(cls.requires) if not m.offers(c, retraction)]
        field = getattr(problem, "field", "gradient")
        if field not in cls.fields:
            out.append(f"a {field} field (it follows: {', '.join(sorted(cls.fields))})")
        offers = getattr(type(problem), "offers", None)
        out += [ORACLE_TEXT[o] for o in sorted(cls.oracles) if offers is None or not offers(o)]
        return out

    @classmethod
    def check_problem(cls, problem) -> None:
        """Raise ValueError naming the algorithm, the manifold and what is missing."""
        missing = cls.missing(problem)
        if missing:
            m = problem.manifold
            geometry = f" with retraction {m.retraction_name!r}" if hasattr(m, "retraction_name") else ""
            raise ValueError(f"{cls.name} cannot run on {m.name}{geometry}: missing "
                             f"{', '.join(missing)}")

    @classmethod
    def method_errors(cls, method: dict, n_agents: int | None) -> list[tuple[list, str]]:
        """What a config's method of this algorithm gets wrong beyond its options' schemas
        ([(key path within the method, message)]; none here)."""
        return []

    def start_metrics(self, x0, draws) -> dict:
        """The ``metrics`` columns at t = 0 (the initial point; NaN unless overridden)."""
        return dict.fromkeys(self.metrics, np.nan)

    @classmethod
    def option_defaults(cls) -> dict:
        """{option: default} from ``options``."""
        return {k: v["default"] for k, v in cls.options.items() if "default" in v}

    def set_options(self, given: dict) -> None:
        """Set each declared option as an attribute: the ``given`` value, checked against the
        option's schema, or its default; an undeclared option is refused by name."""
        unknown = sorted(set(given) - set(self.options))
        if unknown:
            raise TypeError(f"{self.name} takes no option {', '.join(map(repr, unknown))}; allowed: "
                            f"{', '.join(self.options) or 'none'}")
        for key, value in {**self.option_defaults(), **given}.items():
            # imported only for an algorithm with options: a run without pays no import
            from rfl.schema import describe, first_error

            err = first_error(value, self.options[key])
            if err is not None:
                raise ValueError(f"{self.name} option {key} = {value!r}: {describe(err)}")
            setattr(self, key, value)


def _options_text(options: dict) -> str:
    """``name=default, ...`` (defaults as JSON; ``name`` alone when it has none)."""
    import json

    return ", ".join(f"{k}={json.dumps(v['default'])}" if "default" in v else k
                     for k, v in options.items()) or "none"


class FederatedStrategy(Declared, abc.ABC):
    """K local steps per agent per round, then a server aggregation.

    ``Strategy(problem, step_size, K, batch_size, participation=None, **options)``:
    problem: the federated problem (cost and batched gradients on its manifold);
    step_size: callable t -> alpha_t; K: local steps; batch_size: B;
    participation: the participation scheme (``rfl.participation``): None (all agents), an int
    s (s agents uniformly without replacement) or ``{"scheme": name, **options}``.
    """

    federated = True

    def __init__(self, problem, step_size, K: int, batch_size: int,
                 participation: int | dict | None = None, **options):
        if not (isinstance(K, (int, np.integer)) and K >= 1):
            raise ValueError(f"K must be an integer >= 1, got {K!r}")
        self.check_problem(problem)
        self.problem = problem
        self.manifold = problem.manifold
        self.step_size = step_size
        self.K = int(K)
        self.batch_size = int(batch_size)
        self.participation = participation
        self.set_options(options)

    def sampler(self, rng) -> AgentSampler:
        """The run's sampler from its draws (``rfl.algorithms.sampling.Draws``, or a Generator)."""
        return AgentSampler(rng, self.problem.local_sizes, self.batch_size, self.participation)

    def broadcast(self, x_t: np.ndarray, s: int) -> np.ndarray:
        """x^j_{t,0} = x_t for the s participating agents: ``(s, *point_shape)``."""
        return np.repeat(x_t[None], s, axis=0)

    def reset(self, x0: np.ndarray) -> None:
        """Set up the state carried across rounds (none here), before the first round."""

    @abc.abstractmethod
    def round(self, x_t: np.ndarray, t: int, sampler: AgentSampler) -> RoundResult:
        """One round from the server point x_t (``point_shape``)."""

    def local_work(self, agents: np.ndarray) -> int:
        """Sample gradients of the local steps: K B per participating agent."""
        return agents.shape[0] * self.K * self.batch_size

    def floats_per_round(self, s: int) -> int:
        """Broadcast of x_t to s agents plus one point-sized upload per agent."""
        return 2 * s * self.manifold.ambient_size

    def result(self, x: np.ndarray, agents: np.ndarray, grad_evals: int | None = None,
               floats: int | None = None) -> RoundResult:
        """The RoundResult of a round with the base counts unless given."""
        return RoundResult(x, agents,
                           self.local_work(agents) if grad_evals is None else int(grad_evals),
                           self.floats_per_round(agents.shape[0]) if floats is None else int(floats))

    def iterate(self, x0: np.ndarray, rounds: int, rng):
        """Yield ``(t, x_{t+1}, Counters)`` after each of ``rounds`` rounds (one Counters
        object, updated in place); ``rng``: the run's draws (``rfl.algorithms.sampling.Draws``;
        a Generator in tests). A strategy that declares the option ``average_after``
        (``rfl.algorithms.averaging.AVERAGE_AFTER``) yields, once it is set, the
        Polyak-Ruppert average of its iterates after that burn-in instead of x_{t+1}; the
        rounds themselves are unchanged."""
        from .averaging import RunningMean

        sampler = self.sampler(rng)
        counters = Counters()
        self.reset(x0)
        mean = RunningMean(self.manifold, getattr(self, "average_after", None))
        x = x0
        for t in range(rounds):
            r = self.round(x, t, sampler)
            x = r.x
            counters.grad_evals += r.grad_evals
            counters.floats += r.floats
            counters.participants = r.participants
            counters.metrics = r.metrics
            yield t, mean.update(t, x), counters


class CentralizedSolver(Declared, abc.ABC):
    """A solver on the pooled problem F = sum_j p_j f_j: ``Solver(problem, **options)``;
    ``iterate(x0, rounds, rng=None)`` yields ``(t, x_{t+1}, Counters)`` like a federated run
    (``floats`` = 0: nothing is communicated)."""

    federated = False

    @abc.abstractmethod
    def iterate(self, x0: np.ndarray, rounds: int, rng=None):
        """Yield ``(t, x_{t+1}, Counters)`` after each iteration."""

"""The federated problem interface: F(x) = sum_j p_j f_j(x), f_j the local risk of agent j.

A problem holds the agents' local data and gives, batched over agents,
mini-batch Euclidean gradients; the manifold turns them into Riemannian ones.
Weights p_j = N_j / sum_i N_i (local data sizes), so F is the pooled empirical
risk (5.1) of the paper; with equal N_j it is (1/S) sum_j f_j.
"""

from __future__ import annotations

import abc
import copy

import numpy as np

from rfl import registry
from rfl.manifolds import Manifold

#: what a problem with a ``name`` (a registered, workflow-ready problem) must define itself
REGISTERED_REQUIRES = ("from_arrays", "local_sizes_from", "generate", "minibatch_egrad",
                       "local_egrad", "local_cost")
#: property schemas that most problems' parameters share
COUNT = {"type": "integer", "minimum": 1}
POSITIVE = {"type": "number", "exclusiveMinimum": 0}
NONNEGATIVE = {"type": "number", "minimum": 0}
#: the largest factor a parameter may scale unit-size data by (and 1 / it the smallest): the
#: square of such data, in a cost, and sums of many squares stay far inside the float range
#: (about 1.8e308; 1e308 noise overflows the samples, 1e-308 underflows their squares)
MAX_SCALE = 1e100
#: a noise level or spread: 0 or up to MAX_SCALE
SCALE = {"type": "number", "minimum": 0, "maximum": MAX_SCALE}
#: where a loader's file comes from (an optional param of the problems that read a pinned
#: source): "pinned", the real file; "generated", a small seeded file in its format written by
#: the data job (``rfl.data.generated``), read by the same reader, for toy runs
SOURCE = {"enum": ["pinned", "generated"],
          "description": "pinned: the real file (default); generated: a small seeded file in its "
                         "format (rfl.data.generated), not the real data"}
#: a positive scale factor, within [1 / MAX_SCALE, MAX_SCALE]
POSITIVE_SCALE = {"type": "number", "minimum": 1 / MAX_SCALE, "maximum": MAX_SCALE}


def object_schema(required: dict, optional: dict | None = None, **keywords) -> dict:
    """JSON schema of a dataset's ``params``: the ``required`` properties, the ``optional``
    ones and no others (``keywords`` such as ``description`` are added as they are)."""
    return copy.deepcopy({**keywords, "type": "object", "additionalProperties": False,
                          "required": list(required), "properties": {**required, **(optional or {})}})


#: the kinds of local field a problem may declare (``Problem.field``)
FIELDS = ("gradient", "linear_field")
#: what a problem may offer beyond its local field, each a method of ``Problem`` it implements
#: (an algorithm's ``oracles``): "sample_costs", the costs f(x; z) of single samples
ORACLES = ("sample_costs",)
#: each oracle in words (error messages, ``rfl list``)
ORACLE_TEXT = {"sample_costs": "the costs of single samples (sample_costs)"}


class Problem(abc.ABC):
    """Cost and gradients of a federated problem on a manifold.

    A subclass that sets ``name`` in its class body is registered in
    ``rfl.registry.PROBLEMS`` (the config's problem name) and then declares, besides the
    cost and gradients: ``manifold_class``, ``params_schema``, ``generate``,
    ``from_arrays`` and ``local_sizes_from`` (checked when the class is created), and
    optionally ``field``, ``check_params``, ``metrics``/``metric_labels``, ``raw_inputs``
    and ``test_params``. A subclass without ``name`` (a test's toy problem) only needs
    ``cost`` and ``egrad``.

    Attributes
    ----------
    manifold : Manifold
    local_sizes : (S,) int array, N_j, the number of samples agent j holds.
    """

    name: str = "problem"
    #: the Manifold subclass the problem's points live on (config checks what it offers)
    manifold_class: type[Manifold]
    #: the kind of local field ``minibatch_egrad`` returns: "gradient" (of ``local_cost``) or
    #: "linear_field" (A(Z) x - b(Z), not a gradient); a strategy applies when its
    #: ``fields`` contain it
    field: str = "gradient"
    #: whether ``closed_form_optimum`` always gives x*, so the reference job runs no solver (its
    #: time request on a cluster: rfl/workflow.py Plan.reference_runtime)
    closed_form: bool = False
    #: JSON schema (2020-12) of a dataset's ``params`` for this problem
    params_schema: dict = {"type": "object"}
    #: names of the problem-specific columns ``extra_metrics`` adds to a run table
    metrics: tuple[str, ...] = ()
    #: figure axis labels of ``metrics``
    metric_labels: dict[str, str] = {}
    #: what each of ``metrics`` computes, in words (written into every run's metadata)
    metric_definitions: dict[str, str] = {}
    #: names of the raw files ``generate`` reads (passed after the rng, in this order)
    raw_inputs: tuple[str, ...] = ()
    #: small dataset parameters for the shared contract (``rfl.testing.problem``)
    test_params: dict = {}

    manifold: Manifold
    local_sizes: np.ndarray

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        registry.PROBLEMS.declare(cls)

    @classmethod
    def contract_errors(cls, deep: bool = False) -> list[str]:
        """What this class lacks to be a registered problem (phrases; empty when nothing):
        ``REGISTERED_REQUIRES`` and the abstract ``cost``, ``egrad`` implemented, a
        ``manifold_class``, a known ``field``, a ``params_schema`` (``deep``: a valid JSON
        schema) and ``test_params`` mapping. Checked when a named subclass is created and,
        with ``deep``, by ``rfl validate`` for every problem a config uses."""
        missing = registry.unimplemented(cls, Problem, REGISTERED_REQUIRES)
        missing = [m for m in REGISTERED_REQUIRES if m in missing] + [
            m for m in missing if m not in REGISTERED_REQUIRES]
        manifold_class = getattr(cls, "manifold_class", None)
        if not (isinstance(manifold_class, type) and issubclass(manifold_class, Manifold)):
            missing.append("manifold_class (a Manifold subclass)")
        if cls.field not in FIELDS:
            missing.append(f"field (one of {', '.join(FIELDS)}, got {cls.field!r})")
        out = [f"must declare: {', '.join(missing)}"] if missing else []
        out += registry.schema_errors("params_schema", cls.params_schema, deep)
        if not isinstance(cls.test_params, dict):
            out.append(f"declares test_params as {type(cls.test_params).__name__}; allowed: a mapping")
        return out

    @classmethod
    def summary(cls) -> str:
        """One line for ``rfl list``: its manifold, field, params (``?``: optional) and the
        oracles it offers (``ORACLES``)."""
        manifold = getattr(cls, "manifold_class", None)
        props = cls.params_schema.get("properties", {}) if isinstance(cls.params_schema, dict) else {}
        required = set(cls.params_schema.get("required", ())) if props else set()
        params = ", ".join(k if k in required else f"{k}?" for k in props) or "any"
        raw = f"; raw inputs: {', '.join(cls.raw_inputs)}" if cls.raw_inputs else ""
        oracles = [o for o in ORACLES if cls.offers(o)]
        offered = f"; oracles: {', '.join(oracles)}" if oracles else ""
        return (f"manifold: {getattr(manifold, 'name', manifold)}; field: {cls.field}; "
                f"params: {params}{raw}{offered}")

    @classmethod
    def generate(cls, rng: np.random.Generator, *inputs, **params) -> dict:
        """The arrays of one data instance: ``rng`` the data stream, ``inputs`` the paths of
        ``raw_inputs``, ``params`` a dataset's params (valid under ``params_schema``)."""
        raise NotImplementedError

    @classmethod
    def raw_inputs_for(cls, params: dict | None) -> tuple[str, ...]:
        """The raw files a dataset with ``params`` reads: ``raw_inputs``, none when its
        ``source`` is "generated" (the generator writes its own file, ``SOURCE``)."""
        return () if (params or {}).get("source") == "generated" else cls.raw_inputs

    @classmethod
    def find_raw_inputs(cls) -> list:
        """Paths of ``raw_inputs`` already on this machine (no download), in their order, for
        tests and benchmarks; raises FileNotFoundError saying how to provide them."""
        if cls.raw_inputs:
            raise FileNotFoundError(f"problem {cls.name!r} reads {', '.join(cls.raw_inputs)} and "
                                    f"does not say where to find them")
        return []

    @classmethod
    def check_params(cls, params: dict) -> list[tuple[str, str]]:
        """(key, message) for every relation between ``params`` (already valid under
        ``params_schema``) that the generator needs and a schema cannot express; the message
        says the bad value and what is allowed. Default: none."""
        return []

    @classmethod
    def memory_bytes(cls, params: dict) -> int | None:
        """Bytes of the arrays a dataset with ``params`` (valid under ``params_schema``) holds,
        estimated in exact integer arithmetic (so any size is estimated without overflow); the
        config refuses a dataset larger than the machine's memory. None = not estimated."""
        return None

    @classmethod
    def from_arrays(cls, arrays: dict, params: dict, **geometry) -> "Problem":
        """Build from the arrays the data step wrote and the dataset's parameters."""
        raise NotImplementedError

    @staticmethod
    def local_sizes_from(params: dict) -> list[int]:
        """(S,) local data sizes implied by the dataset parameters, before any data exist."""
        raise NotImplementedError

    @classmethod
    def local_sizes_note(cls, params: dict) -> str:
        """Why the local data sizes are what they are, when it is not the data (a config
        error about the batch size quotes it); default: nothing to say."""
        return ""

    @property
    def n_agents(self) -> int:
        return int(self.local_sizes.shape[0])

    @property
    def weights(self) -> np.ndarray:
        """p_j = N_j / sum_i N_i: ``(S,)``."""
        return self.local_sizes / self.local_sizes.sum()

    # ---- federated (batched over agents) ----------------------------------
    def minibatch_egrad(self, x: np.ndarray, agents: np.ndarray, batch: np.ndarray) -> np.ndarray:
        """Euclidean gradient of (1/B) sum_{s in batch_j} f(x_j; z_{j,s}) for each row j.

        x: (s, *point_shape) one point per participating agent;
        agents: (s,) agent indices; batch: (s, B) sample indices into each agent's data.
        Returns (s, *point_shape).
        """
        raise NotImplementedError

    def minibatch_rgrad(self, x, agents, batch):
        """Riemannian mini-batch gradient (Algorithm 1, line 7 without the step size)."""
        return self.manifold.euclidean_to_riemannian_gradient(x, self.minibatch_egrad(x, agents, batch))

    def local_egrad(self, x: np.ndarray, agents: np.ndarray) -> np.ndarray:
        """Euclidean gradient of the full local risk f_j at x_j: ``(s, *point_shape)``."""
        raise NotImplementedError

    def local_cost(self, x: np.ndarray, agents: np.ndarray) -> np.ndarray:
        """f_j(x_j) for each row: ``(s,)``."""
        raise NotImplementedError

    def sample_costs(self, x: np.ndarray, agents: np.ndarray, batch) -> np.ndarray:
        """f(x_{j,b}; z_{j, batch[j, b]}), the cost of one sample of agent ``agents[j]`` at its
        own point: x ``(s, B, *point_shape)``, batch ``(s, B)`` sample indices (repeats
        allowed) -> ``(s, B)``; their mean over all N_j samples at one point is
        ``local_cost``. Optional (the oracle "sample_costs" of ``ORACLES``)."""
        raise NotImplementedError

    @classmethod
    def offers(cls, oracle: str) -> bool:
        """Whether the class implements the oracle (one of ``ORACLES``)."""
        if oracle not in ORACLES:
            raise ValueError(f"unknown oracle {oracle!r}; allowed: {', '.join(ORACLES)}")
        return getattr(cls, oracle) is not getattr(Problem, oracle)

    # ---- global (one point, no agents axis) -------------------------------
    @abc.abstractmethod
    def cost(self, x: np.ndarray) -> float:
        """F(x) for one point ``x: point_shape``."""

    @abc.abstractmethod
    def egrad(self, x: np.ndarray) -> np.ndarray:
        """Euclidean gradient of F at one point (for ``field = "linear_field"``: the mean field)."""

    def grad(self, x: np.ndarray) -> np.ndarray:
        """Riemannian gradient of F at one point."""
        return self.manifold.euclidean_to_riemannian_gradient(x[None], self.egrad(x)[None])[0]

    def grad_norm(self, x: np.ndarray) -> float:
        return float(self.manifold.norm(x[None], self.grad(x)[None])[0])

    def _at_last_point(self, x, one_pass):
        """``one_pass(x)`` at one point ``x`` (as a float array), kept until another point is
        asked for: a run records the cost, the gradient norm and the metrics of each iterate,
        and a problem whose cost and gradient come from one pass over its data (``_global`` of
        CFMSPD, MultitaskFeatures, LowRankMatrixCompletion) makes that pass once per iterate.
        Points are compared by value, so one changed in place is a new point."""
        x = np.asarray(x, dtype=float)
        last = self.__dict__.get("_last_point")
        if last is not None and last[0].shape == x.shape and np.array_equal(last[0], x):
            return last[1]
        out = one_pass(x)
        self._last_point = (x.copy(), out)
        return out

    # ---- reference solution ----------------------------------------------
    def closed_form_optimum(self) -> np.ndarray | None:
        """A global minimiser x* in closed form, or None when there is none."""
        return None

    def reference_candidates(self) -> list[np.ndarray]:
        """Extra starting points for the reference solver (e.g. a planted solution)."""
        return []

    def distance_to_optimum(self, x: np.ndarray, x_star: np.ndarray) -> float:
        """Distance from x to the set of minimisers containing x_star (default: Riemannian distance)."""
        return float(self.manifold.dist(x[None], x_star[None])[0])

    def extra_metrics(self, x: np.ndarray) -> dict[str, float]:
        """Problem-specific metrics at one point (e.g. test NMSE): keys ``metrics``."""
        return {}

    def data_notes(self) -> dict:
        """What the data instance is, where the config does not say it (e.g. which MNIST
        images stood in), recorded in every run's metadata (``data``); JSON-serialisable.
        Default: nothing."""
        return {}

    def predictions(self, spec: dict) -> dict:
        """What theory predicts for the run ``spec`` (e.g. FedLSA's bias), recorded in the
        run's metadata so that reports read files only; JSON-serialisable. Default: none."""
        return {}

    def initial_point(self, rng: np.random.Generator) -> np.ndarray:
        """The starting point x_1 of every method for one seed."""
        return self.manifold.random_point(rng, 1)[0]

    def reweighted(self, weights) -> "Problem":
        """The same agents under other agent weights: F~(x) = sum_j w_j f_j(x), ``weights``
        (S,) summing to 1 (e.g. the objective of the ``biased`` participation scheme,
        ``ParticipationScheme.objective_weights``). Default: ``Reweighted``, built from
        ``local_cost`` and ``local_egrad`` (no closed-form optimum: the reference solver
        finds it); a problem with a closed form overrides this. Only for gradient fields."""
        if self.field != "gradient":
            raise ValueError(f"problem {self.name!r} has a {self.field} field, not a gradient: "
                             f"it has no reweighted objective")
        return Reweighted(self, weights)


def check_agent_weights(weights, n_agents: int) -> np.ndarray:
    """``weights`` as a float (S,) array, nonnegative and summing to 1; ValueError otherwise."""
    w = np.asarray(weights, dtype=float)
    if w.shape != (n_agents,) or np.any(w < 0) or abs(w.sum() - 1) > 1e-9:
        raise ValueError(f"agent weights must be {n_agents} nonnegative numbers summing to 1, "
                         f"got shape {w.shape} and sum {w.sum():g}")
    return w


class Reweighted(Problem):
    """F~(x) = sum_j w_j f_j(x) over ``base``'s agents (``Problem.reweighted``): the cost and
    Euclidean gradient from ``base.local_cost`` / ``base.local_egrad`` at x broadcast to every
    agent; the manifold, local data and initial points are ``base``'s."""

    def __init__(self, base: Problem, weights):
        self.base = base
        self.agent_weights = check_agent_weights(weights, base.n_agents)
        self.manifold = base.manifold
        self.local_sizes = base.local_sizes
        self._agents = np.arange(base.n_agents)

    def _at_every_agent(self, x):
        return np.repeat(np.asarray(x)[None], self.base.n_agents, axis=0)

    def cost(self, x):
        return float(self.agent_weights @ self.base.local_cost(self._at_every_agent(x), self._agents))

    def egrad(self, x):
        g = self.base.local_egrad(self._at_every_agent(x), self._agents)
        return np.tensordot(self.agent_weights, g, axes=1)

    def reference_candidates(self):
        """``base``'s own optimum and candidates: F~ is F when the weights are F's."""
        x = self.base.closed_form_optimum()
        return ([] if x is None else [x]) + list(self.base.reference_candidates())

    def distance_to_optimum(self, x, x_star):
        return self.base.distance_to_optimum(x, x_star)

    def initial_point(self, rng):
        return self.base.initial_point(rng)


class SampleArrayProblem(Problem):
    """A problem whose data instance is one array ``Z: (S, N, ...)`` of N samples for each of
    S agents (dataset params ``S`` and ``N``), built as ``cls(Z, retraction=..., transport=...)``."""

    @classmethod
    def from_arrays(cls, arrays, params=None, **geometry):
        return cls(arrays["Z"], **geometry)

    @staticmethod
    def local_sizes_from(params: dict):
        """(S,) local sizes: N samples for each of the S agents."""
        return [params["N"]] * params["S"]

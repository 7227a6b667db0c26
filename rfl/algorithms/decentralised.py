"""The decentralised strategies' base: per-agent iterates on a graph, no server.

A ``DecentralisedStrategy`` is a ``FederatedStrategy`` to the runner (one ``round`` per
iteration, ``iterate`` yields a point and counters), so configs, run tables, claims and the
report treat it like any method; what differs:

- its state is ``X: (S, *point_shape)``, agent i's point x_i (all x_1 at the start, as in the
  DRSGD/DRGTA code), and, for gradient tracking, ``Y: (S, *point_shape)``; ``round`` ignores
  the server point it is given;
- the point it yields per round is the network mean of X (``network_mean``: the projected
  ambient mean for ``consensus = "ambient_consensus"``, the Karcher mean for
  ``"frechet_consensus"``), at which the runner records cost, gradient norm and distance to
  x*; ``RoundResult.metrics`` adds the columns of ``metrics`` (consensus error, sigma_2(W));
- every agent takes part in every round (participation null) and a round is one local step
  (K = 1): t consensus steps and one gradient step;
- communication: ``floats`` = t x directed edges of W x the point's size per mixed stack
  (``Mixing.floats``);
- the graph and W come from the options ``graph`` and ``weights`` (``rfl.graphs``), built by
  ``sampler(rng)`` from the run's draws (``Draws.graph_rng``): one graph per experiment and
  seed, whatever the method; ``self.mixing`` holds it, ``self.Wt`` is W^t.

A subclass declares ``name``, ``label``, ``requires`` (its consensus capability among them),
``consensus`` and implements ``update(t, sampler, agents) -> grad_evals``, which moves
``self.X`` (and its own stacks) one iteration.
"""

from __future__ import annotations

import abc
from typing import ClassVar

import numpy as np

from . import consensus as cons
from .base import FederatedStrategy, RoundResult

#: the options every decentralised strategy takes (JSON schema properties)
DECENTRALISED_OPTIONS = {
    "graph": {"type": ["string", "object"], "default": "ring",
              "description": "the communication graph: a name of `rfl list graphs`, or "
                             "{name: <graph>, <option>: <value>}"},
    "weights": {"type": ["string", "object"], "default": "metropolis_hastings",
                "description": "the weight rule of W: a name of `rfl list weights`, or "
                               "{name: <rule>, <option>: <value>}"},
    "consensus_steps": {"type": "integer", "minimum": 1, "default": 1,
                        "description": "t: communication rounds per iteration (W^t)"},
    "consensus_step": {"type": "number", "exclusiveMinimum": 0, "default": 1.0,
                       "description": "alpha: the consensus step size"},
    "beta": {"type": ["number", "null"], "minimum": 0, "default": None,
             "description": "beta_0 of the gradient step; null: the experiment's step rule; 0: "
                            "consensus alone, no gradient (the DRSGD code's batch_size = 0)"},
    "beta_rule": {"enum": ["constant", "1/sqrtk", "1/k"], "default": "constant",
                  "description": "the authors' step_size_type: beta_k = beta_0, beta_0/sqrt(k), beta_0/k "
                                 "(k = t + 1 the iteration)"},
    "spread": {"type": "number", "minimum": 0, "default": 0.0,
               "description": "agent i starts at R_{x0}(spread u_i), u_i a random unit tangent "
                              "vector at x0 (0: every agent at x0, as the DRSGD/DRGTA code)"},
}

#: what the decentralised metrics are (written into each run's metadata with the problem's)
METRIC_DEFINITIONS = {
    "consensus_error": "sqrt(1/S sum_i d(x_i, xbar)^2), xbar the network mean, d the Frobenius "
                       "distance (projected mean) or the Riemannian one (Karcher mean)",
    "sigma2": "sigma_2(W), the second largest singular value of the run's mixing matrix",
    "sigma2_t": "sigma_2(W)^t, t the consensus steps per round: the contraction of the "
                "disagreement per round that the theory states for a doubly stochastic W",
}


class DecentralisedStrategy(FederatedStrategy):
    """Per-agent iterates mixed over a graph (module docstring)."""

    decentralised: ClassVar[bool] = True
    #: the consensus geometry ("ambient_consensus" or "frechet_consensus"), also in ``requires``
    consensus: ClassVar[str] = "ambient_consensus"
    #: stacks of point size each consensus step sends per edge (2 with gradient tracking)
    mixed_stacks: ClassVar[int] = 1
    options = dict(DECENTRALISED_OPTIONS)
    #: the run table's columns this strategy adds (name -> definition)
    metrics: ClassVar[dict] = dict(METRIC_DEFINITIONS)

    def __init__(self, problem, step_size, K: int = 1, batch_size: int = 1,
                 participation=None, **options):
        if K != 1:
            raise ValueError(f"K: {K}; a decentralised round is one gradient step and t consensus "
                             f"steps; allowed: 1 (set consensus_steps for t)")
        if participation is not None and participation != problem.n_agents:
            raise ValueError(f"participation: {participation!r}; a decentralised method has every "
                             f"agent in every round; allowed: null")
        super().__init__(problem, step_size, K, batch_size, None, **options)
        self.mixing = None
        # a problem's per-agent metrics (``agent_metric_names``: streaming PCA's MSD, the
        # dynamic Frechet mean's regret) are columns of every decentralised run on it
        names = tuple(getattr(problem, "agent_metric_names", ()))
        cumulative = dict(getattr(problem, "cumulative_metrics", {}))
        if names:
            definitions = getattr(problem, "metric_definitions", {})
            self.metrics = {**type(self).metrics,
                            **{n: definitions.get(n, n) for n in names + tuple(cumulative)}}

    # ---- graph and mixing ----------------------------------------------------------------
    @classmethod
    def method_errors(cls, method: dict, n_agents: int | None) -> list[tuple[list, str]]:
        """What is wrong with a config method's graph, weights, K and participation
        ([(key path, message)]); a swept graph or weights (a list) is checked item by item."""
        from rfl.graphs import check

        out = []
        Ks = method.get("K", [1])
        Ks = Ks if isinstance(Ks, list) else [Ks]
        if any(k != 1 for k in Ks):
            out.append((["K"], f"{Ks}; a decentralised round is one gradient step; allowed: [1] "
                               f"(consensus_steps sets t)"))
        if method.get("participation") is not None:
            out.append((["participation"], f"{method['participation']!r}; a decentralised method "
                                           f"has every agent in every round; allowed: null"))
        graphs = method.get("graph", cls.options["graph"]["default"])
        weights = method.get("weights", cls.options["weights"]["default"])
        glist = graphs if isinstance(graphs, list) else [graphs]
        wlist = weights if isinstance(weights, list) else [weights]
        for gi, g in enumerate(glist):
            for wi, w in enumerate(wlist):
                for path, msg in check(g, w, n_agents):
                    if path[0] == "graph" and isinstance(graphs, list):
                        path = ["graph", gi, *path[1:]]
                    if path[0] == "weights" and isinstance(weights, list):
                        path = ["weights", wi, *path[1:]]
                    if (path, msg) not in out:
                        out.append((path, msg))
        return out

    def make_mixing(self, source):
        """The run's ``Mixing`` from its draws (``Draws.graph_rng``; a Generator in tests:
        the graph of the stream (0, "graph", spec), the same whatever the generator)."""
        import json

        from rfl.graphs import canonical, make_mixing
        from rfl.random import stream

        spec = json.dumps([canonical(self.graph, "graph"), canonical(self.weights, "weights")],
                          sort_keys=True)
        rng = source.graph_rng(spec) if hasattr(source, "graph_rng") else stream(0, "graph", spec)
        return make_mixing(self.graph, self.weights, self.problem.n_agents, rng)

    def sampler(self, rng):
        from rfl.random import stream
        self.mixing = self.make_mixing(rng)
        self.Wt = self.mixing.power(self.consensus_steps)
        self._start_rng = (rng.start_rng() if hasattr(rng, "start_rng") else stream(0, "start"))
        return super().sampler(rng)

    def starts(self, x0, rng) -> np.ndarray:
        """The agents' first points: the problem's own per agent where it has them
        (``initial_stack()``: the DPRGD notebook's local means), else x0 each, or
        R_{x0}(spread u_i) (option ``spread``): ``(S, *point_shape)``."""
        own = getattr(self.problem, "initial_stack", None)
        if own is not None:
            return np.array(own(), dtype=float)
        X = np.repeat(np.asarray(x0)[None], self.problem.n_agents, axis=0)
        if self.spread > 0:
            X = self.manifold.retraction(X, self.spread * self.manifold.random_tangent(rng, X))
        return X

    def start_metrics(self, x0, draws) -> dict:
        """The metrics of the row t = 0 (the agents at their ``starts``); a problem's per-agent
        metrics measured before a step (``agent_metrics_before_step``) have no value yet, their
        cumulative sums are 0."""
        from rfl.random import stream
        mixing = self.make_mixing(draws)
        X = self.starts(x0, draws.start_rng() if hasattr(draws, "start_rng") else stream(0, "start"))
        xbar = cons.network_mean(self.manifold, X, self.consensus)
        out = {"consensus_error": cons.consensus_error(self.manifold, X, xbar, self.consensus),
               "sigma2": mixing.sigma2, "sigma2_t": mixing.sigma2 ** self.consensus_steps}
        if hasattr(self.problem, "agent_metrics"):
            if getattr(self.problem, "agent_metrics_before_step", False):
                out.update({c: 0.0 for c in getattr(self.problem, "cumulative_metrics", {})})
            else:
                out.update(self.problem.agent_metrics(X, 0))
        return out

    # ---- the round -----------------------------------------------------------------------
    def gradient_step(self, t: int) -> float:
        """beta_k, the gradient step of iteration k = t + 1: the experiment's step rule at t
        when the option ``beta`` is null, else beta_0 = ``beta`` by ``beta_rule`` (the
        authors' step_size_type)."""
        if self.beta is None:
            return self.step_size(t)
        b0, k = float(self.beta), t + 1
        return {"constant": b0, "1/sqrtk": b0 / np.sqrt(k), "1/k": b0 / k}[self.beta_rule]

    def reset(self, x0):
        """The agents' first points (``starts``); subclasses set up their other stacks
        (``start``)."""
        self.X = self.starts(x0, self._start_rng)
        self._cumulative = {c: 0.0 for c in getattr(self.problem, "cumulative_metrics", {})}
        self._xbar = None               # the last network mean: the next Karcher mean's start
        self.start()

    def start(self) -> None:
        """Set up stacks beyond X before the first round (none here)."""

    def direction(self, X: np.ndarray) -> np.ndarray:
        """The consensus direction of X under W^t (``rfl.algorithms.consensus``)."""
        return cons.consensus_direction(self.manifold, X, self.Wt, self.consensus)

    def batches(self, agents, t, sampler):
        """The samples of iteration t: a streaming problem's step t (``stream_batch``: a fresh
        sample per agent per step, the same for every method), else the batches of draw
        (t, 0), shared with every method of the experiment. ``(S, B)``."""
        stream = getattr(self.problem, "stream_batch", None)
        if stream is not None:
            return stream(t)[np.asarray(agents)]
        return sampler.batches(agents, t, 0)

    def gradients(self, X, agents, t, sampler) -> np.ndarray:
        """Each agent's mini-batch Riemannian gradient at its own point: ``(S, *shape)``
        (``batches``)."""
        return self.problem.minibatch_rgrad(X, agents, self.batches(agents, t, sampler))

    @abc.abstractmethod
    def update(self, t: int, sampler, agents: np.ndarray) -> int:
        """Move ``self.X`` (and the strategy's stacks) by one iteration; return the sample
        gradients it evaluated."""

    def round(self, x_t, t, sampler):
        agents = sampler.participants()
        problem = self.problem
        before = (hasattr(problem, "agent_metrics")
                  and getattr(problem, "agent_metrics_before_step", False))
        agent = problem.agent_metrics(self.X, t) if before else {}
        grad_evals = self.update(t, sampler, agents)
        if hasattr(problem, "agent_metrics") and not before:
            agent = problem.agent_metrics(self.X, t)
        for c, of in getattr(problem, "cumulative_metrics", {}).items():
            self._cumulative[c] += agent[of]
            agent[c] = self._cumulative[c]
        xbar = cons.network_mean(self.manifold, self.X, self.consensus, start=self._xbar)
        self._xbar = xbar
        metrics = {"consensus_error": cons.consensus_error(self.manifold, self.X, xbar, self.consensus),
                   "sigma2": self.mixing.sigma2, "sigma2_t": self.mixing.sigma2 ** self.consensus_steps,
                   **agent, **self.round_metrics(xbar)}
        return RoundResult(xbar, agents, int(grad_evals), self.floats_per_round(agents.shape[0]), metrics)

    def round_metrics(self, xbar) -> dict:
        """Values of the strategy's own ``metrics`` beyond the base's after a round, at the
        network mean ``xbar`` and the stack ``self.X`` (none here)."""
        return {}

    def floats_per_round(self, s: int) -> int:
        """t consensus steps x directed edges x point size, per mixed stack."""
        return self.mixed_stacks * self.mixing.floats(self.consensus_steps, self.manifold.ambient_size)

"""What every participation scheme declares, and the conversions of a config's ``participation``.

The schemes follow the four modes of the authors' RFedAGS code with partial participation
(``options.option`` 1-4 of ``RFedAGSP.m``):

1. ``full``: every agent in every round;
2. ``bernoulli_estimated``: agent i joins with probability p_i, the server weights it by the
   inverse of the *estimated* probability (the fraction of rounds it joined so far);
3. ``uniform``: s agents uniformly without replacement (the config's ``participation: s``);
4. ``bernoulli``: agent i joins with probability p_i and is weighted by 1 / (N p_i), which
   makes the aggregate unbiased for the full-participation one;

and the "biased" aggregation of ``RFedAGSP__.m``: ``biased``, Bernoulli joins averaged with
1 / |S_t| each, which minimises a reweighted objective (``objective_weights``).

Schemes 1 and 3 weight the participants N_j-proportionally, renormalised over the round's
agents (the weights sum to 1); schemes 2 and 4 give agent i the weight 1 / (N q_i), N the
number of agents and q_i its (estimated) probability, and these weights do *not* sum to 1
(``normalised = False``). How the aggregation treats unnormalised weights:
``rfl.algorithms.aggregation``.
"""

from __future__ import annotations

import abc
import hashlib
import json
from typing import ClassVar

import numpy as np


def proportional_weights(local_sizes: np.ndarray, agents: np.ndarray) -> np.ndarray:
    """p_j proportional to N_j, renormalised over the participating agents: ``(s,)``."""
    n = np.asarray(local_sizes, dtype=float)[agents]
    return n / n.sum()


class ParticipationScheme(abc.ABC):
    """One run's participation: ``Scheme(n_agents, rng, **options)``.

    name: config name (``participation: {scheme: <name>}``); options: JSON-schema
    ``properties`` of its options, each with its default; normalised: its weights sum to 1.
    ``participants()`` is called once per round, before ``weights(local_sizes, agents)`` for
    that round's agents; the scheme's random draws come from ``rng`` (the run's participation
    stream, keyed by the experiment and the scheme: ``rfl.algorithms.sampling.Draws``, so
    every method of an experiment with this scheme draws the same agents), in the order of
    the calls.
    """

    name: ClassVar[str]
    options: ClassVar[dict] = {}
    normalised: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        from rfl.registry import PARTICIPATION
        PARTICIPATION.declare(cls)

    @classmethod
    def contract_errors(cls, deep: bool = False) -> list[str]:
        """What this class lacks to be a participation scheme (phrases; empty when nothing):
        ``draw`` implemented, ``options`` a mapping of JSON schemas (``deep``: valid ones,
        each default valid), ``normalised`` a bool."""
        from rfl.registry import option_errors, unimplemented

        missing = unimplemented(cls, ParticipationScheme)
        out = [f"does not implement {', '.join(missing)}"] if missing else []
        if not isinstance(cls.normalised, bool):
            out.append(f"declares normalised = {cls.normalised!r}; allowed: True or False")
        return out + option_errors(cls.options, deep)

    @classmethod
    def summary(cls) -> str:
        """One line for ``rfl list``: its options with defaults and whether weights sum to 1."""
        options = ", ".join(f"{k}={json.dumps(v['default'])}" if "default" in v else k
                            for k, v in cls.options.items()) or "none"
        return f"options: {options}; weights sum to 1: {'yes' if cls.normalised else 'no'}"

    def __init__(self, n_agents: int, rng: np.random.Generator, **options):
        self.n_agents = int(n_agents)
        self.rng = rng
        for key, value in {**self.option_defaults(), **options}.items():
            setattr(self, key, value)
        self.t = 0                                   # rounds drawn so far

    @classmethod
    def option_defaults(cls) -> dict:
        return {k: v["default"] for k, v in cls.options.items() if "default" in v}

    @classmethod
    def check_options(cls, options: dict, n_agents: int | None) -> list[tuple[str, str]]:
        """(key, what is wrong) for what the options' schemas cannot say (e.g. a list of
        length S); empty when fine. ``n_agents``: S, or None when unknown."""
        return []

    def participants(self) -> np.ndarray:
        """Sorted indices of this round's agents: ``(s,)``, s >= 1."""
        agents = self.draw()
        self.t += 1
        return agents

    @abc.abstractmethod
    def draw(self) -> np.ndarray:
        """This round's agents (``participants`` counts the round)."""

    def weights(self, local_sizes: np.ndarray, agents: np.ndarray) -> np.ndarray:
        """The server's weight of each participant: ``(s,)`` (N_j-proportional here)."""
        return proportional_weights(local_sizes, agents)

    def objective_weights(self, local_sizes: np.ndarray) -> np.ndarray:
        """The agent weights of the objective the scheme's runs minimise in expectation:
        ``(S,)``, summing to 1. Here N_j / sum_i N_i, F's own (the unbiased schemes; ``full``
        and ``uniform`` exactly, the Bernoulli ones as the weights' expectation);
        ``biased`` overrides it."""
        n = np.asarray(local_sizes, dtype=float)
        return n / n.sum()


class BernoulliBase(ParticipationScheme):
    """Agent i joins each round independently with probability p_i: ``rho`` for every agent,
    or the list ``probabilities`` (one per agent) when given."""

    normalised = False
    options = {
        "rho": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.5,
                "description": "p_i = rho for every agent (unless probabilities is given)"},
        "probabilities": {"type": ["array", "null"], "default": None,
                          "items": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                          "description": "p_i per agent (length S), instead of rho"},
    }

    @classmethod
    def check_options(cls, options, n_agents):
        p = options.get("probabilities")
        if p is not None and n_agents is not None and len(p) != n_agents:
            return [("probabilities", f"{len(p)} probabilities for S={n_agents} agents; "
                                      f"allowed: a list of {n_agents} numbers in (0, 1]")]
        return []

    def __init__(self, n_agents, rng, **options):
        super().__init__(n_agents, rng, **options)
        if self.probabilities is None:
            self.p = np.full(self.n_agents, float(self.rho))
        else:
            self.p = np.asarray(self.probabilities, dtype=float)
            problems = self.check_options({"probabilities": self.probabilities}, self.n_agents)
            if problems:
                raise ValueError(f"participation {problems[0][0]}: {problems[0][1]}")

    def join(self) -> np.ndarray:
        """One uniform u_i per agent; i joins when u_i <= p_i: ``(S,)`` bool."""
        return self.rng.random(self.n_agents) <= self.p

    #: whether the last round had no join (``draw``)
    _empty = False

    def draw(self) -> np.ndarray:
        """The agents that joined (``join``); when none did, one agent drawn uniformly, so the
        strategies have a participant (``_empty`` says so; a scheme decides its weight)."""
        joined = np.flatnonzero(self.join())
        self._empty = joined.size == 0
        if self._empty:
            return np.array([self.rng.integers(self.n_agents)])
        return joined


def canonical(participation, n_agents: int | None = None):
    """A config's ``participation`` as one value: None (every agent; also ``{scheme: full}``
    and s = S when S is known), an int s (also ``{scheme: uniform, s: s}``), or a dict
    ``{scheme, <every option of the scheme>}`` with its defaults filled in."""
    from rfl.registry import PARTICIPATION

    if participation is None or isinstance(participation, (int, np.integer)):
        if participation is not None and n_agents is not None and participation == n_agents:
            return None
        return None if participation is None else int(participation)
    spec = dict(participation)
    cls = PARTICIPATION[spec.pop("scheme")]
    full = {"scheme": cls.name, **cls.option_defaults(), **spec}
    if cls.name == "full":
        return None
    if cls.name == "uniform":
        return canonical(int(full["s"]), n_agents)
    return full


def tag(participation) -> str:
    """The part of a run id naming the scheme: '' (every agent), ``_s<s>`` (s uniformly), or
    ``_<scheme>`` followed by ``_<option><value>`` per option in sorted order (a decimal point
    written ``p``: ``_rho0p3``; a list as a short hash of its values), so that two schemes, or one scheme with other options, never
    share a run id."""
    p = canonical(participation)
    if p is None:
        return ""
    if isinstance(p, int):
        return f"_s{p}"
    parts = [f"_{p['scheme']}"]
    for key in sorted(k for k in p if k != "scheme"):
        value = p[key]
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            text = "h" + hashlib.sha256(json.dumps([float(v) for v in value]).encode()).hexdigest()[:8]
        else:
            text = (f"{value:g}" if isinstance(value, float) else str(value)).replace(".", "p")
        parts.append(f"_{key}{text}")
    return "".join(parts)


def label(participation) -> str | None:
    """A short legend text for a scheme (None for every agent; ``s=<s>``; ``<scheme> rho=...``)."""
    p = canonical(participation)
    if p is None:
        return None
    if isinstance(p, int):
        return f"s={p}"
    opts = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in p.items() if k != "scheme" and v is not None and not isinstance(v, list))
    if p.get("probabilities") is not None:          # told apart by their mean (e.g. p_i, 0.8 p_i)
        opts = f"p_i given, mean {float(np.mean(p['probabilities'])):.3g}"
    return f"{p['scheme']}" + (f" {opts}" if opts else "")


def check(participation, n_agents: int | None) -> list[tuple[list, str]]:
    """What is wrong with a config's ``participation``: [(sub-key path, message)], empty when
    fine (the scheme's name, its options against their schemas, and ``check_options``)."""
    from rfl.registry import PARTICIPATION
    from rfl.schema import describe, first_error

    if participation is None:
        return []
    if isinstance(participation, bool) or not isinstance(participation, (int, np.integer, dict)):
        return [([], f"{participation!r}; allowed: null, an integer s or "
                     f"{{scheme: <{'|'.join(PARTICIPATION.names())}>, ...}}")]
    if not isinstance(participation, dict):
        if not 1 <= participation <= (n_agents or participation):
            return [([], f"{participation} agents per round; allowed: 1..{n_agents}")]
        return []
    name = participation.get("scheme")
    if name not in PARTICIPATION:
        return [(["scheme"], f"{name!r} is not a participation scheme; allowed: "
                             f"{', '.join(PARTICIPATION.names())}")]
    cls = PARTICIPATION[name]
    out = []
    for key, value in participation.items():
        if key == "scheme":
            continue
        if key not in cls.options:
            out.append(([key], f"scheme {name} takes no option {key!r}; allowed: "
                               f"{', '.join(cls.options) or 'none'}"))
            continue
        err = first_error(value, cls.options[key])
        if err is not None:                  # the path down to the bad item (a list's entry)
            out.append(([key, *err.absolute_path], f"{err.instance!r}: {describe(err)}"))
    if not out:
        out.extend(([k], msg) for k, msg in cls.check_options({**cls.option_defaults(), **participation},
                                                              n_agents))
    return out


def checked(participation, n_agents: int):
    """``canonical(participation, n_agents)`` of a valid ``participation``; ValueError naming
    the problem for a bad one."""
    problems = check(participation, n_agents)
    if problems:
        path, msg = problems[0]
        key = ".".join(["participation"] + [str(p) for p in path])
        raise ValueError(f"{key}: {msg}")
    return canonical(participation, n_agents)


def make_scheme(participation, n_agents: int, rng: np.random.Generator) -> ParticipationScheme:
    """The scheme of a (config or canonical) ``participation`` for a run with ``n_agents``
    agents; ValueError naming the problem for a bad one."""
    from rfl.registry import PARTICIPATION

    p = checked(participation, n_agents)
    if p is None:
        return PARTICIPATION["full"](n_agents, rng)
    if isinstance(p, int):
        return PARTICIPATION["uniform"](n_agents, rng, s=p)
    options = {k: v for k, v in p.items() if k != "scheme"}
    return PARTICIPATION[p["scheme"]](n_agents, rng, **options)

"""Workflow configuration: validation and expansion into specs.

``validate`` checks a config against ``config/schema.yaml`` (JSON Schema 2020-12) and then
what a schema cannot express (a batch no larger than the local data, participation no larger
than S, geometry the manifold offers, references between datasets, experiments, figures and
tables). Every error names the key, the bad value and what is allowed, and is raised before
any job starts.

No name of a component is listed here: the registries (``rfl.registry``) give the problem and
algorithm names, and the components' declarations the rest: a dataset's params are checked
against its problem's ``params_schema`` and ``check_params``; a method against its
algorithm's ``federated``, ``options`` (a JSON schema per option), ``requires`` (capabilities
the problem's ``manifold_class.offers``) and ``fields`` (which must contain the problem's
``field``); a figure's metrics against the base metrics and the problem's ``metrics``. Every registry is
loaded first (a broken plug-in is one ConfigError line), and each component the config uses,
the manifold of each problem included, is checked against its kind's contract
(``Registry.contract_errors``). ``expand_runs`` turns experiments into one spec per run:
(experiment, algorithm, participation, K, the setting of a sweep (``rfl.sweeps``), seed).
"""

from __future__ import annotations

import copy
import math
import functools
import os
import re
from pathlib import Path

import jsonschema
import yaml

from rfl import participation, sweeps
from rfl.participation import tag as participation_tag
from rfl.registry import (ALGORITHMS, MANIFOLDS, PARTICIPATION, PROBLEMS, REGISTRIES,
                          RegistryError)
from rfl.schema import Validator, describe

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "config" / "schema.yaml"
#: the metric columns of every run table (``rfl.io.COLUMNS``); a problem adds its ``metrics``
BASE_METRICS = ("excess_risk", "grad_norm", "dist_to_opt", "cost")


class ConfigError(ValueError):
    """A configuration that must not run."""


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<root>"


@functools.lru_cache(maxsize=4)
def _schema_text(path: str) -> str:
    return Path(path).read_text()


def load_schema(path: str | Path = SCHEMA_PATH) -> dict:
    """The workflow schema with the names of the registries as enums: an unknown problem or
    algorithm is reported with the schema's other errors, naming what is allowed."""
    schema = yaml.safe_load(_schema_text(str(path)))
    defs = schema["$defs"]
    defs["dataset"]["properties"]["problem"]["enum"] = PROBLEMS.names()
    defs["method"]["properties"]["algorithm"]["enum"] = ALGORITHMS.names()
    return schema


_Validator = Validator


def _key_errors(obj, path=()) -> list[str]:
    """Mapping keys must be strings: names become file names and wildcards."""
    msgs = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, str):
                msgs.append(f"config key {_key(list(path) + [k])}: names must be strings, got "
                            f"{type(k).__name__} {k!r}; allowed: a name such as 'n{k}'")
            else:
                msgs.extend(_key_errors(v, path + (k,)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            msgs.extend(_key_errors(v, path + (i,)))
    return msgs


def _describe(err, prefix=()) -> str:
    path = list(prefix) + list(err.absolute_path)
    allowed = f"; allowed: {', '.join(map(str, err.validator_value))}" if err.validator == "enum" else ""
    text = _short(describe(err) if not allowed else err.message) + allowed
    if isinstance(err.instance, list) and err.validator in ("type", "oneOf") and "list" not in text:
        text += f" (a list, a sweep, is allowed only for {', '.join(sweeps.SWEEPABLE)})"
    return f"config key {_key(path)}: {text}"


def _short(text: str) -> str:
    """``text`` with every integer of more than 15 digits written as ~1.23e45 (the digits of a
    float, 1.4901161193847656e-08, are no integer and stay as they are)."""
    return re.sub(r"(?<![\d.])\d{16,}(?![\d.eE])", lambda m: "~" + _approx(int(m.group())), text)


def _schema_errors(config: dict, schema: dict) -> list[str]:
    msgs = []
    for err in _Validator(schema).iter_errors(config):
        best = jsonschema.exceptions.best_match([err])
        if best.validator == "oneOf" and isinstance(best.instance, dict) and "rule" in best.instance:
            # a step rule: report against the branch the rule names
            rule = best.instance["rule"]
            allowed = [s["properties"]["rule"]["const"] for s in best.validator_value]
            if rule not in allowed:
                msgs.append(f"config key {_key(list(best.absolute_path) + ['rule'])}: {rule!r} is "
                            f"not a step rule; allowed: {', '.join(allowed)}")
                continue
            sub = next(s for s in best.validator_value if s["properties"]["rule"]["const"] == rule)
            for inner in _Validator(sub).iter_errors(best.instance):
                msgs.append(_describe(inner, best.absolute_path))
            continue
        msgs.append(_describe(best))
    return sorted(set(msgs))


def _component_errors(config: dict) -> list[str]:
    """Every component the config uses (problems and their manifolds, algorithms,
    participation schemes) against its kind's contract (``Registry.contract_errors``, with
    the declared JSON schemas checked): the first broken one, in one line naming the config
    key, the component, where it comes from and what it lacks; raised as a ConfigError of its
    own, since the component, not the config, is at fault."""
    used = []
    for name, ds in config["datasets"].items():
        problem = PROBLEMS[ds["problem"]]
        used.append((["datasets", name, "problem"], PROBLEMS, problem, ""))
        manifold = problem.manifold_class
        used.append((["datasets", name, "problem"], MANIFOLDS, manifold,
                     f" (the manifold of problem {problem.name!r})"))
    for ename, exp in config["experiments"].items():
        for i, m in enumerate(exp["methods"]):
            here = ["experiments", ename, "methods", i]
            used.append((here + ["algorithm"], ALGORITHMS, ALGORITHMS[m["algorithm"]], ""))
            for s in sweeps.participations(m):
                scheme = (s.get("scheme") if isinstance(s, dict) else "full" if s is None else "uniform")
                if scheme in PARTICIPATION:
                    used.append((here + ["participation"], PARTICIPATION, PARTICIPATION[scheme], ""))
    seen = set()
    for here, registry, cls, note in used:
        if cls in seen:
            continue
        seen.add(cls)
        errors = registry.contract_errors(cls, deep=True)
        if errors:
            name = cls.__dict__.get("name", cls.__qualname__)
            raise ConfigError(f"config key {_key(here)}: {registry.kind} {name!r}{note} from "
                              f"{registry.origin(cls)} {'; '.join(errors)}")
    return []


def params_errors(problem: str, params, prefix=("params",)) -> list[str]:
    """``params`` against the ``params_schema`` of ``problem`` (registered): one line per
    error, naming the key under ``prefix``."""
    return [_describe(err, list(prefix))
            for err in _Validator(PROBLEMS[problem].params_schema).iter_errors(params)]


def _dataset_errors(config: dict, schema: dict) -> list[str]:
    """Each dataset's params against its problem's ``params_schema``, then its ``check_params``."""
    msgs = []
    for name, ds in config["datasets"].items():
        msgs += params_errors(ds["problem"], ds["params"], ["datasets", name, "params"])
    if msgs:
        return msgs
    msgs = _memory_errors(config)       # before check_params, which may draw a pilot sample
    if msgs:
        return msgs
    for name, ds in config["datasets"].items():
        for key, problem in PROBLEMS[ds["problem"]].check_params(ds["params"]):
            msgs.append(f"config key datasets.{name}.params.{key}: {_short(problem)}")
    return msgs


def machine_memory() -> int | None:
    """Bytes of physical memory of this machine (None where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _approx(n: int) -> str:
    """``n`` (an int of any size) in three significant digits, without converting it to a float."""
    if n < 1000:
        return str(n)
    digits = str(n)
    mantissa = f"{digits[0]}.{digits[1:3]}".rstrip("0").rstrip(".")
    return f"{mantissa}e{len(digits) - 1}"


def _gib(nbytes: int) -> str:
    gib = nbytes // 2**30
    return _approx(gib) if gib >= 10 else f"{nbytes / 2**30:.2g}"


def _memory_errors(config: dict, available: int | None = None) -> list[str]:
    """Each dataset's arrays (its problem's ``memory_bytes``) must fit in this machine's memory;
    the message names the largest of its integer parameters."""
    available = machine_memory() if available is None else available
    if not available:
        return []
    msgs = []
    for name, ds in config["datasets"].items():
        need = PROBLEMS[ds["problem"]].memory_bytes(ds["params"])
        if need is None or need <= available:
            continue
        ints = {k: v for k, v in ds["params"].items() if isinstance(v, int) and not isinstance(v, bool)}
        key = max(ints, key=ints.get) if ints else None
        where = f"datasets.{name}.params" + (f".{key} = {_approx(ints[key])}" if key else "")
        msgs.append(f"config key {where}: dataset {name!r} needs ~{_gib(need)} GiB for its "
                    f"arrays; this machine has {_gib(available)} GiB; allowed: parameters whose "
                    f"arrays fit in memory")
    return msgs


#: what a strategy that requires a manifold capability (``Manifold.CAPABILITIES``) needs, and
#: what a manifold without it lacks ({manifold}, {retraction}), for messages
NEEDS = {
    "flat": ("a Euclidean problem", "{manifold} is not flat"),
    "log": ("a closed-form Log", "{manifold} has none"),
    "tangent_mean": ("to aggregate by the tangent mean, which needs a closed-form Log or an "
                     "inverse retraction", "{manifold} with retraction {retraction!r} has neither"),
    "nearest_point": ("a compact embedded manifold with a Euclidean projection (its nearest "
                      "point)", "{manifold} has none"),
    "ambient_consensus": ("the ambient consensus step (mixing in the embedding space, then "
                          "projection and retraction) and the projected network mean",
                          "{manifold} is not an embedded submanifold with a nearest point"),
    "frechet_consensus": ("the weighted Frechet-mean consensus step (Log and Exp)",
                          "{manifold} has no closed-form Log"),
}
#: what each kind of local field (``Problem.field``) is, for messages
FIELD_TEXT = {
    "gradient": "the Riemannian gradient of a cost",
    "linear_field": "a linear field A(Z) theta - b(Z), which is not a gradient",
}
#: figures the workflow draws itself (heterogeneity, lsa): no figure of a config may take the name
RESERVED_FIGURES = ("fig_heterogeneity",)
RESERVED_FIGURE_PREFIXES = ("fig_fedlsa_scafflsa_", "fig_sweep_")
#: what follows each reserved prefix, for messages
RESERVED_FIGURE_TAILS = ("<setting>", "<experiment>")
#: a method's keys besides the options its algorithm declares
METHOD_KEYS = ("algorithm", "K", "participation")


def _algorithm(name: str):
    """The class of a registered algorithm (``rfl.registry.ALGORITHMS``)."""
    return ALGORITHMS[name]


def _offered(alg, manifold_class, retraction) -> list[str]:
    """The capabilities ``alg`` requires that ``manifold_class`` (with ``retraction``) lacks."""
    return [cap for cap in sorted(alg.requires) if not manifold_class.offers(cap, retraction)]


def _applicable(problem_cls, retraction) -> list[str]:
    """Algorithms whose requirements the problem's manifold meets and that follow its field."""
    return [name for name, a in ALGORITHMS.items()
            if problem_cls.field in a.fields and not _offered(a, problem_cls.manifold_class, retraction)
            and not _lacking_oracles(a, problem_cls)]


def _lacking_oracles(alg, problem_cls) -> list[str]:
    """The problem oracles ``alg`` needs (``oracles``) that ``problem_cls`` does not offer."""
    return [o for o in sorted(alg.oracles) if not problem_cls.offers(o)]


def _method_errors(m: dict, here: list, cls, ds_name: str, retraction, n_agents: int) -> list[str]:
    """One method of an experiment: its keys, its options and whether it applies."""
    msgs = []
    name = m["algorithm"]
    alg = _algorithm(name)
    federated_names = [n for n, a in ALGORITHMS.items() if a.federated]
    if alg.federated and "K" not in m:
        msgs.append(f"config key {_key(here + ['K'])}: missing; {name} needs a list of local "
                    f"step counts K >= 1")
    if not alg.federated:
        for key in ("K", "participation"):
            if key in m:
                msgs.append(f"config key {_key(here + [key])}: {name} is centralised and takes "
                            f"no {key}; allowed only with {', '.join(federated_names)}")
    options = dict(alg.options)
    for key in m:
        if key in METHOD_KEYS or key in options:
            continue
        takers = [n for n, a in ALGORITHMS.items() if key in a.options]
        where = (f"{key!r} is an option of {', '.join(takers)}, " if takers
                 else f"{key!r} is no option of any algorithm, ")
        msgs.append(f"config key {_key(here + [key])}: {where}{name} does not take it; allowed "
                    f"for {name}: {', '.join(list(METHOD_KEYS) + list(options))}")
    for key, sub in options.items():
        if key not in m:
            continue
        if not sweeps.is_sweep(m[key], sub):
            for err in _Validator(sub).iter_errors(m[key]):
                msgs.append(_describe(err, here + [key]))
            continue
        if not m[key]:
            msgs.append(f"config key {_key(here + [key])}: an empty list; allowed: a value of "
                        f"the option, or a non-empty list of distinct values (a sweep)")
        twice = sweeps.duplicates(m[key])
        if twice:
            msgs.append(f"config key {_key(here + [key])}: {', '.join(map(repr, twice))} more than "
                        f"once; allowed: a list of distinct values (a sweep runs each once)")
        for i, v in enumerate(m[key]):
            for err in _Validator(sub).iter_errors(v):
                msgs.append(_describe(err, here + [key, i]))
    manifold = cls.manifold_class
    for cap in _offered(alg, manifold, retraction):
        need, lack = NEEDS.get(cap, (f"the manifold capability {cap!r}", "{manifold} lacks it"))
        lack = lack.format(manifold=manifold.name, retraction=retraction or manifold.RETRACTIONS[0])
        msgs.append(f"config key {_key(here + ['algorithm'])}: {name!r} needs {need}; dataset "
                    f"{ds_name!r} lives on {manifold.name}: {lack}; allowed here: "
                    f"{', '.join(_applicable(cls, retraction))}")
    if cls.field not in alg.fields:
        msgs.append(f"config key {_key(here + ['algorithm'])}: {name!r} does not apply to problem "
                    f"{cls.name!r} (its local field is {FIELD_TEXT.get(cls.field, cls.field)}; "
                    f"{name} follows only: {', '.join(sorted(alg.fields))}); allowed here: "
                    f"{', '.join(_applicable(cls, retraction))}")
    for oracle in _lacking_oracles(alg, cls):
        from rfl.problems.base import ORACLE_TEXT
        msgs.append(f"config key {_key(here + ['algorithm'])}: {name!r} needs "
                    f"{ORACLE_TEXT[oracle]} of the problem; problem {cls.name!r} does not offer "
                    f"them; allowed here: {', '.join(_applicable(cls, retraction))}")
    listed = isinstance(m.get("participation"), list)
    for i, s in enumerate(sweeps.participations(m)):
        at = here + ["participation"] + ([i] if listed else [])
        if isinstance(s, int) and not isinstance(s, bool):
            if s > n_agents:
                msgs.append(f"config key {_key(at)}: {s} is larger than the number of agents "
                            f"S={n_agents}; allowed: 1..{n_agents}")
        elif isinstance(s, dict):
            for path, msg in participation.check(s, n_agents):
                msgs.append(f"config key {_key(at + path)}: {msg}")
    for path, msg in alg.method_errors(m, n_agents):
        msgs.append(f"config key {_key(here + path)}: {msg}")
    return msgs


def _experiment_errors(config: dict) -> list[str]:
    msgs = []
    datasets = config["datasets"]
    for ename, exp in config["experiments"].items():
        where = ["experiments", ename]
        if exp["dataset"] not in datasets:
            msgs.append(f"config key {_key(where + ['dataset'])}: {exp['dataset']!r} is not a "
                        f"dataset of this config; allowed: {', '.join(datasets)}")
            continue
        ds = datasets[exp["dataset"]]
        cls = PROBLEMS[ds["problem"]]
        sizes = cls.local_sizes_from(ds["params"])
        federated = [m for m in exp["methods"] if _algorithm(m["algorithm"]).federated]
        if federated:
            for key in ("batch_size", "step"):
                if key not in exp:
                    msgs.append(f"config key {_key(where + [key])}: missing; federated methods "
                                f"({', '.join(sorted({m['algorithm'] for m in federated}))}) need it")
            batches = exp.get("batch_size", [])
            listed = isinstance(batches, list)
            for i, b in enumerate(batches if listed else [batches]):
                if b > min(sizes):
                    why = cls.local_sizes_note(ds["params"])
                    at = where + ["batch_size"] + ([i] if listed else [])
                    msgs.append(f"config key {_key(at)}: {b} is larger than the smallest local "
                                f"data set (N={min(sizes)}) of dataset "
                                f"{exp['dataset']!r}{f' ({why})' if why else ''}; "
                                f"allowed: 1..{min(sizes)}")
        geometry = exp.get("geometry", {})
        for key, allowed in (("retraction", cls.manifold_class.RETRACTIONS),
                             ("transport", cls.manifold_class.TRANSPORTS)):
            if key in geometry and geometry[key] not in allowed:
                msgs.append(f"config key {_key(where + ['geometry', key])}: {geometry[key]!r} is "
                            f"not available on {cls.manifold_class.name}; allowed: {', '.join(allowed)}")
        retraction = geometry.get("retraction")
        if retraction is not None and retraction not in cls.manifold_class.RETRACTIONS:
            retraction = None          # reported above; judge the methods with the default
        for i, m in enumerate(exp["methods"]):
            msgs.extend(_method_errors(m, where + ["methods", i], cls, exp["dataset"], retraction,
                                       len(sizes)))
        msgs.extend(_run_id_errors(exp, where))
        msgs.extend(_paper_size_errors(exp, where, cls, ds))
        msgs.extend(_objective_and_time_errors(exp, where, cls, len(sizes)))
        msgs.extend(_replica_errors(exp, where, cls))
    return msgs


def _replica_errors(exp: dict, where: list, cls) -> list[str]:
    """``replicas``: only the Euclidean strategies of ``rfl.algorithms.replicas`` on a flat
    problem with a gradient or linear field whose metrics it computes, every agent in every round, FedRR
    with its shared stream, no simulated time nor second objective."""
    if not exp.get("replicas"):
        return []
    from rfl.algorithms.replicas import REPLICA_ALGORITHMS
    from rfl.problems._error_coordinates import COORDINATES
    key = _key(where + ["replicas"])
    msgs = []
    if not getattr(cls.manifold_class, "FLAT", False) or getattr(cls, "field", "gradient") not in (
            "gradient", "linear_field"):
        msgs.append(f"config key {key}: problem {cls.name!r} is not a flat problem with a gradient "
                    f"or linear field; replicas run only on those")
    elif any(m not in COORDINATES for m in cls.metrics):
        msgs.append(f"config key {key}: problem {cls.name!r} records metrics replicas do not "
                    f"compute; allowed: problems whose metrics are err_*")
    for i, m in enumerate(exp["methods"]):
        if m["algorithm"] not in REPLICA_ALGORITHMS:
            msgs.append(f"config key {key}: method {i} is {m['algorithm']!r}; replicas allow "
                        f"{', '.join(REPLICA_ALGORITHMS)}")
        elif m.get("participation") is not None:
            msgs.append(f"config key {key}: method {i} sets participation; replicas need every "
                        f"agent in every round")
        elif m.get("shared_stream") is False:
            msgs.append(f"config key {key}: method {i} sets shared_stream: false; replicas need "
                        f"FedRR's shared stream")
    for k in ("time", "weighted_objective"):
        if exp.get(k):
            msgs.append(f"config key {key}: not with {k}")
    return msgs


def _objective_and_time_errors(exp: dict, where: list, cls, n_agents: int) -> list[str]:
    """``weighted_objective``: a participation scheme (checked as a method's) whose objective
    weights define F~, on a problem with a gradient field; ``time``: straggler indices < S
    (``rfl.simtime.check``; the rest is the schema's)."""
    from rfl import simtime

    msgs = []
    wo = exp.get("weighted_objective")
    if wo is not None:
        here = where + ["weighted_objective"]
        if not isinstance(wo, dict):
            msgs.append(f"config key {_key(here)}: {wo!r}; allowed: a participation scheme "
                        f"{{scheme: <name>, ...}} (e.g. {{scheme: biased, probabilities: [...]}})")
        else:
            msgs += [f"config key {_key(here + path)}: {msg}" for path, msg in participation.check(wo, n_agents)]
        if cls.field != "gradient":
            msgs.append(f"config key {_key(here)}: problem {cls.name!r} has a {cls.field} field, "
                        f"no reweighted objective; allowed: a problem with a gradient field")
    if exp.get("time"):
        msgs += [f"config key {_key(where + ['time'] + path)}: {msg}"
                 for path, msg in simtime.check(exp["time"], n_agents)]
    return msgs


#: the keys of an experiment's ``paper_size`` besides its dataset's parameters (rfl/size.py)
PAPER_SIZE_KEYS = ("source", "rounds", "seeds", "batch_size", "K", "alpha", "budget")


def _paper_size_errors(exp: dict, where: list, cls, ds: dict) -> list[str]:
    """Each key of ``paper_size`` is one of PAPER_SIZE_KEYS or a parameter of the dataset's
    problem (its ``params_schema``) or of the dataset itself."""
    params = list(cls.params_schema.get("properties", {}))
    params += [k for k in ds["params"] if k not in params]
    allowed = list(PAPER_SIZE_KEYS) + params
    msgs = [f"config key {_key(where + ['paper_size', key])}: {key!r} is neither a size of the "
            f"experiment nor a parameter of problem {cls.name!r}; allowed: {', '.join(allowed)}"
            for key in exp.get("paper_size", {}) if key not in allowed]
    for key, value in exp.get("paper_size", {}).items():   # the problem's parameters: no schema here
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, float) and not math.isfinite(v) for v in values):
            msgs.append(f"config key {_key(where + ['paper_size', key])}: {value!r} is not a finite "
                        f"number; allowed: a finite number, or a list of them")
    return msgs


def _source_errors(config: dict) -> list[str]:
    """Each experiment's ``source`` (``rfl.settings.errors``): known settings, and a reason for
    every setting that deviates from the source's, none for one that does not."""
    from rfl import settings

    return settings.errors(config)


def _run_id_errors(exp: dict, where: list) -> list[str]:
    """Two runs of one experiment with one run id would write one file: the second would
    silently replace the first. The run id holds algorithm, K, participation, the swept values
    (``rfl.sweeps``) and seed: every id of the expansion is made and compared."""
    msgs, first = [], {}
    for i, m in enumerate(exp["methods"]):
        if any(isinstance(p, dict) and participation.check(p, None) for p in sweeps.participations(m)):
            continue                                   # a bad scheme is reported by _method_errors
        alg = _algorithm(m["algorithm"])
        if any(sweeps.duplicates(v) for _, v in sweeps.swept(exp, m, dict(alg.options))):
            continue                                   # a value twice: reported by _method_errors
        Ks = m.get("K") if alg.federated else [None]
        clash = False
        for p in sweeps.participations(m):
            for K in Ks or [None]:
                for setting in sweeps.settings(exp, m, dict(alg.options), alg.federated):
                    rid = run_id(m["algorithm"], K, 0, p, setting)[: -len("0")] + "*"
                    if rid in first:
                        j = first[rid]
                        same = (f"the same runs ({rid}) as methods.{j}" if j != i
                                else f"K = {K} twice" if Ks.count(K) > 1 else f"the run {rid} twice")
                        msgs.append(
                            f"config key {_key(where + ['methods', i])}: {same}, whose files "
                            f"would overwrite each other (a run id holds the algorithm, K, "
                            f"participation, the swept values and seed, not an option given "
                            f"one value such as "
                            f"{', '.join(k for k in m if k not in METHOD_KEYS) or 'server_step'}); "
                            f"allowed: methods that differ in algorithm, K, participation or a "
                            f"swept value (sweep an option as a list, or put a variant with "
                            f"other options in its own experiment)")
                        clash = True
                        break
                    first[rid] = i
                if clash:
                    break
            if clash:
                break
    return msgs


is_swept = sweeps.is_swept


def _sweep_use_errors(config: dict) -> list[str]:
    """The paper's tables and studies read one step and batch size per experiment: none of
    their experiments may sweep them or an option."""
    exps, msgs = config["experiments"], []
    tables = config.get("tables", {})
    uses = [(["tables", "table1", "rows", i, k], row[k])
            for i, row in enumerate(tables.get("table1", {}).get("rows", [])) for k in ("fixed", "decaying")]
    uses += [(["tables", "table2", "experiments", r], e)
             for r, e in tables.get("table2", {}).get("experiments", {}).items()]
    uses += [(["tables", "table2", "sensitivity", i], e)
             for i, e in enumerate(tables.get("table2", {}).get("sensitivity", []))]
    uses += [(["heterogeneity", "experiments", k], e)
             for k, e in config.get("heterogeneity", {}).get("experiments", {}).items()]
    uses += [(["lsa", "experiments", i], e) for i, e in enumerate(config.get("lsa", {}).get("experiments", []))]
    for path, ename in uses:
        if ename in exps and is_swept(exps[ename]):
            msgs.append(f"config key {_key(path)}: experiment {ename!r} sweeps an option, the "
                        f"batch size or a step parameter; this table or study reads one value "
                        f"of each; allowed: an experiment without such lists")
    return msgs


def _table1_errors(config: dict) -> list[str]:
    """Each row of Table 1 (the parameters of one synthetic problem and of its two federated
    experiments): a ``fixed`` and a ``decaying`` experiment, each with federated methods and
    that step rule, both on the same dataset (the row's d, S, N, ... are that dataset's)."""
    msgs, exps = [], config["experiments"]

    def federated(ename):
        return any(_algorithm(m["algorithm"]).federated for m in exps[ename]["methods"])

    def fits(ename, key, dataset=None):
        return (federated(ename) and exps[ename].get("step", {}).get("rule") == key
                and dataset in (None, exps[ename]["dataset"]))

    for i, row in enumerate(config.get("tables", {}).get("table1", {}).get("rows", [])):
        ok = {}
        for key in ("fixed", "decaying"):
            here, ename = _key(["tables", "table1", "rows", i, key]), row[key]
            right = [e for e in exps if fits(e, key)]
            allowed = ", ".join(right) or f"none in this config has federated methods and a {key} step"
            if ename not in exps:
                msgs.append(f"config key {here}: {ename!r} is not an experiment; allowed: {allowed}")
            elif not federated(ename):
                msgs.append(f"config key {here}: experiment {ename!r} runs no federated method, so "
                            f"it has no step rule or batch size for Table 1; allowed: {allowed}")
            elif (rule := exps[ename].get("step", {}).get("rule")) != key:
                msgs.append(f"config key {here}: experiment {ename!r} has step rule {rule!r}, not "
                            f"{key!r}; allowed: {allowed}")
            else:
                ok[key] = ename
        if len(ok) == 2 and exps[ok["fixed"]]["dataset"] != exps[ok["decaying"]]["dataset"]:
            dataset = exps[ok["fixed"]]["dataset"]
            right = [e for e in exps if fits(e, "decaying", dataset)] or [
                f"none in this config runs {dataset!r} with a decaying step"]
            msgs.append(f"config key {_key(['tables', 'table1', 'rows', i, 'decaying'])}: experiment "
                        f"{ok['decaying']!r} runs dataset {exps[ok['decaying']]['dataset']!r}, the "
                        f"row's fixed experiment {ok['fixed']!r} runs {dataset!r}; a row describes "
                        f"one problem; allowed: "
                        f"{', '.join(right)}")
    return msgs


def _figure_and_table_errors(config: dict) -> list[str]:
    msgs = []
    exps = config["experiments"]
    for fname, fig in config.get("figures", {}).items():
        where = ["figures", fname]
        if fname in RESERVED_FIGURES or fname.startswith(RESERVED_FIGURE_PREFIXES):
            msgs.append(f"config key {_key(where)}: {fname!r} is the name of a figure the "
                        f"workflow draws itself ({', '.join(RESERVED_FIGURES)}, "
                        f"{', '.join(p + t for p, t in zip(RESERVED_FIGURE_PREFIXES, RESERVED_FIGURE_TAILS))}); "
                        f"allowed: any other name")
            continue
        if fig["experiment"] not in exps:
            msgs.append(f"config key {_key(where + ['experiment'])}: {fig['experiment']!r} is not an "
                        f"experiment of this config; allowed: {', '.join(exps)}")
            continue
        for i, e in enumerate(fig.get("sweep", [])):
            if e not in exps:
                msgs.append(f"config key {_key(where + ['sweep', i])}: {e!r} is not an experiment "
                            f"of this config; allowed: {', '.join(exps)}")
            elif (exps[e].get("step") or {}).get("rule") != "fixed":
                msgs.append(f"config key {_key(where + ['sweep', i])}: {e!r} has no fixed step; "
                            f"allowed: experiments with step.rule fixed (one step size each)")
        problem = config["datasets"][exps[fig["experiment"]]["dataset"]]["problem"]
        exp = exps[fig["experiment"]]
        own = tuple(dict.fromkeys(c for m in exp.get("methods", []) if m.get("algorithm") in ALGORITHMS
                                  for c in ALGORITHMS[m["algorithm"]].metrics))   # decentralised columns
        if any(getattr(ALGORITHMS.get(m.get("algorithm")), "decentralised", False) for m in exp.get("methods", [])):
            p_cls = PROBLEMS[problem]          # a problem's per-agent columns of decentralised runs
            own += tuple(getattr(p_cls, "agent_metric_names", ())) + tuple(getattr(p_cls, "cumulative_metrics", {}))
        allowed = (BASE_METRICS + (("excess_risk_weighted",) if exp.get("weighted_objective") else ())
                   + tuple(PROBLEMS[problem].metrics) + own)
        for i, x in enumerate(fig.get("x", ["round"])):
            if x == "time" and not exp.get("time"):
                msgs.append(f"config key {_key(where + ['x', i])}: 'time' needs a time model; "
                            f"allowed: declare experiments.{fig['experiment']}.time, or another x")
        for i, metric in enumerate(fig.get("metrics", ["excess_risk"])):
            if metric not in allowed:
                msgs.append(f"config key {_key(where + ['metrics', i])}: {metric!r} is not recorded "
                            f"for problem {problem!r}; allowed: {', '.join(allowed)}")
    labels = {}
    for label, ename in config.get("heterogeneity", {}).get("experiments", {}).items():
        if ename not in exps:
            msgs.append(f"config key heterogeneity.experiments.{label}: {ename!r} is not an "
                        f"experiment; allowed: {', '.join(exps)}")
        elif ename in labels:
            msgs.append(f"config key heterogeneity.experiments.{label}: experiment {ename!r} "
                        f"already has the label {labels[ename]!r}; allowed: one label per "
                        f"experiment")
        labels.setdefault(ename, label)
    lsa_exps = [e for e, x in exps.items() if config["datasets"][x["dataset"]]["problem"] == "lsa"]
    for i, ename in enumerate(config.get("lsa", {}).get("experiments", [])):
        where = ["lsa", "experiments", i]
        if ename not in exps:
            msgs.append(f"config key {_key(where)}: {ename!r} is not an experiment; "
                        f"allowed: {', '.join(exps)}")
            continue
        exp = exps[ename]
        problem = config["datasets"][exp["dataset"]]["problem"]
        if problem != "lsa":
            msgs.append(f"config key {_key(where)}: experiment {ename!r} runs problem {problem!r}; "
                        f"the FedLSA/SCAFFLSA study needs an lsa dataset; allowed: "
                        f"{', '.join(lsa_exps) or 'none in this config'}")
            continue
        if exp.get("step", {}).get("rule") != "fixed":
            msgs.append(f"config key experiments.{ename}.step.rule: "
                        f"{exp.get('step', {}).get('rule')!r}; the FedLSA bias (lsa.experiments) is "
                        f"predicted for a fixed step; allowed: fixed")
        for j, m in enumerate(exp["methods"]):
            if m.get("participation") is not None:
                msgs.append(f"config key experiments.{ename}.methods.{j}.participation: the FedLSA "
                            f"bias (lsa.experiments) is predicted with every agent in every round; "
                            f"allowed: null (full participation)")
    tables = config.get("tables", {})
    msgs += _table1_errors(config) + _sweep_use_errors(config)
    for r, ename in tables.get("table2", {}).get("experiments", {}).items():
        where = ["tables", "table2", "experiments", r]
        if ename not in exps:
            msgs.append(f"config key {_key(where)}: {ename!r} is not an experiment; "
                        f"allowed: {', '.join(exps)}")
        elif "test_nmse" not in PROBLEMS[config["datasets"][exps[ename]["dataset"]]["problem"]].metrics:
            msgs.append(f"config key {_key(where)}: experiment {ename!r} records no test_nmse; "
                        f"Table 2 needs a School experiment")
        else:
            dataset = exps[ename]["dataset"]
            r_data = config["datasets"][dataset]["params"].get("r")
            if str(r_data) != str(r):
                msgs.append(f"config key {_key(where)}: the label r = {r} but experiment "
                            f"{ename!r} runs dataset {dataset!r} with params.r = {r_data}; "
                            f"allowed: the label {r_data}")
    for i, ename in enumerate(tables.get("table2", {}).get("sensitivity", [])):
        where = ["tables", "table2", "sensitivity", i]
        if ename not in exps:
            msgs.append(f"config key {_key(where)}: {ename!r} is not an experiment; "
                        f"allowed: {', '.join(exps)}")
        elif "test_nmse" not in PROBLEMS[config["datasets"][exps[ename]["dataset"]]["problem"]].metrics:
            msgs.append(f"config key {_key(where)}: experiment {ename!r} records no test_nmse; "
                        f"the step-size study needs a School experiment")
        elif exps[ename].get("step", {}).get("rule") != "fixed":
            msgs.append(f"config key {_key(where)}: experiment {ename!r} has step rule "
                        f"{exps[ename].get('step', {}).get('rule')!r}; the study compares fixed "
                        f"steps; allowed: fixed")
    return msgs


#: system directories no output may go to, nor anything inside them
SYSTEM_DIRS = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/sbin",
               "/sys", "/usr")
#: system roots no output may go to directly (a directory of one's own inside them may)
SYSTEM_ROOTS = ("/", "/home", "/media", "/mnt", "/opt", "/run", "/srv", "/var")


def _experiments_allowed(schema: dict) -> str:
    """What a claim rule's ``experiments_schema`` accepts, in words."""
    if schema.get("type") == "object":
        roles = list(schema.get("properties", {}))
        return f"a mapping of the roles {', '.join(roles)} to experiment names"
    if schema.get("type") == "array":
        return "a non-empty list of experiment names"
    return f"what the rule's experiments_schema accepts ({schema})"


def _claim_errors(config: dict) -> list[str]:
    """Each claim: a registered rule, its params against the rule's ``params_schema``, its
    experiments against the rule's ``experiments_schema`` and the config's experiments, its
    figures among the config's."""
    from rfl.registry import RULES

    msgs = []
    exps, figs = config["experiments"], config.get("figures", {})
    for cid, claim in config.get("claims", {}).items():
        where = ["claims", cid]
        if claim["rule"] not in RULES:
            msgs.append(f"config key {_key(where + ['rule'])}: {claim['rule']!r} is not a known claim "
                        f"rule; allowed: {', '.join(RULES.names())}")
            continue
        rule = RULES[claim["rule"]]
        params = sorted(rule.params_schema.get("properties", {}))
        for err in _Validator(rule.params_schema).iter_errors(claim.get("params", {})):
            if err.validator == "additionalProperties" and isinstance(err.instance, dict):
                msgs += [f"config key {_key(where + ['params', k])}: not a parameter of claim rule "
                         f"{claim['rule']!r}; allowed: {', '.join(params) or 'none'}"
                         for k in err.instance if k not in params]
            else:
                msgs.append(_describe(err, where + ["params"]))
        for err in _Validator(rule.experiments_schema).iter_errors(claim["experiments"]):
            path = where + ["experiments"] + list(err.absolute_path)
            msgs.append(f"config key {_key(path)}: {_short(err.message)}; allowed: "
                        f"{_experiments_allowed(rule.experiments_schema)}")
        e = claim["experiments"]
        names = [(k, x) for k, v in e.items() for x in ([v] if isinstance(v, str) else v)] \
            if isinstance(e, dict) else list(enumerate(e))
        for k, name in names:
            if isinstance(name, str) and name not in exps:
                msgs.append(f"config key {_key(where + ['experiments', k])}: {name!r} is not an "
                            f"experiment of this config; allowed: {', '.join(exps)}")
        for i, f in enumerate(claim.get("figures", [])):
            if f not in figs:
                msgs.append(f"config key {_key(where + ['figures', i])}: {f!r} is not a figure of "
                            f"this config; allowed: {', '.join(figs)}")
        for label, other in (claim.get("readings") or {}).get("claims", {}).items():
            if other not in config["claims"]:
                msgs.append(f"config key {_key(where + ['readings', 'claims', label])}: {other!r} is "
                            f"not a claim of this config; allowed: {', '.join(config['claims'])}")
    from rfl.reporting.order import source_errors

    return msgs + source_errors(config)


def _path_error(key: str, value: str) -> str | None:
    """Why directory ``value`` (config key ``key``) must not be written to, or None: a relative
    path must stay inside the working directory; an absolute one must be an existing, writable
    directory outside the system's own."""
    if not value:
        return None
    if not os.path.isabs(value):
        norm = os.path.normpath(value)
        if norm == ".." or norm.startswith("../"):
            return (f"config key {key}: {value!r} leaves the working directory (it normalises to "
                    f"{norm!r}); allowed: a relative path inside it, or an existing writable "
                    f"absolute directory")
        return None
    norm = os.path.normpath(value)
    real = os.path.realpath(value)
    for p in {norm, real}:
        if p in SYSTEM_ROOTS or any(p == d or p.startswith(d + "/") for d in SYSTEM_DIRS):
            return (f"config key {key}: {value!r} is (inside) a system directory; allowed: a "
                    f"directory of your own (e.g. under your home or /tmp), or a relative path")
    if not os.path.isdir(value):
        return (f"config key {key}: {value!r} does not exist or is not a directory; allowed: "
                f"an existing writable directory (create it first), or a relative path")
    if not os.access(value, os.W_OK | os.X_OK):
        return f"config key {key}: {value!r} is not writable; allowed: a writable directory"
    return None


def _path_errors(config: dict) -> list[str]:
    msgs = []
    for key, value in (("output_dir", config.get("output_dir", "")),
                       ("school.cache_dir", config.get("school", {}).get("cache_dir", "")),
                       ("anchors.cache_dir", config.get("anchors", {}).get("cache_dir", ""))):
        why = _path_error(key, value)
        if why:
            msgs.append(why)
    table = config.get("results")
    if isinstance(table, str) and not os.path.isfile(table):
        msgs.append(f"config key results: {table!r} is no file; allowed: a results table that "
                    f"rfl results or rfl merge wrote (.parquet or .csv), or null")
    return msgs


def validate(config: dict, schema_path: str | Path = SCHEMA_PATH) -> dict:
    """Return the config with defaults filled in, or raise ConfigError listing every problem."""
    if not isinstance(config, dict):
        raise ConfigError(f"invalid configuration:\n  config key <root>: the config must be a "
                          f"mapping, got {type(config).__name__}; allowed: a mapping with keys "
                          f"datasets, experiments, figures, ...")
    config = copy.deepcopy(config)
    try:                         # a plug-in that fails to load is named in one line
        for registry in REGISTRIES:          # every installed component, used or not
            registry.load()
        schema = load_schema(schema_path)
        for check in (_key_errors, lambda c: _schema_errors(c, schema), _component_errors,
                      _path_errors, lambda c: _dataset_errors(c, schema), _experiment_errors,
                      _source_errors, _figure_and_table_errors, _claim_errors):
            msgs = check(config)
            if msgs:
                raise ConfigError("invalid configuration:\n  " + "\n  ".join(msgs))
    except RegistryError as exc:
        raise ConfigError(str(exc)) from None
    config.setdefault("output_dir", "")
    school = config.setdefault("school", {})
    school.setdefault("mirror", None)
    school.setdefault("cache_dir", "datasets/school")
    anchors = config.setdefault("anchors", {})
    anchors.setdefault("mirror", None)
    anchors.setdefault("cache_dir", "datasets/anchors")
    for ds in config["datasets"].values():
        ds.setdefault("resample", False)
        ref = ds.setdefault("reference", {})
        ref.setdefault("tolerance", 1e-6)
        ref.setdefault("max_iterations", 5000)
        ref.setdefault("starts", 1)
    for exp in config["experiments"].values():
        exp.setdefault("geometry", {})
    if "heterogeneity" in config:
        config["heterogeneity"].setdefault("tail", 0.2)
    if "lsa" in config:
        config["lsa"].setdefault("tail", 0.1)
    for fig in config.get("figures", {}).values():
        fig.setdefault("x", ["round"])
        fig.setdefault("metrics", ["excess_risk"])
        fig.setdefault("report_category", "Figures")
    from rfl.settings import expand_readings

    return expand_readings(config)          # the variants of an ambiguous source's readings


def load(path: str | Path) -> dict:
    """A config file read with ``rfl.io.read_yaml`` (duplicate keys, alias bombs and deep
    nesting refused, naming the file), its includes resolved (``resolve_includes``), then
    validated."""
    from rfl import io

    return validate(resolve_includes(io.read_yaml(path), path))


# ---- includes ---------------------------------------------------------------
#: the sections an included config gives the including one, merged by name (``resolve_includes``)
INCLUDED_SECTIONS = ("school", "anchors", "datasets")
#: the keys of an experiment that may name another experiment instead of holding a mapping
BY_NAME = ("geometry", "step")


def including_file(configs) -> str | None:
    """The last of ``configs``, (path, content) pairs of the config files as Snakemake merged
    them, whose top level declares ``include``: its folder is where the include paths start
    (None: none declares one)."""
    for f, raw in reversed(list(configs)):
        if isinstance(raw, dict) and "include" in raw:
            return str(f)
    return None


def resolve_includes(config, path: str | Path | None = None) -> dict:
    """``config`` (read from the file ``path``; None: the working directory) with its
    ``include:`` resolved and its experiments' ``geometry:`` and ``step:`` given by name replaced
    by the named experiment's; the result has no ``include`` key and goes to ``validate``.

    ``include``: a path or a list of paths, relative to the including file's folder; each
    included file is read with ``rfl.io.read_yaml`` and resolved first (its own includes).
    Merging: from the included files, in order, only ``school``, ``anchors`` and ``datasets``
    are taken, entry by entry (a later file's entry of the same name replaces an earlier one's,
    whole; ``school``/``anchors`` key by key), and the including file's own entries replace
    them; of the included datasets only those its experiments use are kept (all of them
    when an experiment names one no file has, for the check to list them). The included
    experiments are not run: they are names ``geometry:`` and ``step:`` may give (as may the
    including file's own experiments). Every other key (output_dir, toy_size, experiments,
    figures, tables, claims, heterogeneity, lsa) is the including file's alone.
    A missing file, a cycle, an include that is no path, or a name that is no experiment is a
    ConfigError of one line naming the file."""
    out, _ = _resolve(config, path, ())
    if not isinstance(config, dict) or "include" not in config or not isinstance(out.get("datasets"), dict):
        return out
    exps = out.get("experiments") if isinstance(out.get("experiments"), dict) else {}
    used = {e.get("dataset") for e in exps.values() if isinstance(e, dict)}
    if not used <= set(out["datasets"]):       # a name no file has: validate names the key
        return out                             # and lists every dataset there is
    own = config.get("datasets") if isinstance(config.get("datasets"), dict) else {}
    return {**out, "datasets": {n: d for n, d in out["datasets"].items() if n in used or n in own}}


def _resolve(config, path, chain: tuple) -> tuple:
    """(``config`` resolved as ``resolve_includes`` says, but keeping every included dataset;
    the experiments it can name: its own, resolved, over those of the files it includes)."""
    from rfl import io

    if not isinstance(config, dict):
        return config, {}
    where = f"config file {path}" if path is not None else "config"
    here = Path(path).resolve() if path is not None else None
    chain = chain + ((here,) if here is not None else ())
    base = here.parent if here is not None else Path.cwd()
    merged: dict = {}
    templates: dict = {}
    names = config.get("include", [])
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list) or ("include" in config and not names) \
            or not all(isinstance(n, str) and n for n in names):
        raise ConfigError(f"{where}: include: {config['include']!r}; allowed: a path, or a list "
                          f"of paths, of config files relative to this file's folder")
    for name in names:
        target = (base / name).resolve()
        if target in chain:
            loop = " -> ".join(str(p) for p in chain[chain.index(target):] + (target,))
            raise ConfigError(f"{where}: include {name!r} makes a cycle ({loop}); allowed: "
                              f"includes that never lead back to an including file")
        if not target.is_file():
            raise ConfigError(f"{where}: include {name!r} not found (no file {target}); allowed: "
                              f"a config file's path relative to {base}")
        included = io.read_yaml(target)
        if not isinstance(included, dict):
            raise ConfigError(f"config file {target}: included by {path or 'the config'}, holds "
                              f"{type(included).__name__}, not a mapping; allowed: a config file")
        included, theirs = _resolve(included, target, chain)
        for section in INCLUDED_SECTIONS:
            if isinstance(included.get(section), dict):
                merged[section] = {**merged.get(section, {}), **copy.deepcopy(included[section])}
        templates.update(theirs)
    out = {k: v for k, v in config.items() if k != "include"}
    for section in INCLUDED_SECTIONS:
        own = out.get(section)
        if section in merged and (own is None or isinstance(own, dict)):
            out[section] = {**merged[section], **(own or {})}
    out = _by_name(out, templates, where)
    own_exps = out.get("experiments") if isinstance(out.get("experiments"), dict) else {}
    return out, {**templates, **own_exps}


def _by_name(config: dict, templates: dict, where: str) -> dict:
    """``config`` with each experiment's ``geometry``/``step`` that is a string replaced by that
    key of the experiment it names (one of ``config``'s own, else of ``templates``, the
    included files' experiments)."""
    exps = config.get("experiments")
    if not isinstance(exps, dict):
        return config
    pool = {**templates, **exps}
    resolved = {}
    for ename, exp in exps.items():
        if not isinstance(exp, dict):
            resolved[ename] = exp
            continue
        exp = dict(exp)
        for key in BY_NAME:
            seen = [ename]
            value = exp.get(key)
            while isinstance(value, str):
                other = pool.get(value)
                if not isinstance(other, dict):
                    import difflib
                    close = difflib.get_close_matches(value, list(pool), n=3)
                    raise ConfigError(
                        f"{where}: config key experiments.{seen[-1]}.{key}: {value!r} names no "
                        f"experiment of this file or the files it includes; allowed: a mapping, or "
                        f"the name of one of the {len(pool)} experiments there"
                        + (f" (closest: {', '.join(close)})" if close else ""))
                if value in seen:
                    raise ConfigError(f"{where}: config key experiments.{ename}.{key}: the names "
                                      f"{' -> '.join(seen + [value])} make a cycle; allowed: a "
                                      f"name that leads to a mapping")
                seen.append(value)
                value = other.get(key, {} if key == "geometry" else None)
            if key in exp:
                if value is None:
                    raise ConfigError(f"{where}: config key experiments.{ename}.{key}: experiment "
                                      f"{seen[-1]!r} has no {key}; allowed: a mapping, or the name "
                                      f"of an experiment that has one")
                exp[key] = copy.deepcopy(value)
        resolved[ename] = exp
    return {**config, "experiments": resolved}


# ---- expansion --------------------------------------------------------------
def run_id(algorithm: str, K: int | None, seed: int, participation=None, setting=()) -> str:
    """``<algorithm>_K<K><scheme><setting>_seed<seed>``, the scheme as
    ``rfl.participation.tag`` (nothing for every agent, ``_s<s>`` for s uniformly, the scheme's
    name and options otherwise), the swept values as ``rfl.sweeps.setting_tag`` (nothing
    without a sweep; ``_server_step0.5_alpha3e-3``)."""
    k = "" if K is None else f"_K{K}"
    return f"{algorithm}{k}{participation_tag(participation)}{sweeps.setting_tag(setting)}_seed{seed}"


def instance_name(dataset: dict, seed: int) -> str:
    """The data instance a run uses: one per run seed when the dataset resamples."""
    return f"seed{seed}" if dataset.get("resample") else "fixed"


def dataset_spec(config: dict, name: str, instance: str) -> dict:
    """Everything ``rfl data`` / ``rfl reference`` need for one data instance."""
    ds = copy.deepcopy(config["datasets"][name])
    spec = {"name": name, "instance": instance, **ds}
    for raw in PROBLEMS[ds["problem"]].raw_inputs_for(ds.get("params")):   # where the raw files come from
        if raw in config:
            spec[raw] = copy.deepcopy(config[raw])
        else:                                           # a pinned source (rfl/data/sources.py)
            spec["anchors"] = copy.deepcopy(config["anchors"])
    return spec


def dataset_instances(config: dict) -> list[tuple[str, str]]:
    """Every (dataset, instance) some run needs, in config order."""
    seen = {}
    for exp in config["experiments"].values():
        ds = config["datasets"][exp["dataset"]]
        for seed in exp["seeds"]:
            seen[(exp["dataset"], instance_name(ds, seed))] = None
    return list(seen)


def expand_runs(config: dict) -> list[dict]:
    """One spec per (experiment, method, participation, K, setting, seed), in config order;
    the options a method sets (those its algorithm declares) go into the spec's ``algorithm``,
    a sweep's values (``rfl.sweeps``) into its ``algorithm`` and ``step`` and, as a list of
    [name, value] pairs in setting order, its ``sweep`` (absent without a sweep)."""
    runs = []
    for ename, exp in config["experiments"].items():
        for m in exp["methods"]:
            alg = _algorithm(m["algorithm"])
            federated = alg.federated
            options = dict(alg.options)
            for p in sweeps.participations(m):
                for K in (m["K"] if federated else [None]):
                    for setting in sweeps.settings(exp, m, options, federated):
                        for seed in exp["seeds"]:
                            runs.append(_run_spec(config, ename, exp, m, alg, p, K, setting, seed))
    return runs


def _run_spec(config, ename, exp, m, alg, p, K, setting, seed) -> dict:
    """The spec of one run (``expand_runs``)."""
    ds = dataset_spec(config, exp["dataset"], instance_name(config["datasets"][exp["dataset"]], seed))
    algorithm = {"name": m["algorithm"]}
    if alg.federated:
        algorithm.update(K=K, batch_size=exp["batch_size"], participation=participation.canonical(p))
    algorithm.update((k, m[k]) for k in alg.options if k in m)
    step = dict(exp["step"]) if alg.federated else None
    algorithm, step = sweeps.apply(setting, algorithm, step)
    spec = {
        "experiment": ename,
        "run_id": run_id(m["algorithm"], K, seed, p, setting),
        "dataset": ds,
        "geometry": dict(exp.get("geometry", {})),
        "algorithm": algorithm,
        "step": step,
        "rounds": exp["rounds"],
        "seed": seed,
    }
    if setting:
        spec["sweep"] = [[k, v] for k, v in setting]      # a list: a spec file's JSON sorts keys
    # only when declared: the specs (and run ids) of other experiments unchanged
    if exp.get("weighted_objective") is not None:
        spec["weighted_objective"] = participation.canonical(exp["weighted_objective"])
    if exp.get("time"):
        spec["time"] = copy.deepcopy(exp["time"])
    if exp.get("replicas"):
        spec["replicas"] = int(exp["replicas"])
    return spec

"""Workflow configuration: validation and expansion into specs.

``validate`` checks a config against ``config/schema.yaml`` (JSON Schema 2020-12) and then
what a schema cannot express (a batch no larger than the local data, participation no larger
than S, geometry the manifold offers, references between datasets, experiments, figures and
tables). Every error names the key, the bad value and what is allowed, and is raised before
any job starts. ``expand_runs`` turns experiments into one spec per run:
(experiment, algorithm, K, participation, seed).
"""

from __future__ import annotations

import copy
import functools
import math
from pathlib import Path

import jsonschema
import yaml

from rfl.problems import PROBLEMS

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "config" / "schema.yaml"
FEDERATED_NAMES = ("rfedags", "rfedavg", "fedavg", "rfedsvrg", "rfedproj", "scafflsa")
TANGENT_MEAN_NAMES = ("rfedavg", "rfedsvrg")
CENTRALIZED_NAMES = ("rsd", "rcg", "rlbfgs")
LSA_NAMES = ("fedavg", "scafflsa")      # FedLSA (FedAvg on the LSA field) and SCAFFLSA
BASE_METRICS = ("excess_risk", "grad_norm", "dist_to_opt", "cost")


class ConfigError(ValueError):
    """A configuration that must not run."""


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<root>"


@functools.lru_cache(maxsize=4)
def _schema_text(path: str) -> str:
    return Path(path).read_text()


def load_schema(path: str | Path = SCHEMA_PATH) -> dict:
    return yaml.safe_load(_schema_text(str(path)))


def _is_integer(checker, instance) -> bool:
    """JSON Schema counts 2.0 as an integer; a count, seed or size here must be a true int."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def _is_number(checker, instance) -> bool:
    """A finite int or float: NaN compares false with every bound, and no parameter is infinite."""
    return (isinstance(instance, (int, float)) and not isinstance(instance, bool)
            and math.isfinite(instance))


_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_number}))


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
    return f"config key {_key(path)}: {err.message}{allowed}"


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


def _dataset_errors(config: dict, schema: dict) -> list[str]:
    msgs = []
    for name, ds in config["datasets"].items():
        sub = schema["$defs"][f"{ds['problem']}_params"]
        for err in _Validator(sub).iter_errors(ds["params"]):
            msgs.append(_describe(err, ["datasets", name, "params"]))
    if msgs:
        return msgs
    for name, ds in config["datasets"].items():
        for key, problem in _data_constraints(ds["problem"], ds["params"]):
            msgs.append(f"config key datasets.{name}.params.{key}: {problem}")
    return msgs


def _data_constraints(problem: str, p: dict) -> list[tuple[str, str]]:
    """Relations between data parameters that the data generators need (checked up front)."""
    out = []
    if problem == "cpesph" and p["N"] < p["d"] + 1:
        out.append(("N", f"{p['N']} is smaller than d+1 = {p['d'] + 1} (U_i needs orthonormal "
                         f"columns); allowed: N >= {p['d'] + 1}"))
    if problem == "mbcfsti" and p["p"] > p["d"]:
        out.append(("p", f"{p['p']} is larger than d = {p['d']}; allowed: 1..{p['d']}"))
    if problem == "multitask":
        d_min, d_max = p.get("d_min", 10), p.get("d_max", 50)
        if p["r"] > p["m"]:
            out.append(("r", f"{p['r']} is larger than m = {p['m']}; allowed: 1..{p['m']}"))
        if d_min > d_max:
            out.append(("d_min", f"{d_min} is larger than d_max = {d_max}; allowed: d_min <= d_max"))
        elif p.get("lam", 0.0) == 0 and d_min < p["r"]:
            out.append(("d_min", f"{d_min} is smaller than r = {p['r']} with lam = 0 (the "
                                 f"least-squares fit of a task needs at least r rows); allowed: "
                                 f"d_min >= {p['r']}, or lam > 0"))
    if problem == "school" and p["S"] * p["N"] > 139:
        out.append(("S", f"S*N = {p['S'] * p['N']} tasks, but the School data have 139 schools; "
                         f"allowed: S*N <= 139"))
    if problem == "kpca":
        from rfl.data.kpca import POOL_SIZE
        n = p.get("n_per_agent", POOL_SIZE // p["S"])
        if p["S"] * n > POOL_SIZE:
            out.append(("n_per_agent", f"S*n_per_agent = {p['S'] * n} images, but the class-balanced "
                                       f"digits pool holds {POOL_SIZE}; allowed: "
                                       f"n_per_agent <= {POOL_SIZE // p['S']}"))
    if problem == "lsa":
        out.extend(_lsa_constraints(p))
    if problem == "cfmspd":
        rate = _cfmspd_acceptance(p["d"], p.get("D_W", 1.0))
        need = p["S"] * p["N"]
        if rate * 1e7 < 10 * need:
            out.append(("D_W", f"{p.get('D_W', 1.0)} with d = {p['d']}: the rejection sampler keeps "
                               f"about {rate:.1e} of its Wishart draws, too few for S*N = {need} "
                               f"samples within 10^7 draws; allowed: a larger D_W or a smaller d"))
    return out


def _lsa_constraints(p: dict) -> list[tuple[str, str]]:
    """Federated TD(0) data: N >= 2 for two MDPs, a Garnet draw the generator can make."""
    from rfl.data.garnet import MAX_REDRAWS

    out = []
    n_states, n_actions = p.get("n_states", 30), p.get("n_actions", 2)
    branching, d = p.get("branching", 2), p.get("n_features", 8)
    if p["setting"] == "heterogeneous" and p["n_agents"] < 2:
        out.append(("n_agents", f"{p['n_agents']} agent(s), but the heterogeneous setting draws "
                                f"agents from two MDPs; allowed: n_agents >= 2"))
    if p.get("oracle", "pool") == "exact" and "pool" in p:
        out.append(("pool", "the exact oracle (A_bar_c, b_bar_c) draws no transitions; allowed: "
                            "pool only with oracle 'pool'"))
    if branching > n_states:
        out.append(("branching", f"{branching} successors per (s, a), but only n_states = "
                                 f"{n_states} states; allowed: 1..{n_states}"))
    elif d > n_states:
        out.append(("n_features", f"{d} features on n_states = {n_states} states: A_bar_c would be "
                                  f"singular; allowed: 1..{n_states}"))
    else:
        n_bases = 2 if p["setting"] == "heterogeneous" else 1
        rate = _garnet_admissible(n_states, n_actions, branching, d, n_bases)
        if rate * MAX_REDRAWS < 10:
            out.append(("n_features", f"{d} features with n_states = {n_states}, branching = "
                                      f"{branching}: only {rate:.1%} of Garnet draws have a closed "
                                      f"class spanned by the features (nonsingular A_bar_c), too few "
                                      f"within the generator's {MAX_REDRAWS} draws; allowed: fewer "
                                      f"features or more states"))
    return out


@functools.lru_cache(maxsize=64)
def _garnet_admissible(n_states: int, n_actions: int, branching: int, d: int, n_bases: int) -> float:
    """Admissible fraction of Garnet draws, from a fixed pilot (deterministic)."""
    from rfl.data.garnet import admissible_rate

    return admissible_rate(n_states, n_actions, branching, d, n_bases)


@functools.lru_cache(maxsize=32)
def _cfmspd_acceptance(d: int, D_W: float) -> float:
    """Acceptance rate of the CFMSPD sampler, from a fixed pilot of 20000 draws (deterministic)."""
    import numpy as np

    from rfl.data.cfmspd import distance_to_identity, wishart

    with np.errstate(all="ignore"):
        z = wishart(np.random.default_rng(0), d, 20000)
        return float(np.mean(distance_to_identity(z) < D_W))


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
        federated = [m for m in exp["methods"] if m["algorithm"] in FEDERATED_NAMES]
        if federated:
            for key in ("batch_size", "step"):
                if key not in exp:
                    msgs.append(f"config key {_key(where + [key])}: missing; federated methods "
                                f"({', '.join(sorted({m['algorithm'] for m in federated}))}) need it")
            if "batch_size" in exp and exp["batch_size"] > min(sizes):
                why = (" (the exact LSA oracle evaluates A_bar_c theta - b_bar_c once per local step)"
                       if ds["problem"] == "lsa" and ds["params"].get("oracle") == "exact" else "")
                msgs.append(f"config key {_key(where + ['batch_size'])}: {exp['batch_size']} is larger "
                            f"than the smallest local data set (N={min(sizes)}) of dataset "
                            f"{exp['dataset']!r}{why}; allowed: 1..{min(sizes)}")
        for i, m in enumerate(exp["methods"]):
            here = where + ["methods", i]
            alg = m["algorithm"]
            if alg in FEDERATED_NAMES and "K" not in m:
                msgs.append(f"config key {_key(here + ['K'])}: missing; {alg} needs a list of local "
                            f"step counts K >= 1")
            if alg in CENTRALIZED_NAMES:
                for key in ("K", "participation"):
                    if key in m:
                        msgs.append(f"config key {_key(here + [key])}: {alg} is centralised and takes "
                                    f"no {key}; allowed only with {', '.join(FEDERATED_NAMES)}")
            if "server_step" in m and alg != "rfedproj":
                msgs.append(f"config key {_key(here + ['server_step'])}: only rfedproj takes a "
                            f"server step; {alg} does not")
            if alg == "rfedproj" and not cls.manifold_class.offers("nearest_point"):
                msgs.append(f"config key {_key(here + ['algorithm'])}: 'rfedproj' needs a compact "
                            f"embedded manifold with a Euclidean projection (sphere, stiefel); "
                            f"{cls.manifold_class.name} has none")
            s = m.get("participation")
            if s is not None and s > len(sizes):
                msgs.append(f"config key {_key(here + ['participation'])}: {s} is larger than the "
                            f"number of agents S={len(sizes)}; allowed: 1..{len(sizes)}")
            retraction = exp.get("geometry", {}).get("retraction")
            if alg in TANGENT_MEAN_NAMES and not cls.manifold_class.offers("tangent_mean", retraction):
                msgs.append(f"config key {_key(here + ['algorithm'])}: {alg!r} aggregates by the "
                            f"tangent mean, which needs a closed-form Log or an inverse retraction; "
                            f"{cls.manifold_class.name} with retraction "
                            f"{retraction or cls.manifold_class.RETRACTIONS[0]!r} has neither; "
                            f"allowed here: rfedags, {', '.join(CENTRALIZED_NAMES)}")
            if ds["problem"] == "lsa" and alg not in LSA_NAMES:
                msgs.append(f"config key {_key(here + ['algorithm'])}: {alg!r} does not apply to "
                            f"problem 'lsa' (its field A(Z) theta - b(Z) is not a gradient); "
                            f"allowed here: {', '.join(LSA_NAMES)}")
            if alg == "scafflsa" and cls.manifold_class.name != "euclidean":
                msgs.append(f"config key {_key(here + ['algorithm'])}: 'scafflsa' needs a Euclidean "
                            f"problem, dataset {exp['dataset']!r} lives on {cls.manifold_class.name}; "
                            f"allowed here: rfedags, rfedavg, {', '.join(CENTRALIZED_NAMES)}")
            if alg == "fedavg" and cls.manifold_class.name != "euclidean":
                msgs.append(f"config key {_key(here + ['algorithm'])}: 'fedavg' needs a Euclidean "
                            f"problem, dataset {exp['dataset']!r} lives on {cls.manifold_class.name}; "
                            f"allowed here: rfedags, rfedavg, {', '.join(CENTRALIZED_NAMES)}")
        geometry = exp.get("geometry", {})
        for key, allowed in (("retraction", cls.manifold_class.RETRACTIONS),
                             ("transport", cls.manifold_class.TRANSPORTS)):
            if key in geometry and geometry[key] not in allowed:
                msgs.append(f"config key {_key(where + ['geometry', key])}: {geometry[key]!r} is "
                            f"not available on {cls.manifold_class.name}; allowed: {', '.join(allowed)}")
    return msgs


def _figure_and_table_errors(config: dict) -> list[str]:
    msgs = []
    exps = config["experiments"]
    for fname, fig in config.get("figures", {}).items():
        where = ["figures", fname]
        if fig["experiment"] not in exps:
            msgs.append(f"config key {_key(where + ['experiment'])}: {fig['experiment']!r} is not an "
                        f"experiment of this config; allowed: {', '.join(exps)}")
            continue
        problem = config["datasets"][exps[fig["experiment"]]["dataset"]]["problem"]
        allowed = BASE_METRICS + tuple(PROBLEMS[problem].extra_metric_names)
        for i, metric in enumerate(fig.get("metrics", ["excess_risk"])):
            if metric not in allowed:
                msgs.append(f"config key {_key(where + ['metrics', i])}: {metric!r} is not recorded "
                            f"for problem {problem!r}; allowed: {', '.join(allowed)}")
    for label, ename in config.get("heterogeneity", {}).get("experiments", {}).items():
        if ename not in exps:
            msgs.append(f"config key heterogeneity.experiments.{label}: {ename!r} is not an "
                        f"experiment; allowed: {', '.join(exps)}")
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
    for i, row in enumerate(tables.get("table1", {}).get("rows", [])):
        for key in ("fixed", "decaying"):
            if row[key] not in exps:
                msgs.append(f"config key {_key(['tables', 'table1', 'rows', i, key])}: {row[key]!r} "
                            f"is not an experiment; allowed: {', '.join(exps)}")
    for r, ename in tables.get("table2", {}).get("experiments", {}).items():
        where = ["tables", "table2", "experiments", r]
        if ename not in exps:
            msgs.append(f"config key {_key(where)}: {ename!r} is not an experiment; "
                        f"allowed: {', '.join(exps)}")
        elif "test_nmse" not in PROBLEMS[config["datasets"][exps[ename]["dataset"]]["problem"]].extra_metric_names:
            msgs.append(f"config key {_key(where)}: experiment {ename!r} records no test_nmse; "
                        f"Table 2 needs a School experiment")
    return msgs


def validate(config: dict, schema_path: str | Path = SCHEMA_PATH) -> dict:
    """Return the config with defaults filled in, or raise ConfigError listing every problem."""
    if not isinstance(config, dict):
        raise ConfigError(f"invalid configuration:\n  config key <root>: the config must be a "
                          f"mapping, got {type(config).__name__}; allowed: a mapping with keys "
                          f"datasets, experiments, figures, ...")
    config = copy.deepcopy(config)
    schema = load_schema(schema_path)
    for check in (_key_errors, lambda c: _schema_errors(c, schema), lambda c: _dataset_errors(c, schema),
                  _experiment_errors, _figure_and_table_errors):
        msgs = check(config)
        if msgs:
            raise ConfigError("invalid configuration:\n  " + "\n  ".join(msgs))
    config.setdefault("output_dir", "")
    school = config.setdefault("school", {})
    school.setdefault("mirror", None)
    school.setdefault("cache_dir", "datasets/school")
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
    return config


def load(path: str | Path) -> dict:
    return validate(yaml.safe_load(Path(path).read_text()))


# ---- expansion --------------------------------------------------------------
def run_id(algorithm: str, K: int | None, seed: int, participation: int | None = None) -> str:
    k = "" if K is None else f"_K{K}"
    part = "" if participation is None else f"_s{participation}"
    return f"{algorithm}{k}{part}_seed{seed}"


def instance_name(dataset: dict, seed: int) -> str:
    """The data instance a run uses: one per run seed when the dataset resamples."""
    return f"seed{seed}" if dataset.get("resample") else "fixed"


def dataset_spec(config: dict, name: str, instance: str) -> dict:
    """Everything ``rfl data`` / ``rfl reference`` need for one data instance."""
    ds = copy.deepcopy(config["datasets"][name])
    spec = {"name": name, "instance": instance, **ds}
    if ds["problem"] == "school":
        spec["school"] = copy.deepcopy(config["school"])
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
    """One spec per (experiment, method, K, seed), in config order."""
    runs = []
    for ename, exp in config["experiments"].items():
        for m in exp["methods"]:
            federated = m["algorithm"] in FEDERATED_NAMES
            for K in (m["K"] if federated else [None]):
                for seed in exp["seeds"]:
                    ds = dataset_spec(config, exp["dataset"],
                                      instance_name(config["datasets"][exp["dataset"]], seed))
                    algorithm = {"name": m["algorithm"]}
                    if federated:
                        algorithm.update(K=K, batch_size=exp["batch_size"],
                                         participation=m.get("participation"))
                        if "server_step" in m:
                            algorithm["server_step"] = m["server_step"]
                    runs.append({
                        "experiment": ename,
                        "run_id": run_id(m["algorithm"], K, seed, m.get("participation")),
                        "dataset": ds,
                        "geometry": dict(exp.get("geometry", {})),
                        "algorithm": algorithm,
                        "step": dict(exp["step"]) if federated else None,
                        "rounds": exp["rounds"],
                        "seed": seed,
                    })
    return runs

"""Workflow configuration: validation and expansion into run specs.

``validate`` checks a config against ``config/schema.yaml`` (JSON Schema
2020-12) and then the facts a schema cannot express (a batch no larger than
the local data, participation no larger than S, geometry the manifold offers,
datasets that exist). Every error names the key, the bad value and what is
allowed, and is raised before any job starts. ``expand_runs`` turns the
experiments into one spec per run: (experiment, algorithm, K, seed).
"""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import yaml

from rfl.problems import PROBLEMS

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "config" / "schema.yaml"


class ConfigError(ValueError):
    """A configuration that must not run."""


def _key(path) -> str:
    return ".".join(str(p) for p in path) or "<root>"


def load_schema(path: str | Path = SCHEMA_PATH) -> dict:
    return yaml.safe_load(Path(path).read_text())


def _schema_errors(config: dict, schema: dict) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    msgs = []
    for err in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path))):
        best = jsonschema.exceptions.best_match([err])
        if best.validator == "oneOf" and isinstance(best.instance, dict) and "rule" in best.instance:
            rule = best.instance["rule"]
            allowed = [s["properties"]["rule"]["const"] for s in best.validator_value]
            if rule not in allowed:
                msgs.append(f"config key {_key(list(best.absolute_path) + ['rule'])}: {rule!r} is "
                            f"not a step rule; allowed: {', '.join(allowed)}")
                continue
            sub = next(s for s in best.validator_value if s["properties"]["rule"]["const"] == rule)
            inner = list(jsonschema.Draft202012Validator(sub).iter_errors(best.instance))
            best = jsonschema.exceptions.best_match(inner) if inner else best
            path = list(err.absolute_path) + list(best.absolute_path)
        else:
            path = list(best.absolute_path)
        allowed = ""
        if best.validator == "enum":
            allowed = f"; allowed: {', '.join(map(str, best.validator_value))}"
        msgs.append(f"config key {_key(path)}: {best.message}{allowed}")
    return msgs


def _semantic_errors(config: dict) -> list[str]:
    msgs = []
    datasets = config["datasets"]
    for name, ds in datasets.items():
        cls = PROBLEMS[ds["problem"]]
        sub = load_schema()["$defs"].get(f"{ds['problem']}_params")
        if sub is not None:
            for err in jsonschema.Draft202012Validator(sub).iter_errors(ds["params"]):
                msgs.append(f"config key {_key(['datasets', name, 'params', *err.absolute_path])}: "
                            f"{err.message}")
    if msgs:
        return msgs
    for ename, exp in config["experiments"].items():
        where = ["experiments", ename]
        if exp["dataset"] not in datasets:
            msgs.append(f"config key {_key(where + ['dataset'])}: {exp['dataset']!r} is not a "
                        f"dataset of this config; allowed: {', '.join(datasets)}")
            continue
        ds = datasets[exp["dataset"]]
        cls = PROBLEMS[ds["problem"]]
        sizes = cls.local_sizes_from(ds["params"])
        if exp["batch_size"] > min(sizes):
            msgs.append(f"config key {_key(where + ['batch_size'])}: {exp['batch_size']} is larger "
                        f"than the smallest local data set (N={min(sizes)}) of dataset "
                        f"{exp['dataset']!r}; allowed: 1..{min(sizes)}")
        for i, m in enumerate(exp["methods"]):
            s = m.get("participation")
            if s is not None and s > len(sizes):
                msgs.append(f"config key {_key(where + ['methods', i, 'participation'])}: {s} is "
                            f"larger than the number of agents S={len(sizes)}; allowed: 1..{len(sizes)}")
            if m["algorithm"] == "fedavg" and cls.manifold_class.name != "euclidean":
                msgs.append(f"config key {_key(where + ['methods', i, 'algorithm'])}: 'fedavg' needs "
                            f"a Euclidean problem, dataset {exp['dataset']!r} lives on "
                            f"{cls.manifold_class.name}; allowed here: rfedags, rfedavg")
        geometry = exp.get("geometry", {})
        for key, allowed in (("retraction", cls.manifold_class.RETRACTIONS),
                             ("transport", cls.manifold_class.TRANSPORTS)):
            if key in geometry and geometry[key] not in allowed:
                msgs.append(f"config key {_key(where + ['geometry', key])}: {geometry[key]!r} is "
                            f"not available on {cls.manifold_class.name}; allowed: {', '.join(allowed)}")
    return msgs


def validate(config: dict, schema_path: str | Path = SCHEMA_PATH) -> dict:
    """Return the config with schema defaults filled in, or raise ConfigError listing every problem."""
    if not isinstance(config, dict):
        raise ConfigError(f"the config must be a mapping, got {type(config).__name__}")
    config = copy.deepcopy(config)
    msgs = _schema_errors(config, load_schema(schema_path))
    if not msgs:
        msgs = _semantic_errors(config)
    if msgs:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(msgs))
    config.setdefault("output_dir", "")
    for exp in config["experiments"].values():
        exp["figure"].setdefault("metric", "excess_risk")
        exp.setdefault("geometry", {})
    return config


def load(path: str | Path) -> dict:
    return validate(yaml.safe_load(Path(path).read_text()))


def run_id(algorithm: str, K: int, seed: int, participation: int | None = None) -> str:
    part = "" if participation is None else f"_s{participation}"
    return f"{algorithm}_K{K}{part}_seed{seed}"


def expand_runs(config: dict) -> list[dict]:
    """One spec per (experiment, method, K, seed), in config order."""
    runs = []
    for ename, exp in config["experiments"].items():
        ds = config["datasets"][exp["dataset"]]
        for m in exp["methods"]:
            for K in m["K"]:
                for seed in exp["seeds"]:
                    runs.append({
                        "experiment": ename,
                        "run_id": run_id(m["algorithm"], K, seed, m.get("participation")),
                        "dataset": {"name": exp["dataset"], **copy.deepcopy(ds)},
                        "geometry": dict(exp.get("geometry", {})),
                        "algorithm": {"name": m["algorithm"], "K": K,
                                      "batch_size": exp["batch_size"],
                                      "participation": m.get("participation")},
                        "step": dict(exp["step"]),
                        "rounds": exp["rounds"],
                        "seed": seed,
                    })
    return runs


def dataset_spec(config: dict, name: str) -> dict:
    return {"name": name, **copy.deepcopy(config["datasets"][name])}

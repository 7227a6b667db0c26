"""The jobs of one benchmark: methods x problems of the suite, their specs and their files.

A method is ``NAME[:key=value,...]``: an installed federated strategy (``rfl list
strategies``) with options it declares, ``K`` (its local steps; default: the instance's) and
``alpha`` (a fixed step given by the user: no tuning). Values are read as YAML scalars
(``mu=0.5``, ``local_method=rsvrg``). Every method runs on every problem of the plan beside the
baselines (``suite.BASELINES`` unless others are named), under one experiment name per problem,
``bench_<problem>``: the runs of one seed draw the same agents and mini-batches
(``rfl.algorithms.sampling.Draws``) and start from the same x_1 (common random numbers). A method
whose strategy needs a capability the problem's manifold lacks (``requires``), follows another
field (``fields``) or needs an oracle the problem does not offer (``oracles``) is listed as
unable to run there, with the reason.

The step of each method on each problem comes from one rule (``rfl.bench.tuning``): the grid
alpha_0 x ``suite.GRID[size]`` runs on ``suite.TUNING_SEED``, and the step with the smallest
final excess risk is used on the reported seeds; a step given as ``alpha=...`` or declared by the
strategy (a class attribute ``default_step``, a number) is used as it is, and the leaderboard
says which.

Layout under OUT (``--out``, default ``bench/``):
    results/specs/bench/...                 one JSON spec per job (Snakemake's inputs)
    results/data|reference/bench_<p>/fixed.npz
    results/runs/bench_<p>/tune/<method>_alpha<a>_seed<T>.csv (+ .meta.json)   the grid
    results/runs/bench_<p>/<method>_seed<s>.csv (+ .meta.json)                 reported seeds
    results/runs/bench_<p>/steps.json       the chosen step of each method, with the grid's losses
    leaderboard/leaderboard.{csv,md,html}, leaderboard/profile.{pdf,png,svg,csv}
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, field

from rfl.bench import suite
from rfl.sweeps import setting_tag

#: a method's keys besides its algorithm's options
METHOD_KEYS = ("K", "alpha")
#: default reference settings of a dataset spec (as rfl.config.validate fills them)
REFERENCE_DEFAULTS = {"tolerance": 1e-6, "max_iterations": 5000, "starts": 1}


class BenchError(ValueError):
    """Bad input to ``rfl bench``: one line naming it and what is allowed."""


@dataclass
class Method:
    """One method of the benchmark: ``name`` (the strategy), ``options`` (its declared options
    set here), ``K`` / ``alpha`` (None: the instance's K / the tuned step), ``origin``
    ("yours" or "baseline")."""

    name: str
    options: dict = field(default_factory=dict)
    K: int | None = None
    alpha: float | None = None
    origin: str = "yours"
    text: str = ""

    @property
    def id(self) -> str:
        """The run-id stem: ``name`` then each given value (``rfedprox_mu0p5``)."""
        given = list(self.options.items()) + [(k, getattr(self, k)) for k in METHOD_KEYS
                                               if getattr(self, k) is not None]
        return self.name + setting_tag(given)

    def label(self) -> str:
        from rfl.registry import ALGORITHMS
        given = [f"{k}={v}" for k, v in self.options.items()] + [
            f"{k}={getattr(self, k)}" for k in METHOD_KEYS if getattr(self, k) is not None]
        base = ALGORITHMS[self.name].label
        return f"{base} ({', '.join(given)})" if given else base

    def declared_step(self) -> float | None:
        from rfl.registry import ALGORITHMS
        step = getattr(ALGORITHMS[self.name], "default_step", None)
        return float(step) if isinstance(step, (int, float)) and not isinstance(step, bool) else None


def _scalar(text: str):
    import yaml
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return text if isinstance(value, (dict, list)) or value is None else value


def federated_names() -> list[str]:
    from rfl.registry import ALGORITHMS
    return [n for n, a in ALGORITHMS.items() if a.federated]


def parse_method(text: str, origin: str = "yours") -> Method:
    """``NAME[:key=value,...]`` -> Method, or BenchError naming what is wrong and what is allowed."""
    import jsonschema

    from rfl.registry import ALGORITHMS

    name, _, rest = text.partition(":")
    name = name.strip()
    allowed = federated_names()
    if name not in ALGORITHMS:
        raise BenchError(f"method {name!r} is not an installed strategy; allowed: {', '.join(allowed)}")
    cls = ALGORITHMS[name]
    if not cls.federated:
        raise BenchError(f"method {name!r} is centralised; allowed: the federated strategies "
                         f"{', '.join(allowed)}")
    method = Method(name, origin=origin, text=text)
    for item in [s for s in rest.split(",") if s.strip()] if rest else []:
        key, eq, value = item.partition("=")
        key = key.strip()
        keys = list(cls.options) + list(METHOD_KEYS)
        if not eq or key not in keys:
            raise BenchError(f"method {text!r}: {item.strip()!r} is not key=value with a key "
                             f"{name} takes; allowed: {', '.join(keys)}")
        value = _scalar(value.strip())
        if key == "K":
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
                raise BenchError(f"method {text!r}: K={value!r}; allowed: an integer >= 1")
            method.K = value
        elif key == "alpha":
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0):
                raise BenchError(f"method {text!r}: alpha={value!r}; allowed: a number > 0")
            method.alpha = float(value)
        else:
            errors = list(jsonschema.Draft202012Validator(cls.options[key]).iter_errors(value))
            if errors:
                raise BenchError(f"method {text!r}: option {key}={value!r}: {errors[0].message}")
            method.options[key] = value
    return method


def unavailable(method: Method, problem: str) -> str | None:
    """Why ``method`` cannot run on the suite's ``problem`` (a missing capability, another
    field, a missing oracle), or None."""
    from rfl.registry import ALGORITHMS, PROBLEMS

    alg, cls = ALGORITHMS[method.name], PROBLEMS[suite.INSTANCES[problem]["problem"]]
    retraction = suite.INSTANCES[problem]["geometry"].get("retraction")
    manifold = cls.manifold_class
    lacks = [cap for cap in sorted(alg.requires) if not manifold.offers(cap, retraction)]
    if lacks:
        return f"needs {', '.join(lacks)}; {manifold.name} (retraction {retraction}) lacks it"
    if cls.field not in alg.fields:
        return f"follows {', '.join(sorted(alg.fields))}; the problem's field is {cls.field}"
    oracles = [o for o in sorted(alg.oracles) if not cls.offers(o)]
    if oracles:
        return f"needs the problem's {', '.join(oracles)}, which it does not offer"
    return None


def _split(values) -> list[str]:
    """Problem names given as several words or comma-separated."""
    out = []
    for v in values or []:
        out += [s.strip() for s in str(v).split(",") if s.strip()]
    return out


class BenchPlan:
    """Every job of one benchmark (module docstring). ``methods``: the user's method strings;
    ``problems``: names of ``suite.INSTANCES`` (default all); ``baselines``: strategy strings
    (default ``suite.BASELINES``); ``size``: one of ``suite.SIZES``; ``out``: the output folder."""

    def __init__(self, methods, problems=None, size: str = "default", out: str = "bench/",
                 baselines=None, out_key: str = "--out"):
        if size not in suite.SIZES:
            raise BenchError(f"size {size!r} is unknown; allowed: {', '.join(suite.SIZES)}")
        self.size = size
        self.out = out.rstrip("/") + "/" if out else ""
        if not re.fullmatch(r"/?([A-Za-z0-9_.-]+/)*", self.out):
            raise BenchError(f"{out_key} {out!r}: allowed: a folder path of letters, digits, '_', '.', '-'")
        problems = _split(problems) or list(suite.INSTANCES)
        for p in problems:
            if p not in suite.INSTANCES:
                raise BenchError(f"problem {p!r} is not in the benchmark suite; allowed: "
                                 f"{', '.join(suite.INSTANCES)}")
        self.problems = list(dict.fromkeys(problems))
        mine = [parse_method(str(m), "yours") for m in methods or []]
        base = [parse_method(str(m), "baseline") for m in
                (baselines if baselines is not None else suite.BASELINES)]
        ids = [m.id for m in mine]
        if len(set(ids)) != len(ids):
            twice = sorted({i for i in ids if ids.count(i) > 1})
            raise BenchError(f"method {twice[0]!r} is given twice; allowed: each method once")
        self.methods = mine + [b for b in base if b.id not in ids]
        if not self.methods:
            raise BenchError("no method to run; allowed: METHOD[:key=value,...] (rfl list strategies)")
        from rfl.config import _path_error            # the workflow's rule for output_dir
        why = _path_error(out_key, self.out)
        if why:
            raise BenchError(why.replace("config key --out:", "--out"))
        self.seeds = list(suite.SEEDS[size])
        self.tuning_seed = suite.TUNING_SEED
        self.grid_factors = suite.GRID[size]
        #: (problem, method id) -> why it cannot run
        self.unavailable = {(p, m.id): why for p in self.problems for m in self.methods
                            if (why := unavailable(m, p)) is not None}

    # ---- the config a Snakemake target reads (rules/bench.smk) ---------------------------
    @classmethod
    def from_config(cls, config: dict) -> "BenchPlan":
        """The plan of a workflow config's ``bench`` section: {methods, problems?, baselines?,
        size?} beside ``output_dir``."""
        b = config.get("bench")
        if not isinstance(b, dict):
            raise BenchError("config key bench: allowed: a mapping with keys methods, problems, "
                             "baselines, size")
        extra = sorted(set(b) - {"methods", "problems", "baselines", "size"})
        if extra:
            raise BenchError(f"config key bench.{extra[0]}: unknown; allowed: methods, problems, "
                             f"baselines, size")
        return cls(b.get("methods") or [], b.get("problems"), b.get("size", "default"),
                   config.get("output_dir", "bench/"), b.get("baselines"), out_key="output_dir")

    def config(self) -> dict:
        """The workflow config equivalent to this plan (``snakemake --configfile`` of it
        makes the same files)."""
        return {"output_dir": self.out,
                "bench": {"methods": [m.text for m in self.methods if m.origin == "yours"],
                          "problems": self.problems,
                          "baselines": [m.text for m in self.methods if m.origin == "baseline"],
                          "size": self.size}}

    # ---- instances and runs ---------------------------------------------------------------
    def runnable(self, problem: str) -> list[Method]:
        return [m for m in self.methods if (problem, m.id) not in self.unavailable]

    def dataset(self, problem: str) -> dict:
        """The dataset spec of ``problem``'s standard instance (as ``rfl data`` reads it)."""
        inst = suite.instance(problem, self.size)
        return {"name": f"bench_{problem}", "instance": "fixed", "problem": inst["problem"],
                "seed": inst["seed"], "params": inst["params"], "resample": False,
                "reference": {**REFERENCE_DEFAULTS, **inst.get("reference", {})}}

    def grid(self, problem: str) -> list[float]:
        alpha = suite.instance(problem, self.size)["alpha"]
        return [float(f"{alpha * f:.6g}") for f in self.grid_factors]

    def step_source(self, method: Method) -> str:
        """"given" (alpha=...), "declared" (the strategy's default_step) or "tuned"."""
        return "given" if method.alpha is not None else (
            "declared" if method.declared_step() is not None else "tuned")

    def _spec(self, problem: str, method: Method, seed: int, alpha, phase: str, run_id: str) -> dict:
        inst = suite.instance(problem, self.size)
        algorithm = {"name": method.name, "K": method.K or inst["K"],
                     "batch_size": inst["batch_size"], "participation": None, **method.options}
        return {"experiment": f"bench_{problem}", "run_id": run_id,
                "dataset": self.dataset(problem), "geometry": dict(inst["geometry"]),
                "algorithm": algorithm, "step": {"rule": "fixed", "alpha": alpha},
                "rounds": inst["rounds"], "seed": seed,
                "bench": {"problem": problem, "method": method.id, "label": method.label(),
                          "origin": method.origin, "phase": phase, "step_from": self.step_source(method),
                          "grid": self.grid(problem), "size": self.size}}

    def tuning_specs(self, problem: str) -> list[dict]:
        """The grid on the tuning seed, for each runnable method whose step is tuned."""
        out = []
        for m in self.runnable(problem):
            if self.step_source(m) != "tuned":
                continue
            for a in self.grid(problem):
                out.append(self._spec(problem, m, self.tuning_seed, a, "tune",
                                      f"{m.id}{setting_tag([('alpha', a)])}_seed{self.tuning_seed}"))
        return out

    def report_specs(self, problem: str) -> list[dict]:
        """The reported seeds of each runnable method; a tuned step is None until
        ``tuning.choose`` has read the grid (``with_step``)."""
        out = []
        for m in self.runnable(problem):
            alpha = m.alpha if m.alpha is not None else m.declared_step()
            for s in self.seeds:
                out.append(self._spec(problem, m, s, alpha, "report", f"{m.id}_seed{s}"))
        return out

    def runtime_minutes(self, problem: str, runs: int) -> int:
        """A cluster's time limit for ``runs`` runs of ``problem`` (as rfl.workflow's run jobs):
        10 + the sample gradients (runs x T x K x B x S) at a conservative 100 us each."""
        from rfl.registry import PROBLEMS
        inst = suite.instance(problem, self.size)
        agents = len(PROBLEMS[inst["problem"]].local_sizes_from(inst["params"]))
        samples = runs * inst["rounds"] * inst["K"] * inst["batch_size"] * agents
        return 10 + math.ceil(samples * 100e-6 / 60)

    # ---- paths ----------------------------------------------------------------------------
    def path(self, relative: str) -> str:
        return self.out + relative

    def data_path(self, problem: str, kind: str = "data") -> str:
        return self.path(f"results/{kind}/bench_{problem}/fixed.npz")

    def run_path(self, spec: dict, ext: str = "csv") -> str:
        p, phase = spec["bench"]["problem"], spec["bench"]["phase"]
        sub = "tune/" if phase == "tune" else ""
        return self.path(f"results/runs/bench_{p}/{sub}{spec['run_id']}.{ext}")

    def steps_path(self, problem: str) -> str:
        return self.path(f"results/runs/bench_{problem}/steps.json")

    def spec_path(self, relative: str) -> str:
        return self.path(f"results/specs/bench/{relative}.json")

    def run_spec_path(self, spec: dict) -> str:
        p, phase = spec["bench"]["problem"], spec["bench"]["phase"]
        return self.spec_path(f"runs/{p}/{'tune/' if phase == 'tune' else ''}{spec['run_id']}")

    def leaderboard_files(self) -> list[str]:
        return [self.path(f"leaderboard/{f}") for f in
                ("leaderboard.csv", "leaderboard.md", "leaderboard.html",
                 "profile.pdf", "profile.png", "profile.svg", "profile.csv")]

    def leaderboard_spec(self) -> dict:
        """What ``rfl leaderboard`` reads besides the run tables: the plan in words."""
        return {"size": self.size, "seeds": self.seeds, "tuning_seed": self.tuning_seed,
                "grid_factors": list(self.grid_factors), "problems": self.problems,
                "grids": {p: self.grid(p) for p in self.problems},
                "budgets": {p: {k: suite.instance(p, self.size)[k] for k in ("rounds", "K", "batch_size")}
                            for p in self.problems},
                "methods": [{"id": m.id, "label": m.label(), "origin": m.origin, "name": m.name,
                             "step_from": self.step_source(m)} for m in self.methods],
                "unavailable": [{"problem": p, "method": mid, "reason": why}
                                for (p, mid), why in self.unavailable.items()],
                "tables": [self.run_path(s) for p in self.problems
                           for s in self.tuning_specs(p) + self.report_specs(p)]}

    def specs(self) -> dict[str, dict]:
        """Spec path -> content for every job (Snakemake writes them at parse time)."""
        out = {self.spec_path(f"datasets/{p}"): self.dataset(p) for p in self.problems}
        for p in self.problems:
            for s in self.tuning_specs(p) + self.report_specs(p):
                out[self.run_spec_path(s)] = s
        out[self.spec_path("leaderboard")] = self.leaderboard_spec()
        return copy.deepcopy(out)

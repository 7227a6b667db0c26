"""A claim rule: the component that turns a claim's evidence (run tables and the workflow's
tables) into a verdict.

A rule declares itself like a strategy: a subclass of ``Rule`` with a ``name`` in its class
body is found by that name (``rfl.registry.RULES``; plug-ins: entry-point group
``rfl.rules``). It declares the JSON schema of its parameters (the thresholds a config may
set, with their defaults) and of the experiments it reads, and implements ``judge``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import ClassVar

import pandas as pd

from .verdicts import VERDICTS

#: the experiments a rule reads when it declares nothing else: a non-empty list of names
EXPERIMENT_LIST = {"type": "array", "minItems": 1, "items": {"type": "string"}}


@dataclass
class Judgement:
    """What a rule found: the ``verdict`` (one of ``VERDICTS``, or None for a measurement that
    judges nothing), the evidence as table ``rows`` (one dict per row), ``notes`` (Markdown
    lines), for an undecided verdict what would decide it (``decide``: rounds, seeds or
    agents, computed), and the ``margin``: one line with the statistic, its interval and the
    claim's bound (``rfl.claims.stats.margin_line``, e.g. "ratio 0.66 [0.55, 0.78], claim <=
    1"), printed on the verdict line; None for a rule without an interval."""

    verdict: str | None
    rows: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    decide: str | None = None
    margin: str | None = None

    def __post_init__(self):
        if self.verdict is not None and self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {', '.join(VERDICTS)}")


class Evidence:
    """What a claim may read, from result files only: the run tables of its experiments grouped
    by method, the experiments' and datasets' config, and the tables the workflow wrote.

    ``spec`` is the report's spec (``config``, ``runs``: experiment -> run table paths,
    ``tables``: name -> path); ``experiments`` is the claim's declaration (a list of names, or
    a mapping role -> name or list of names). ``setting``: one setting of a sweep
    (``rfl.sweeps``, ((name, value), ...)): the evidence holds the runs of that setting and
    those without a sweep, keyed (algorithm, K, participation) as the runs of an unswept
    experiment are, so that a rule judges one setting as it judges an experiment. ``groups``:
    experiment -> its runs already read (shared by the evidence of a claim's settings)."""

    def __init__(self, spec: dict, experiments, setting: tuple | None = None,
                 groups: dict | None = None):
        self.spec, self.experiments, self.setting = spec, experiments, setting
        self._groups: dict[str, dict] = {} if groups is None else groups

    @cached_property
    def config(self) -> dict:
        return self.spec["config"]

    def names(self) -> list[str]:
        """Every experiment the claim reads, in declaration order."""
        e = self.experiments
        if isinstance(e, dict):
            return [x for v in e.values() for x in ([v] if isinstance(v, str) else v)]
        return list(e)

    def _all_runs(self, experiment: str) -> dict[tuple, list[pd.DataFrame]]:
        """Every method key of ``experiment`` (``rfl.reporting.figures.load_runs``)."""
        if experiment not in self._groups:
            from rfl.reporting.figures import load_runs
            self._groups[experiment] = load_runs(self.spec["runs"].get(experiment, []))
        return self._groups[experiment]

    def runs(self, experiment: str) -> dict[tuple, list[pd.DataFrame]]:
        """(algorithm, K, participation) -> [run table per seed] of ``experiment`` (empty if it
        has no run tables); of the evidence's ``setting`` and the runs without a sweep when it
        has one (else a swept run's key holds its setting as a fourth item)."""
        groups = self._all_runs(experiment)
        if self.setting is None:
            return groups
        return {k[:3]: v for k, v in groups.items() if (k[3] if len(k) > 3 else ()) in ((), self.setting)}

    def settings(self) -> list[tuple]:
        """The settings of a sweep among the runs of the claim's experiments that the config
        sweeps, in run order (empty without a sweep; nothing is read then)."""
        from rfl.sweeps import is_swept
        swept = [e for e in self.names() if is_swept(self.experiment(e))]
        return list(dict.fromkeys(k[3] for e in swept for k in self._all_runs(e) if len(k) > 3))

    def by_k(self, experiment: str, algorithm: str = "rfedags",
             participation: str = "every") -> dict[int, list[pd.DataFrame]]:
        """K -> run tables of ``algorithm``, in increasing K: with every agent taking part
        (``participation="every"``), or (``"any"``) under whichever participation the experiment
        runs it, every agent first when it runs several (the authors' scripts that sample agents)."""
        runs = self.runs(experiment)
        if participation == "every":
            return dict(sorted((k[1], v) for k, v in runs.items() if k[0] == algorithm and k[2] is None))
        if participation != "any":
            raise ValueError(f"participation {participation!r}; allowed: every, any")
        out: dict = {}
        for k, v in sorted(runs.items(), key=lambda kv: kv[0][2] is not None):
            if k[0] == algorithm:
                out.setdefault(k[1], v)
        return dict(sorted(out.items()))

    def seeded_runs(self, experiment: str) -> dict[tuple, dict[int, pd.DataFrame]]:
        """(algorithm, K, participation) -> {seed: run table} of ``experiment``, read with each
        run's metadata (for rules that pair the runs of two methods seed by seed: the methods of
        an experiment share their draws per seed, ``rfl.algorithms.sampling``); each table's
        ``attrs["sampler"]`` is the version of the draws it was run with."""
        from rfl import io
        from rfl.reporting.figures import method_key

        paths = self.spec["runs"].get(experiment, [])
        io.check_sampler_versions(paths)
        out: dict[tuple, dict[int, pd.DataFrame]] = {}
        for path in paths:
            table, meta = io.read_run_table(path)
            table.attrs["sampler"] = io.sampler_version(meta)
            spec = meta["spec"]
            out.setdefault(method_key(spec["algorithm"], spec.get("sweep")), {})[int(spec["seed"])] = table
        return out

    def experiment(self, name: str) -> dict:
        return self.config["experiments"][name]

    def dataset(self, experiment: str) -> dict:
        return self.config["datasets"][self.experiment(experiment)["dataset"]]

    def problem(self, experiment: str) -> str:
        return self.dataset(experiment)["problem"]

    @cached_property
    def paper(self) -> dict:
        """The paper's published values (``config/paper_values.yaml``; empty if not given)."""
        return self.spec.get("paper") or {}

    def table(self, name: str) -> pd.DataFrame | None:
        """A table the workflow wrote (``spec['tables'][name]``), None if absent."""
        from rfl import io
        path = self.spec.get("tables", {}).get(name)
        return io.read_table(path) if path and Path(path).exists() else None


class Rule:
    """Base of the claim rules (see the module docstring)."""

    name: ClassVar[str]
    #: one line: what the rule checks (``rfl list rules``)
    summary: ClassVar[str] = ""
    #: JSON schema of ``params`` (an object; every property with a default, or required)
    params_schema: ClassVar[dict] = {"type": "object", "properties": {}, "additionalProperties": False}
    #: JSON schema of the claim's ``experiments``
    experiments_schema: ClassVar[dict] = EXPERIMENT_LIST
    #: False for a measurement: it shows evidence and judges no claim (verdict None)
    judges: ClassVar[bool] = True
    #: True for a comparative or rate rule that decides from an interval across seeds
    #: (``rfl.claims.stats.decide``): fewer than ``stats.MIN_SEEDS`` seeds (a claim's
    #: ``min_seeds`` where the rule has that parameter; replicas count as seeds) leave it
    #: undecided, so every experiment it reads runs that many or declares why not
    #: (``paper_size.budget.seeds``; tests/test_seed_budget.py)
    across_seeds: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        from rfl.registry import RULES
        RULES.declare(cls)

    @classmethod
    def contract_errors(cls, deep: bool = False) -> list[str]:
        """What this class lacks to be a claim rule (phrases; empty when nothing): ``judge`` and
        ``describe`` implemented, a ``summary``, ``params_schema`` and ``experiments_schema``
        mappings, every parameter with a default or required (``deep``: valid JSON schemas,
        each default valid under its parameter's)."""
        from rfl.registry import schema_errors, unimplemented

        out = []
        missing = unimplemented(cls, Rule, ("judge", "describe"))
        if missing:
            out.append(f"does not implement {', '.join(missing)}")
        if not (isinstance(cls.summary, str) and cls.summary):
            out.append("declares no summary (a non-empty string)")
        out += schema_errors("params_schema", cls.params_schema, deep)
        out += schema_errors("experiments_schema", cls.experiments_schema, deep)
        if isinstance(cls.params_schema, dict):
            required = cls.params_schema.get("required", [])
            for key, sub in cls.params_schema.get("properties", {}).items():
                if not isinstance(sub, dict) or "default" not in sub and key not in required:
                    out.append(f"declares parameter {key!r} with neither a default nor 'required'")
                elif "default" in sub:
                    out += schema_errors(f"parameter {key!r}", sub, deep, sub["default"])
        return out

    @classmethod
    def defaults(cls) -> dict:
        return {k: v["default"] for k, v in cls.params_schema.get("properties", {}).items()
                if "default" in v}

    def describe(self, params: dict) -> str:
        """The rule in words, with its thresholds filled in (printed beside the verdict)."""
        raise NotImplementedError

    def judge(self, evidence: Evidence, params: dict) -> Judgement:
        raise NotImplementedError

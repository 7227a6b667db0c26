"""``rfl``: the thin command line the Snakefile calls, and a user's few commands.

    rfl --version                               rfl's installed version
    rfl validate CONFIG                         check a workflow config
    rfl list [KIND]                             the installed components (rfl's and plug-ins'),
                                                where each comes from and what it declares
    rfl data SPEC OUT.npz [RAW...] [--reference REF.npz]
                                                generate a dataset (and its x*, F(x*))
    rfl reference SPEC DATA.npz OUT.npz         x* and F(x*) of a dataset
    rfl run SPEC DATA.npz REF.npz OUT.csv OUT.meta.json
    rfl runs --specs S... --data D... --references R... --tables T... --metas M...
                                                several runs in one process (aligned lists)
    rfl figure SPEC OUT.pdf RUN.csv...          draw one experiment (PNG beside the PDF)
    rfl figures SPEC                            draw the figures the batch spec lists, each as
                                                rfl figure would, in one process
    rfl fetch-school SPEC OUT                   School data from a mirror or the pinned URL (sha256)
    rfl fetch-source SPEC OUT                   the pinned data file stored at OUT (rfl/data/sources.py)
    rfl table1 SPEC OUT.csv                     Table 1 (csv, md, tex) from the config
    rfl table2 SPEC OUT.csv RUN.csv...          Table 2 (csv, md, tex) from School runs
    rfl heterogeneity SPEC OUT.pdf OUT.csv RUN.csv...   the client-drift study (figure + table)
    rfl sweep SPEC OUT.pdf OUT.csv RUN.csv...   a sweep's final metric against each swept
                                                parameter (figure + table, csv and md)
    rfl lsa SPEC OUT.csv RUN.csv... --figures FIG.pdf...
                                                FedLSA vs SCAFFLSA with the predicted bias: the
                                                table, one figure per setting of the spec (in order)
    rfl reproduction SPEC OUT.md                the computed reproduction report; beside it
                                                claims.json, OUT.html and claims/<page>.html
                                                (the HTML report's pages, one per figure)
    rfl performance SPEC OUT.csv BENCH.tsv...   CPU seconds per rule kind and experiment (csv, md)
                                                from the jobs' benchmark records and logs
    rfl calibrate CONFIG [--data-dir DIR] [--out MODEL.json] [--experiments E...] [--jobs N] [--add]
                                                measure the cost model of the run jobs here
                                                (rfl/cost_model.py; default rfl/cost_model.json)
    rfl cost-check PERF.csv [--config CONFIG] [--model MODEL.json]
                                                the model's estimate of every run job beside its
                                                measured CPU seconds, and the share within 25 %
    rfl perf-table PERF.csv [--readme README.md]
                                                the README's performance table, printed or
                                                written between its markers
    rfl bench-table LEADERBOARD.md [--readme README.md]
                                                the README's leaderboard (a default bench's
                                                summary), printed or written between its markers
    rfl bench [METHOD[:key=value,...] ...] [--problems P...] [--size smoke|default|paper]
              [--baselines B...] [--out DIR]    your methods beside the baselines on the suite's
                                                problems, and the leaderboard (rfl/bench/)
    rfl bench-runs --steps STEPS.json --tuning T... --specs S... --data D... --references R...
              --tables T... --metas M...        a benchmark problem's reported runs at the steps
                                                its tuning runs chose
    rfl leaderboard SPEC OUT.csv RUN.csv...     the leaderboard (csv, md, html) and profiles
    rfl results OUT.parquet RUN.csv...          the results table of the runs: one row per run
                                                and round (rfl/results.py), CSV beside it
    rfl merge A.parquet B.parquet... -o OUT.parquet
                                                results tables of several machines joined, each
                                                run once; two results for one spec refused
    rfl compare A B [-o OUT.md]                 what changed between two result sets, per claim
                                                (claims.json) and leaderboard cell
    rfl source-size subset EXPERIMENT... -o OUT.yaml [--output-dir DIR]
                                                the config of some experiments of config/paper.yaml
                                                and the claims that read only them (rfl/source_size.py)
    rfl source-size record RUN... [--record FILE]
                                                a paper-size run's verdicts merged into
                                                records/source_size.json (shown beside the default ones)
The steps that read run tables (figure, table2, heterogeneity, sweep, lsa, reproduction,
leaderboard) take ``--results TABLE.parquet``: the runs are then read from that results table (a merged one)
instead of their files, which need not exist.

``rfl --help`` lists the commands a user runs; the steps only the rules call (``INTERNAL``)
are left out of it and keep their own ``--help``.

Bad arguments exit with status 2 and one line on stderr: unknown commands, missing or
unreadable files, a spec that is not JSON or lacks a key the step needs, a plug-in that
cannot be loaded (``rfl.registry.RegistryError``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import zipfile
from io import StringIO
from pathlib import Path

CPU_RECORD_PREFIX = "rfl: cpu-record "


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line, status 2
        self.exit(2, f"rfl: error: {message}\n")


class SpecError(ValueError):
    """A spec file the step cannot use (not JSON, not an object, a key missing or mistyped)."""


def _existing(path: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise argparse.ArgumentTypeError(f"no such file: {path}")
    return p


def _npz(path: str) -> Path:
    p = _existing(path)
    if not zipfile.is_zipfile(p):
        raise argparse.ArgumentTypeError(f"not an .npz archive: {path}")
    return p


def _run_name(path: str) -> Path:
    """A run table's name (RUN.csv), read from a results table (``--results``): no file needed."""
    if not path.endswith(".csv"):
        raise argparse.ArgumentTypeError(f"not a run table (.csv): {path}")
    return Path(path)


def _run_table(path: str) -> Path:
    """A run table with its metadata record beside it (RUN.csv + RUN.meta.json)."""
    p = _existing(path)
    if not p.name.endswith(".csv"):
        raise argparse.ArgumentTypeError(f"not a run table (.csv): {path}")
    from rfl.io import run_meta_path

    meta = run_meta_path(p)
    if not meta.is_file():
        raise argparse.ArgumentTypeError(f"no metadata beside run table {path}: {meta} is missing")
    return p


# The keys each step reads from its spec (nested mappings; a type, or a tuple of types).
_DATASET = {"name": str, "instance": str, "problem": str, "seed": int, "params": dict}
_REFERENCE = {**_DATASET, "reference": {"tolerance": (int, float), "max_iterations": int,
                                        "starts": int}}
_RUN = {"experiment": str, "run_id": str, "dataset": _DATASET, "algorithm": {"name": str},
        "rounds": int, "seed": int}
_FEDERATED = {"algorithm": {"name": str, "K": int, "batch_size": int},
              "step": {"rule": str}}
_SPEC_KEYS = {
    "data": _DATASET,
    "reference": _REFERENCE,
    "run": _RUN,
    "figure": {"title": str},
    "figures": {"figures": list},
    "fetch-school": {},
    "fetch-source": {},
    "table1": {"rows": list},
    "table2": {"experiments": dict, "paper": dict},
    "heterogeneity": {"experiments_by_name": dict, "tail": (int, float)},
    "sweep": {"experiment": str, "title": str, "metrics": list},
    "lsa": {"experiments": list, "settings": list, "tail": (int, float)},
    "reproduction": {"config": dict, "paper": dict, "runs": dict, "tables": dict},
    "performance": {"benchmarks": str, "logs": str, "runs": str},
    "leaderboard": {"size": str, "problems": list, "methods": list, "unavailable": list,
                    "seeds": list, "grids": dict, "budgets": dict},
}
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", dict: "a mapping",
               list: "a list"}


def _check_keys(obj, shape: dict, where: str, path: tuple = ()) -> None:
    for key, want in shape.items():
        name = ".".join(path + (key,))
        if key not in obj:
            raise SpecError(f"{where}: key {name!r} is missing")
        value = obj[key]
        if isinstance(want, dict):
            if not isinstance(value, dict):
                raise SpecError(f"{where}: key {name!r} must be a mapping, got {json.dumps(value)[:60]}")
            _check_keys(value, want, where, path + (key,))
            continue
        types = want if isinstance(want, tuple) else (want,)
        if isinstance(value, bool) or not isinstance(value, types):
            what = " or ".join(_TYPE_NAMES[t] for t in types)
            raise SpecError(f"{where}: key {name!r} must be {what}, got {json.dumps(value)[:60]}")


def read_spec(path, command: str) -> dict:
    """The JSON object in ``path`` with the keys ``command`` reads, else SpecError (one line)."""
    try:
        spec = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, "
                        f"column {exc.colno})") from None
    except UnicodeDecodeError:
        raise SpecError(f"{path}: not valid JSON (not UTF-8 text)") from None
    if not isinstance(spec, dict):
        raise SpecError(f"{path}: a spec must be a JSON object, got {type(spec).__name__}")
    _check_keys(spec, _SPEC_KEYS.get(command, {}), str(path))
    if command in ("data", "reference", "run"):
        from rfl.registry import PROBLEMS

        problem = (spec["dataset"] if command == "run" else spec)["problem"]
        if problem not in PROBLEMS:
            raise SpecError(f"{path}: problem {problem!r} is unknown; allowed: "
                            f"{', '.join(PROBLEMS.names())}")
    if command == "run":
        from rfl.registry import ALGORITHMS

        name = spec["algorithm"]["name"]
        if name not in ALGORITHMS:
            raise SpecError(f"{path}: algorithm {name!r} is unknown; allowed: "
                            f"{', '.join(ALGORITHMS.names())}")
        if ALGORITHMS[name].federated:
            _check_keys(spec, _FEDERATED, str(path))
    if command in ("fetch-school", "fetch-source") and not isinstance(spec.get("mirror"), (str, type(None))):
        raise SpecError(f"{path}: key 'mirror' must be a string or null, "
                        f"got {json.dumps(spec['mirror'])[:60]}")
    return spec


#: the subcommands only the workflow's rules (rules/*.smk) call: callable, but not listed by
#: ``rfl --help`` (each still has its own ``rfl <command> --help``)
INTERNAL = ("data", "datasets", "runs", "batch", "figures", "fetch-school", "fetch-source", "table1", "table2", "heterogeneity", "sweep",
            "lsa", "reproduction", "performance", "results", "bench-runs", "leaderboard")
#: the steps that read run tables, and so take ``--results TABLE`` (read the runs from it)
READS_RUNS = ("figure", "table2", "heterogeneity", "sweep", "lsa", "reproduction", "leaderboard")


class _Version(argparse.Action):
    """``--version``: rfl's installed version (importlib.metadata), looked up only when asked."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib import metadata
        try:
            version = metadata.version("rfl")
        except metadata.PackageNotFoundError:
            version = "unknown (rfl is not installed; pip install -e .)"
        print(f"rfl {version}")
        parser.exit(0)


#: the options of a command that are aligned lists (one entry per run, or per data instance)
_ALIGNED = {"datasets": ("specs", "data", "references"),
            "runs": ("specs", "data", "references", "tables", "metas"),
            "bench-runs": ("specs", "data", "references", "tables", "metas")}


def _aligned_runs(p: argparse.ArgumentParser) -> None:
    """The aligned lists of ``rfl runs`` and ``rfl bench-runs``: one spec, data, reference,
    table and metadata path per run (their lengths are checked in ``_main``)."""
    p.add_argument("--specs", nargs="+", type=_existing, required=True)
    p.add_argument("--data", nargs="+", type=_npz, required=True)
    p.add_argument("--references", nargs="+", type=_npz, required=True)
    p.add_argument("--tables", nargs="+", required=True)
    p.add_argument("--metas", nargs="+", required=True)


def build_parser(from_results: bool = False) -> argparse.ArgumentParser:
    """rfl's parser; ``from_results``: the command line gives ``--results``, so run tables are
    names in that results table and need no file."""
    run_table = _run_name if from_results else _run_table
    parser = _Parser(prog="rfl", description="Riemannian federated learning benchmark steps. "
                     "The workflow's own steps (rules/*.smk) are not listed: "
                     f"{', '.join(INTERNAL)} (rfl <step> --help describes each).")
    parser.add_argument("--version", action=_Version, help="print rfl's version and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def command(name: str, help: str):
        if name in INTERNAL:                     # no help=: argparse lists it nowhere
            return sub.add_parser(name, description=f"{help} (a step the workflow runs)")
        return sub.add_parser(name, help=help, description=help)

    spec_help = "the step's spec file (JSON), written by the workflow under OUT/results/specs/"
    p = command("validate", "check a workflow config")
    p.add_argument("config", type=_existing, help="a workflow config (YAML), e.g. config/config.yaml")
    p = command("list", "list the installed components (rfl's and plug-ins'), with where each "
                "comes from and what it declares")
    p.add_argument("kind", nargs="?", default=None,
                   help="only this kind: " + ", ".join(r.title for r in _registries())
                   + " (singular or plural)")
    p = command("data", "generate a dataset")
    p.add_argument("spec", type=_existing, help=spec_help)
    p.add_argument("out", help="the dataset written (.npz)")
    p.add_argument("inputs", nargs="*", type=_existing, help="raw files the generator reads")
    p.add_argument("--reference", metavar="REF.npz", default=None,
                   help="also compute x* and F(x*) of the new data (as rfl reference) in the same "
                        "process, written here")
    p = command("datasets", "generate several instances of one dataset, each with its x* and "
                "F(x*), in one process (aligned lists; as rfl data SPEC OUT RAW... --reference REF "
                "for each)")
    p.add_argument("--specs", nargs="+", type=_existing, required=True)
    p.add_argument("--data", nargs="+", required=True, help="the datasets written (.npz)")
    p.add_argument("--references", nargs="+", required=True, help="their x* and F(x*) written (.npz)")
    p.add_argument("--raw", nargs="*", type=_existing, default=[],
                   help="raw files the generator reads (the same for every instance)")
    p = command("reference", "compute x* and F(x*) of a dataset")
    p.add_argument("spec", type=_existing, help="a dataset's spec (JSON)")
    p.add_argument("data", type=_npz, help="the dataset (.npz) rfl data wrote")
    p.add_argument("out", help="x* and F(x*) written here (.npz)")
    p = command("run", "execute one run")
    p.add_argument("spec", type=_existing, help="the run's spec (JSON), e.g. "
                   "results/specs/runs/<experiment>/<run>.json")
    p.add_argument("data", type=_npz, help="its dataset (.npz)")
    p.add_argument("reference", type=_npz, help="the dataset's x* and F(x*) (.npz)")
    p.add_argument("out_table", help="the run table written (.csv)")
    p.add_argument("out_meta", help="the run's metadata written (.meta.json)")
    p = command("flower", "execute one run (as rfl run), or every run of an experiment "
                "(--config, --experiment), on Flower's simulation engine (needs flwr)")
    p.add_argument("spec", type=_existing, nargs="?", help="the run's spec (JSON), as rfl run")
    p.add_argument("data", type=_npz, nargs="?", help="its dataset (.npz)")
    p.add_argument("reference", type=_npz, nargs="?", help="the dataset's x* and F(x*) (.npz)")
    p.add_argument("out_table", nargs="?", help="the run table written (.csv)")
    p.add_argument("out_meta", nargs="?", help="the run's metadata written (.meta.json)")
    p.add_argument("--config", type=_existing, help="a workflow config (with --experiment)")
    p.add_argument("--experiment", help="the experiment of --config whose runs to execute; its "
                   "data and references must exist (snakemake builds them)")
    p.add_argument("--out-dir", default=None, help="where --experiment writes its run files "
                   "(default: OUT/results/flower/EXPERIMENT/, OUT the config's output_dir)")
    p.add_argument("--num-cpus", type=int, default=1, help="cores the simulation engine may use")
    p = command("runs", "execute several runs in one process (aligned lists)")
    _aligned_runs(p)
    p = command("batch", "run a batch of experiments side by side, each as rfl runs (a cluster's "
                "run job, rfl/batches.py)")
    p.add_argument("spec", type=_existing, help="the batch's spec (JSON), "
                   "results/specs/batches/<batch>.json")
    p = command("figure", "draw one experiment's figure")
    p.add_argument("spec", type=_existing, help="the figure's spec (JSON), "
                   "results/specs/figures/<figure>.json")
    p.add_argument("out_pdf", help="the figure written (.pdf, and .png beside it)")
    p.add_argument("runs", nargs="*", type=run_table, help="run tables (.csv, .meta.json beside; "
                   "none: the spec's, from its results table)")
    p = command("figures", "draw several figures in one process (a full run's figure job)")
    p.add_argument("spec", type=_existing, help="the batch's spec (JSON: figures, a list of "
                   "{spec, pdf, runs}), results/specs/figure_batches/<batch>.json")
    p = command("fetch-school", "fetch and verify ILEA567.DAT")
    p.add_argument("spec", type=_existing, help=spec_help)
    p.add_argument("out", help="where ILEA567.DAT is stored")
    p = command("fetch-source", "fetch and verify a pinned data file")
    p.add_argument("spec", type=_existing, help=spec_help)
    p.add_argument("out", help="CACHE/<subpath> of a source in rfl/data/sources.py")
    p = command("table1", "write Table 1")
    p.add_argument("spec", type=_existing, help=spec_help)
    p.add_argument("out_csv", help="the table written (.csv, with .md and .tex beside)")
    p = command("table2", "write Table 2")
    p.add_argument("spec", type=_existing, help=spec_help)
    p.add_argument("out_csv", help="the table written (.csv, with .md and .tex beside)")
    p.add_argument("runs", nargs="*", type=run_table, help="run tables (.csv, .meta.json beside)")
    p = command("heterogeneity", "write the heterogeneity figure and table")
    p.add_argument("spec", type=_existing, help=spec_help)
    p.add_argument("out_pdf", help="the figure written (.pdf, and .png beside it)")
    p.add_argument("out_csv", help="the table written (.csv, with .md beside)")
    p.add_argument("runs", nargs="*", type=run_table, help="run tables (.csv, .meta.json beside)")
    p = command("sweep", "write a sweep's figure and table of final values")
    p.add_argument("spec", type=_existing, help=spec_help)
    p.add_argument("out_pdf", help="the figure written (.pdf, and .png beside it)")
    p.add_argument("out_csv", help="the table written (.csv, with .md beside)")
    p.add_argument("runs", nargs="*", type=run_table, help="run tables (.csv, .meta.json beside)")
    p = command("lsa", "write the FedLSA/SCAFFLSA figures and bias table")
    p.add_argument("spec", type=_existing, help=spec_help)
    p.add_argument("out_csv", help="the bias table written (.csv, with .md beside)")
    p.add_argument("runs", nargs="*", type=run_table, help="run tables (.csv, .meta.json beside)")
    p.add_argument("--figures", nargs="+", required=True, metavar="FIG.pdf",
                   help="one PDF per setting of the spec, in the spec's order (PNG beside each)")
    p = command("reproduction", "write the reproduction report, claims.json and the claim pages")
    p.add_argument("spec", type=_existing, help=spec_help)
    p.add_argument("out_md", help="the report written (.md; .html, claims.json and claims/*.html beside)")
    p = command("performance", "write the CPU seconds per rule kind and experiment")
    p.add_argument("spec", type=_existing, help=spec_help)
    p.add_argument("out_csv", help="the table written (.csv, with .md beside)")
    p.add_argument("benchmarks", nargs="*", type=_existing,
                   help="the jobs' benchmark records (default: every one under the spec's directory)")
    p = command("calibrate", "measure the cost model of the run jobs on this machine (short "
                "runs of every dataset and algorithm of a config, in CPU time) and write it")
    p.add_argument("config", type=_existing,
                   help="the workflow config whose datasets and algorithms to measure, e.g. config/config.yaml")
    p.add_argument("--data-dir", default=None, metavar="DIR",
                   help="read the data instances from DIR/<dataset>/<instance>.npz where they exist "
                        "(a run's OUT/results/data); others are generated from the cached raw files")
    p.add_argument("--out", default=None, metavar="MODEL.json",
                   help="the model written (default rfl/cost_model.json, the dry run's)")
    p.add_argument("--experiments", nargs="+", default=None, metavar="E",
                   help="only the datasets and algorithms of these experiments")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="probe N datasets at once: the cores the workflow runs on (snakemake --cores N), "
                        "whose shared caches slow each job (default 1)")
    p.add_argument("--add", action="store_true",
                   help="add the measurements to the model file (replacing what both measure) "
                        "instead of writing a new one: e.g. config/paper.yaml's sizes beside the default's")
    p = command("cost-check", "the cost model's estimate of every run job beside its measured "
                "CPU seconds (a full run's performance.csv) and the share within 25 %%")
    p.add_argument("perf_csv", type=_existing, help="paper_tables/performance.csv of a run")
    p.add_argument("--config", type=_existing, default="config/config.yaml",
                   help="the config that run used (default config/config.yaml)")
    p.add_argument("--model", type=_existing, default=None, metavar="MODEL.json",
                   help="the cost model (default $RFL_COST_MODEL, else rfl/cost_model.json)")
    p = command("perf-table", "the README's performance table")
    p.add_argument("perf_csv", type=_existing, help="paper_tables/performance.csv of a full run")
    p.add_argument("--asv", type=_existing, metavar="RESULT.json",
                   help="an asv result file (.asv/results/MACHINE/COMMIT-ENV.json) to add its tracks")
    p.add_argument("--readme", type=_existing, metavar="README.md",
                   help="write the table between the README's performance-table markers "
                        "instead of printing it, and keep its inputs beside the README "
                        "(benchmarks/performance.csv, benchmarks/asv-result.json)")
    p.add_argument("--check", action="store_true",
                   help="with --readme: exit 1 if the README's table differs, writing nothing")
    p = command("results", "write the results table of the runs (Parquet, CSV beside)")
    p.add_argument("out_parquet", help="the table written (.parquet, with .csv beside)")
    p.add_argument("runs", nargs="+", type=run_table, help="run tables (.csv, .meta.json beside)")
    p = command("merge", "join results tables of several machines, each run once; two different "
                "results for one spec are refused")
    p.add_argument("tables", nargs="+", type=_existing, metavar="TABLE",
                   help="results tables (.parquet or .csv) that rfl results or rfl merge wrote")
    p.add_argument("-o", "--output", dest="out_parquet", required=True, metavar="OUT.parquet",
                   help="the merged table written (.parquet, with .csv beside)")
    p = command("compare", "what changed between two result sets: per claim and per leaderboard "
                "cell")
    p.add_argument("a", type=_existing_any, metavar="A",
                   help="a claims.json, or a directory holding claims.json (and the leaderboard)")
    p.add_argument("b", type=_existing_any, metavar="B", help="the same of the other result set")
    p.add_argument("-o", "--output", dest="out_md", default=None, metavar="OUT.md",
                   help="write the comparison here (Markdown) instead of printing it")
    p = command("source-size", "verdicts at the source's size: write a subset of config/paper.yaml "
                "to run, and record its run's verdicts beside the default report's (rfl/source_size.py)")
    actions = p.add_subparsers(dest="action", required=True, parser_class=_Parser,
                               help="subset: write the config to run; record: merge its verdicts")
    q = actions.add_parser("subset", help="write the config of some experiments of config/paper.yaml, "
                           "their datasets and figures, and the claims that read only them",
                           description="write the config of some experiments of config/paper.yaml")
    q.add_argument("experiments", nargs="+", metavar="EXPERIMENT", help="experiments of config/paper.yaml")
    q.add_argument("-o", "--output", dest="out_yaml", required=True, metavar="OUT.yaml",
                   help="the config written, e.g. config/paper_dec.yaml")
    q.add_argument("--output-dir", default=None, metavar="DIR",
                   help="its output_dir (default: OUT's name without .yaml, e.g. paper_dec/)")
    q.add_argument("--paper", type=_existing, default="config/paper.yaml", help=argparse.SUPPRESS)
    q = actions.add_parser("record", help="merge the verdicts of paper-size runs into the record",
                           description="merge the verdicts of runs of subsets of config/paper.yaml "
                           "(their claims.json) into the record the report shows beside its verdicts")
    q.add_argument("runs", nargs="+", type=_existing_any, metavar="RUN",
                   help="a run's output directory, its paper_tables/ or its claims.json")
    q.add_argument("--record", default="records/source_size.json", metavar="FILE",
                   help="the record written (default records/source_size.json)")
    q.add_argument("--paper", type=_existing, default="config/paper.yaml", help=argparse.SUPPRESS)
    p = command("bench-table", "the README's leaderboard (the summary of a default rfl bench)")
    p.add_argument("leaderboard_md", type=_existing, help="leaderboard.md of rfl bench --size default")
    p.add_argument("--readme", type=_existing, metavar="README.md",
                   help="write the table between the README's leaderboard markers instead of printing it")
    p.add_argument("--check", action="store_true",
                   help="with --readme: exit 1 if the README's table differs, writing nothing")
    p = command("bench", "run methods beside the built-in baselines on the suite's problems "
                "and write the leaderboard (rfl/bench/)")
    p.add_argument("methods", nargs="*", metavar="METHOD[:key=value,...]",
                   help="installed strategies (rfl list strategies) with options, K or alpha "
                        "(a fixed step: no tuning); none: the baselines alone")
    p.add_argument("--problems", nargs="+", default=None, metavar="PROBLEM",
                   help="problems of the suite (default: all of them)")
    p.add_argument("--size", default="default", help="smoke, default or paper")
    p.add_argument("--baselines", nargs="*", default=None, metavar="METHOD",
                   help="the baselines (default: rfedags rfedavg rfedprox rfedsvrg rfedproj zorfedproj)")
    p.add_argument("--out", default="bench/", help="output folder (default: bench/)")
    p = command("bench-runs", "a benchmark problem's reported runs at the chosen steps")
    p.add_argument("--steps", required=True, help="the chosen steps written here (.json)")
    p.add_argument("--tuning", nargs="*", type=_run_table, default=[], help="the problem's grid runs")
    _aligned_runs(p)
    p = command("leaderboard", "write the benchmark's leaderboard and performance profiles")
    p.add_argument("spec", type=_existing, help=spec_help)
    p.add_argument("out_csv", help="the leaderboard written (.csv; .md, .html and profile.* beside)")
    p.add_argument("runs", nargs="*", type=run_table, help="run tables (.csv, .meta.json beside)")
    for name in READS_RUNS:
        sub.choices[name].add_argument(
            "--results", type=_existing, default=None, metavar="TABLE.parquet",
            help="read the runs from this results table (rfl results, rfl merge) instead of "
                 "their files; a run table RUN.csv is the table's run of its experiment and id")
    sub.metavar = "{" + ",".join(n for n in sub.choices if n not in INTERNAL) + "}"
    return parser


def _results_path(spec_path, value) -> Path:
    """The results table of ``--results`` (a path) or of a spec's key ``results``, checked to
    be a file."""
    if isinstance(value, Path):
        return value
    if not isinstance(value, str) or not Path(value).is_file():
        raise SpecError(f"{spec_path}: key 'results' must name a results table file, got "
                        f"{json.dumps(value)[:60]}")
    return Path(value)


def _spec_runs(spec_path, spec: dict) -> list[Path]:
    """The run tables a spec with a results table names (key ``runs``: a list of RUN.csv)."""
    runs = spec.get("runs")
    if not isinstance(runs, list) or not all(isinstance(r, str) and r.endswith(".csv") for r in runs):
        raise SpecError(f"{spec_path}: with key 'results', key 'runs' must be a list of run "
                        f"tables (RUN.csv), got {json.dumps(runs)[:60]}")
    return [Path(r) for r in runs]


def _existing_any(path: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise argparse.ArgumentTypeError(f"no such file or directory: {path}")
    return p


def _registries():
    from rfl.registry import REGISTRIES
    return REGISTRIES


def _registry_for(word: str):
    """The registry ``rfl list WORD`` asks for, or None."""
    for registry in _registries():
        if word.lower() in registry.words:
            return registry
    return None


def list_components(registries) -> str:
    """``rfl list``: per kind, each component's name and where it comes from, then what it
    declares (its class's ``summary()``, else the first line of its docstring)."""
    lines = []
    for registry in registries:
        lines.append(f"{registry.title} (entry-point group {registry.group}):")
        for name, cls in registry.items():
            summary = getattr(cls, "summary", None)
            text = (summary() if callable(summary) else summary if isinstance(summary, str) and summary
                    else (cls.__doc__ or "").strip().split("\n")[0])
            params = getattr(cls, "params_schema", {}).get("properties", {})
            if params and isinstance(summary, str):             # a claim rule's thresholds
                text += "; params: " + ", ".join(
                    f"{k}={v['default']!r}" if "default" in v else f"{k} (required)" for k, v in params.items())
            lines.append(f"  {name}  [{registry.origin(name)}]")
            if text:
                lines.append(f"      {text}")
        if not registry.names():
            lines.append("  (none)")
    return "\n".join(lines) + "\n"


def _unknown_options(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """The first option in ``argv`` that neither ``rfl`` nor its subcommand takes (found before
    any argument's file is looked at, so the message names the option, not a file)."""
    choices = parser._subparsers._group_actions[0].choices
    known = set(parser._option_string_actions)
    for token in argv:
        if token == "--":
            return None
        if choices and token in choices:       # a command, then an action of it (source-size)
            sub = choices[token]
            known = set(sub._option_string_actions)
            choices = sub._subparsers._group_actions[0].choices if sub._subparsers else None
            continue
        name = token.split("=", 1)[0]
        if (token.startswith("-") and token != "-" and name not in known
                and not (name.startswith("--") and any(k.startswith(name) for k in known))):
            return token
    return None


#: the name each written file must have, by argument: a suffix, or (fetch-school) a file name;
#: a figure's format follows its suffix, and a table's .md and .tex go beside its .csv
_OUTPUT_NAMES = {
    "out": ".npz", "reference": ".npz", "out_table": ".csv", "tables": ".csv",
    "out_meta": ".json", "metas": ".json", "out_pdf": ".pdf", "figures": ".pdf",
    "out_csv": ".csv", "out_md": ".md", "out_parquet": ".parquet",
}
#: the outputs given as options (--reference OUT), the others are positional (OUT)
OUTPUT_OPTIONS = ("reference", "references", "data", "tables", "metas", "figures")
_OUTPUT_NAMES_BY_COMMAND = {("fetch-school", "out"): "ILEA567.DAT", ("fetch-source", "out"): None,
                            ("datasets", "data"): ".npz", ("datasets", "references"): ".npz"}

#: per subcommand, the arguments that name files it writes, and the suffixes it writes beside them
_OUTPUTS = {
    "data": (("out", "reference"), ()), "datasets": (("data", "references"), ()),
    "reference": (("out",), ()),
    "run": (("out_table", "out_meta"), ()), "flower": (("out_table", "out_meta"), ()), "runs": (("tables", "metas"), ()),
    "figure": (("out_pdf",), (".png",)), "fetch-school": (("out",), ()),
    "fetch-source": (("out",), ()),
    "table1": (("out_csv",), (".md", ".tex")), "table2": (("out_csv",), (".md", ".tex")),
    "heterogeneity": (("out_pdf", "out_csv"), (".png", ".md")),
    "sweep": (("out_pdf", "out_csv"), (".png", ".md")),
    "lsa": (("out_csv", "figures"), (".png", ".md")), "reproduction": (("out_md",), (".html",)),
    "performance": (("out_csv",), (".md",)),
    "bench-runs": (("tables", "metas"), ()), "leaderboard": (("out_csv",), (".md", ".html")),
    "results": (("out_parquet",), (".csv",)), "merge": (("out_parquet",), (".csv",)),
    "compare": (("out_md",), ()),
}


def _output_error(path: str) -> str | None:
    """Why ``path`` cannot be written (a directory, under a file, in an unwritable directory)."""
    p = Path(path)
    if p.is_dir():
        return f"output {path} is a directory; allowed: the path of a file"
    parent = p.parent
    while not parent.exists():
        if parent == parent.parent:
            break
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        return f"output {path}: {parent} is a file, not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"output {path}: directory {parent} is not writable"
    if p.exists() and not os.access(p, os.W_OK) and not os.access(parent, os.W_OK):
        return f"output {path} is not writable"
    return None


def _name_error(command: str, name: str, value: str) -> str | None:
    """Why ``value`` is no name for output ``name`` of ``command`` (``_OUTPUT_NAMES``)."""
    want = _OUTPUT_NAMES_BY_COMMAND.get((command, name), _OUTPUT_NAMES.get(name))
    arg = "--" + name if name in OUTPUT_OPTIONS else name.upper()
    if want is None:                           # fetch-source: checked against rfl/data/sources.py
        return None
    if want.startswith("."):
        if not Path(value).name.endswith(want) or Path(value).name == want:
            return f"{command}: {arg} {value} must be a file name ending in {want}; allowed: e.g. x{want}"
    elif Path(value).name != want:
        return (f"{command}: {arg} {value} must be named {want} (the file the step fetches); "
                f"allowed: DIR/{want}")
    return None


def _check_outputs(args) -> str | None:
    names, beside = _OUTPUTS.get(args.command, ((), ()))
    for name in names:
        values = getattr(args, name)
        for value in values if isinstance(values, list) else [values]:
            if value is None:                  # an optional output not given
                continue
            why = _name_error(args.command, name, value)
            if why:
                return why
            for path in [value] + [str(Path(value).with_suffix(x)) for x in beside]:
                why = _output_error(path)
                if why:
                    return why
    return None


def _workflow_job() -> bool:
    """Whether this process is a workflow job (``RFL_CPU_RECORD=1``, rfl.workflow's PIN): it
    prints its CPU record and ends without the interpreter's teardown (``entry``)."""
    return os.environ.get("RFL_CPU_RECORD", "").strip() == "1"


def main(argv: list[str] | None = None) -> int:
    wall0 = time.perf_counter()
    try:
        status = _main(sys.argv[1:] if argv is None else list(argv))
    except KeyboardInterrupt:
        print("rfl: interrupted (Ctrl-C); no output of this step was completed", file=sys.stderr)
        return 130
    if _workflow_job():
        _print_cpu_record(wall0)
    return status


def entry() -> None:
    """The ``rfl`` command (and ``python -m rfl``): ``main``, then exit with its status. A
    workflow job (``RFL_CPU_RECORD=1``) ends without the interpreter's teardown (the
    finalisation of every module: ~0.4 CPU-s per process with pandas, scipy and matplotlib
    loaded, measured, beyond its CPU record): by then its outputs are written and closed; other
    non-daemon threads are waited for and the atexit handlers run, as at a normal exit, and
    the record becomes the process's whole CPU time. A step that raises exits as usual."""
    status = main()
    if _workflow_job():
        import atexit
        import threading

        for t in threading.enumerate():
            if t is not threading.main_thread() and not t.daemon:
                t.join()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status or 0)
    raise SystemExit(status)


# CPU seconds of the process when its step starts working (interpreter, imports and argument
# checks done): what every job pays before it computes anything.
_work_start: float | None = None


def _check_dataset_inputs(path, spec: dict, inputs, where: str = "with --raw") -> None:
    """SpecError unless the params of the dataset ``spec`` are valid for its problem (its
    ``params_schema``) and ``inputs`` are as many raw files as the problem reads (its
    ``raw_inputs_for`` the params)."""
    from rfl.config import params_errors
    from rfl.registry import PROBLEMS

    errors = params_errors(spec["problem"], spec["params"])
    if errors:
        raise SpecError(f"{path}: {errors[0].replace('config key ', 'key ', 1)}")
    raw = PROBLEMS[spec["problem"]].raw_inputs_for(spec.get("params"))
    if len(inputs) != len(raw):
        raise SpecError(f"{path}: problem {spec['problem']!r} reads {len(raw)} raw file(s) "
                        f"({', '.join(raw) or 'none'}), got {len(inputs)}; pass them {where}, "
                        f"in that order")


def _work_starts() -> None:
    global _work_start
    _work_start = time.process_time()


def _print_cpu_record(wall0: float) -> None:
    """One line on stderr (the job's log; the workflow sets RFL_CPU_RECORD=1): this process's
    user + system CPU seconds, those spent before the step's work began (start-up), the
    wall seconds since ``main`` was entered, and its peak resident memory (the kernel's
    exact high-water mark, MiB; of its largest child if that is larger).
    rfl.reporting.performance reads it back."""
    import resource

    t = os.times()     # for the children (git); this process at full resolution, as _work_start
    peak_kb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,      # KiB on Linux
                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    record = {"cpu_s": round(time.process_time() + t.children_user + t.children_system, 4),
              "startup_s": None if _work_start is None else round(_work_start, 4),
              "wall_s": round(time.perf_counter() - wall0, 4),
              "max_rss_mb": round(peak_kb / 1024, 2)}
    print(f"{CPU_RECORD_PREFIX}{json.dumps(record)}", file=sys.stderr)


def _input_errors() -> tuple:
    """The errors of bad input: exit 2 with one line (a registry's: an unknown name, or an
    installed plug-in that fails to load)."""
    from rfl.config import ConfigError
    from rfl.io import RunTableError, YAMLError
    from rfl.registry import RegistryError
    from rfl.results import ResultsError
    from rfl.reporting.compare import CompareError
    from rfl.bench.plan import BenchError
    from rfl.batches import BatchError
    from rfl.source_size import SourceSizeError
    return (ConfigError, RunTableError, YAMLError, RegistryError, ResultsError, CompareError, BenchError,
            BatchError, SourceSizeError)


def _source_size_command(args) -> int:
    """rfl source-size subset and rfl source-size record (rfl/source_size.py)."""
    import yaml

    from rfl import config as rflconfig
    from rfl import io
    from rfl import source_size as ss

    try:
        paper = rflconfig.load(args.paper)
    except rflconfig.ConfigError as exc:
        raise SpecError(f"{args.paper}: {' '.join(str(exc).split())}") from None
    if args.action == "subset":
        out_dir = args.output_dir or Path(args.out_yaml).name.removesuffix(".yaml") + "/"
        sub = ss.subset(io.read_yaml(args.paper), paper, args.experiments, out_dir)
        rflconfig.validate(rflconfig.resolve_includes(json.loads(json.dumps(sub)), args.out_yaml))
        with io.atomic_path(args.out_yaml) as tmp:
            tmp.write_text(f"# {len(sub['experiments'])} experiments of {args.paper}, written by: rfl source-size "
                           f"subset {' '.join(args.experiments)} -o {args.out_yaml} --output-dir {out_dir}\n"
                           + yaml.safe_dump(sub, sort_keys=False))
        print(f"{args.out_yaml}: {len(sub['experiments'])} experiments, {len(sub['claims'])} claims: "
              + ", ".join(sub["claims"]))
        return 0
    new: dict = {}
    for run in args.runs:                  # every run checked before the record is written
        new.update(ss.entries(ss.read_run(run, paper), paper))
    ss.merge(args.record, new)
    for cid, entry in new.items():
        print(f"{cid}: {ss.recorded(entry)} ({ss.seeds_text(entry)}, rfl "
              f"{', '.join(c[:10] for c in entry['commits'])}, {entry['date']})")
    print(f"{args.record}: {len(new)} claim(s) recorded")
    return 0


def _cost_command(args) -> int:
    """rfl calibrate and rfl cost-check (rfl/cost_model.py, rfl/calibrate.py)."""
    from rfl import config as rflconfig
    from rfl import cost_model
    from rfl.reporting.performance import PerfInputError
    from rfl.workflow import Plan

    try:
        if args.command == "cost-check":          # the measurements first: a bad table stops early
            measured = cost_model.measured_jobs(args.perf_csv)
            startups = cost_model.measured_startups(args.perf_csv)
        try:
            config = rflconfig.load(args.config)
        except UnicodeDecodeError:
            raise SpecError(f"{args.config}: not valid YAML (not UTF-8 text)") from None
        except rflconfig.ConfigError as exc:       # one line, naming the file
            raise SpecError(f"{args.config}: {' '.join(str(exc).split())}") from None
        plan = Plan(config, {})
        if args.command == "calibrate":
            from rfl import calibrate
            unknown = sorted(set(args.experiments or ()) - set(config["experiments"]))
            if unknown:
                raise SpecError(f"calibrate: --experiments {', '.join(unknown)} not in {args.config}; "
                                f"allowed: its experiments")
            model = calibrate.calibrate(config, plan, args.data_dir, args.experiments,
                                        log=lambda line: print(line, file=sys.stderr),
                                        configfile=str(args.config), jobs=args.jobs)
            out = args.out or cost_model.MODEL_PATH
            if args.add and Path(out).is_file():
                model = calibrate.merged(cost_model.read(out), model)
            calibrate.write(model, out)
            print(f"rfl calibrate: {len(model['pairs'])} pairs of {len(model['datasets'])} datasets, "
                  f"{model['calibration_cpu_s']:.1f} CPU-s of runs, written to {out}")
            return 0
        model_path = args.model or cost_model.default_path()
        model = cost_model.read(model_path)
        estimates = {e: cost_model.job_estimate(specs, model)
                     for e, specs in cost_model.experiment_specs(plan.config).items()}
        rows = cost_model.check_rows(estimates, measured, startups)
        print(cost_model.check_table(rows, f"cost model {model_path} (commit {model['commit'][:10]}, "
                                           f"{model['machine']}) against {args.perf_csv}"), end="")
        return 0
    except (cost_model.CostModelError, PerfInputError) as exc:
        raise SpecError(str(exc)) from None


def _figure_batch(parser, path, spec: dict) -> list[tuple[dict, list, str]]:
    """(figure spec, run tables, PDF) of each figure of the batch spec ``spec`` (read from
    ``path``), every one checked as ``rfl figure`` checks its arguments, its spec and its run
    tables, before any is drawn; SpecError naming the item otherwise. The run tables stay
    parsed (``rfl.io.memoised_runs``, entered by the caller) for the drawing."""
    from rfl.io import read_run_table

    items = []
    for i, item in enumerate(spec["figures"]):
        where = f"{path}: figures[{i}]"
        if not isinstance(item, dict):
            raise SpecError(f"{where} must be a mapping with keys spec, pdf and runs")
        _check_keys(item, {"spec": str, "pdf": str, "runs": list}, where)
        if not item["runs"] or not all(isinstance(r, str) for r in item["runs"]):
            raise SpecError(f"{where}: key 'runs' must be a non-empty list of run tables "
                            f"(RUN.csv, with RUN.meta.json beside)")
        said = StringIO()
        try:
            with contextlib.redirect_stderr(said):
                one = parser.parse_args(["figure", item["spec"], item["pdf"], *item["runs"]])
        except SystemExit:                     # the parser's one line, as this item's
            raise SpecError(f"{where}: {said.getvalue().strip().removeprefix('rfl: error: ')}") from None
        why = _check_outputs(one)
        if why:
            raise SpecError(f"{where}: {why}")
        figure = read_spec(one.spec, "figure")
        for run in one.runs:
            read_run_table(run)
        items.append((figure, one.runs, one.out_pdf))
    return items


def _data_errors() -> tuple:
    """(ChecksumMismatchError, DataUnavailableError) of rfl.data.school."""
    from rfl.data.school import ChecksumMismatchError, DataUnavailableError
    return ChecksumMismatchError, DataUnavailableError


def _main(argv: list[str]) -> int:
    parser = build_parser(from_results=any(a == "--results" or a.startswith("--results=")
                                           for a in argv))
    bad = _unknown_options(parser, argv)
    if bad is not None and bad not in ("-h", "--help"):
        parser.error(f"unrecognized arguments: {bad}")
    args = parser.parse_args(argv)
    why = _check_outputs(args)
    if why:
        parser.error(why)
    if args.command == "flower":
        one = [args.spec, args.data, args.reference, args.out_table, args.out_meta]
        if args.config is None and args.experiment is None:
            if None in one:
                parser.error("flower: give SPEC DATA REFERENCE OUT_TABLE OUT_META (one run), or "
                             "--config CONFIG --experiment NAME (every run of an experiment)")
        elif args.config is None or args.experiment is None or any(v is not None for v in one):
            parser.error("flower: --config and --experiment go together, without positional "
                         "arguments")
    if args.command in _ALIGNED:
        keys = _ALIGNED[args.command]
        lengths = {k: len(getattr(args, k)) for k in keys}
        if len(set(lengths.values())) != 1:
            listed = ", ".join(f"--{k}" for k in keys[:-1]) + f" and --{keys[-1]}"
            parser.error(f"{args.command}: {listed} must have the same length, got {lengths}")
    # The error classes are looked up only when an exception is being matched (Python
    # evaluates an except clause's tuple then): importing rfl.config (jsonschema, yaml) and
    # rfl.data.school up front would cost every job that needs neither.
    try:
        with contextlib.ExitStack() as stack:
            if args.command in ("runs", "bench-runs"):   # every spec checked before any run starts
                specs = [read_spec(path, "run") for path in args.specs]
            if args.command == "datasets":               # every spec and raw file before any work
                specs = [read_spec(path, "data") for path in args.specs]
                for path, one in zip(args.specs, specs):
                    _check_dataset_inputs(path, one, args.raw)
            spec = None if args.command in ("validate", "list", "datasets", "runs", "batch", "perf-table", "results", "merge",
                                            "calibrate", "cost-check",
                                            "bench-table", "bench", "bench-runs",
                                            "compare", "source-size") or (
                args.command == "flower" and args.config) else read_spec(
                args.spec, "run" if args.command == "flower" else args.command)
            if args.command in READS_RUNS + ("figures",):     # each run table parsed once per step
                from rfl import io as _io
                stack.enter_context(_io.memoised_runs())
            if args.command in READS_RUNS:       # the runs from a results table: --results, or
                results = args.results or spec.get("results")   # the spec's (config results)
                if results is not None:
                    from rfl import io as _io
                    from rfl.results import ResultsSource
                    stack.enter_context(_io.run_source(ResultsSource(_results_path(args.spec, results))))
                    if args.command != "reproduction" and not args.runs:
                        args.runs = _spec_runs(args.spec, spec)
            if args.command in ("figure", "table2", "heterogeneity", "lsa", "sweep") and not args.runs:
                raise SpecError(f"{args.command}: no run table given; allowed: the run tables "
                                f"(RUN.csv, with RUN.meta.json beside) of the experiments of {args.spec}")
            if args.command == "validate":
                import yaml

                from rfl import config
                try:
                    config.load(args.config)
                except yaml.YAMLError as exc:
                    mark = getattr(exc, "problem_mark", None)
                    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
                    problem = getattr(exc, "problem", None) or type(exc).__name__
                    raise config.ConfigError(f"{args.config}: not valid YAML ({problem}{where})") from None
                except UnicodeDecodeError:
                    raise config.ConfigError(f"{args.config}: not valid YAML (not UTF-8 text)") from None
                print(f"{args.config}: valid")
            elif args.command == "list":
                registries = _registries()
                if args.kind is not None:
                    found = _registry_for(args.kind)
                    if found is None:
                        parser.error(f"list: {args.kind!r} is not a kind of component; allowed: "
                                     f"{', '.join(w for r in registries for w in r.words)}")
                    registries = [found]
                print(list_components(registries), end="")
            elif args.command == "data":
                from rfl.runner import generate_data
                _check_dataset_inputs(args.spec, spec, args.inputs, "after OUT.npz")
                _work_starts()
                generate_data(spec, args.out, args.inputs)
                if args.reference is not None:
                    from rfl.runner import compute_reference
                    compute_reference(spec, args.out, args.reference)
            elif args.command == "datasets":
                from rfl.runner import compute_reference, generate_data
                _work_starts()
                for one, out, reference in zip(specs, args.data, args.references):
                    generate_data(one, out, args.raw)
                    compute_reference(one, out, reference)
            elif args.command == "reference":
                from rfl.runner import compute_reference
                _work_starts()
                compute_reference(spec, args.data, args.out)
            elif args.command == "run":
                from rfl.runner import run
                _work_starts()
                run(spec, args.data, args.reference, args.out_table, args.out_meta)
            elif args.command == "flower":
                try:
                    from rfl.flower.server import STRATEGIES, run_flower
                except ImportError as exc:
                    from rfl.flower import MISSING
                    print(f"rfl: error: {MISSING} ({exc})", file=sys.stderr)
                    return 1
                if spec is not None:
                    if spec["algorithm"]["name"] not in STRATEGIES:
                        raise SpecError(f"{args.spec}: algorithm {spec['algorithm']['name']!r} has no "
                                        f"Flower strategy; allowed: {', '.join(STRATEGIES)}")
                    run_flower(spec, args.data, args.reference, args.out_table, args.out_meta,
                               num_cpus=args.num_cpus)
                else:
                    from rfl.flower.server import experiment_jobs, run_flower_jobs
                    run_flower_jobs(experiment_jobs(args.config, args.experiment, args.out_dir),
                                    num_cpus=args.num_cpus)
            elif args.command == "runs":
                from rfl.runner import run_setting
                _work_starts()
                run_setting(zip(specs, args.data, args.references, args.tables, args.metas))
            elif args.command == "batch":
                from rfl.batches import read_batch_spec, run_batch
                _work_starts()
                return run_batch(read_batch_spec(args.spec))
            elif args.command == "figure":
                from rfl.reporting.bias_sweep import sweep_figure
                from rfl.reporting.figures import experiment_figure
                _work_starts()
                (sweep_figure if spec.get("sweep") else experiment_figure)(spec, args.runs, args.out_pdf)
            elif args.command == "figures":
                from rfl.reporting.bias_sweep import sweep_figure
                from rfl.reporting.figures import experiment_figure
                items = _figure_batch(parser, args.spec, spec)
                _work_starts()
                for one, runs, pdf in items:
                    (sweep_figure if one.get("sweep") else experiment_figure)(one, runs, pdf)
            elif args.command == "fetch-school":
                import pooch

                from rfl.data.school import fetch_ilea
                pooch.get_logger().setLevel("WARNING")   # the error line, not a progress line
                out = Path(args.out)
                _work_starts()
                fetch_ilea(out.parent, mirror=spec.get("mirror"))   # OUT is DIR/ILEA567.DAT
            elif args.command == "fetch-source":
                import pooch

                from rfl.data.sources import SOURCES, fetch
                out = Path(args.out).as_posix()
                names = [n for n, s in SOURCES.items() if out == s.subpath or out.endswith("/" + s.subpath)]
                if not names:
                    raise SpecError(f"fetch-source: {args.out} is no pinned source's path; allowed: "
                                    f"<cache>/ followed by one of "
                                    f"{', '.join(s.subpath for s in SOURCES.values())}")
                pooch.get_logger().setLevel("WARNING")
                fetch(names[0], args.out, mirror=spec.get("mirror"))
            elif args.command == "table1":
                from rfl.reporting.tables import table1
                _work_starts()
                table1(spec, args.out_csv)
            elif args.command == "table2":
                from rfl.io import read_run_table
                from rfl.reporting.tables import table2
                _work_starts()
                for path in args.runs:                           # every input checked first
                    read_run_table(path)
                table2(spec, args.out_csv, args.runs)
            elif args.command == "heterogeneity":
                from rfl.reporting.heterogeneity import heterogeneity
                _work_starts()
                heterogeneity(spec, args.out_pdf, args.out_csv, args.runs)
            elif args.command == "sweep":
                from rfl.io import read_run_table
                from rfl.reporting.sweep import write_sweep
                _work_starts()
                for path in args.runs:                           # every input checked first
                    read_run_table(path)
                write_sweep(spec, args.out_pdf, args.out_csv, args.runs)
            elif args.command == "lsa":
                from rfl.reporting.lsa import lsa_study
                if len(args.figures) != len(spec["settings"]):
                    raise SpecError(f"{args.spec}: {len(spec['settings'])} setting(s) "
                                    f"{spec['settings']}, but {len(args.figures)} figure(s) after --figures")
                _work_starts()
                lsa_study(spec, args.out_csv, args.figures, args.runs)
            elif args.command == "reproduction":
                from rfl.io import read_run_table
                from rfl.reporting.reproduction import write_report
                _work_starts()
                for experiment, paths in spec["runs"].items():   # every input checked first
                    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                        raise SpecError(f"{args.spec}: key 'runs.{experiment}' must be a list of "
                                        f"run table paths")
                    for path in paths:
                        read_run_table(path)
                write_report(spec, args.out_md)
                from rfl.reporting.claim_pages import write_pages
                from rfl.reporting.order import restore
                from rfl.reporting.triage import write_landing
                config = restore(spec)
                write_pages(config, args.out_md)
                write_landing(config, args.out_md)
            elif args.command == "performance":
                from rfl.reporting.performance import PerfInputError, write_performance
                _work_starts()
                try:
                    write_performance(spec, args.out_csv, args.benchmarks or None)
                except (PerfInputError, ValueError) as exc:
                    raise SpecError(str(exc)) from None
            elif args.command == "results":
                from rfl.results import results_of, write_results
                _work_starts()
                write_results(results_of(args.runs), args.out_parquet)
            elif args.command == "merge":
                from rfl.results import merge, write_results
                _work_starts()
                df, counts = merge(args.tables)
                write_results(df, args.out_parquet)
                print(f"rfl merge: {counts['runs']} runs ("
                      + ", ".join(f"{n} from {p}" for p, n in counts["from"].items())
                      + f"; {counts['duplicates']} identical duplicate(s) kept once) -> {args.out_parquet}")
            elif args.command == "compare":
                from rfl.reporting.compare import compare
                text = compare(args.a, args.b)
                if args.out_md is None:
                    print(text, end="")
                else:
                    from rfl import io
                    with io.atomic_path(args.out_md) as tmp:
                        tmp.write_text(text)
            elif args.command == "bench":
                from rfl.bench.execute import run_plan
                from rfl.bench.plan import BenchPlan
                plan = BenchPlan(args.methods, args.problems, args.size, args.out, args.baselines)
                _work_starts()
                import yaml

                from rfl.io import atomic_path
                with atomic_path(plan.path("bench.yaml")) as tmp:
                    tmp.write_text("# the Snakemake config of this benchmark: snakemake --cores 2 "
                                   f"{plan.path('leaderboard/leaderboard.html')} --configfile "
                                   f"{plan.path('bench.yaml')}\n" + yaml.safe_dump(plan.config(), sort_keys=False))
                files = run_plan(plan, log=lambda line: print(line, file=sys.stderr))
                for f in files:
                    print(f)
            elif args.command == "bench-runs":
                from rfl.bench.execute import bench_runs
                _work_starts()
                bench_runs(specs, args.data, args.references, args.tables, args.metas, args.tuning, args.steps)
            elif args.command == "leaderboard":
                from rfl.bench.leaderboard import write_leaderboard
                _work_starts()
                write_leaderboard(spec, args.out_csv, args.runs)
            elif args.command == "bench-table":
                from rfl.bench.leaderboard import README_MARKERS, readme_table
                from rfl.reporting import performance
                try:
                    table = readme_table(Path(args.leaderboard_md).read_text(encoding="utf-8"))
                    if args.readme is None:
                        print(table, end="")
                    elif performance.update_readme(args.readme, table, check=args.check, markers=README_MARKERS):
                        if args.check:
                            print(f"{args.readme}: the leaderboard differs from {args.leaderboard_md}; "
                                  f"regenerate it with rfl bench-table", file=sys.stderr)
                            return 1
                except (ValueError, performance.PerfInputError) as exc:
                    raise SpecError(f"{args.leaderboard_md}: {exc}" if isinstance(exc, ValueError) else str(exc)) from None
            elif args.command in ("calibrate", "cost-check"):
                return _cost_command(args)
            elif args.command == "source-size":
                return _source_size_command(args)
            elif args.command == "perf-table":
                from rfl.reporting import performance
                try:
                    table = performance.perf_table(args.perf_csv, args.asv)
                    if args.readme is None:
                        print(table, end="")
                    elif args.check:
                        if performance.update_readme(args.readme, table, check=True):
                            print(f"{args.readme}: the performance table differs from the generated "
                                  f"one; regenerate it with rfl perf-table", file=sys.stderr)
                            return 1
                    else:
                        performance.update_readme(args.readme, table)
                        performance.keep_readme_inputs(args.readme, args.perf_csv, args.asv)
                except performance.PerfInputError as exc:
                    raise SpecError(str(exc)) from None
    except (SpecError, *_input_errors()) as exc:
        print(f"rfl: error: {exc}", file=sys.stderr)
        return 2
    except _data_errors()[0] as exc:
        print(f"rfl: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except _data_errors()[1] as exc:
        print(f"rfl: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    except OSError as exc:        # the machine (a full disk, a vanished file), not the inputs
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"rfl: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The Snakefile's Python helpers: paths, job lists, specs and resources of one resolved config.

The rules files (``rules/*.smk``) hold rules only; everything they compute comes from a
``Plan`` built once from the validated config. Plain Python without Snakemake, so every
helper is unit-tested (tests/test_workflow.py). Functions given to a rule as input, resource
or report functions take Snakemake's ``wildcards`` (and ``input``) arguments by those names.

Output layout, under ``config["output_dir"]`` (OUT):
    results/specs/...            the resolved config, one JSON per job (written at parse time)
    results/data|reference/{dataset}/{instance}.npz
    results/runs/{experiment}/{run_id}.csv (+ .meta.json)
    results/results.parquet (+ .csv)   every run in one table, a row per run and round
    figures/, paper_tables/      figures, tables, REPRODUCTION.md (+ .html, claims.json);
                                 a swept experiment's figures/fig_sweep_{experiment} and
                                 paper_tables/sweep_{experiment}.csv/.md (rfl/reporting/sweep.py)
    paper_tables/claims/         the HTML report's claim pages, one per figure (claim_pages)
    results/benchmarks/...       one Snakemake benchmark record per job (named as its log)
    logs/                        one log per job (its stdout and stderr)
"""

from __future__ import annotations

import functools
import math
import os
import re
import types

from rfl import config as rflconfig
from rfl import cost_model
from rfl.data.school import ILEA_FILENAME
from rfl.data.sources import SOURCES
from rfl.registry import PROBLEMS

# Resources (for cluster executors; locally only threads count): the light steps (specs,
# data generation, figures, tables) need well under 1 GB and a few minutes for every
# dataset of the paper; runs and reference optima scale with their data (Plan.*_runtime).
LIGHT = {"mem_mb": 1000, "runtime": 10}
# The CPU-time estimate of a run job (Plan.run_cpu_seconds, printed by a dry run) is the cost
# model's (rfl/cost_model.py: measured by `rfl calibrate`, stored in rfl/cost_model.json).
TABLE_EXTENSIONS = ("csv", "md", "tex")
FIGURE_EXTENSIONS = ("pdf", "png")
# Every job: BLAS threads pinned to the rule's threads (no oversubscription under --cores N),
# no progress lines in the logs, and the job's CPU seconds as the log's last line
# (rfl.reporting.performance reads them).
#: the ``shows`` label of a figure's claim page in the report
CLAIMS_SHOWS = "claims, verdicts and the config of its runs"
PIN = "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads} RFL_PROGRESS=0 RFL_CPU_RECORD=1 "


def pinned(command: str) -> str:
    """A rule's shell ``command`` run under PIN (every rule's shell is ``pinned(...)``)."""
    return PIN + command


def compile_package(package_dir=None) -> bool:
    """Write the bytecode (``__pycache__/*.pyc``) of every module of rfl (or of
    ``package_dir``) where it is missing or stale; False where it cannot be written (a
    read-only install), which costs nothing but the time below. Every job is a new Python
    process that imports rfl: without bytecode each one compiles rfl from source, and an
    environment with PYTHONDONTWRITEBYTECODE set (as some sandboxes and containers have) never
    writes it, so every job pays again (measured: 0.11 CPU-s of a run job's imports, 0.3 of a
    figure job's, ~40 CPU-s over the default run's 235 jobs). rules/common.smk calls it once
    per workflow parse; compileall writes regardless of that variable."""
    import compileall
    from pathlib import Path

    root = Path(__file__).parent if package_dir is None else Path(package_dir)
    try:
        return bool(compileall.compile_dir(str(root), quiet=2, workers=1))
    except OSError:
        return False


#: the figures one job of a full run draws (``Plan.figure_batches``): a figure job spends
#: ~1.2 of its ~2 CPU-s starting Python and importing matplotlib and pandas (measured: six
#: Section 5.1 figures, 11.2 CPU-s as six jobs, 5.1 in one process)
FIGURES_PER_BATCH = 12


def names_targets(argv) -> bool:
    """Whether the Snakemake command line ``argv`` names targets (files or rules: its
    positional arguments, as Snakemake's own parser reads them); True where it cannot be
    parsed. A full run (none named) draws the figures in batches; a figure asked for by name
    is drawn alone, without the runs of the other figures of its batch."""
    import contextlib
    import io

    try:
        from snakemake.cli import get_argument_parser

        with contextlib.redirect_stderr(io.StringIO()):
            args, _ = get_argument_parser().parse_known_args(list(argv[1:]))
        return bool(args.targets)
    except (Exception, SystemExit):
        return True


def is_dry_run(argv) -> bool:
    """Whether the Snakemake command line ``argv`` asks for a dry run: ``-n``, ``--dry-run``,
    ``--dryrun``, or ``-n`` among combined one-letter flags (``-np``)."""
    return any(a in ("--dry-run", "--dryrun") or re.fullmatch(r"-[A-Za-z]*n[A-Za-z]*", a) is not None
               for a in argv[1:])


def problem_class(problem: str) -> type:
    """The class of ``problem`` (config name) from the problem registry."""
    return PROBLEMS[problem]


def raw_inputs_of(problem: str, params: dict | None = None) -> tuple[str, ...]:
    """Names of the raw files the generator of ``problem`` reads for a dataset with ``params``
    (its ``raw_inputs``; none under ``source: generated``, ``Problem.raw_inputs_for``)."""
    return problem_class(problem).raw_inputs_for(params)


#: environment variable: "1" = this machine is offline (an absent data file skips its
#: experiments, no network probe), "0" = online (nothing is skipped: the fetch jobs download);
#: unset = one TCP probe of the file's host decides
OFFLINE_ENV = "RFL_OFFLINE"


def absent_data(config: dict, offline: bool | None = None, probe=None) -> dict[str, str]:
    """experiment -> the one line saying why it is skipped, for every experiment of ``config``
    whose dataset reads a pinned file (the School data, ``rfl.data.school``, or a source of
    ``rfl.data.sources``) that is neither in the cache (``school.cache_dir``,
    ``anchors.cache_dir``) nor in a mirror and cannot be fetched: ``offline`` (default: from
    $RFL_OFFLINE), else ``probe(name)`` (name: "school" or a source's; default: a TCP connect
    to the file's host, ``sources.reachable``) is False. No download is attempted here: the
    fetch rules download."""
    if offline is None:
        flag = os.environ.get(OFFLINE_ENV, "").strip()
        offline = {"1": True, "0": False}.get(flag)
    probe = probe or _reachable
    missing: dict[str, str | None] = {}            # raw input -> why it cannot be had, or None
    out = {}
    for name, exp in config["experiments"].items():
        ds = config["datasets"][exp["dataset"]]
        for raw in raw_inputs_of(ds["problem"], ds.get("params")):
            if raw not in SOURCES and raw != "school":
                continue
            if raw not in missing:
                here, file, how = _located(config, raw)        # as the fetch job looks
                gone = here is None and (offline if offline is not None else not probe(raw))
                missing[raw] = f"{file} not found; {how}" if gone else None
            if missing[raw]:
                out[name] = f"skipped {name}: {missing[raw]}"
                break
    return out


#: names a skip line gives before "and N more" (``skip_lines``)
SKIP_NAMES = 3


def skip_lines(skipped: dict[str, str]) -> list[str]:
    """The lines the workflow prints for ``skipped`` (``absent_data``): one per missing file,
    naming the first SKIP_NAMES experiments it leaves out and how many more (the report lists
    them all): ``skipped a, b, c and 4 more: ILEA567.DAT not found; set ...``."""
    by_reason: dict[str, list[str]] = {}
    for name, line in skipped.items():
        by_reason.setdefault(line.split(": ", 1)[1], []).append(name)
    out = []
    for reason, names in by_reason.items():
        more = len(names) - SKIP_NAMES
        out.append(f"skipped {', '.join(names[:SKIP_NAMES])}"
                   + (f" and {more} more" if more > 0 else "") + f": {reason}")
    return out


def _located(config: dict, raw: str):
    """(the copy of raw input ``raw`` on this machine or None, its file name, how to get it)."""
    from rfl.data import school, sources

    if raw == "school":
        cfg = config.get("school", {})
        cache = cfg.get("cache_dir", "datasets/school").rstrip("/") + "/" + ILEA_FILENAME
        return school.locate(cache, cfg.get("mirror")), ILEA_FILENAME, school.how_to_get()
    src = SOURCES[raw]
    cache = config.get("anchors", {}).get("cache_dir", "datasets/anchors").rstrip("/") + "/"
    here = sources.locate(raw, cache + src.subpath, config.get("anchors", {}).get("mirror"))
    return here, os.path.basename(src.subpath), sources.how_to_get(raw)


def _reachable(raw: str) -> bool:
    """Whether the host of raw input ``raw`` (the School data or a pinned source) answers."""
    from rfl.data import school, sources

    return sources.url_reachable(school.ILEA_URL) if raw == "school" else sources.reachable(raw)


def paper_only(config: dict) -> dict[str, str]:
    """experiment -> why ``config`` leaves it to config/paper.yaml (its ``paper_only``): its cost
    at a size that decides its claims. Like an experiment whose data are absent it has no runs
    and no figure; its claims are judged without it, or undecided with config/paper.yaml as
    what decides them (``rfl.claims.judge``)."""
    return {name: exp["paper_only"] for name, exp in config["experiments"].items()
            if exp.get("paper_only")}


def without_skipped(config: dict, skipped) -> dict:
    """``config`` without the figures of the experiments in ``skipped`` (``absent_data``), and
    without the tables and studies that read one of them (Table 2, heterogeneity, lsa): what
    the workflow draws and the report shows (their claims stay, reported as not run)."""
    if not skipped:
        return config
    out = dict(config)
    if "figures" in config:
        out["figures"] = {f: fig for f, fig in config["figures"].items()
                          if fig["experiment"] not in skipped}
    t2 = config.get("tables", {}).get("table2")
    if t2 and set(t2.get("experiments", {}).values()).union(t2.get("sensitivity", [])) & set(skipped):
        out["tables"] = {k: v for k, v in config["tables"].items() if k != "table2"}
    for study in ("heterogeneity", "lsa"):
        exps = (config.get(study) or {}).get("experiments", [])
        if set(exps.values() if isinstance(exps, dict) else exps) & set(skipped):
            del out[study]
    return out


def alternatives(names) -> str:
    """A wildcard constraint matching exactly ``names`` (never empty: "NONE" matches no name
    of a config, which are identifiers)."""
    return "|".join(sorted(names)) or "NONE"


class Plan:
    """What the workflow makes from one validated config: targets, job inputs, specs, resources.

    config: the config after ``rfl.config.validate``; paper: config/paper_values.yaml;
    configfiles: the files the config was read from (named in the performance table).
    """

    def __init__(self, config: dict, paper: dict, configfiles=(), skipped: dict | None = None,
                 cluster: dict | None = None, batch_figures: bool = False):
        #: experiment -> why it is not run (``absent_data``): no runs, no figure; its claims
        #: are reported as not run
        self.skipped = dict(skipped or {})
        #: experiment -> why only config/paper.yaml runs it (``paper_only``)
        self.paper_only = paper_only(config)
        #: every experiment this config does not run: data absent or left to config/paper.yaml
        self.left_out = {**self.skipped, **self.paper_only}
        self.config = config = without_skipped(config, self.left_out)
        self.configfiles = [os.path.relpath(f) if os.path.isabs(f) else str(f) for f in configfiles]
        self.paper = paper
        self.out = config["output_dir"]
        self.experiments = config["experiments"]
        self.figures = config.get("figures", {})
        self.tables = config.get("tables", {})
        self.hetero = config.get("heterogeneity")
        self.lsa = config.get("lsa")
        #: a results table the drawing steps read the runs from (config ``results``), or None:
        #: then no rule needs a run file, so nothing is run (``run_inputs``, ``from_results``)
        self.results_table = config.get("results")
        self.runs = {(r["experiment"], r["run_id"]): r for r in rflconfig.expand_runs(config)
                     if r["experiment"] not in self.left_out}
        #: the experiments with a sweep (rfl/sweeps.py): each gets a figure and table of its own
        self.swept = [e for e, exp in self.experiments.items()
                      if rflconfig.is_swept(exp) and e not in self.left_out]
        self.specs_dir = self.path("results/specs/")
        self.school_raw = config["school"]["cache_dir"].rstrip("/") + "/" + ILEA_FILENAME
        # raw input name (a problem's ``raw_inputs``) -> the file the workflow fetches for it
        self.raw_files = {"school": self.school_raw}
        self.anchors_dir = config["anchors"]["cache_dir"].rstrip("/") + "/"
        self.raw_files.update({name: self.anchors_dir + src.subpath for name, src in SOURCES.items()})
        #: output pattern of the pinned-source rule
        self.anchors_raw = self.anchors_dir + "{subpath}"
        # one FedLSA/SCAFFLSA figure per setting (homogeneous, heterogeneous) of the study's datasets
        self.lsa_settings = sorted({config["datasets"][self.experiments[e]["dataset"]]["params"]["setting"]
                                    for e in (self.lsa or {}).get("experiments", [])})
        from rfl.reporting.order import menu
        #: where every result sits in the HTML report's menus, in the papers' order
        self.menu = menu(config)
        #: the cluster settings (rfl/batches.py cluster_settings) or None; with them the run
        #: jobs are batches of experiments (``batches``), without them one job per experiment
        self.cluster = cluster
        self.batches = self.run_batches() if cluster else []
        #: the figures drawn FIGURES_PER_BATCH to a job (``figure_batches``; rules/reporting.smk):
        #: asked for (a full run, ``names_targets``), from run files (on a cluster too: the
        #: figure jobs run where Snakemake runs)
        self.batch_figures = bool(batch_figures and not self.results_table and self.figures)

    # ---- paths -------------------------------------------------------------------------
    def path(self, relative: str) -> str:
        """``relative`` under the output directory (wildcards in braces are kept)."""
        return self.out + relative

    def spec(self, relative: str) -> str:
        """The spec file ``relative`` (without .json) under results/specs/."""
        return f"{self.specs_dir}{relative}.json"

    def log(self, relative: str) -> str:
        """The log file of a job: logs/``relative``.log."""
        return self.path(f"logs/{relative}.log")

    def benchmark(self, relative: str) -> str:
        """Snakemake's benchmark record of the job whose log is ``log(relative)``:
        results/benchmarks/``relative``.tsv (the same name, so the two pair up)."""
        return self.path(f"results/benchmarks/{relative}.tsv")

    def run_tables(self, experiment: str) -> list[str]:
        """Every run table of ``experiment``, in run order."""
        return [self.path(f"results/runs/{e}/{r}.csv") for (e, r) in self.runs if e == experiment]

    def all_run_tables(self) -> list[str]:
        return [self.path(f"results/runs/{e}/{r}.csv") for (e, r) in self.runs]

    def run_files(self, experiment: str, kind: str) -> list[str]:
        """The files of the run job of ``experiment``, one per run, in run order: kind "csv"
        (tables) or "meta.json" (outputs), "specs", "data" or "reference" (inputs; runs on one
        data instance list it once each)."""
        out = []
        for (e, r), spec in self.runs.items():
            if e != experiment:
                continue
            ds = spec["dataset"]
            out.append(self.path(f"results/runs/{e}/{r}.{kind}") if kind in ("csv", "meta.json")
                       else self.spec(f"runs/{e}/{r}") if kind == "specs"
                       else self.path(f"results/{kind}/{ds['name']}/{ds['instance']}.npz"))
        return out

    def table_outputs(self) -> list[str]:
        """Tables 1 and 2 of the paper, each as CSV, Markdown and LaTeX (those configured)."""
        out = []
        if "table1" in self.tables:
            out += self.table_files("table1_parameters")
        if "table2" in self.tables:
            out += self.table_files("table2_school_nmse") + self.table2_sensitivity_files()
        return out

    def table2_sensitivity_files(self) -> list[str]:
        """The step-size study beside Table 2 (CSV, Markdown), if ``table2.sensitivity`` is set."""
        if not self.tables.get("table2", {}).get("sensitivity"):
            return []
        return [self.path(f"paper_tables/table2_sensitivity.{ext}") for ext in ("csv", "md")]

    def table_files(self, stem: str) -> list[str]:
        return [self.path(f"paper_tables/{stem}.{ext}") for ext in TABLE_EXTENSIONS]

    def figure_files(self, figure: str = "{figure}") -> list[str]:
        return [self.path(f"figures/{figure}.{ext}") for ext in FIGURE_EXTENSIONS]

    def hetero_outputs(self) -> list[str]:
        if not self.hetero:
            return []
        return (self.figure_files("fig_heterogeneity")
                + [self.path("paper_tables/heterogeneity.csv"), self.path("paper_tables/heterogeneity.md")])

    def lsa_figures(self, ext: str) -> list[str]:
        return [self.path(f"figures/fig_fedlsa_scafflsa_{s}.{ext}") for s in self.lsa_settings]

    def lsa_outputs(self) -> list[str]:
        if not self.lsa:
            return []
        return (self.lsa_figures("pdf") + self.lsa_figures("png")
                + [self.path("paper_tables/fedlsa_bias.csv"), self.path("paper_tables/fedlsa_bias.md")])

    def sweep_outputs(self, experiment: str = "{experiment}") -> list[str]:
        """The figure (PDF, PNG) and table (CSV, Markdown) of a swept experiment."""
        return (self.figure_files(f"fig_sweep_{experiment}")
                + [self.path(f"paper_tables/sweep_{experiment}.{ext}") for ext in ("csv", "md")])

    def sweep_runs(self, wildcards) -> list[str]:
        return self.run_tables(wildcards.experiment)

    def report_inputs(self) -> list[str]:
        """The tables and figures REPRODUCTION.md summarises, beside the run tables."""
        return self.table_outputs() + self.hetero_outputs() + self.lsa_outputs()

    def targets(self) -> list[str]:
        """Everything the config asks for (rule all)."""
        return ([f for name in self.figures for f in self.figure_files(name)]
                + self.report_inputs() + [f for e in self.swept for f in self.sweep_outputs(e)]
                + self.results_outputs() + self.reproduction_outputs()
                + [p for p, *_ in self.claim_pages()]
                + ([] if self.results_table else self.performance_outputs()))

    def run_inputs(self, tables):
        """The run tables a drawing step reads (``tables``: a list, or a function of the
        wildcards), as its input: none with a results table (``results_table``: the step's spec
        names them and the table, ``results_spec``), so that no run is made for it."""
        if not callable(tables):
            return [] if self.results_table else list(tables)
        return lambda wildcards: [] if self.results_table else tables(wildcards)

    def results_input(self) -> list[str]:
        """The results table the drawing steps read the runs from, as their input (or none)."""
        return [self.results_table] if self.results_table else []

    def results_spec(self, runs) -> dict:
        """What a drawing step's spec adds with a results table: the table and the run tables
        (names in it) the step reads; nothing without one."""
        return {"results": self.results_table, "runs": list(runs)} if self.results_table else {}

    def results_outputs(self) -> list[str]:
        """The results table of every run (rfl/results.py): Parquet, and CSV beside it (none
        without runs, none when the runs come from a results table)."""
        if not self.runs or self.results_table:
            return []
        return [self.path("results/results.parquet"), self.path("results/results.csv")]

    def results_mem_mb(self) -> int:
        """Memory of the results job: 500 MB and 4 kB per row of the table (a run's rounds + 1;
        the config of config/config.yaml: ~550,000 rows, 1.4 GB measured)."""
        rows = sum(spec["rounds"] + 1 for spec in self.runs.values())
        return 500 + math.ceil(rows * 4e-3)

    def reproduction_outputs(self) -> list[str]:
        """REPRODUCTION.md, its HTML rendering, claims.json and the HTML report's landing page
        (the reproduction rule's files beside the claim pages)."""
        return [self.path(f"paper_tables/{f}") for f in ("REPRODUCTION.md", "REPRODUCTION.html", "claims.json")] \
            + [self.landing()]

    def landing(self) -> str:
        """The HTML report's landing page: the summary of the claims' verdicts
        (rfl/reporting/triage.py), Snakemake's global report description."""
        from rfl.reporting.triage import LANDING
        return self.path(f"paper_tables/{LANDING}")

    def category(self, name: str) -> str:
        """A report category as the menu shows it, numbered in the papers' order
        (rfl/reporting/order.py): REPORT_CATEGORY, a figure's, or a study's."""
        return self.menu["categories"].get(name, name)     # (a study the config lacks: unused)

    def claim_pages(self) -> list[tuple[str, str, str, dict | None]]:
        """(path, report category, subcategory, labels) of every claim page of the HTML report:
        one per figure, beside the figure (its category, subcategory = the figure), one per
        section of the claims that name no figure (rfl/reporting/claim_pages.py)."""
        from rfl.reporting.claim_pages import page_path, pages
        md = self.path("paper_tables/REPRODUCTION.md")
        out = []
        for name, p in pages(self.config).items():
            labels = ({"figure": name, "title": f"{p['title']}: its claims", "shows": CLAIMS_SHOWS}
                      if "figure" in p else None)
            out.append((str(page_path(md, name)), p["category"], p["subcategory"], labels))
        return out

    def source_size_inputs(self) -> list[str]:
        """The record of verdicts at the source's size and config/paper.yaml (rfl/source_size.py),
        inputs of the reproduction step where the record is present (relative to the working
        directory, the repository's root); none without it: the report then says nothing of
        sources' sizes."""
        from rfl.reporting.source_size import PAPER, RECORD

        return [RECORD, PAPER] if os.path.isfile(RECORD) and os.path.isfile(PAPER) else []

    def performance_outputs(self) -> list[str]:
        return [self.path("paper_tables/performance.csv"), self.path("paper_tables/performance.md")]

    def jobs(self) -> list[str]:
        """The name of every job of the config (its log and benchmark record are
        logs/``name``.log and results/benchmarks/``name``.tsv), but the performance table's."""
        used = self.data_instances()
        datasets = [self.config["datasets"][name] for name in used]
        raw = {name for ds in datasets for name in raw_inputs_of(ds["problem"], ds.get("params"))}
        names = ["school_raw"] if "school" in raw else []
        names += [f"anchors_raw/{SOURCES[name].subpath}" for name in sorted(raw) if name in SOURCES]
        if self.cluster:      # rules/data.smk: a data job per instance there, per dataset here
            names += [f"data/{name}/{i}" for name, instances in used.items() for i in instances]
        else:
            names += [f"data/{name}" for name in used]
        names += [f"runs/{e}" for e in self.experiments if any(k[0] == e for k in self.runs)]
        if self.batch_figures:
            names += [f"figures/batch{k}" for k in range(len(self.figure_batches()))]
        else:
            names += [f"figures/{f}" for f in self.figures]
        names += [t for t in ("table1", "table2") if t in self.tables]
        names += (["heterogeneity"] if self.hetero else []) + (["lsa"] if self.lsa else [])
        names += [f"sweeps/{e}" for e in self.swept]
        return names + (["results"] if self.runs else []) + ["reproduction"]

    def job_benchmarks(self) -> list[str]:
        """The benchmark record of every job but the performance table's (its inputs)."""
        return [self.benchmark(name) for name in self.jobs()]

    # ---- job inputs (functions of a job's wildcards) ---------------------------------------
    def data_instances(self) -> dict[str, list[str]]:
        """dataset -> the instances its runs use (sorted): one data job per dataset generates
        them all, with their references, in one process (a second start-up per instance cost
        more than most instances' work)."""
        return self._data_instances

    @functools.cached_property
    def _data_instances(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name, instance in sorted({(r["dataset"]["name"], r["dataset"]["instance"])
                                      for r in self.runs.values()}):
            out.setdefault(name, []).append(instance)
        return out

    def data_files(self, dataset: str, kind: str) -> list[str]:
        """The files of the data job of ``dataset``, one per instance (``data_instances``): kind
        "specs" (inputs), "data" or "reference" (outputs)."""
        instances = self.data_instances()[dataset]
        if kind == "specs":
            return [self.spec(f"datasets/{dataset}/{i}") for i in instances]
        return [self.path(f"results/{kind}/{dataset}/{i}.npz") for i in instances]

    def raw_inputs(self, dataset: str) -> list[str]:
        """Raw files the data job of ``dataset`` reads (its problem's raw_inputs)."""
        ds = self.config["datasets"][dataset]
        return [self.raw_files[name] for name in raw_inputs_of(ds["problem"], ds.get("params"))]

    def source_subpaths(self) -> str:
        """Wildcard constraint of ``{subpath}`` in the pinned-source rule: exactly the sources'
        paths under the cache folder."""
        import re
        return "|".join(re.escape(s.subpath) for s in SOURCES.values())

    def figure_runs(self, wildcards) -> list[str]:
        """The run tables a figure reads: its experiment's, then its ``sweep``'s (those run)."""
        return self._figure_tables(wildcards.figure)

    def _figure_experiments(self, figure: str) -> list[str]:
        """The experiments whose runs ``figure`` reads: its own, then its ``sweep``'s, those run."""
        fig = self.figures[figure]
        return [e for e in dict.fromkeys([fig["experiment"], *fig.get("sweep", [])]) if e not in self.left_out]

    def _figure_tables(self, figure: str) -> list[str]:
        return [t for e in self._figure_experiments(figure) for t in self.run_tables(e)]

    def figure_category(self, wildcards) -> str:
        """The figure's category in the report's menu (its report_category, numbered)."""
        return self.menu["figures"][wildcards.figure][0]

    def figure_subcategory(self, wildcards) -> str:
        """The figure's entry in its category: its paper's name, numbered ("1 Figure 1(a): ...")."""
        return self.menu["figures"][wildcards.figure][1]

    def figure_labels(self, wildcards) -> dict:
        """The figure's labels in the report; its claim page (claim_pages) has the same keys,
        another title and ``shows``, so the report lists the two as two rows."""
        return {"figure": wildcards.figure, "title": self.figures[wildcards.figure]["title"],
                "shows": "the figure"}

    def figure_batches(self) -> list[list[str]]:
        """The figures in batches of at most FIGURES_PER_BATCH, as even as that allows, in the
        order their runs are expected to be done: a figure waits for the run job of its
        experiment (and sweep) started last, and run jobs start by priority, the longest first
        (``run_priority``); ties by name. So a batch's figures are ready at about one time."""
        return self._figure_batches

    @functools.cached_property
    def _figure_batches(self) -> list[list[str]]:
        def ready(figure):                         # the priority of the last run job it waits for
            return min((self.run_priority(e) for e in self._figure_experiments(figure)), default=math.inf)

        order = sorted(self.figures, key=lambda f: (-ready(f), f))
        n = math.ceil(len(order) / FIGURES_PER_BATCH)
        bounds = [round(i * len(order) / n) for i in range(n + 1)]
        return [order[a:b] for a, b in zip(bounds, bounds[1:])]

    def figure_batch_files(self, k: int, kind: str) -> list[str]:
        """The files of figure batch ``k``: kind "specs" (the figures' specs), "runs" (the run
        tables they read, once each) or an extension of FIGURE_EXTENSIONS (the figures)."""
        figures = self.figure_batches()[k]
        if kind == "specs":
            return [self.spec(f"figures/{f}") for f in figures]
        if kind == "runs":
            return list(dict.fromkeys(t for f in figures for t in self._figure_tables(f)))
        return [self.path(f"figures/{f}.{kind}") for f in figures]

    def figure_batch_report(self, k: int) -> list[tuple[str, str, str, dict]]:
        """(pdf, category, subcategory, labels) of each figure of batch ``k``: the report
        entries of the ``figure`` rule's outputs (``figure_category``, ...), per figure."""
        out = []
        for f in self.figure_batches()[k]:
            w = types.SimpleNamespace(figure=f)
            out.append((self.path(f"figures/{f}.pdf"), self.figure_category(w),
                        self.figure_subcategory(w), self.figure_labels(w)))
        return out

    def figure_batch_spec(self, k: int) -> dict:
        """The spec of figure batch ``k`` (``rfl figures``): per figure its spec, its PDF and the
        run tables it reads, as the ``figure`` rule passes them to ``rfl figure``."""
        return {"figures": [{"spec": self.spec(f"figures/{f}"), "pdf": self.path(f"figures/{f}.pdf"),
                             "runs": self._figure_tables(f)} for f in self.figure_batches()[k]]}

    def table2_runs(self) -> list[str]:
        t2 = self.tables.get("table2", {})
        experiments = list(t2.get("experiments", {}).values())
        experiments += [e for e in t2.get("sensitivity", []) if e not in experiments]
        return [t for e in experiments for t in self.run_tables(e)]

    def hetero_runs(self) -> list[str]:
        return [t for e in (self.hetero or {}).get("experiments", {}).values() for t in self.run_tables(e)]

    def lsa_runs(self) -> list[str]:
        return [t for e in (self.lsa or {}).get("experiments", []) for t in self.run_tables(e)]

    # ---- specs: the resolved config, one file per job --------------------------------------
    def table_spec(self, name: str) -> dict:
        """The spec of table/report job ``name`` (table1, table2, heterogeneity, lsa, reproduction,
        performance)."""
        if name == "table1":
            return {"rows": [{"label": row["label"],
                              "fixed": {"experiment": row["fixed"], **self.experiments[row["fixed"]]},
                              "decaying": {"experiment": row["decaying"], **self.experiments[row["decaying"]]},
                              "dataset": self.config["datasets"][self.experiments[row["fixed"]]["dataset"]]}
                             for row in self.tables["table1"]["rows"]]}
        if name == "table2":
            t2 = self.tables["table2"]
            return {"experiments": t2["experiments"], "paper": self.paper["table2"],
                    "protocols": t2.get("protocols", ["heldout", "refit_on_test"]),
                    "normalisations": t2.get("normalisations", ["pooled", "task_mean"]),
                    "sensitivity": t2.get("sensitivity", []), **self.results_spec(self.table2_runs())}
        if name == "heterogeneity":
            return {"experiments_by_name": {e: label for label, e in self.hetero["experiments"].items()},
                    "tail": self.hetero["tail"], **self.results_spec(self.hetero_runs())}
        if name == "lsa":
            return {"experiments": self.lsa["experiments"], "tail": self.lsa["tail"],
                    "settings": self.lsa_settings, **self.results_spec(self.lsa_runs())}
        if name == "performance":
            return {"benchmarks": self.path("results/benchmarks"), "logs": self.path("logs"),
                    "runs": self.path("results/runs"), "configfiles": self.configfiles}
        # the spec file's JSON sorts keys: the claims' declaration order travels beside them
        return {"config": self.config, "paper": self.paper,
                "claim_order": list(self.config.get("claims", {})), "configfiles": self.configfiles,
                "figure_order": list(self.figures), "source_order": list(self.config.get("sources", {})),
                "skipped": self.skipped, "paper_only": self.paper_only,
                **({"results": self.results_table} if self.results_table else {}),
                **({"source_size": dict(zip(("record", "paper"), self.source_size_inputs()))}
                   if self.source_size_inputs() else {}),
                "runs": {e: self.run_tables(e) for e in self.experiments},
                "tables": {"table1": self.path("paper_tables/table1_parameters.csv"),
                           "table2": self.path("paper_tables/table2_school_nmse.csv"),
                           "table2_sensitivity": self.path("paper_tables/table2_sensitivity.csv"),
                           "heterogeneity": self.path("paper_tables/heterogeneity.csv"),
                           "lsa": self.path("paper_tables/fedlsa_bias.csv")}}

    def sweep_spec(self, experiment: str) -> dict:
        """The spec of the sweep job of ``experiment``: the metrics of its figures (default
        excess_risk) and the first one's title."""
        figs = [f for f in self.figures.values() if f["experiment"] == experiment]
        metrics = list(dict.fromkeys(m for f in figs for m in f.get("metrics", ["excess_risk"])))
        return {"experiment": experiment, "title": figs[0]["title"] if figs else f"Sweep: {experiment}",
                "metrics": metrics or ["excess_risk"], **self.results_spec(self.run_tables(experiment))}

    def specs(self) -> dict[str, dict]:
        """Spec path -> content for every job of the config."""
        specs = {self.spec("school"): self.config["school"], self.spec("anchors"): self.config["anchors"]}
        for (name, instance) in rflconfig.dataset_instances(self.config):
            specs[self.spec(f"datasets/{name}/{instance}")] = rflconfig.dataset_spec(self.config, name, instance)
        for (e, r), spec in self.runs.items():
            specs[self.spec(f"runs/{e}/{r}")] = spec
        for f, fig in self.figures.items():
            specs[self.spec(f"figures/{f}")] = {"name": f, **fig,
                                                **self.results_spec(self._figure_tables(f))}
        tables = (list(self.tables) + ["reproduction", "performance"]
                  + (["heterogeneity"] if self.hetero else [])
                  + (["lsa"] if self.lsa else []))
        for t in tables:
            specs[self.spec(f"tables/{t}")] = self.table_spec(t)
        for e in self.swept:
            specs[self.spec(f"sweeps/{e}")] = self.sweep_spec(e)
        for k in range(len(self.batches)):
            specs[self.spec(f"batches/batch{k}")] = self.batch_spec(k)
        if self.batch_figures:
            for k in range(len(self.figure_batches())):
                specs[self.spec(f"figure_batches/batch{k}")] = self.figure_batch_spec(k)
        return specs

    # ---- priorities: the longest work first (Snakemake's ``priority``) -------------------------
    # Snakemake's scheduler starts the ready jobs of highest priority first (without a priority,
    # those with the largest inputs), and a rule's priority does not pass on to the jobs it
    # waits for. So each job's priority is the estimated CPU seconds of the longest chain of
    # run work it starts (a run job: its own estimate; a data job: the largest of the run jobs
    # reading it): long run jobs start first and short ones fill the cores at the end
    # (longest-processing-time-first list scheduling), instead of a long School chain starting
    # last and running alone. Downloads and the steps that draw or tabulate finished runs (a
    # few seconds each) go before all: at every scheduling pass Snakemake stats every input of
    # every ready job, and figures left waiting behind the run jobs (hundreds of run tables
    # each) took its own CPU from 106 to 289 CPU-s in a full run.
    def run_priority(self, experiment: str) -> int:
        """The run job's estimated CPU seconds (``run_cpu_seconds``), rounded up."""
        return math.ceil(self.run_cpu_seconds(experiment))

    @functools.cached_property
    def _data_priorities(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in self.run_experiments():
            for d in {spec["dataset"]["name"] for spec in self.run_specs(e)}:
                out[d] = max(out.get(d, 0), self.run_priority(e) + 1)
        return out

    def data_priority(self, dataset: str) -> int:
        """Above the highest priority of the run jobs that read ``dataset``."""
        return self._data_priorities.get(dataset, 1)

    def top_priority(self) -> int:
        """Above every data and run job: downloads, figures and tables."""
        return max(self._data_priorities.values(), default=0) + 1

    # ---- resources -------------------------------------------------------------------------
    def data_size_mb(self, dataset: str) -> float:
        """MB of the arrays of ``dataset`` (its problem's ``memory_bytes``; 0 if not estimated):
        the data job's resources are asked for before its file exists."""
        d = self.config["datasets"][dataset]
        size = problem_class(d["problem"]).memory_bytes(d["params"])
        return 0.0 if size is None else size / 2**20

    def data_mem_mb(self, dataset: str) -> int:
        """4x the data of one instance, at least 1 GB (the data job holds one instance at a
        time). On a cluster the largest of the config's data jobs for every one (``_uniform``)."""
        return self._uniform(self._data_mem_mb, dataset)

    def _data_mem_mb(self, dataset: str) -> int:
        return max(1000, math.ceil(4 * self.data_size_mb(dataset)))

    def reference_runtime(self, dataset: str, instances: int = 1) -> int:
        """Minutes of a data job of ``dataset`` generating ``instances`` instances: 10 + per
        instance the solver's budget (starts x iterations x ~5 passes over the data at
        >= 200 MB/s); 10 for a closed-form x* (the problem's ``closed_form``: no solver runs;
        data generation takes seconds). On a cluster the largest of the config's data jobs for
        every one (``_uniform``), at most the time limit."""
        minutes = self._uniform(lambda name: self._reference_runtime(name, instances), dataset)
        return min(minutes, self.cluster["time_limit_minutes"]) if self.cluster else minutes

    def _reference_runtime(self, dataset: str, instances: int) -> int:
        if problem_class(self.config["datasets"][dataset]["problem"]).closed_form:
            return LIGHT["runtime"]              # x* in closed form: no solver runs
        ref = self.config["datasets"][dataset].get("reference", {})
        passes = ref.get("starts", 1) * ref.get("max_iterations", 1000) * 5
        return 10 + math.ceil(instances * passes * self.data_size_mb(dataset) / 200 / 60)

    def _uniform(self, resource, dataset: str) -> int:
        """``resource(dataset)``; on a cluster its largest value over the datasets the runs use:
        the data jobs go as one SLURM array (profiles/slurm), and the plugin gives every task of
        an array the first task's resources."""
        if not self.cluster:
            return resource(dataset)
        return max(resource(name) for name in {s["dataset"]["name"] for s in self.runs.values()} | {dataset})

    def run_samples(self, experiment: str) -> float:
        """The sample gradients the run job of ``experiment`` evaluates: rounds x K x B x the
        agents taking part (every agent; s; rho S or the sum of the p_i on average), summed
        over its runs."""
        exp = self.experiments[experiment]
        dataset = self.config["datasets"][exp["dataset"]]
        agents = len(problem_class(dataset["problem"]).local_sizes_from(dataset["params"]))
        return sum(spec["rounds"] * (spec["algorithm"].get("K") or 1)
                   * (spec["algorithm"].get("batch_size") or exp.get("batch_size", 1))
                   * cost_model.participants(spec["algorithm"].get("participation"), agents)
                   for (e, _), spec in self.runs.items() if e == experiment)

    def run_resources(self, experiment: str) -> dict:
        """mem_mb: 3x one run's inputs (its data and reference, the largest pair of the job), at
        least 1 GB. runtime (minutes), a cluster's time limit: 10 + the sample gradients the job
        evaluates (``run_samples``) at a conservative 100 us each."""
        samples = self.run_samples(experiment)

        def mem_mb(wildcards, input) -> int:  # noqa: A002
            one_run = max((_size_mb(d) + _size_mb(r) for d, r in zip(input.data, input.references)),
                          default=0.0)
            return max(1000, math.ceil(3 * one_run))

        return {"mem_mb": mem_mb, "runtime": 10 + math.ceil(samples * 100e-6 / 60)}

    @functools.cached_property
    def cost_model(self) -> dict | None:
        """The cost model the estimates read (``rfl.cost_model.load``: $RFL_COST_MODEL, else
        rfl/cost_model.json; None without one). CostModelError for a bad file."""
        return cost_model.load()

    def run_specs(self, experiment: str) -> list[dict]:
        """The run specs of ``experiment`` (those of its run job), in config order."""
        return [spec for (e, _), spec in self.runs.items() if e == experiment]

    def run_cpu_seconds(self, experiment: str) -> float:
        """Expected CPU seconds of the run job of ``experiment``: the cost model's
        (``rfl.cost_model.job_cpu_seconds``, the one estimate of a job)."""
        return cost_model.job_cpu_seconds(self.run_specs(experiment), self.cost_model)

    # ---- a cluster's run jobs: batches of experiments (rfl/batches.py) -------------------------
    def run_experiments(self) -> list[str]:
        """The experiments with runs, in config order."""
        return [e for e in self.experiments if any(k[0] == e for k in self.runs)]

    def run_batches(self) -> list[list[str]]:
        """The experiments packed into batches (``rfl.batches.pack``) by their estimated CPU
        seconds (``run_cpu_seconds``, the one estimate), under the cluster settings."""
        from rfl.batches import limit_seconds, pack
        c = self.cluster
        costs = {e: self.run_cpu_seconds(e) for e in self.run_experiments()}
        return pack(costs, c["batch_minutes"] * 60, limit_seconds(c), c["cores"])

    def batch_cores(self, k: int) -> int:
        """Cores of batch ``k``: the cluster's cores, at most one per experiment."""
        return min(self.cluster["cores"], len(self.batches[k]))

    def batch_estimate(self, k: int) -> float:
        """Estimated wall seconds of batch ``k`` on its cores (``rfl.batches.makespan``)."""
        from rfl.batches import makespan
        return makespan([self.run_cpu_seconds(e) for e in self.batches[k]], self.batch_cores(k))

    def batch_files(self, k: int, kind: str) -> list[str]:
        """``run_files`` of every experiment of batch ``k``, in batch order."""
        return [f for e in self.batches[k] for f in self.run_files(e, kind)]

    def batch_logs(self, k: int) -> dict[str, str]:
        """experiment -> its log (the local run job's, logs/runs/<experiment>.log)."""
        return {e: self.log(f"runs/{e}") for e in self.batches[k]}

    def batch_benchmarks(self, k: int) -> list[str]:
        """The benchmark record of each experiment of batch ``k`` (the local run job's name,
        written by ``rfl batch``), which the performance table reads."""
        return [self.benchmark(f"runs/{e}") for e in self.batches[k]]

    def batch_spec(self, k: int) -> dict:
        """The spec of batch ``k`` (rfl batch): its cores and, longest estimate first, each
        experiment's aligned run lists, log and benchmark record."""
        return {"name": f"batch{k}", "cores": self.batch_cores(k),
                "experiments": [{"name": e, "estimate_s": round(self.run_cpu_seconds(e), 3),
                                 **{kind: self.run_files(e, key) for kind, key in
                                    (("specs", "specs"), ("data", "data"), ("references", "reference"),
                                     ("tables", "csv"), ("metas", "meta.json"))},
                                 "log": self.log(f"runs/{e}"), "benchmark": self.benchmark(f"runs/{e}")}
                                for e in self.batches[k]]}

    def batch_resources(self, k: int) -> dict:
        """mem_mb: the largest ``cores`` of its experiments' (``run_resources``) summed (they
        run side by side); runtime: ``rfl.batches.request_minutes`` of its estimate."""
        from rfl.batches import request_minutes
        cores = self.batch_cores(k)
        per_experiment = [(self.run_resources(e)["mem_mb"], e) for e in self.batches[k]]

        def mem_mb(wildcards, input) -> int:  # noqa: A002
            mems = sorted((f(wildcards, _Inputs(self.run_files(e, "data"), self.run_files(e, "reference")))
                           for f, e in per_experiment), reverse=True)
            return sum(mems[:cores])

        return {"mem_mb": mem_mb, "runtime": request_minutes(self.batch_estimate(k), self.cluster)}

    def batch_lines(self) -> str:
        """One line per batch (printed by a dry run on a cluster): its experiments, estimate,
        time request and cores."""
        from rfl.batches import request_minutes
        c = self.cluster
        lines = [f"rfl: {len(self.run_experiments())} run jobs in {len(self.batches)} batches "
                 f"(floor {c['batch_minutes']:g} min, time limit {c['time_limit_minutes']} min, "
                 f"{c['cores']} cores, margin {c['margin']:g}; rfl/batches.py):"]
        for k, batch in enumerate(self.batches):
            est = self.batch_estimate(k)
            lines.append(f"  run_batch{k}: {len(batch)} experiments, estimate {est / 60:.1f} min on "
                         f"{self.batch_cores(k)} cores, asks {request_minutes(est, c)} min: {', '.join(batch)}")
        return "\n".join(lines)

    def cpu_estimate(self) -> str:
        """The estimated CPU-hours of every run job and their total, one line each, and what
        the estimate rests on (the model's commit and machine, or the rule of thumb)."""
        estimates = {e: cost_model.job_estimate(self.run_specs(e), self.cost_model)
                     for e in self.experiments if any(k[0] == e for k in self.runs)}
        width = max(map(len, estimates), default=0)
        m = self.cost_model
        basis = (f"cost model {cost_model.default_path()}, measured at commit {m['commit'][:10]} on "
                 f"{m['machine']}" if m else f"no cost model: {cost_model.FALLBACK_JOB_S:g} s + "
                 f"{cost_model.FALLBACK_SAMPLE_S * 1e6:g} us per sample gradient")
        lines = [f"rfl: estimated CPU-hours of the run jobs ({basis}; README, Cost model):"]
        lines += [f"  {e:<{width}}  {est['cpu_s'] / 3600:10.3f}"
                  + ("" if est["basis"] == "measured" else f"  ({est['basis']})")
                  for e, est in estimates.items()]
        lines.append(f"  {'total':<{width}}  {sum(x['cpu_s'] for x in estimates.values()) / 3600:10.3f}")
        return "\n".join(lines)


class _Inputs:
    """The ``input`` a run job's mem_mb function reads (data and references), for a batch."""

    def __init__(self, data, references):
        self.data, self.references = data, references


def _size_mb(path: str) -> float:
    """The size of ``path`` in MB (0 for a file not made yet, as in a dry run)."""
    try:
        return os.path.getsize(path) / 2**20
    except OSError:
        return 0.0

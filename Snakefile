# Reproduction workflow of the RFedAGS paper.
#   snakemake --cores 8                                   everything in config/config.yaml
#   snakemake --cores 2 figures/fig3_school_r4.pdf        one figure and what it needs
#   snakemake --cores 2 --configfile config/smoke.yaml    the same DAG at toy size
#
# Data flow: config -> specs (JSON) -> data -> reference optimum -> runs -> figures / tables
# -> REPRODUCTION.md. Shell commands see only paths (constrained wildcards), never config
# values: every config value reaches `rfl` through a spec file. The specs are the resolved
# config, written here at parse time only where their content changed, so a config edit
# reruns exactly the jobs whose spec it changed.

import math
import re

from snakemake.utils import validate

from rfl import config as rflconfig
from rfl import io
from rfl.problems import PROBLEMS

# config/config.yaml is the default; a --configfile replaces it (not merged into it),
# so the smoke config cannot inherit experiments of the full one.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


# Clear, key-naming errors first (schema + semantic checks), then Snakemake's own check.
config = rflconfig.validate(config)
validate(config, "config/schema.yaml")

OUT = config["output_dir"]
EXPERIMENTS = config["experiments"]
FIGURES = config.get("figures", {})
TABLES = config.get("tables", {})
RUNS = {(r["experiment"], r["run_id"]): r for r in rflconfig.expand_runs(config)}
PAPER = io.read_yaml("config/paper_values.yaml")
SCHOOL_RAW = config["school"]["cache_dir"].rstrip("/") + "/ILEA567.DAT"
SPECS = OUT + "results/specs/"
# Every job: BLAS threads pinned to the rule's threads (no oversubscription under --cores N),
# and no progress lines in the logs.
PIN = "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads} RFL_PROGRESS=0 "
# Resources (for cluster executors; locally only threads count): the light steps (specs,
# data generation, figures, tables) need well under 1 GB and a few minutes for every
# dataset of the paper; runs and reference optima scale with their data (see below).
LIGHT = {"mem_mb": 1000, "runtime": 10}


def _run_tables(experiment):
    return [f"{OUT}results/runs/{e}/{r}.csv" for (e, r) in RUNS if e == experiment]


def _tables():
    out = []
    if "table1" in TABLES:
        out += expand(OUT + "paper_tables/table1_parameters.{ext}", ext=["csv", "md", "tex"])
    if "table2" in TABLES:
        out += expand(OUT + "paper_tables/table2_school_nmse.{ext}", ext=["csv", "md", "tex"])
    return out


HETERO = config.get("heterogeneity")


def _hetero_outputs():
    if not HETERO:
        return []
    return [OUT + "figures/fig_heterogeneity.pdf", OUT + "figures/fig_heterogeneity.png",
            OUT + "paper_tables/heterogeneity.csv", OUT + "paper_tables/heterogeneity.md"]


LSA = config.get("lsa")
# one FedLSA/SCAFFLSA figure per setting (homogeneous, heterogeneous) of the study's datasets
LSA_SETTINGS = sorted({config["datasets"][EXPERIMENTS[e]["dataset"]]["params"]["setting"]
                       for e in (LSA or {}).get("experiments", [])})


def _lsa_figures(ext):
    return [f"{OUT}figures/fig_fedlsa_scafflsa_{s}.{ext}" for s in LSA_SETTINGS]


def _lsa_outputs():
    if not LSA:
        return []
    return (_lsa_figures("pdf") + _lsa_figures("png")
            + [OUT + "paper_tables/fedlsa_bias.csv", OUT + "paper_tables/fedlsa_bias.md"])


def _table_spec(name):
    if name == "table1":
        return {"rows": [{"label": row["label"],
                          "fixed": {"experiment": row["fixed"], **EXPERIMENTS[row["fixed"]]},
                          "decaying": {"experiment": row["decaying"], **EXPERIMENTS[row["decaying"]]},
                          "dataset": config["datasets"][EXPERIMENTS[row["fixed"]]["dataset"]]}
                         for row in TABLES["table1"]["rows"]]}
    if name == "table2":
        return {"experiments": TABLES["table2"]["experiments"], "paper": PAPER["table2"]}
    if name == "heterogeneity":
        return {"experiments_by_name": {e: label for label, e in HETERO["experiments"].items()},
                "tail": HETERO["tail"]}
    if name == "lsa":
        return {"experiments": LSA["experiments"], "tail": LSA["tail"], "settings": LSA_SETTINGS}
    return {"config": config, "paper": PAPER,
            "runs": {e: _run_tables(e) for e in EXPERIMENTS},
            "tables": {"table1": OUT + "paper_tables/table1_parameters.csv",
                       "table2": OUT + "paper_tables/table2_school_nmse.csv",
                       "heterogeneity": OUT + "paper_tables/heterogeneity.csv",
                       "lsa": OUT + "paper_tables/fedlsa_bias.csv"}}


# ---- the resolved config, one spec file per job ------------------------------------------
_specs = {SPECS + "school.json": config["school"]}
for (name, instance) in rflconfig.dataset_instances(config):
    _specs[f"{SPECS}datasets/{name}/{instance}.json"] = rflconfig.dataset_spec(config, name, instance)
for (e, r), spec in RUNS.items():
    _specs[f"{SPECS}runs/{e}/{r}.json"] = spec
for f, fig in FIGURES.items():
    _specs[f"{SPECS}figures/{f}.json"] = {"name": f, **fig}
for t in list(TABLES) + ["reproduction"] + (["heterogeneity"] if HETERO else []) + (["lsa"] if LSA else []):
    _specs[f"{SPECS}tables/{t}.json"] = _table_spec(t)
for _path, _spec in _specs.items():
    io.sync_json(_path, _spec)


def _alternatives(names):
    return "|".join(sorted(names)) or "NONE"


wildcard_constraints:
    dataset=_alternatives(config["datasets"]),
    instance="fixed|seed[0-9]+",
    figure=_alternatives(FIGURES),
    setting="[A-Za-z0-9_]+",


localrules: all


rule all:
    input:
        expand(OUT + "figures/{figure}.{ext}", figure=FIGURES, ext=["pdf", "png"]),
        _tables(),
        _hetero_outputs(),
        _lsa_outputs(),
        OUT + "paper_tables/REPRODUCTION.md",


# ---- data -------------------------------------------------------------------------------
rule school_raw:
    """ILEA567.DAT from the mirror or the pinned URL, sha256-verified (rfl/data/school.py)."""
    input: SPECS + "school.json"
    output: SCHOOL_RAW
    threads: 1
    resources: **LIGHT
    shell: PIN + "rfl fetch-school {input} {output}"


def _raw_inputs(wc):
    return [SCHOOL_RAW] if config["datasets"][wc.dataset]["problem"] == "school" else []


rule data:
    input: spec=SPECS + "datasets/{dataset}/{instance}.json", raw=_raw_inputs
    output: OUT + "results/data/{dataset}/{instance}.npz"
    threads: 1
    resources: **LIGHT
    shell: PIN + "rfl data {input.spec} {output} {input.raw}"


def _reference_runtime(wc, input):
    """Minutes: 10 + the solver's budget (starts x iterations x ~5 passes over the data at
    >= 200 MB/s); closed-form references take seconds."""
    ref = config["datasets"][wc.dataset].get("reference", {})
    passes = ref.get("starts", 1) * ref.get("max_iterations", 1000) * 5
    return 10 + math.ceil(passes * input.size_mb / 200 / 60)


rule reference:
    input: spec=SPECS + "datasets/{dataset}/{instance}.json", data=rules.data.output
    output: OUT + "results/reference/{dataset}/{instance}.npz"
    threads: 1
    resources:
        mem_mb=lambda wc, input: max(1000, math.ceil(4 * input.size_mb)),
        runtime=_reference_runtime,
    shell: PIN + "rfl reference {input.spec} {input.data} {output}"


# ---- runs -------------------------------------------------------------------------------
# A setting is one (experiment, algorithm, K, participation); its seeds run in one job (one
# Python start-up instead of one per seed), each still writing its own table and metadata.
# One rule per experiment, because the seeds (the outputs of a job) differ per experiment.
def _group(experiment, kind):
    """Per-seed files of the setting {setting} of ``experiment``, in the experiment's seed order."""
    def f(wc):
        out = []
        for seed in EXPERIMENTS[experiment]["seeds"]:
            spec = RUNS[(experiment, f"{wc.setting}_seed{seed}")]
            ds = spec["dataset"]
            out.append(f"{SPECS}runs/{experiment}/{spec['run_id']}.json" if kind == "specs"
                       else f"{OUT}results/{kind}/{ds['name']}/{ds['instance']}.npz")
        return out
    return f


def _run_resources(experiment):
    """mem_mb: 3x one run's inputs (its data and reference; the job lists them once per
    seed), at least 1 GB. runtime (minutes): 10 + the sample gradients the job evaluates at
    most (seeds x rounds x K x B x agents) at a conservative 100 us each."""
    exp = EXPERIMENTS[experiment]
    seeds = len(exp["seeds"])
    dataset = config["datasets"][exp["dataset"]]
    agents = len(PROBLEMS[dataset["problem"]].local_sizes_from(dataset["params"]))
    K = max(k for m in exp["methods"] for k in (m.get("K") or [1]))
    samples = seeds * exp["rounds"] * K * exp.get("batch_size", 1) * agents
    return {"mem_mb": lambda wc, input: max(1000, math.ceil(3 * input.size_mb / seeds)),
            "runtime": 10 + math.ceil(samples * 100e-6 / 60)}


for _experiment in EXPERIMENTS:

    rule:
        name: f"run_{_experiment}"
        input:
            specs=_group(_experiment, "specs"),
            data=_group(_experiment, "data"),
            references=_group(_experiment, "reference"),
        output:
            tables=expand(OUT + "results/runs/" + _experiment + "/{{setting}}_seed{seed}.csv",
                          seed=EXPERIMENTS[_experiment]["seeds"]),
            metas=expand(OUT + "results/runs/" + _experiment + "/{{setting}}_seed{seed}.meta.json",
                         seed=EXPERIMENTS[_experiment]["seeds"]),
        threads: 1
        resources: **_run_resources(_experiment)
        shell: PIN + "rfl runs --specs {input.specs} --data {input.data} --references {input.references} --tables {output.tables} --metas {output.metas}"


# ---- figures, tables and the reproduction report -----------------------------------------------
rule figure:
    input:
        spec=SPECS + "figures/{figure}.json",
        runs=lambda wc: _run_tables(FIGURES[wc.figure]["experiment"]),
    output:
        pdf=report(OUT + "figures/{figure}.pdf",
                   category=lambda wc: FIGURES[wc.figure]["report_category"],
                   labels=lambda wc: {"figure": wc.figure, "title": FIGURES[wc.figure]["title"]}),
        png=OUT + "figures/{figure}.png",
    threads: 1
    resources: **LIGHT
    shell: PIN + "rfl figure {input.spec} {output.pdf} {input.runs}"


rule table1:
    input: SPECS + "tables/table1.json"
    output: expand(OUT + "paper_tables/table1_parameters.{ext}", ext=["csv", "md", "tex"])
    threads: 1
    resources: **LIGHT
    shell: PIN + "rfl table1 {input} {output[0]}"


rule table2:
    input:
        spec=SPECS + "tables/table2.json",
        runs=[t for e in TABLES.get("table2", {}).get("experiments", {}).values() for t in _run_tables(e)],
    output: expand(OUT + "paper_tables/table2_school_nmse.{ext}", ext=["csv", "md", "tex"])
    threads: 1
    resources: **LIGHT
    shell: PIN + "rfl table2 {input.spec} {output[0]} {input.runs}"


rule heterogeneity:
    input:
        spec=SPECS + "tables/heterogeneity.json",
        runs=[t for e in (HETERO or {}).get("experiments", {}).values() for t in _run_tables(e)],
    output:
        pdf=report(OUT + "figures/fig_heterogeneity.pdf", category="Heterogeneity"),
        png=OUT + "figures/fig_heterogeneity.png",
        csv=OUT + "paper_tables/heterogeneity.csv",
        md=OUT + "paper_tables/heterogeneity.md",
    threads: 1
    resources: **LIGHT
    shell: PIN + "rfl heterogeneity {input.spec} {output.pdf} {output.csv} {input.runs}"


rule lsa:
    """Federated TD(0): FedLSA vs SCAFFLSA with the predicted FedLSA bias (rfl/reporting/lsa.py)."""
    input:
        spec=SPECS + "tables/lsa.json",
        runs=[t for e in (LSA or {}).get("experiments", []) for t in _run_tables(e)],
    output:
        pdf=[report(f, category="Federated TD(0) / LSA") for f in _lsa_figures("pdf")],
        png=_lsa_figures("png"),
        csv=OUT + "paper_tables/fedlsa_bias.csv",
        md=OUT + "paper_tables/fedlsa_bias.md",
    threads: 1
    resources: **LIGHT
    shell: PIN + "rfl lsa {input.spec} {output.csv} {input.runs} --figures {output.pdf}"


rule reproduction:
    input:
        spec=SPECS + "tables/reproduction.json",
        runs=[f"{OUT}results/runs/{e}/{r}.csv" for (e, r) in RUNS],
        tables=_tables() + _hetero_outputs() + _lsa_outputs(),
    output: report(OUT + "paper_tables/REPRODUCTION.md", category="Reproduction report")
    threads: 1
    resources: **LIGHT
    shell: PIN + "rfl reproduction {input.spec} {output}"

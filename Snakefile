# Reproduction workflow of the RFedAGS paper.
#   snakemake --cores 8                               everything in config/config.yaml
#   snakemake --cores 2 figures/fig1a_cpesph_fixed.pdf   one figure and what it needs
#   snakemake --cores 2 --configfile config/smoke.yaml    the same DAG at toy size
#
# Data flow: config -> specs (JSON) -> data -> reference optimum -> runs -> figures.
# Shell commands see only paths (constrained wildcards), never config values:
# every config value reaches `rfl` through a spec file written in Python.

from snakemake.utils import validate

from rfl import config as rflconfig
from rfl import io

# config/config.yaml is the default; a --configfile replaces it (not merged into it),
# so the smoke config cannot inherit experiments of the full one.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


# Clear, key-naming errors first (schema + semantic checks), then Snakemake's own check.
config = rflconfig.validate(config)
validate(config, "config/schema.yaml")

OUT = config["output_dir"]
RUNS = {(r["experiment"], r["run_id"]): r for r in rflconfig.expand_runs(config)}
EXPERIMENTS = config["experiments"]
PIN = "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS={threads} MKL_NUM_THREADS={threads} "


def _alternatives(names):
    return "|".join(sorted(names))


wildcard_constraints:
    dataset=_alternatives(config["datasets"]),
    experiment=_alternatives(EXPERIMENTS),
    run="[A-Za-z0-9_]+",


localrules: all, dataset_spec, run_spec, experiment_spec


rule all:
    input:
        expand(OUT + "figures/{experiment}.{ext}", experiment=EXPERIMENTS, ext=["pdf", "png"]),


rule dataset_spec:
    output: OUT + "results/specs/datasets/{dataset}.json"
    params: spec=lambda wc: rflconfig.dataset_spec(config, wc.dataset)
    run: io.write_json(output[0], params.spec)


rule data:
    input: spec=rules.dataset_spec.output
    output: OUT + "results/data/{dataset}.npz"
    threads: 1
    shell: PIN + "rfl data {input.spec} {output}"


rule reference:
    input: spec=rules.dataset_spec.output, data=rules.data.output
    output: OUT + "results/reference/{dataset}.npz"
    threads: 1
    shell: PIN + "rfl reference {input.spec} {input.data} {output}"


rule run_spec:
    output: OUT + "results/specs/runs/{experiment}/{run}.json"
    params: spec=lambda wc: RUNS[(wc.experiment, wc.run)]
    run: io.write_json(output[0], params.spec)


def _dataset_file(kind):
    return lambda wc: f"{OUT}results/{kind}/{EXPERIMENTS[wc.experiment]['dataset']}.npz"


rule run:
    input:
        spec=rules.run_spec.output,
        data=_dataset_file("data"),
        reference=_dataset_file("reference"),
    output:
        table=OUT + "results/runs/{experiment}/{run}.csv",
        meta=OUT + "results/runs/{experiment}/{run}.meta.json",
    threads: 1
    shell: PIN + "rfl run {input.spec} {input.data} {input.reference} {output.table} {output.meta}"


rule experiment_spec:
    output: OUT + "results/specs/experiments/{experiment}.json"
    params:
        spec=lambda wc: {"name": wc.experiment, "dataset": EXPERIMENTS[wc.experiment]["dataset"],
                         **EXPERIMENTS[wc.experiment]["figure"]}
    run: io.write_json(output[0], params.spec)


def _run_tables(wc):
    return [f"{OUT}results/runs/{e}/{r}.csv" for (e, r) in RUNS if e == wc.experiment]


rule figure:
    input: spec=rules.experiment_spec.output, runs=_run_tables
    output:
        pdf=report(OUT + "figures/{experiment}.pdf", category="Figures"),
        png=OUT + "figures/{experiment}.png",
    threads: 1
    shell: PIN + "rfl figure {input.spec} {output.pdf} {input.runs}"

# Reproduction workflow of the RFedAGS paper.
#   snakemake --cores 8                                   everything in config/config.yaml
#   snakemake --cores 2 figures/fig3_school_r4.pdf        one figure and what it needs
#   snakemake --cores 2 --configfile config/smoke.yaml    the same DAG at toy size
#
# Data flow: config -> specs (JSON) -> data -> reference optimum -> runs -> figures / tables
# -> REPRODUCTION.md. Shell commands see only paths (constrained wildcards), never config
# values: every config value reaches `rfl` through a spec file. The specs are the resolved
# config, written at parse time only where their content changed (rules/common.smk), so a
# config edit reruns exactly the jobs whose spec it changed.
#
#   rules/common.smk      config checks, the Plan (rfl/workflow.py), specs, constraints
#   rules/data.smk        school_raw, anchors_raw, data (with its reference optimum)
#   rules/runs.smk        run_<experiment>: the runs of one experiment per job
#   rules/reporting.smk   figure, table1, table2, heterogeneity, lsa, results, reproduction,
#                         performance
#   rules/bench.smk       a config with `bench:` (rfl bench): data, step grid, reported seeds,
#                         leaderboard
# Every job logs its stdout and stderr (the last line: its CPU seconds) to OUT/logs/<job>.log and
# leaves a Snakemake benchmark record in OUT/results/benchmarks/<job>.tsv; the performance rule
# sums them into paper_tables/performance.{csv,md}.

import os

from snakemake.utils import min_version

min_version("8.0")


# config/config.yaml is the default; a --configfile replaces it (not merged into it),
# so the smoke config cannot inherit experiments of the full one.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


# A config with a `bench` section is a benchmark (rfl bench; rules/bench.smk), not the paper.
if "bench" in config:

    include: "rules/bench.smk"

    localrules:
        bench_all,

    rule bench_all:
        default_target: True
        input:
            BENCH.leaderboard_files(),

else:

    include: "rules/common.smk"
    include: "rules/data.smk"
    include: "rules/runs.smk"
    include: "rules/reporting.smk"

    # `snakemake --report` opens on the summary of the claims' verdicts (the reproduction
    # rule's landing page, rfl/reporting/triage.py), once a run has written it.
    if os.path.exists(PLAN.landing()):

        report: PLAN.landing()

    # Short steps run where Snakemake runs, never as cluster jobs (no effect locally): the
    # downloads (compute nodes are often offline), the figures and tables (seconds each); the
    # figure rules say so themselves (rules/reporting.smk).
    localrules:
        all,
        school_raw,
        anchors_raw,
        table1,
        table2,
        heterogeneity,
        lsa,
        sweep,
        performance,

    rule all:
        default_target: True
        input:
            PLAN.targets(),

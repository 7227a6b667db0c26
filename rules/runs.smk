# Runs. One job per experiment: its runs (every method, K and seed) in one process, one
# Python start-up (imports, numba's cache) instead of one per setting, each run still writing
# its own table and metadata. The rule has no wildcards: its outputs are the experiment's
# run files, listed.

for _experiment in PLAN.experiments:
    if _experiment in PLAN.left_out:     # data absent or paper_only: no runs, no rule (rfl/workflow.py)
        continue

    rule:
        name: f"run_{_experiment}"
        input:
            specs=PLAN.run_files(_experiment, "specs"),
            data=PLAN.run_files(_experiment, "data"),
            references=PLAN.run_files(_experiment, "reference"),
        output:
            tables=PLAN.run_files(_experiment, "csv"),
            metas=PLAN.run_files(_experiment, "meta.json"),
        log:
            PLAN.log(f"runs/{_experiment}"),
        benchmark:
            PLAN.benchmark(f"runs/{_experiment}"),
        threads: 1
        resources:
            **PLAN.run_resources(_experiment),
        conda:
            ENV
        shell:
            pinned("rfl runs --specs {input.specs} --data {input.data} --references {input.references} --tables {output.tables} --metas {output.metas} > {log} 2>&1")

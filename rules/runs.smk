# Runs. A setting is one (experiment, algorithm, K, participation); its seeds run in one job
# (one Python start-up instead of one per seed), each still writing its own table and
# metadata. One rule per experiment, because the seeds (the outputs of a job) differ per
# experiment.

for _experiment in PLAN.experiments:

    rule:
        name: f"run_{_experiment}"
        input:
            specs=PLAN.seed_files(_experiment, "specs"),
            data=PLAN.seed_files(_experiment, "data"),
            references=PLAN.seed_files(_experiment, "reference"),
        output:
            tables=PLAN.run_outputs(_experiment, "csv"),
            metas=PLAN.run_outputs(_experiment, "meta.json"),
        log:
            PLAN.log(f"runs/{_experiment}/{{setting}}"),
        benchmark:
            PLAN.benchmark(f"runs/{_experiment}/{{setting}}"),
        threads: 1
        resources:
            **PLAN.run_resources(_experiment),
        conda:
            ENV
        shell:
            pinned("rfl runs --specs {input.specs} --data {input.data} --references {input.references} --tables {output.tables} --metas {output.metas} > {log} 2>&1")

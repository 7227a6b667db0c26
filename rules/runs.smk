# Runs. One job per experiment: its runs (every method, K and seed) in one process, one
# Python start-up (imports, numba's cache) instead of one per setting, each run still writing
# its own table and metadata. The rule has no wildcards: its outputs are the experiment's
# run files, listed.
#
# On a cluster (the cluster settings of profiles/slurm, rules/common.smk) the run jobs are
# batches of experiments instead (rfl/batches.py): each batch's estimated wall time is at least
# the floor and its time request fits the partition's limit; a batch job runs its experiments
# side by side on its cores, each as the `rfl runs` of its local job, with that job's log and
# benchmark record, and writes the same files.

if not PLAN.cluster:
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
            priority: PLAN.run_priority(_experiment)
            resources:
                **PLAN.run_resources(_experiment),
            conda:
                ENV
            shell:
                pinned("rfl runs --specs {input.specs} --data {input.data} --references {input.references} --tables {output.tables} --metas {output.metas} > {log} 2>&1")

else:
    for _k, _batch in enumerate(PLAN.batches):

        rule:
            name: f"run_batch{_k}"
            input:
                spec=PLAN.spec(f"batches/batch{_k}"),
                specs=PLAN.batch_files(_k, "specs"),
                data=PLAN.batch_files(_k, "data"),
                references=PLAN.batch_files(_k, "reference"),
            output:
                tables=PLAN.batch_files(_k, "csv"),
                metas=PLAN.batch_files(_k, "meta.json"),
                benchmarks=PLAN.batch_benchmarks(_k),
            log:
                batch=PLAN.log(f"batches/batch{_k}"),
                **PLAN.batch_logs(_k),
            benchmark:
                PLAN.benchmark(f"batches/batch{_k}")
            threads: PLAN.batch_cores(_k)
            resources:
                **PLAN.batch_resources(_k),
            conda:
                ENV
            shell:
                pinned("rfl batch {input.spec} > {log.batch} 2>&1")

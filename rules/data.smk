# Data: the raw files, and the data files of the dataset instances with their reference optimum.


rule school_raw:
    """ILEA567.DAT from the mirror or the pinned URL, sha256-verified (rfl/data/school.py)."""
    input:
        PLAN.spec("school"),
    output:
        PLAN.school_raw,
    log:
        PLAN.log("school_raw"),
    benchmark:
        PLAN.benchmark("school_raw"),
    threads: 1
    priority: PLAN.top_priority()
    resources:
        **LIGHT,
    conda:
        ENV
    shell:
        pinned("rfl fetch-school {input} {output} > {log} 2>&1")


# The data jobs: each writes data instances with their reference optimum x* (closed form or a
# converged solver) in one process. Locally one job per dataset generates every instance its
# runs use (rfl datasets): a job per instance cost a Python start-up and numba's cache per
# instance, more than most instances' work. On a cluster (rules/common.smk) one job per instance
# (rfl data), with equal resources, so that they go as one SLURM array (profiles/slurm).

if not PLAN.cluster:
    for _dataset, _instances in PLAN.data_instances().items():

        rule:
            name: f"data_{_dataset}"
            input:
                specs=PLAN.data_files(_dataset, "specs"),
                raw=PLAN.raw_inputs(_dataset),
            output:
                data=PLAN.data_files(_dataset, "data"),
                references=PLAN.data_files(_dataset, "reference"),
            log:
                PLAN.log(f"data/{_dataset}"),
            benchmark:
                PLAN.benchmark(f"data/{_dataset}"),
            threads: 1
            priority: PLAN.data_priority(_dataset)
            resources:
                mem_mb=PLAN.data_mem_mb(_dataset),
                runtime=PLAN.reference_runtime(_dataset, len(_instances)),
            conda:
                ENV
            shell:
                pinned("rfl datasets --specs {input.specs} --data {output.data} --references {output.references} --raw {input.raw} > {log} 2>&1")

else:

    rule data:
        """One instance of a dataset, with the raw files its problem declares (raw_inputs), and
        its reference optimum x*, in one process."""
        input:
            spec=PLAN.spec("datasets/{dataset}/{instance}"),
            raw=lambda wildcards: PLAN.raw_inputs(wildcards.dataset),
        output:
            data=PLAN.path("results/data/{dataset}/{instance}.npz"),
            reference=PLAN.path("results/reference/{dataset}/{instance}.npz"),
        log:
            PLAN.log("data/{dataset}/{instance}"),
        benchmark:
            PLAN.benchmark("data/{dataset}/{instance}"),
        threads: 1
        resources:
            mem_mb=lambda wildcards: PLAN.data_mem_mb(wildcards.dataset),
            runtime=lambda wildcards: PLAN.reference_runtime(wildcards.dataset),
        conda:
            ENV
        shell:
            pinned("rfl data {input.spec} {output.data} {input.raw} --reference {output.reference} > {log} 2>&1")


rule anchors_raw:
    """One pinned data file of the authors' code (rfl/data/sources.py), from the mirror or its
    URL, sha256-verified."""
    input:
        PLAN.spec("anchors"),
    output:
        PLAN.anchors_raw,
    wildcard_constraints:
        subpath=PLAN.source_subpaths(),
    log:
        PLAN.log("anchors_raw/{subpath}"),
    benchmark:
        PLAN.benchmark("anchors_raw/{subpath}"),
    threads: 1
    priority: PLAN.top_priority()
    resources:
        **LIGHT,
    conda:
        ENV
    shell:
        pinned("rfl fetch-source {input} {output} > {log} 2>&1")

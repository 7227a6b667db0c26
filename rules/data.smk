# Data: the raw files, one data file per dataset instance with its reference optimum.


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
    resources:
        **LIGHT,
    conda:
        ENV
    shell:
        pinned("rfl fetch-school {input} {output} > {log} 2>&1")


rule data:
    """One instance of a dataset, with the raw files its problem declares (raw_inputs), and its
    reference optimum x* (closed form or a converged solver), in one process: a job of its own
    for x* cost a second start-up per instance for a few seconds of work."""
    input:
        spec=PLAN.spec("datasets/{dataset}/{instance}"),
        raw=PLAN.raw_inputs,
    output:
        data=PLAN.path("results/data/{dataset}/{instance}.npz"),
        reference=PLAN.path("results/reference/{dataset}/{instance}.npz"),
    log:
        PLAN.log("data/{dataset}/{instance}"),
    benchmark:
        PLAN.benchmark("data/{dataset}/{instance}"),
    threads: 1
    resources:
        mem_mb=PLAN.data_mem_mb,
        runtime=PLAN.reference_runtime,
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
    resources:
        **LIGHT,
    conda:
        ENV
    shell:
        pinned("rfl fetch-source {input} {output} > {log} 2>&1")

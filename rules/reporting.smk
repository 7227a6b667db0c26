# Figures, tables and the reproduction report: they read result files only.


# A full run (no target named on the command line) draws the figures in batches, one process
# each (Plan.figure_batches, `rfl figures`): a figure job spent more CPU starting Python and
# importing matplotlib than drawing. A figure asked for by name (snakemake figures/X.pdf) has a
# job of its own, so that it waits only for its own runs. The files are the same either way.
if PLAN.batch_figures:
    for _k in range(len(PLAN.figure_batches())):

        rule:
            name: f"figures_batch{_k}"
            localrule: True
            input:
                spec=PLAN.spec(f"figure_batches/batch{_k}"),
                specs=PLAN.figure_batch_files(_k, "specs"),
                runs=PLAN.figure_batch_files(_k, "runs"),
            output:
                pdfs=[report(pdf, category=category, subcategory=subcategory, labels=labels)
                      for pdf, category, subcategory, labels in PLAN.figure_batch_report(_k)],
                pngs=PLAN.figure_batch_files(_k, "png"),
            log:
                PLAN.log(f"figures/batch{_k}"),
            benchmark:
                PLAN.benchmark(f"figures/batch{_k}")
            threads: 1
            priority: PLAN.top_priority()
            resources:
                **LIGHT,
            conda:
                ENV
            shell:
                pinned("rfl figures {input.spec} > {log} 2>&1")


else:

    rule figure:
        """One figure of an experiment's runs (rfl/reporting/figures.py); PNG beside the PDF."""
        localrule: True
        input:
            spec=PLAN.spec("figures/{figure}"),
            runs=PLAN.run_inputs(PLAN.figure_runs),
            results=PLAN.results_input(),
        output:
            pdf=report(PLAN.path("figures/{figure}.pdf"), category=PLAN.figure_category,
                       subcategory=PLAN.figure_subcategory, labels=PLAN.figure_labels),
            png=PLAN.path("figures/{figure}.png"),
        log:
            PLAN.log("figures/{figure}"),
        benchmark:
            PLAN.benchmark("figures/{figure}"),
        threads: 1
        priority: PLAN.top_priority()
        resources:
            **LIGHT,
        conda:
            ENV
        shell:
            pinned("rfl figure {input.spec} {output.pdf} {input.runs} > {log} 2>&1")


rule table1:
    """Table 1: the parameters of the experiments, as CSV, Markdown and LaTeX."""
    input:
        PLAN.spec("tables/table1"),
    output:
        csv=PLAN.path("paper_tables/table1_parameters.csv"),
        md=PLAN.path("paper_tables/table1_parameters.md"),
        tex=PLAN.path("paper_tables/table1_parameters.tex"),
    log:
        PLAN.log("table1"),
    benchmark:
        PLAN.benchmark("table1"),
    threads: 1
    resources:
        **LIGHT,
    conda:
        ENV
    shell:
        pinned("rfl table1 {input} {output.csv} > {log} 2>&1")


rule table2:
    """Table 2: test NMSE on School against the paper's values."""
    input:
        spec=PLAN.spec("tables/table2"),
        runs=PLAN.run_inputs(PLAN.table2_runs()),
        results=PLAN.results_input(),
    output:
        csv=PLAN.path("paper_tables/table2_school_nmse.csv"),
        md=PLAN.path("paper_tables/table2_school_nmse.md"),
        tex=PLAN.path("paper_tables/table2_school_nmse.tex"),
        sensitivity=PLAN.table2_sensitivity_files(),
    log:
        PLAN.log("table2"),
    benchmark:
        PLAN.benchmark("table2"),
    threads: 1
    priority: PLAN.top_priority()
    resources:
        **LIGHT,
    conda:
        ENV
    shell:
        pinned("rfl table2 {input.spec} {output.csv} {input.runs} > {log} 2>&1")


rule heterogeneity:
    """Stationary excess risk against K under heterogeneity (rfl/reporting/heterogeneity.py)."""
    input:
        spec=PLAN.spec("tables/heterogeneity"),
        runs=PLAN.run_inputs(PLAN.hetero_runs()),
        results=PLAN.results_input(),
    output:
        pdf=report(PLAN.path("figures/fig_heterogeneity.pdf"), category=PLAN.category("Heterogeneity")),
        png=PLAN.path("figures/fig_heterogeneity.png"),
        csv=PLAN.path("paper_tables/heterogeneity.csv"),
        md=PLAN.path("paper_tables/heterogeneity.md"),
    log:
        PLAN.log("heterogeneity"),
    benchmark:
        PLAN.benchmark("heterogeneity"),
    threads: 1
    priority: PLAN.top_priority()
    resources:
        **LIGHT,
    conda:
        ENV
    shell:
        pinned("rfl heterogeneity {input.spec} {output.pdf} {output.csv} {input.runs} > {log} 2>&1")


rule sweep:
    """A swept experiment: its final metric against each swept parameter, figure and table
    (rfl/reporting/sweep.py)."""
    input:
        spec=PLAN.spec("sweeps/{experiment}"),
        runs=PLAN.run_inputs(PLAN.sweep_runs),
        results=PLAN.results_input(),
    output:
        pdf=report(PLAN.path("figures/fig_sweep_{experiment}.pdf"), category=PLAN.category("Sweeps")),
        png=PLAN.path("figures/fig_sweep_{experiment}.png"),
        csv=PLAN.path("paper_tables/sweep_{experiment}.csv"),
        md=PLAN.path("paper_tables/sweep_{experiment}.md"),
    log:
        PLAN.log("sweeps/{experiment}"),
    benchmark:
        PLAN.benchmark("sweeps/{experiment}"),
    threads: 1
    priority: PLAN.top_priority()
    resources:
        **LIGHT,
    conda:
        ENV
    shell:
        pinned("rfl sweep {input.spec} {output.pdf} {output.csv} {input.runs} > {log} 2>&1")


rule lsa:
    """Federated TD(0): FedLSA vs SCAFFLSA with the predicted FedLSA bias (rfl/reporting/lsa.py)."""
    input:
        spec=PLAN.spec("tables/lsa"),
        runs=PLAN.run_inputs(PLAN.lsa_runs()),
        results=PLAN.results_input(),
    output:
        pdf=[report(f, category=PLAN.category("Federated TD(0) / LSA")) for f in PLAN.lsa_figures("pdf")],
        png=PLAN.lsa_figures("png"),
        csv=PLAN.path("paper_tables/fedlsa_bias.csv"),
        md=PLAN.path("paper_tables/fedlsa_bias.md"),
    log:
        PLAN.log("lsa"),
    benchmark:
        PLAN.benchmark("lsa"),
    threads: 1
    priority: PLAN.top_priority()
    resources:
        **LIGHT,
    conda:
        ENV
    shell:
        pinned("rfl lsa {input.spec} {output.csv} {input.runs} --figures {output.pdf} > {log} 2>&1")


# the runs' table, unless the runs come from one (config results)
if not PLAN.results_table:

    rule results:
        """Every run in one table (rfl/results.py): one row per run and round, the run's parameters,
        where it ran and its spec's hash as columns; Parquet with CSV beside it. `rfl merge` joins
        the tables of several machines; the steps that read runs take `--results` to read them
        from one."""
        input:
            runs=PLAN.all_run_tables(),
        output:
            parquet=PLAN.path("results/results.parquet"),
            csv=PLAN.path("results/results.csv"),
        log:
            PLAN.log("results"),
        benchmark:
            PLAN.benchmark("results"),
        threads: 1
        resources:
            mem_mb=PLAN.results_mem_mb(),
            runtime=10,
        conda:
            ENV
        shell:
            pinned("rfl results {output.parquet} {input.runs} > {log} 2>&1")


rule reproduction:
    """REPRODUCTION.md: every claim against the paper, with verdicts; beside it claims.json, its
    HTML rendering and one claim page per figure (rfl/reporting/claim_pages.py), shown in
    `snakemake --report` beside the figure (same category and subcategory), and the report's
    landing page: the summary of the verdicts (rfl/reporting/triage.py; the Snakefile's report)."""
    input:
        spec=PLAN.spec("tables/reproduction"),
        runs=PLAN.run_inputs(PLAN.all_run_tables()),
        results=PLAN.results_input(),
        tables=PLAN.report_inputs(),
        source_size=PLAN.source_size_inputs(),
    output:
        md=PLAN.path("paper_tables/REPRODUCTION.md"),
        html=report(PLAN.path("paper_tables/REPRODUCTION.html"), category=PLAN.category("Reproduction report")),
        claims=PLAN.path("paper_tables/claims.json"),
        landing=PLAN.landing(),
        pages=[report(path, category=category, subcategory=subcategory, labels=labels)
               for path, category, subcategory, labels in PLAN.claim_pages()],
    log:
        PLAN.log("reproduction"),
    benchmark:
        PLAN.benchmark("reproduction"),
    threads: 1
    resources:
        **LIGHT,
    conda:
        ENV
    shell:
        pinned("rfl reproduction {input.spec} {output.md} > {log} 2>&1")


rule performance:
    """CPU seconds per rule kind and per experiment, from every job's benchmark record and log
    (rfl/reporting/performance.py)."""
    input:
        spec=PLAN.spec("tables/performance"),
        benchmarks=PLAN.job_benchmarks(),
    output:
        csv=PLAN.path("paper_tables/performance.csv"),
        md=PLAN.path("paper_tables/performance.md"),
    log:
        PLAN.log("performance"),
    threads: 1
    resources:
        **LIGHT,
    conda:
        ENV
    shell:
        pinned("rfl performance {input.spec} {output.csv} {input.benchmarks} > {log} 2>&1")

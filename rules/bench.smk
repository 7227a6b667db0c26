# The benchmark (rfl/bench/): a config with a `bench` section instead of experiments, e.g.
#   snakemake --cores 2 bench/leaderboard/leaderboard.html --configfile bench/bench.yaml
# (the file `rfl bench` writes beside its outputs). The jobs are those of `rfl bench`, one
# process per job: per problem its data and x*, its step grid on the tuning seed (rfl runs),
# its reported seeds at the chosen steps (rfl bench-runs), then the leaderboard.

import sys

from rfl import io
from rfl.bench.plan import BenchError, BenchPlan
from rfl.registry import RegistryError
from rfl.workflow import LIGHT, pinned

try:
    BENCH = BenchPlan.from_config(config)
except (BenchError, RegistryError) as _error:
    print(f"rfl: error: {_error}", file=sys.stderr)
    raise SystemExit(2)
ENV = "../envs/rfl.yaml"

# the plan as spec files, written where their content changed (as rules/common.smk)
for _path, _spec in BENCH.specs().items():
    io.sync_json(_path, _spec)


for _p in BENCH.problems:
    if not BENCH.runnable(_p):
        continue
    _data, _ref = BENCH.data_path(_p), BENCH.data_path(_p, "reference")
    _tune = BENCH.tuning_specs(_p)
    _report = BENCH.report_specs(_p)

    rule:
        name: f"bench_data_{_p}"
        input:
            BENCH.spec_path(f"datasets/{_p}"),
        output:
            data=_data,
            reference=_ref,
        log:
            BENCH.path(f"logs/bench/data_{_p}.log"),
        threads: 1
        resources:
            **LIGHT,
        conda:
            ENV
        shell:
            pinned("rfl data {input} {output.data} --reference {output.reference} > {log} 2>&1")

    if _tune:

        rule:
            name: f"bench_tune_{_p}"
            input:
                specs=[BENCH.run_spec_path(s) for s in _tune],
                data=[_data] * len(_tune),
                references=[_ref] * len(_tune),
            output:
                tables=[BENCH.run_path(s) for s in _tune],
                metas=[BENCH.run_path(s, "meta.json") for s in _tune],
            log:
                BENCH.path(f"logs/bench/tune_{_p}.log"),
            threads: 1
            resources:
                mem_mb=LIGHT["mem_mb"],
                runtime=BENCH.runtime_minutes(_p, len(_tune)),
            conda:
                ENV
            shell:
                pinned("rfl runs --specs {input.specs} --data {input.data} --references {input.references} --tables {output.tables} --metas {output.metas} > {log} 2>&1")

    rule:
        name: f"bench_runs_{_p}"
        input:
            specs=[BENCH.run_spec_path(s) for s in _report],
            data=[_data] * len(_report),
            references=[_ref] * len(_report),
            tuning=[BENCH.run_path(s) for s in _tune],
        output:
            steps=BENCH.steps_path(_p),
            tables=[BENCH.run_path(s) for s in _report],
            metas=[BENCH.run_path(s, "meta.json") for s in _report],
        log:
            BENCH.path(f"logs/bench/runs_{_p}.log"),
        threads: 1
        resources:
            mem_mb=LIGHT["mem_mb"],
            runtime=BENCH.runtime_minutes(_p, len(_report)),
        conda:
            ENV
        shell:
            pinned("rfl bench-runs --steps {output.steps} --tuning {input.tuning} --specs {input.specs} --data {input.data} --references {input.references} --tables {output.tables} --metas {output.metas} > {log} 2>&1")


rule leaderboard:
    """The leaderboard (CSV, Markdown, sortable HTML) and the performance profiles
    (rfl/bench/leaderboard.py); the HTML page is in `snakemake --report`."""
    input:
        spec=BENCH.spec_path("leaderboard"),
        runs=BENCH.leaderboard_spec()["tables"],
    output:
        csv=BENCH.leaderboard_files()[0],
        md=BENCH.leaderboard_files()[1],
        html=report(BENCH.leaderboard_files()[2], category="Benchmark", labels={"page": "leaderboard"}),
        profile=report(BENCH.leaderboard_files()[3], category="Benchmark", labels={"page": "performance profiles"}),
        rest=BENCH.leaderboard_files()[4:],
    log:
        BENCH.path("logs/bench/leaderboard.log"),
    threads: 1
    resources:
        **LIGHT,
    conda:
        ENV
    shell:
        pinned("rfl leaderboard {input.spec} {output.csv} {input.runs} > {log} 2>&1")

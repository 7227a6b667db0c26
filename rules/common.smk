# The validated config, the Plan of its jobs (rfl/workflow.py holds every helper), the spec
# files, and what every rule shares.

import sys

from snakemake.utils import validate

from rfl import config as rflconfig
from rfl import io
from rfl.batches import BatchError, cluster_settings
from rfl.snakemake_tuning import tune as tune_snakemake
from rfl.workflow import (LIGHT, Plan, absent_data, alternatives, compile_package, is_dry_run,
                          names_targets, pinned, skip_lines)

# Two habits of Snakemake's own process that cost the full run minutes of CPU beside the jobs:
# benchmark sampling twice a second, and asking the size of every input of every ready job at
# every scheduling pass (rfl/snakemake_tuning.py says what changes and why).
tune_snakemake()

# Every job imports rfl in a new process: its bytecode written once here, not compiled by each
# job (an environment with PYTHONDONTWRITEBYTECODE set never writes it; rfl/workflow.py).
compile_package()


# Snakemake's YAML reader keeps the last of two equal keys; read the config files again with
# rfl's, which refuses that (and recursive aliases, alias bombs, deep nesting), naming the file.
# A config's `include:` (paths relative to the file that declares it) and its experiments'
# geometry and step given by name are resolved before anything checks it (rfl/config.py).
# Clear, key-naming errors first (schema + semantic checks, plug-ins that fail to load), then
# Snakemake's own check; rfl's errors end the workflow as `rfl` does: one line, exit status 2.
# The cluster settings (profiles/slurm passes them with --config cluster={...}) are not part of
# the experiments' config: taken out before it is checked, they make the run jobs batches of
# experiments (rfl/batches.py) and nothing else; without them the DAG is one job per experiment.
try:
    CLUSTER = cluster_settings(config.pop("cluster")) if "cluster" in config else None
    _configs = [(_f, io.read_yaml(_f)) for _f in workflow.configfiles]
    config = rflconfig.resolve_includes(config, rflconfig.including_file(_configs))
    config = rflconfig.validate(config)
except (io.YAMLError, rflconfig.ConfigError, BatchError) as _error:
    print(f"rfl: error: {_error}", file=sys.stderr)
    raise SystemExit(2)
validate(config, "../config/schema.yaml")

# An experiment whose pinned data file is in neither the cache nor a mirror, and cannot be
# fetched (offline: $RFL_OFFLINE=1 or its host unreachable), is left out; one line per missing
# file names the experiments it leaves out and says how to get it; their claims are reported
# as not run (rfl/workflow.py).
SKIPPED = absent_data(config)
for _line in skip_lines(SKIPPED):
    print(_line, file=sys.stderr)
PLAN = Plan(config, io.read_yaml("config/paper_values.yaml"), workflow.configfiles, skipped=SKIPPED,
            cluster=CLUSTER, batch_figures=not names_targets(sys.argv))
OUT = PLAN.out
# A dry run (-n) prints the estimated CPU-hours of the run jobs once (rfl/workflow.py); the
# workflow does not know it is a dry run while it parses, so the command line says.
if is_dry_run(sys.argv):
    try:
        print(PLAN.cpu_estimate(), file=sys.stderr)
    except ValueError as _error:         # rfl.cost_model.CostModelError: a bad model file
        print(f"rfl: error: {_error}", file=sys.stderr)
        raise SystemExit(2)
    if CLUSTER:
        print(PLAN.batch_lines(), file=sys.stderr)
# The software of every job (with --software-deployment-method conda).
ENV = "../envs/rfl.yaml"

# the resolved config, one spec file per job
for _path, _spec in PLAN.specs().items():
    io.sync_json(_path, _spec)


wildcard_constraints:
    dataset=alternatives(config["datasets"]),
    instance="fixed|seed[0-9]+",
    figure=alternatives(PLAN.figures),
    experiment=alternatives(PLAN.swept),

"""The benchmark's jobs, as functions: what ``rfl bench`` calls in one process and what the
rules of rules/bench.smk call through ``rfl data``, ``rfl runs``, ``rfl bench-runs`` and
``rfl leaderboard`` (so both make the same files, number for number).

In one process a job is skipped when its files exist and were made from the same spec (a run's
metadata holds its spec; a data file's spec is kept beside it as ``fixed.spec.json``): a second
``rfl bench`` with one more method runs only that method's runs.
"""

from __future__ import annotations

import json
from pathlib import Path

from rfl import io
from rfl.bench import tuning
from rfl.bench.plan import BenchPlan


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def run_is_current(spec: dict, table: str, meta: str) -> bool:
    """Whether ``table`` and ``meta`` exist and are the run of ``spec``."""
    if not (Path(table).is_file() and Path(meta).is_file()):
        return False
    try:
        return _same(io.read_json(meta).get("spec"), spec)
    except (OSError, ValueError):
        return False


def steps_of(specs, tuning_tables) -> dict:
    """method id -> {"alpha", "from", "losses", "all_diverged"}: the tuned step of each method
    of the reported ``specs`` from its grid's run tables (``tuning.choose``), or the step the
    spec carries (given or declared)."""
    losses: dict[str, dict[float, float]] = {}
    for path in tuning_tables:
        table, meta = io.read_run_table(path)
        s = meta["spec"]
        losses.setdefault(s["bench"]["method"], {})[float(s["step"]["alpha"])] = \
            tuning.final_loss(table, s["rounds"])
    out = {}
    for s in specs:
        mid, source = s["bench"]["method"], s["bench"]["step_from"]
        if mid in out:
            continue
        if source == "tuned":
            if mid not in losses:
                raise ValueError(f"no tuning run of method {mid!r} among the tuning tables")
            out[mid] = {"from": "tuned", **tuning.choose(losses[mid])}
        else:
            out[mid] = {"from": source, "alpha": s["step"]["alpha"], "losses": [], "all_diverged": False}
    return out


def with_step(spec: dict, steps: dict) -> dict:
    """``spec`` with its method's chosen step."""
    return {**spec, "step": {**spec["step"], "alpha": steps[spec["bench"]["method"]]["alpha"]}}


def bench_runs(specs, data, references, tables, metas, tuning_tables, steps_out, skip_current=False):
    """The reported runs of one problem (aligned lists as ``rfl runs``): the steps chosen from
    ``tuning_tables`` written to ``steps_out``, then each run at its method's step."""
    from rfl.runner import run_setting

    steps = steps_of(specs, tuning_tables)
    io.write_json(steps_out, steps)
    items = [(with_step(s, steps), d, r, t, m) for s, d, r, t, m in zip(specs, data, references, tables, metas)]
    if skip_current:
        items = [it for it in items if not run_is_current(it[0], it[3], it[4])]
    run_setting(items)


def make_data(plan: BenchPlan, problem: str) -> None:
    """The standard instance of ``problem`` and its x*, unless made from the same spec."""
    from rfl.runner import compute_reference, generate_data

    spec = plan.dataset(problem)
    data, ref = plan.data_path(problem), plan.data_path(problem, "reference")
    kept = Path(data).with_suffix(".spec.json")
    if Path(data).is_file() and Path(ref).is_file() and kept.is_file() and _same(io.read_json(kept), spec):
        return
    generate_data(spec, data)
    compute_reference(spec, data, ref)
    io.write_json(kept, spec)


def run_plan(plan: BenchPlan, log=print) -> list[str]:
    """Every job of ``plan`` in this process (data, grid, reported seeds, leaderboard); returns
    the leaderboard's files."""
    from rfl.bench.leaderboard import write_leaderboard
    from rfl.runner import run_setting

    for p in plan.problems:
        if not plan.runnable(p):
            log(f"rfl bench: {p}: no method can run on it")
            continue
        log(f"rfl bench: {p}: data")
        make_data(plan, p)
        data, ref = plan.data_path(p), plan.data_path(p, "reference")
        tune = plan.tuning_specs(p)
        todo = [(s, data, ref, plan.run_path(s), plan.run_path(s, "meta.json")) for s in tune
                if not run_is_current(s, plan.run_path(s), plan.run_path(s, "meta.json"))]
        log(f"rfl bench: {p}: {len(todo)} of {len(tune)} tuning runs to do")
        run_setting(todo)
        report = plan.report_specs(p)
        log(f"rfl bench: {p}: the reported runs ({len(report)}; those made from the same spec and "
            f"step are kept)")
        bench_runs(report, [data] * len(report), [ref] * len(report),
                   [plan.run_path(s) for s in report], [plan.run_path(s, "meta.json") for s in report],
                   [plan.run_path(s) for s in tune], plan.steps_path(p), skip_current=True)
    files = plan.leaderboard_files()
    write_leaderboard(plan.leaderboard_spec(), files[0])
    return files

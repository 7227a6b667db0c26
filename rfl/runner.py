"""One spec in, result files out: data sets, reference optima, and runs.

The random streams are keyed (see ``rfl.random.stream``):
  data      (dataset seed, "data", dataset name)
  x_1       (run seed, "init", dataset name)          shared by every method of a seed
  draws     ``rfl.algorithms.sampling.Draws(run seed, experiment)``: mini-batches
            (run seed, "sampling", experiment) and participants (run seed, "participation",
            experiment, scheme), shared by every method and sweep value of the experiment
            (common random numbers; the draw number of local step k of round t is t 2^32 + k)
A run writes a tidy table, one row per round t = 0..T (t = 0 is the initial
point): round, cost, excess_risk, grad_norm, dist_to_opt, grad_evals, floats,
wall_time (seconds inside the algorithm, cumulative), status; ``time`` (simulated, cumulative:
``rfl.simtime``) when the experiment declares a time model, ``excess_risk_weighted`` (against
the reweighted objective of ``weighted_objective``: ``weighted_reference``) when it declares
one; and a metadata
record (spec, seed, versions, commit, start time, duration, final status, and what
theory predicts for the run, ``Problem.predictions``: e.g. FedLSA's bias).
"""

from __future__ import annotations

import datetime as _dt
import functools
import platform
import subprocess
import time
from importlib import metadata as _md
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rfl import io
from rfl.io import COLUMNS
from rfl.algorithms import make_step_size
from rfl.algorithms.sampling import SAMPLER_VERSION, Draws
from rfl.progress import Progress
from rfl.random import stream
from rfl.registry import PROBLEMS

if TYPE_CHECKING:     # a run job writes its tables without pandas (io.write_rows), and never imports it
    import pandas as pd

MANIFOLD_TOL = 1e-8   # an iterate farther than this from the manifold counts as diverged


@functools.cache
def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("rfl", "numpy", "scipy", "pandas", "pymanopt", "matplotlib"):
        try:
            out[pkg] = _md.version(pkg)
        except _md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


@functools.cache
def git_commit() -> str:
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                                text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@functools.cache
def machine() -> dict:
    """The machine a run ran on: host name, operating system, processor architecture, CPUs
    (the results table's ``env.machine.*`` columns, ``rfl.results``)."""
    import os
    return {"node": platform.node(), "system": platform.platform(), "arch": platform.machine(),
            "cpus": os.cpu_count()}


def _metadata(spec: dict, start: float, status: str, **extra) -> dict:
    return {
        "spec": spec,
        "seed": spec.get("seed"),
        "versions": versions(),
        "commit": git_commit(),
        "machine": machine(),
        "start_time": _dt.datetime.fromtimestamp(start, _dt.timezone.utc).isoformat(),
        "duration_s": time.time() - start,
        "status": status,
        "sampler": SAMPLER_VERSION,          # the draws' version (rfl.algorithms.sampling)
        **extra,
    }


# ---- data -------------------------------------------------------------------
def data_stream(dataset: dict) -> np.random.Generator:
    """The stream of one data instance: (dataset seed, "data", name[, instance])."""
    keys = ("data", dataset["name"]) + (() if dataset["instance"] == "fixed" else (dataset["instance"],))
    return stream(dataset["seed"], *keys)


def generate_data(dataset: dict, out_npz, inputs=()) -> None:
    """Write the arrays of one data instance (``inputs``: the paths of the problem's
    ``raw_inputs``, in that order)."""
    arrays = PROBLEMS[dataset["problem"]].generate(data_stream(dataset), *inputs, **dataset["params"])
    io.write_arrays(out_npz, arrays)


def load_problem(dataset: dict, data_npz, geometry: dict | None = None):
    return PROBLEMS[dataset["problem"]].from_arrays(io.read_arrays(data_npz), dataset["params"],
                                                    **(geometry or {}))


def compute_reference(dataset: dict, data_npz, out_npz) -> None:
    """x* and F(x*) of a data instance.

    Closed form where the problem has one; otherwise RLBFGS to ||grad F|| below the dataset's
    ``reference.tolerance`` from ``reference.starts`` seeded starting points plus the
    problem's own candidates, keeping the lowest cost.
    """
    from rfl.algorithms.rlbfgs import RLBFGS

    start = time.time()
    problem = load_problem(dataset, data_npz)
    x_star = problem.closed_form_optimum()
    if x_star is not None:
        method, iterations = "closed_form", 0
    else:
        ref = dataset["reference"]
        rng = stream(dataset["seed"], "reference", dataset["name"], dataset["instance"])
        starts = [problem.initial_point(rng) for _ in range(ref["starts"])]
        starts += list(problem.reference_candidates())
        solver = RLBFGS(problem, tolerance=ref["tolerance"], max_iterations=ref["max_iterations"])
        best, best_cost = None, np.inf
        for x0 in starts:
            x, info = solver.solve(x0)
            cost = problem.cost(x)
            if np.isfinite(cost) and (best is None or cost < best_cost):   # a NaN start loses
                best, best_cost = (x, info), cost
        x_star, info = best if best is not None else (None, {})
        method, iterations = "rlbfgs", int(info.get("iterations", -1))
    if x_star is None or not np.isfinite(problem.cost(x_star)):
        raise RuntimeError(f"no finite reference optimum for dataset {dataset['name']!r}")
    grad_norm = problem.grad_norm(x_star)
    io.write_arrays(out_npz, {"x_star": x_star, "F_star": np.array(problem.cost(x_star)),
                              "grad_norm": np.array(grad_norm), "method": np.array(method),
                              "iterations": np.array(iterations),
                              "seconds": np.array(time.time() - start)})


def weighted_reference(dataset: dict, problem, participation, x_star=None) -> dict:
    """The reweighted objective F~ = sum_j w~_j f_j of a participation scheme
    (``ParticipationScheme.objective_weights``: pi~ normalised for ``biased``) and its reference
    optimum: {problem: F~ as a Problem, x_star, F_star, weights, method, gap_F, gap_weighted}.
    Closed form where F~'s problem has one (CPESph, PCA on the sphere: the top eigenvector of
    sum_j w~_j C_j), otherwise RLBFGS with the dataset's ``reference`` settings from its seeded
    starts plus F's own optimum. gap_F = F(x~*) - F(x*), the level at which a run that
    converges to x~* stays against F; gap_weighted = F~(x*) - F~(x~*), the converse (x*: F's
    reference ``x_star``, or F's closed form when not given)."""
    from rfl.algorithms.rlbfgs import RLBFGS
    from rfl.participation import make_scheme

    scheme = make_scheme(participation, problem.n_agents, np.random.default_rng(0))
    weights = scheme.objective_weights(problem.local_sizes)
    pw = problem.reweighted(weights)
    x = pw.closed_form_optimum()
    method = "closed_form"
    if x is None:
        ref = dataset["reference"]
        rng = stream(dataset["seed"], "reference_weighted", dataset["name"], dataset["instance"])
        solver = RLBFGS(pw, tolerance=ref["tolerance"], max_iterations=ref["max_iterations"])
        starts = [pw.initial_point(rng) for _ in range(ref["starts"])] + list(pw.reference_candidates())
        x = min((solver.solve(x0)[0] for x0 in starts),               # a NaN start loses
                key=lambda x: c if np.isfinite(c := pw.cost(x)) else np.inf)
        method = "rlbfgs"
    x_f = problem.closed_form_optimum() if x_star is None else x_star
    out = {"problem": pw, "x_star": x, "F_star": pw.cost(x), "weights": weights, "method": method}
    if x_f is not None:
        out.update(gap_F=problem.cost(x) - problem.cost(x_f), gap_weighted=pw.cost(x_f) - out["F_star"])
    return out


# ---- runs -------------------------------------------------------------------
def make_algorithm(spec: dict, problem):
    """The algorithm of ``spec["algorithm"]`` from the registry: a federated strategy gets the
    step rule, K, batch size and participation; every algorithm gets the options it declares
    that the spec sets (an unset or null option keeps the class's default)."""
    from rfl.registry import ALGORITHMS

    a = spec["algorithm"]
    cls = ALGORITHMS[a["name"]]
    options = {k: a[k] for k in cls.options if a.get(k) is not None}
    if not cls.federated:
        return cls(problem, **options)
    return cls(problem, make_step_size(spec["step"]), a["K"], a["batch_size"],
               a.get("participation"), **options)


def execute(spec: dict, problem, x_star: np.ndarray, F_star: float, algorithm=None,
            weighted: dict | None = None) -> pd.DataFrame:
    """Run one spec on a loaded problem and return its table (stops at divergence).
    ``algorithm``: what yields the iterates (default: the spec's, in process; ``rfl.flower``
    passes one whose rounds run on Flower). ``weighted``: the spec's ``weighted_reference``
    (computed here when the spec declares ``weighted_objective`` and none is given).
    The table's ``attrs`` hold what the metadata records beside it (``replicas``)."""
    return _frame(*execute_rows(spec, problem, x_star, F_star, algorithm, weighted))


def _frame(columns: list[str], rows: list[dict], attrs: dict) -> pd.DataFrame:
    import pandas as pd

    table = pd.DataFrame(rows, columns=columns)
    table.attrs.update(attrs)
    return table


def execute_rows(spec: dict, problem, x_star: np.ndarray, F_star: float, algorithm=None,
                 weighted: dict | None = None) -> tuple[list[str], list[dict], dict]:
    """``execute``'s table as (columns, rows, attrs): one dict per round t = 0..T."""
    from rfl.simtime import Clock

    m = problem.manifold
    x0 = problem.initial_point(stream(spec["seed"], "init", spec["dataset"]["name"]))
    draws = Draws(spec["seed"], spec["experiment"])
    if spec.get("replicas"):
        return execute_replicas(spec, problem, x0, draws, x_star, F_star)
    algorithm = make_algorithm(spec, problem) if algorithm is None else algorithm
    extra = list(problem.metrics) + [c for c in getattr(algorithm, "metrics", {}) if c not in problem.metrics]
    own = list(getattr(algorithm, "metrics", {}))         # the algorithm's columns (decentralised)
    base = list(COLUMNS)
    if spec.get("time"):
        base.append("time")                  # after COLUMNS: every table starts with them
        clock = Clock(spec["time"], problem.n_agents)
    if spec.get("weighted_objective") is not None:
        base.append("excess_risk_weighted")
        if weighted is None:
            weighted = weighted_reference(spec["dataset"], problem, spec["weighted_objective"], x_star)

    rows = []

    def record(t, x, grad_evals, floats, wall, participants=None, metrics=None):
        ok = bool(np.all(np.isfinite(x))) and m.distance_from_manifold(x[None])[0] <= MANIFOLD_TOL
        cost = problem.cost(x) if ok else np.nan
        ok = ok and bool(np.isfinite(cost))
        row = {"round": t, "cost": cost, "excess_risk": cost - F_star if ok else np.nan,
               "grad_norm": problem.grad_norm(x) if ok else np.nan,
               "dist_to_opt": problem.distance_to_optimum(x, x_star) if ok else np.nan,
               "grad_evals": grad_evals, "floats": floats, "wall_time": wall,
               "status": "ok" if ok else "diverged"}
        if "time" in base:
            row["time"] = 0.0 if t == 0 else (clock.tick(participants) if participants is not None
                                              else np.nan)
        if weighted is not None:
            row["excess_risk_weighted"] = weighted["problem"].cost(x) - weighted["F_star"] if ok else np.nan
        row.update(problem.extra_metrics(x) if ok else dict.fromkeys(problem.metrics, np.nan))
        if own:
            row.update({c: (metrics or {}).get(c, np.nan) for c in own})
        rows.append(row)
        return ok

    record(0, x0, 0, 0, 0.0, metrics=algorithm.start_metrics(x0, draws) if own else None)
    progress = Progress(f"{spec['experiment']}/{spec['run_id']}", spec["rounds"])
    wall = 0.0
    tic = time.perf_counter()
    with np.errstate(all="ignore"):
        for t, x, counters in algorithm.iterate(x0, spec["rounds"], draws):
            wall += time.perf_counter() - tic
            if not record(t + 1, x, counters.grad_evals, counters.floats, wall,
                          getattr(counters, "participants", None), getattr(counters, "metrics", None)):
                break
            progress.update(t + 1)
            tic = time.perf_counter()
    progress.close()
    return base + extra, rows, {}


def execute_replicas(spec: dict, problem, x0, draws, x_star, F_star) -> tuple[list[str], list[dict], dict]:
    """``execute`` of a spec with ``replicas: R`` (``rfl.algorithms.replicas``): R chains from
    x0, replica r on ``Draws(seed, experiment, "replica", r)``. One row per round, each metric
    the mean over the replicas; ``attrs["replicas"]``: the sample for the metadata (count,
    the window's first round, per replica the mean of err_* and of ||x_r - x*||^2 over the
    window)."""
    from rfl.algorithms import replicas

    R = int(spec["replicas"])
    algorithm = make_algorithm(spec, replicas.ReplicatedProblem(problem, R))
    unknown = [c for c in problem.metrics if c not in replicas.COORDINATES]
    if unknown:
        raise ValueError(f"replicas: problem {spec['dataset']['problem']!r} records "
                         f"{', '.join(unknown)}, which replicas do not compute")
    start = replicas.window_start(spec["rounds"])
    sums, count = np.zeros((R, len(replicas.COORDINATES))), 0
    sq_sums = np.zeros(R)                   # per replica: sum of ||x_r - x*||^2 over the window
    rows = []

    def record(t, X, grad_evals, floats, wall):
        nonlocal sums, count, sq_sums
        ok = bool(np.all(np.isfinite(X)))
        v = replicas.metrics(problem, X, x_star, F_star) if ok else None
        ok = ok and bool(np.all(np.isfinite(v["cost"])))
        row = {"round": t, "grad_evals": grad_evals, "floats": floats, "wall_time": wall,
               "status": "ok" if ok else "diverged"}
        for c in COLUMNS[1:5] + list(problem.metrics):
            row[c] = float(np.mean(v[c])) if ok else np.nan
        if ok and t >= start:
            sums += np.stack([v[c] for c in replicas.COORDINATES], axis=1)
            sq_sums += v["dist_to_opt"] ** 2
            count += 1
        rows.append(row)
        return ok

    X0 = np.repeat(np.asarray(x0)[None], R, axis=0)
    record(0, X0, 0, 0, 0.0)
    progress = Progress(f"{spec['experiment']}/{spec['run_id']}", spec["rounds"])
    wall, tic = 0.0, time.perf_counter()
    with np.errstate(all="ignore"):
        for t, X, counters in replicas.iterate(algorithm, X0, spec["rounds"],
                                               replicas.replica_draws(draws, R)):
            wall += time.perf_counter() - tic
            if not record(t + 1, X, counters.grad_evals, counters.floats, wall):
                break
            progress.update(t + 1)
            tic = time.perf_counter()
    progress.close()
    return list(COLUMNS) + list(problem.metrics), rows, {"replicas": {
        "count": R, "draws": "Draws(seed, experiment, 'replica', r), r = 0..count-1",
        "rows": (f"each column the mean over the replicas; cost, excess_risk, grad_norm over "
                 f"replicas 0..{min(R, replicas.COSTLY_REPLICAS) - 1}; counters of one replica"),
        "window_start": start, "window_rounds": count,
        "columns": list(replicas.COORDINATES),
        "err_mean": (sums / max(count, 1)).tolist() if count else None,
        "sq_dist_mean": (sq_sums / count).tolist() if count else None}}


def _algorithm_metrics(spec: dict) -> dict:
    """The definitions of the run's algorithm's own columns (``Declared.metrics``)."""
    from rfl.registry import ALGORITHMS
    return dict(getattr(ALGORITHMS.get(spec["algorithm"]["name"]), "metrics", {}) or {})


def run(spec: dict, data_npz, reference_npz, out_csv, out_meta, problem=None,
        frame: bool = True) -> pd.DataFrame | None:
    """Execute a run spec and write its metadata, then its table (each atomically); return the
    table (None with ``frame=False``: ``run_setting``, whose job then never imports pandas).
    ``problem``: the spec's problem already loaded from ``data_npz`` (``run_setting`` shares one
    between the runs of a data file); loaded here when None."""
    start = time.time()
    if problem is None:
        problem = load_problem(spec["dataset"], data_npz, spec.get("geometry"))
    ref = io.read_arrays(reference_npz)
    weighted = None
    if spec.get("weighted_objective") is not None:
        weighted = weighted_reference(spec["dataset"], problem, spec["weighted_objective"],
                                      ref["x_star"])
    columns, rows, attrs = execute_rows(spec, problem, ref["x_star"], float(ref["F_star"]),
                                        weighted=weighted)
    status = "diverged" if any(row["status"] == "diverged" for row in rows) else "ok"
    extra = dict(attrs)                       # replicas: the sample
    if weighted is not None:
        extra["weighted_objective"] = {
            "participation": spec["weighted_objective"], "weights": weighted["weights"].tolist(),
            "F_star": float(weighted["F_star"]), "method": weighted["method"],
            **{k: float(weighted[k]) for k in ("gap_F", "gap_weighted") if k in weighted}}
    # the metadata first, the table (the result) last: a table never exists without its
    # metadata; a kill in between leaves only metadata, an incomplete job that is rerun
    io.write_json(out_meta, _metadata(spec, start, status,
                                      rounds_completed=int(rows[-1]["round"]),
                                      F_star=float(ref["F_star"]),
                                      reference_method=str(ref["method"]),
                                      predictions=problem.predictions(spec),
                                      data=problem.data_notes(),
                                      metric_definitions={**problem.metric_definitions,
                                                          **_algorithm_metrics(spec)},
                                      **extra))
    io.write_rows(out_csv, columns, rows)
    return _frame(columns, rows, attrs) if frame else None


def run_setting(items) -> None:
    """Execute several runs in one process: ``items`` are (spec, data_npz, reference_npz,
    out_csv, out_meta) tuples, typically the runs of one experiment. Each run is independent
    (its own streams and files, exactly as ``run``), so their order changes no number; one
    process saves a Python start-up per run, and the runs on one data file, dataset and
    geometry share one loaded problem: its precomputations (the agents' Gram matrices: seconds
    at MNIST's size) are made once. Sharing is safe because a problem's state after loading is
    its data and caches keyed by the point asked for."""
    import itertools
    import json

    def key(item):
        spec, data_npz = item[:2]
        return (str(data_npz), json.dumps(spec["dataset"], sort_keys=True),
                json.dumps(spec.get("geometry"), sort_keys=True))

    for _, group in itertools.groupby(sorted(items, key=key), key=key):
        group = list(group)
        spec, data_npz = group[0][:2]
        problem = load_problem(spec["dataset"], data_npz, spec.get("geometry"))
        for item in group:
            run(*item, problem=problem, frame=False)
        del problem                             # one problem in memory at a time

"""One spec in, result files out: data sets, reference optima, and runs.

The random streams are keyed (see ``rfl.random.stream``):
  data      (dataset seed, "data", dataset name)
  x_1       (run seed, "init", dataset name)          shared by every method of a seed
  draws     (run seed, "sampling", experiment, run id)
A run writes a tidy table, one row per round t = 0..T (t = 0 is the initial
point): round, cost, excess_risk, grad_norm, dist_to_opt, grad_evals, floats,
wall_time (seconds inside the algorithm, cumulative), status; and a metadata
record (spec, seed, versions, commit, start time, duration, final status).
"""

from __future__ import annotations

import datetime as _dt
import platform
import subprocess
import time
from importlib import metadata as _md
from pathlib import Path

import numpy as np
import pandas as pd

from rfl import io
from rfl.algorithms import FEDERATED, make_step_size
from rfl.data.generators import GENERATORS
from rfl.problems import PROBLEMS
from rfl.random import stream

COLUMNS = ["round", "cost", "excess_risk", "grad_norm", "dist_to_opt",
           "grad_evals", "floats", "wall_time", "status"]
MANIFOLD_TOL = 1e-8   # an iterate farther than this from the manifold counts as diverged


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("rfl", "numpy", "scipy", "pandas", "pymanopt", "matplotlib"):
        try:
            out[pkg] = _md.version(pkg)
        except _md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


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


def _metadata(spec: dict, start: float, status: str, **extra) -> dict:
    return {
        "spec": spec,
        "seed": spec.get("seed"),
        "versions": versions(),
        "commit": git_commit(),
        "start_time": _dt.datetime.fromtimestamp(start, _dt.timezone.utc).isoformat(),
        "duration_s": time.time() - start,
        "status": status,
        **extra,
    }


# ---- data -------------------------------------------------------------------
def generate_data(dataset: dict, out_npz: str | Path) -> None:
    """Write the arrays of one dataset spec ``{"name", "problem", "seed", "params"}``."""
    rng = stream(dataset["seed"], "data", dataset["name"])
    io.write_arrays(out_npz, GENERATORS[dataset["problem"]](rng, **dataset["params"]))


def load_problem(dataset: dict, data_npz, geometry: dict | None = None):
    return PROBLEMS[dataset["problem"]].from_arrays(io.read_arrays(data_npz), **(geometry or {}))


def compute_reference(dataset: dict, data_npz, out_npz) -> None:
    """x* and F(x*) of a dataset: closed form where the problem has one."""
    problem = load_problem(dataset, data_npz)
    x_star = problem.closed_form_optimum()
    if x_star is None:
        raise NotImplementedError(f"problem {dataset['problem']!r} has no reference solver yet")
    io.write_arrays(out_npz, {"x_star": x_star, "F_star": np.array(problem.cost(x_star)),
                              "grad_norm": np.array(problem.grad_norm(x_star)),
                              "method": np.array("closed_form")})


# ---- runs -------------------------------------------------------------------
def make_algorithm(spec: dict, problem):
    a = spec["algorithm"]
    return FEDERATED[a["name"]](problem, make_step_size(spec["step"]), a["K"], a["batch_size"],
                                a.get("participation"))


def execute(spec: dict, problem, x_star: np.ndarray, F_star: float) -> pd.DataFrame:
    """Run one spec on a loaded problem and return its table (stops at divergence)."""
    m = problem.manifold
    x0 = problem.initial_point(stream(spec["seed"], "init", spec["dataset"]["name"]))
    rng = stream(spec["seed"], "sampling", spec["experiment"], spec["run_id"])
    algorithm = make_algorithm(spec, problem)

    rows = []

    def record(t, x, grad_evals, floats, wall):
        ok = bool(np.all(np.isfinite(x))) and m.distance_from_manifold(x[None])[0] <= MANIFOLD_TOL
        cost = problem.cost(x) if ok else np.nan
        ok = ok and np.isfinite(cost)
        rows.append({
            "round": t, "cost": cost, "excess_risk": cost - F_star if ok else np.nan,
            "grad_norm": problem.grad_norm(x) if ok else np.nan,
            "dist_to_opt": problem.distance_to_optimum(x, x_star) if ok else np.nan,
            "grad_evals": grad_evals, "floats": floats, "wall_time": wall,
            "status": "ok" if ok else "diverged",
        })
        return ok

    record(0, x0, 0, 0, 0.0)
    wall = 0.0
    tic = time.perf_counter()
    with np.errstate(all="ignore"):
        for t, x, counters in algorithm.iterate(x0, spec["rounds"], rng):
            wall += time.perf_counter() - tic
            if not record(t + 1, x, counters.grad_evals, counters.floats, wall):
                break
            tic = time.perf_counter()
    return pd.DataFrame(rows, columns=COLUMNS)


def run(spec: dict, data_npz, reference_npz, out_csv, out_meta) -> pd.DataFrame:
    """Execute a run spec and write its table and metadata (atomically, table first)."""
    start = time.time()
    problem = load_problem(spec["dataset"], data_npz, spec.get("geometry"))
    ref = io.read_arrays(reference_npz)
    table = execute(spec, problem, ref["x_star"], float(ref["F_star"]))
    status = "diverged" if (table["status"] == "diverged").any() else "ok"
    io.write_table(out_csv, table)
    io.write_json(out_meta, _metadata(spec, start, status, rounds_completed=int(table["round"].iloc[-1]),
                                      F_star=float(ref["F_star"])))
    return table

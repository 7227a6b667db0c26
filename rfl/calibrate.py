"""``rfl calibrate``: measure the cost model's coefficients (rfl.cost_model) on this machine.

For every dataset a config's runs use, one fresh process (``probe``, ``python -m
rfl.calibrate``) measures in CPU time (``time.process_time``): its start-up (interpreter and
the imports of a run job), the first and a second load of the data, and for every algorithm
the config runs on it a warm-up run (one round) and short runs of the config's first spec of
that pair at its dataset's size: the spec as it is at T0 and 3 T0 rounds, with 2K, with 4B,
with R/4 replicas (when varied), or the config's other shapes of the pair, T0 chosen so that
the rounds take ~TARGET_S and at least half the run's fixed part (a run of 4096 replicas
spends 0.4 s on their streams before its first round). The short runs that choose T0
(``rounds_for``) are measurements too. ``fit`` solves for the pair's coefficients by
non-negative least squares (scipy.optimize.nnls) on the features of
``rfl.cost_model.run_features``; ``fit_error`` is what they leave unexplained. The runs write
their tables into a temporary directory (writing is part of a run's cost) against a stand-in
x* (the initial point): the record of a round costs the same at any point.
"""

from __future__ import annotations

import copy
import datetime as _dt
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rfl import cost_model
from rfl.registry import ALGORITHMS

MAX_ROUNDS = 5000
#: the probe process's command: a run job's imports (the CLI first, as ``rfl runs`` does), then
#: this module as __main__ (its ``probe``); the CLI is not imported here, which it imports
_PROBE = "import rfl.cli, runpy; runpy.run_module('rfl.calibrate', run_name='__main__')"
#: the probe of a design run's rounds stops at this extra CPU over 2 rounds (and at least
#: FIXED_SHARE of the 2 rounds' own: the run's fixed part may be large), or at PROBE_ROUNDS
PROBE_S = 0.01
FIXED_SHARE = 0.2
PROBE_ROUNDS = 2048
#: the rounds of a design run cost ~TARGET_S, or half the run's fixed part, at most ROUNDS_CAP_S
ROUNDS_CAP_S = 0.3
#: a pair whose fit leaves more of a probe's CPU unexplained is named in calibrate's log
FIT_WARN = 0.25
#: the most distinct (K, B, participation, R) shapes of one pair measured
MAX_SHAPES = 4


def shapes_of(specs: list[dict]) -> list[dict]:
    """The distinct shapes (algorithm K, batch_size, participation; replicas) of one pair's
    run specs, at most MAX_SHAPES: those of the smallest and the largest K B R first."""
    seen = {}
    for s in specs:
        a = s["algorithm"]
        shape = {"K": a.get("K"), "batch_size": a.get("batch_size"),
                 "participation": a.get("participation"), "replicas": s.get("replicas")}
        seen.setdefault(json.dumps(shape, sort_keys=True), shape)
    shapes = list(seen.values())

    def size(sh):
        return (sh["K"] or 1) * (sh["batch_size"] or 1) * (sh["replicas"] or 1)
    ordered = sorted(shapes, key=size)
    picked = [ordered[0], ordered[-1]] + ordered[1:-1]
    return list({json.dumps(sh, sort_keys=True): sh for sh in picked}.values())[:MAX_SHAPES]


def design(spec: dict, shapes: list[dict]) -> list[dict]:
    """The calibration runs of one pair (``_times``: the rounds in units of the run's T0):
    every shape of the config once, the first one also at 3 T0; with one shape only, also 2K
    and 4B (or B/4); with replicas, R/4 at 3 T0 (``_design_spec``). Each shape's T0 probes
    (2, 8, ... rounds) are measurements too, so every shape is seen at two T at least."""
    def shaped(sh, times=1):
        s = copy.deepcopy(spec)
        a = s["algorithm"]
        for k in ("K", "batch_size", "participation"):
            if k in a:
                a[k] = sh[k]
        if sh["replicas"]:
            s["replicas"] = sh["replicas"]
        else:
            s.pop("replicas", None)
        return dict(s, _times=times)
    runs = [shaped(shapes[0]), shaped(shapes[0], 3)]
    runs += [shaped(sh) for sh in shapes[1:]]
    base = shaped(shapes[0])
    if len(shapes) == 1:
        runs += [dict(x, _times=1) for x in (_design_spec(base, 1, 2, 1, 1), _design_spec(base, 1, 1, 4, 1))
                 if x is not None]
    if shapes[0]["replicas"]:
        x = _design_spec(base, 1, 1, 1, 4)
        if x is not None:
            runs.append(dict(x, _times=3))
    return runs


def _design_spec(spec: dict, T: int, kf: int, bf: int, rdiv: int) -> dict | None:
    """``spec`` with T rounds, K x kf, batch size x bf (/ bf when larger than an agent's data)
    and replicas / rdiv; None when the change does not apply (a centralized algorithm has no K
    or B; fewer than 4 replicas)."""
    s = copy.deepcopy(spec)
    s["rounds"] = int(T)
    a = s["algorithm"]
    if kf != 1:
        if not a.get("K") or getattr(ALGORITHMS.get(a.get("name")), "decentralised", False):
            return None                     # no K, or one gradient step per round (decentralised)
        a["K"] = a["K"] * kf
    if bf != 1:                 # x bf, or / bf where x bf exceeds the smallest agent's data
        if not a.get("batch_size"):
            return None
        smallest = min(cost_model.local_sizes(s["dataset"]))
        B = a["batch_size"] * bf if a["batch_size"] * bf <= smallest else max(1, a["batch_size"] // bf)
        if B == a["batch_size"]:
            return None
        a["batch_size"] = B
    if rdiv != 1:
        R = int(s.get("replicas") or 1)
        if R < 4:
            return None
        s["replicas"] = R // rdiv
    return s


def first_rounds(c2: float, T: int, cT: float) -> int:
    """T0 of a design run from the CPU seconds c2 of 2 rounds and cT of T: the rounds whose
    part is TARGET_S, or half the run's fixed part c2 - 2 (cT - c2) / (T - 2) when that is
    more (at most ROUNDS_CAP_S), within [3, MAX_ROUNDS]."""
    per_round = max(cT - c2, 1e-9) / (T - 2)
    fixed = max(c2 - 2 * per_round, 0.0)
    target = min(max(cost_model.TARGET_S, fixed / 2), ROUNDS_CAP_S)
    return int(min(MAX_ROUNDS, max(3, math.ceil(target / per_round))))


def probe(request: dict) -> dict:
    """Run in a fresh process: the start-up, loading and run costs of one dataset's pairs
    (module docstring). ``request``: {"data_npz", "specs": [a run spec per algorithm]}."""
    startup = time.process_time()           # interpreter + this module's imports
    import numpy as np  # noqa: F401 - a run job's imports, measured as start-up

    from rfl import io, runner  # noqa: F401   (rfl.cli: imported by the process's command, ``_PROBE``)
    from rfl.random import stream
    startup = time.process_time()
    specs = request["specs"]
    ds, geometry = specs[0]["dataset"], specs[0].get("geometry")
    t = time.process_time()
    problem = runner.load_problem(ds, request["data_npz"], geometry)
    load_first = time.process_time() - t
    t = time.process_time()
    problem = runner.load_problem(ds, request["data_npz"], geometry)
    load_next = time.process_time() - t
    out = {"startup_s": startup, "load_first_s": load_first, "load_next_s": load_next, "pairs": []}
    with tempfile.TemporaryDirectory(prefix="rfl-calibrate-") as tmp:
        x0 = problem.initial_point(stream(0, "calibrate", ds["name"]))
        ref = Path(tmp, "reference.npz")
        io.write_arrays(ref, {"x_star": x0, "F_star": np.array(problem.cost(x0)),
                              "method": np.array("calibration")})
        csv, meta = Path(tmp, "run.csv"), Path(tmp, "run.meta.json")

        problems = {json.dumps(geometry, sort_keys=True): problem}
        # a problem whose data is a stream of T steps (the dynamic Frechet means) runs at most
        # T rounds: a probe asks for no more (its measured rounds are those it completed)
        horizon = getattr(problem, "horizon", None)
        limit = min(PROBE_ROUNDS, int(horizon)) if horizon else PROBE_ROUNDS

        def timed(s):
            if s["rounds"] > limit:
                s = dict(s, rounds=limit)
            key = json.dumps(s.get("geometry"), sort_keys=True)
            if key not in problems:             # another geometry: its own problem (as a job)
                problems[key] = runner.load_problem(ds, request["data_npz"], s.get("geometry"))
            t = time.process_time()
            # as ``run_setting`` runs it (no table returned): a run job never imports pandas,
            # and with the table the first run measured pandas' import (~0.45 s), which every
            # job's estimate then carried as first_run_s (the 1-round jobs 1.7x over)
            runner.run(s, request["data_npz"], ref, csv, meta, problem=problems[key], frame=False)
            seconds = time.process_time() - t
            return seconds, int(json.loads(meta.read_text())["rounds_completed"])

        def point(s, seconds, done) -> dict:
            f = cost_model.run_factors(s)
            f["T"] = done                           # a run that diverged stops early
            return {"factors": f, "cpu_s": seconds}

        def rounds_for(s, points) -> int:
            """T0 of a design run: rounds whose part of the run's CPU is ~TARGET_S, or half
            the run's fixed part (at most ROUNDS_CAP_S), from the extra CPU of T = 2, 8, 32, ...
            rounds over 2 (the fixed part cancels); each of these runs is added to ``points``.
            A run of 1 round first, not measured: a shape's first run may load what no other
            run pays again (the minibatch sampler's compiled kernels: 0.48 s against 8 ms for
            the 2 rounds after it, with B / 4 of a full-batch pair)."""
            timed(dict(s, rounds=1))
            c2, done = timed(dict(s, rounds=2))
            points.append(point(s, c2, done))
            T = 2
            while T < limit:
                T = min(T * 4, limit)
                cT, done = timed(dict(s, rounds=T))
                points.append(point(s, cT, done))
                if cT - c2 >= max(PROBE_S, FIXED_SHARE * c2):
                    break
            return first_rounds(c2, T, cT)

        if request.get("warm_only"):       # ``calibrate``'s first pass: compile, measure nothing
            for spec in specs:
                timed(_design_spec(spec, 1, 1, 1, 1))
            return out
        for spec, shapes in zip(specs, request["shapes"]):
            first = _design_spec(spec, 1, 1, 1, 1)
            warm, _ = timed(first)
            points, T0s = [], {}
            for s in design(spec, shapes):
                times = s.pop("_times")
                key = json.dumps(s, sort_keys=True)
                if key not in T0s:
                    T0s[key] = rounds_for(s, points)
                s["rounds"] = T0s[key] * times
                points.append(point(s, *timed(s)))
            out["pairs"].append({"algorithm": spec["algorithm"]["name"], "warm_s": warm,
                                 "warm_factors": dict(cost_model.run_factors(first), T=1),
                                 "points": points})
    return out


def fit(points: list[dict]) -> dict:
    """The coefficients (``cost_model.COEFFICIENTS``) of one pair from its calibration points
    ({"factors": T K B P R, "cpu_s"}): non-negative least squares on the features that the
    design varied (a feature proportional to another over the points is left at 0), each point
    weighted by 1 / its CPU seconds (relative error), those under cost_model.TARGET_S by
    1 / TARGET_S (a probe of a few milliseconds is told to the clock's and the machine's noise)."""
    import numpy as np
    from scipy.optimize import nnls

    X = np.array([cost_model.run_features(**p["factors"]) for p in points], dtype=float)
    y = np.array([p["cpu_s"] for p in points], dtype=float)
    cols = [0]
    for j in range(1, len(cost_model.COEFFICIENTS)):   # keep a column not in the span of those kept
        kept = X[:, cols]
        coef, *_ = np.linalg.lstsq(kept, X[:, j], rcond=None)
        if np.linalg.norm(kept @ coef - X[:, j]) > 1e-9 * max(np.linalg.norm(X[:, j]), 1.0):
            cols.append(j)
    w = 1.0 / np.maximum(y, cost_model.TARGET_S)
    coef, _ = nnls(X[:, cols] * w[:, None], y * w)
    out = dict.fromkeys(cost_model.COEFFICIENTS, 0.0)
    for j, c in zip(cols, coef):
        out[cost_model.COEFFICIENTS[j]] = float(c)
    return out


def fit_error(points: list[dict], coefficients: dict) -> float:
    """The largest |predicted - measured| / max(measured, TARGET_S) over ``points`` (``fit``'s
    weights) of the run cost with ``coefficients``: near 0 when the features explain the
    probes, large when a cost they lack (or noise) dominates one."""
    worst = 0.0
    for p in points:
        x = cost_model.run_features(**p["factors"])
        pred = sum(coefficients[k] * v for k, v in zip(cost_model.COEFFICIENTS, x))
        worst = max(worst, abs(pred - p["cpu_s"]) / max(p["cpu_s"], cost_model.TARGET_S))
    return worst


def _job_env() -> dict:
    """The environment of a run job (rfl.workflow.PIN at one thread): BLAS pinned, no progress."""
    import os
    return dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                RFL_PROGRESS="0")


def _machine() -> str:
    from rfl.reporting.performance import machine
    return machine()


def _commit() -> str:
    from rfl.runner import git_commit
    return git_commit()


def data_file(plan, spec: dict, data_dir: Path | None, tmp: Path) -> Path | None:
    """The data file of ``spec``'s dataset instance: DATA_DIR/<name>/<instance>.npz when it
    exists, else generated into ``tmp`` from the raw files the workflow fetches, in its cache
    or a mirror (None when one is absent)."""
    from rfl.runner import generate_data
    from rfl.workflow import raw_inputs_of
    ds = spec["dataset"]
    if data_dir is not None:
        path = data_dir / ds["name"] / f"{ds['instance']}.npz"
        if path.is_file():
            return path
    from rfl.data import school, sources
    raw = []
    for name in raw_inputs_of(ds["problem"], ds.get("params")):
        found = (school.locate(plan.raw_files[name]) if name == "school"
                 else sources.locate(name, plan.raw_files[name]))
        if found is None:
            return None
        raw.append(found)
    path = tmp / ds["name"] / f"{ds['instance']}.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    generate_data(ds, path, raw)
    return path


def calibrate(config: dict, plan, data_dir=None, experiments=None, log=print,
              configfile: str = "-", jobs: int = 1) -> dict:
    """The cost model of the runs of ``config`` (only ``experiments`` when given), measured
    here: one ``probe`` process per dataset, ``jobs`` at a time (the cores the workflow will
    run on: CPU seconds grow when the cores' shared caches are busy), then ``fit`` per pair."""
    import statistics

    from rfl.workflow import compile_package

    compile_package()                     # the probes import rfl as the workflow's jobs do
    specs = [s for e, ss in cost_model.experiment_specs(config).items()
             if (experiments is None or e in experiments) and e not in plan.skipped for s in ss]
    by_dataset: dict[str, dict[str, dict]] = {}
    pair_specs: dict[tuple, list] = {}
    for s in specs:                       # the first spec of each pair (cost_model.pair_key)
        by_dataset.setdefault(s["dataset"]["name"], {}).setdefault(cost_model.pair_key(s), s)
        pair_specs.setdefault(cost_model.pair_key(s), []).append(s)
    model = {"format": cost_model.FORMAT, "version": cost_model.VERSION, "commit": _commit(),
             "machine": _machine(), "measured": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
             "config": configfile, "jobs": int(jobs), "startup_s": 0.0, "datasets": [], "pairs": [], "skipped": []}
    startups, cpu_total = [], 0.0
    with tempfile.TemporaryDirectory(prefix="rfl-calibrate-data-") as tmp:
        requests = {}
        for name, pairs in by_dataset.items():
            first = next(iter(pairs.values()))
            npz = data_file(plan, first, Path(data_dir) if data_dir else None, Path(tmp))
            if npz is None:
                log(f"rfl calibrate: {name}: a raw data file is absent; its pairs are not measured")
                model["skipped"].append(name)
                continue
            requests[name] = {"data_npz": str(npz), "specs": list(pairs.values()),
                              "shapes": [shapes_of(pair_specs[key]) for key in pairs]}

        def probe_process(name, warm_only=False):
            request = dict(requests[name], warm_only=True) if warm_only else requests[name]
            r = subprocess.run([sys.executable, "-c", _PROBE], input=json.dumps(request),
                               capture_output=True, text=True, check=False, env=_job_env())
            if r.returncode != 0:
                raise RuntimeError(f"calibration of dataset {name!r} failed: {r.stderr.strip()[-2000:]}")
            return r
        # First every pair's one-round run, unmeasured: numba compiles the kernels they use into
        # its cache (a fresh checkout has none). The first pair's first round on a dataset then
        # measures loading the cache, as a run job does, not compiling: in a workflow only the
        # first job to use a kernel compiles it (5-7 CPU-s for CPESph's or School's kernels),
        # and without this pass CPESph's first_run_s was 6.6 s, which every CPESph job was
        # then estimated to pay (4-5x over on the short ones).
        for name in requests:
            probe_process(name, warm_only=True)
        # ``jobs`` probes at once: the contention of a run with as many cores (snakemake --cores)
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=max(1, int(jobs))) as pool:
            done = dict(zip(requests, pool.map(probe_process, requests)))
        for name, r in done.items():
            pairs = by_dataset[name]
            first = next(iter(pairs.values()))
            result = json.loads(r.stdout.strip().splitlines()[-1])
            startups.append(result["startup_s"])
            ds = first["dataset"]
            model["datasets"].append({"name": name, "problem": ds["problem"], "params": ds["params"],
                                      "load_first_s": result["load_first_s"],
                                      "load_next_s": result["load_next_s"]})
            cpu = result["startup_s"] + result["load_first_s"] + result["load_next_s"]
            for i, (pair, spec) in enumerate(zip(result["pairs"], pairs.values())):
                coef = fit(pair["points"])
                error = fit_error(pair["points"], coef)
                if error > FIT_WARN:
                    log(f"rfl calibrate: {name}/{pair['algorithm']}: the fit leaves {100 * error:.0f} % of "
                        f"a probe's CPU unexplained (noise, or a cost the model's features lack)")
                f1 = pair["warm_factors"]            # the warm-up run: the pair's spec, 1 round
                one_round = sum(coef[k] * x for k, x in zip(cost_model.COEFFICIENTS,
                                                            cost_model.run_features(**f1)))
                warmup = max(0.0, pair["warm_s"] - one_round)
                if i == 0:                  # the first run on the problem in a process
                    model["datasets"][-1]["first_run_s"] = warmup
                model["pairs"].append({"dataset": name, "problem": ds["problem"], "params": ds["params"],
                                       "algorithm": pair["algorithm"], "coefficients": coef,
                                       "variant": cost_model.variant(spec),
                                       "warmup_s": 0.0 if i == 0 else warmup,
                                       "points": len(pair["points"]), "fit_error": round(error, 4)})
                cpu += pair["warm_s"] + sum(p["cpu_s"] for p in pair["points"])
            cpu_total += cpu
            log(f"rfl calibrate: {name}: {len(result['pairs'])} algorithm(s) and variant(s), {cpu:.1f} CPU-s")
    model["startup_s"] = statistics.median(startups) if startups else 0.0
    model["calibration_cpu_s"] = round(cpu_total, 2)
    return cost_model.validate(model, "calibration")


def merged(old: dict, new: dict) -> dict:
    """``old`` with the datasets and pairs of ``new`` (a dataset or pair both measure: new's),
    the commits and machines of both (when they differ), the start-up the mean of both weighted by their datasets (each
    probe measures one); ``config`` and ``measured`` list both."""
    def dkey(d):
        return (d["problem"], cost_model.params_key(d["params"]))

    def pkey(p):
        return dkey(p) + (p["algorithm"], json.dumps(p.get("variant"), sort_keys=True))
    out = dict(new)
    out["datasets"] = [d for d in old["datasets"] if dkey(d) not in {dkey(x) for x in new["datasets"]}] + new["datasets"]
    out["pairs"] = [p for p in old["pairs"] if pkey(p) not in {pkey(x) for x in new["pairs"]}] + new["pairs"]
    for k in ("config", "measured", "commit", "machine", "jobs"):
        if old.get(k, "-") != new.get(k, "-"):
            out[k] = f"{old.get(k, '-')}; {new.get(k, '-')}"
    n_old, n_new = len(old["datasets"]), len(new["datasets"])
    if n_old + n_new:
        out["startup_s"] = (n_old * old["startup_s"] + n_new * new["startup_s"]) / (n_old + n_new)
    out["calibration_cpu_s"] = round(old.get("calibration_cpu_s", 0.0) + new.get("calibration_cpu_s", 0.0), 2)
    out["skipped"] = sorted(set(old.get("skipped", [])) | set(new.get("skipped", [])))
    return cost_model.validate(out, "merged calibration")


def write(model: dict, path) -> None:
    """The model file (JSON, a pair per line for readable diffs)."""
    from rfl import io
    path = Path(path)
    head = {k: v for k, v in model.items() if k not in ("datasets", "pairs")}
    lines = ["{"] + [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    for key in ("datasets", "pairs"):
        items = [f"    {json.dumps(x, sort_keys=True)}" for x in model[key]]
        lines.append(f"  {json.dumps(key)}: [\n" + ",\n".join(items) + "\n  ]" + ("," if key == "datasets" else ""))
    lines.append("}")
    with io.atomic_path(path) as tmp:
        Path(tmp).write_text("\n".join(lines) + "\n", encoding="utf-8")
    cost_model.read(path)          # what was written reads back


if __name__ == "__main__":            # the probe process of ``calibrate``
    print(json.dumps(probe(json.loads(sys.stdin.read()))))

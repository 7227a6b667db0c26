"""The cost model of a run job: its CPU seconds predicted from a short calibration.

A run job (rule ``runs``: every run of one experiment in one process, ``rfl.runner.run_setting``)
costs, in CPU seconds,

    job(E) = startup                                   interpreter and imports, once
           + load_first[D] + (n_D - 1) load_next[D]    its data instances loaded (n_D of dataset D)
           + first_run[D]                              the first run on D in the process
           + sum over its (D, A) pairs of warmup[D, A]  an algorithm's first run, beyond first_run[D]
           + sum over its runs of run(spec)

    run(spec) = run_s + run_replica_s R + T (round_s + replica_round_s R + agent_round_s P R
                                             + step_s K P R + sample_s K B P R)

with T the rounds, K the local steps, B the batch size, P the agents expected to take part
(``participants``; every agent of a decentralised strategy), R the replicas (1 without), and
one set of coefficients per pair of dataset D (its problem and sizes) and algorithm A: the
rounds' full-objective record (cost, gradient norm, distance to x* of every round,
``rfl.runner.execute``) is in round_s, what each taking part pays once per round whatever K
(its draws, its start and its upload, the server's aggregation or the graph's mixing of its
point) in agent_round_s, a sample gradient in sample_s, a local step's retraction and
transport in step_s, a replica's streams and metadata in run_replica_s. The consensus steps t
of a decentralised strategy and its graph are no feature: ambient mixing multiplies by W^t,
computed once per run (``rfl.algorithms.decentralised``), so its round costs the same at every
t (dec_pca_t1 3.48 CPU-s, dec_pca_t10 3.38 in a quiet full run); the Frechet consensus takes a
Log per nonzero off-diagonal entry of W^t (``rfl.algorithms.consensus``), which grows with t
and the graph, but no config varies either within one of its pairs.

The coefficients come from ``calibrate``: each pair of a config runs a few short runs at the
dataset's own size (rounds chosen so that the rounds take ~``TARGET_S``, and at least half the
run's fixed part), with K, B and R varied, each in a fresh process per dataset so that
start-up and loading are measured as a job pays them, in CPU time (``time.process_time``, not
wall: the machine may be shared). The fit is a non-negative least squares per pair; its
largest residual over the probes (``fit_error``, relative, or over TARGET_S for a shorter
probe) is stored beside the coefficients, since a cost the features lack shows there first.
The file (``MODEL_PATH``, or $RFL_COST_MODEL) names the
commit, the machine and the config it was measured on. A pair the file lacks is scaled from the
same problem and algorithm at another size (by the data's bytes), else costed by the old rule
of thumb (``FALLBACK_JOB_S`` + ``FALLBACK_SAMPLE_S`` per sample gradient); ``job_estimate``
says which basis each estimate rests on.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

FORMAT = "rfl-cost-model"
VERSION = 2
#: the stored model (the one the dry run's estimate reads), unless $RFL_COST_MODEL names another
MODEL_PATH = Path(__file__).with_name("cost_model.json")
MODEL_ENV = "RFL_COST_MODEL"
#: the per-run coefficients, in the order of ``run_features``
COEFFICIENTS = ("run_s", "run_replica_s", "round_s", "replica_round_s", "agent_round_s", "step_s",
                "sample_s")
#: the rule of thumb for a pair the model lacks (the estimate before the model)
FALLBACK_JOB_S = 1.0
FALLBACK_SAMPLE_S = 1e-6
#: CPU seconds a calibration run aims at (long enough to swamp the clock's and the run's fixed cost)
TARGET_S = 0.2


class CostModelError(ValueError):
    """A cost-model file that cannot be used (one line: the file and what is wrong)."""


# ---- features of a run spec -----------------------------------------------------------------
def participants(participation, agents: int) -> float:
    """The agents expected to take part in a round (``participation`` as a run spec holds it:
    None, s, or a scheme with rho or probabilities)."""
    if participation is None:
        return agents
    if isinstance(participation, int):
        return participation
    if participation.get("probabilities") is not None:
        return float(sum(participation["probabilities"]))
    if "rho" in participation:
        return participation["rho"] * agents
    return participation.get("s", agents)


def local_sizes(dataset: dict) -> list[int]:
    """The agents' local sample counts of a dataset spec (its problem's ``local_sizes_from``)."""
    from rfl.registry import PROBLEMS
    return list(PROBLEMS[dataset["problem"]].local_sizes_from(dataset["params"]))


def run_factors(spec: dict) -> dict:
    """T, K, B, P, R of a run spec (``run_features``): K, B, P are 1 for a centralized algorithm;
    a null batch size is the agents' mean local size."""
    sizes = local_sizes(spec["dataset"])
    a = spec["algorithm"]
    federated = "K" in a
    K = (a.get("K") or 1) if federated else 1
    B = (a.get("batch_size") or (sum(sizes) / max(len(sizes), 1))) if federated else 1
    P = participants(a.get("participation"), len(sizes)) if federated else 1
    return {"T": spec["rounds"], "K": K, "B": B, "P": P, "R": int(spec.get("replicas") or 1)}


def run_features(T, K, B, P, R) -> list[float]:
    """The run's features, one per coefficient of ``COEFFICIENTS``:
    [1, R, T, T R, T P R, T K P R, T K B P R]."""
    return [1.0, R, T, T * R, T * P * R, T * K * P * R, T * K * B * P * R]


def sample_gradients(spec: dict) -> float:
    """The sample gradients of one run: T K B P R (``run_features``' last)."""
    return run_features(**run_factors(spec))[-1]


# ---- the model file ---------------------------------------------------------------------------
def params_key(params: dict) -> str:
    """A dataset's params as the model file keys them (canonical JSON)."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def _number(path, where: str, value, positive: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        and (value > 0 if positive else value >= 0)
    if not ok:
        raise CostModelError(f"{path}: {where} is {value!r}; allowed: a finite number "
                             f"{'> 0' if positive else '>= 0'} (CPU seconds)")
    return float(value)


def validate(data, path="cost model") -> dict:
    """The model of a parsed file, checked: its format and version, the machine and commit it
    was measured on, startup_s, the datasets' load costs, and each pair's coefficients."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CostModelError(f"{path}: not a cost model (a JSON object with \"format\": \"{FORMAT}\"); "
                             f"make one with `rfl calibrate`")
    if data.get("version") != VERSION:
        raise CostModelError(f"{path}: version {data.get('version')!r}; allowed: {VERSION} "
                             f"(recalibrate with `rfl calibrate`)")
    for key in ("commit", "machine"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise CostModelError(f"{path}: key {key!r} missing or empty; allowed: the {key} the "
                                 f"model was measured on (a string)")
    _number(path, "startup_s", data.get("startup_s"))
    for name, kind in (("datasets", "load"), ("pairs", "coefficients")):
        if not isinstance(data.get(name), list):
            raise CostModelError(f"{path}: key {name!r} missing or not a list")
    for i, d in enumerate(data["datasets"]):
        where = f"datasets[{i}]"
        if not isinstance(d, dict) or not isinstance(d.get("problem"), str) or not isinstance(d.get("params"), dict):
            raise CostModelError(f"{path}: {where} needs problem (a name) and params (a mapping)")
        for k in ("load_first_s", "load_next_s", "first_run_s"):
            _number(path, f"{where}.{k}", d.get(k))
    for i, p in enumerate(data["pairs"]):
        where = f"pairs[{i}]"
        if not isinstance(p, dict) or not isinstance(p.get("problem"), str) \
                or not isinstance(p.get("algorithm"), str) or not isinstance(p.get("params"), dict) \
                or not isinstance(p.get("coefficients"), dict):
            raise CostModelError(f"{path}: {where} needs problem, params, algorithm and coefficients")
        unknown = sorted(set(p["coefficients"]) - set(COEFFICIENTS))
        if unknown:
            raise CostModelError(f"{path}: {where}.coefficients has {', '.join(unknown)}; allowed: "
                                 f"{', '.join(COEFFICIENTS)}")
        for k in COEFFICIENTS:
            _number(path, f"{where}.coefficients.{k}", p["coefficients"].get(k))
        _number(path, f"{where}.warmup_s", p.get("warmup_s"))
        if "fit_error" in p:
            _number(path, f"{where}.fit_error", p["fit_error"])
        if not isinstance(p.get("variant", {}), dict):
            raise CostModelError(f"{path}: {where}.variant is not a mapping (geometry, weighted_objective, time)")
    return data


def read(path) -> dict:
    """The validated model of file ``path`` (CostModelError: one line naming the file)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CostModelError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise CostModelError(f"{path}: not a cost model (not UTF-8 text)") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CostModelError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    return validate(data, path)


def default_path() -> Path:
    """The model file the estimates read: $RFL_COST_MODEL, else ``MODEL_PATH``."""
    env = os.environ.get(MODEL_ENV, "").strip()
    return Path(env) if env else MODEL_PATH


def load(path=None) -> dict | None:
    """The model of ``path`` (default ``default_path()``), or None when the default file does
    not exist (then every estimate is the rule of thumb)."""
    if path is None:
        path = default_path()
        if not path.is_file() and not os.environ.get(MODEL_ENV, "").strip():
            return None
    return read(path)


# ---- prediction -------------------------------------------------------------------------------
def _memory(problem: str, params: dict) -> float | None:
    from rfl.registry import PROBLEMS
    try:
        size = PROBLEMS[problem].memory_bytes(params)
    except Exception:           # noqa: BLE001 - a size the problem cannot tell: no scaling
        return None
    return float(size) if size else None


def variant(spec: dict) -> dict:
    """What else of a run spec changes the cost of its rounds: its geometry (retraction and
    transport), and whether each round also scores a weighted objective or a time model."""
    return {"geometry": spec.get("geometry"), "weighted_objective": spec.get("weighted_objective") is not None,
            "time": spec.get("time") is not None}


def _nearest(entries: list[dict], problem: str, params: dict, algorithm: str | None = None,
             var: dict | None = None):
    """(entry, scale, basis) for a dataset (and algorithm, and its ``variant``): the exact
    entry ("measured"), else that of the same problem (and algorithm) nearest in data bytes,
    its size-dependent costs times the bytes' ratio ("scaled"; another variant of the same
    size also counts as scaled), else (None, 1, "rule of thumb")."""
    key = params_key(params)
    same = [e for e in entries if e["problem"] == problem and (algorithm is None or e["algorithm"] == algorithm)]
    exact = [e for e in same if params_key(e["params"]) == key]
    for e in exact:
        if var is None or e.get("variant", var) == var:
            return e, 1.0, "measured"
    if exact:
        return exact[0], 1.0, "scaled"
    if not same:
        return None, 1.0, "rule of thumb"
    want = _memory(problem, params)
    sizes = [(_memory(problem, e["params"]), e) for e in same]
    if want is None or any(s is None for s, _ in sizes):
        return same[0], 1.0, "scaled"
    size, e = min(sizes, key=lambda se: abs(math.log(se[0] / want)))
    return e, want / size, "scaled"


def run_seconds(spec: dict, model: dict | None) -> tuple[float, str]:
    """(CPU seconds, basis) of one run: ``run(spec)`` of the module docstring."""
    ds = spec["dataset"]
    f = run_factors(spec)
    entry, scale, basis = _nearest(model["pairs"] if model else [], ds["problem"], ds["params"],
                                   spec["algorithm"]["name"], variant(spec))
    if entry is None:
        return f["T"] * f["K"] * f["B"] * f["P"] * f["R"] * FALLBACK_SAMPLE_S, basis
    c = dict(entry["coefficients"])
    for k in ("round_s", "replica_round_s", "sample_s"):      # a pass over more data
        c[k] *= scale
    return sum(c[k] * x for k, x in zip(COEFFICIENTS, run_features(**f))), basis


def pair_key(spec: dict) -> tuple:
    """The model's pair of a run spec: (dataset name, algorithm, its ``variant``)."""
    return (spec["dataset"]["name"], spec["algorithm"]["name"], json.dumps(variant(spec), sort_keys=True))


def _setting_key(spec: dict) -> tuple:
    """The problem a run shares with others in one job (``rfl.runner.run_setting``'s key)."""
    ds = spec["dataset"]
    return (ds["name"], ds["instance"], json.dumps(ds, sort_keys=True),
            json.dumps(spec.get("geometry"), sort_keys=True))


def job_estimate(specs: list[dict], model: dict | None) -> dict:
    """The CPU seconds of one run job of the run ``specs`` (an experiment's), by part:
    {"cpu_s", "startup_s", "load_s", "warmup_s", "runs_s", "basis"}; basis is the weakest
    of its parts' ("measured" < "scaled" < "rule of thumb")."""
    bases = []
    if model is None:
        startup = FALLBACK_JOB_S
    else:
        startup = model["startup_s"]
    load, warmup = 0.0, 0.0
    seen_datasets = set()
    for key in dict.fromkeys(_setting_key(s) for s in specs):
        spec = next(s for s in specs if _setting_key(s) == key)
        ds = spec["dataset"]
        entry, scale, basis = _nearest(model["datasets"] if model else [], ds["problem"], ds["params"])
        if entry is not None:
            first = ds["name"] not in seen_datasets
            load += scale * entry["load_first_s" if first else "load_next_s"]
            warmup += entry["first_run_s"] if first else 0.0
            bases.append(basis)
        seen_datasets.add(ds["name"])
    for pair in dict.fromkeys(pair_key(s) for s in specs):
        spec = next(s for s in specs if pair_key(s) == pair)
        entry, _, basis = _nearest(model["pairs"] if model else [], spec["dataset"]["problem"],
                                   spec["dataset"]["params"], spec["algorithm"]["name"], variant(spec))
        warmup += entry["warmup_s"] if entry is not None else 0.0
    runs = 0.0
    for s in specs:
        seconds, basis = run_seconds(s, model)
        runs += seconds
        bases.append(basis)
    order = ("measured", "scaled", "rule of thumb")
    basis = max(bases, key=order.index) if bases else "measured"
    return {"cpu_s": startup + load + warmup + runs, "startup_s": startup, "load_s": load,
            "warmup_s": warmup, "runs_s": runs, "basis": basis}


def job_cpu_seconds(specs: list[dict], model: dict | None) -> float:
    """The CPU seconds of the run job of ``specs``: the one estimate the dry run, the check
    and the cluster's batch sizes use (``job_estimate``'s cpu_s)."""
    return job_estimate(specs, model)["cpu_s"]


def experiment_specs(config: dict) -> dict[str, list[dict]]:
    """{experiment: its run specs} of a validated config, in config order."""
    from rfl.config import expand_runs
    out: dict[str, list[dict]] = {}
    for spec in expand_runs(config):
        out.setdefault(spec["experiment"], []).append(spec)
    return out


# ---- the check against measured jobs -----------------------------------------------------------
#: a job's estimate counts as right when estimate / measured lies within 1 -/+ this
TOLERANCE = 0.25
#: a job whose start-up took more than this times the run's median start-up ran on a busier
#: machine (the same imports cost more CPU): the check counts those jobs apart
BUSY_STARTUP = 1 + TOLERANCE


def measured_jobs(perf_csv) -> dict[str, float]:
    """{experiment: measured CPU seconds of its run job} of a performance.csv
    (``rfl.reporting.performance``, its "experiment" rows)."""
    from rfl.reporting.performance import read_performance_csv
    return {r["name"]: r["cpu_s"] for r in read_performance_csv(perf_csv)
            if r["scope"] == "experiment" and not math.isnan(r["cpu_s"])}


def measured_startups(perf_csv) -> dict[str, float]:
    """{experiment: the CPU seconds its run job spent before its work began} of a
    performance.csv (jobs without a record left out)."""
    from rfl.reporting.performance import read_performance_csv
    return {r["name"]: r["startup_s"] for r in read_performance_csv(perf_csv)
            if r["scope"] == "experiment" and not math.isnan(r["startup_s"])}


def check_rows(estimates: dict[str, dict], measured: dict[str, float],
               startups: dict[str, float] | None = None) -> list[dict]:
    """One row per experiment with both an estimate and a measurement: experiment, estimate_s,
    measured_s, ratio (estimate / measured), within (|ratio - 1| <= TOLERANCE), basis, and
    startup_x: the job's start-up over the median start-up of the rows' jobs (nan without)."""
    import statistics
    rows = []
    for e, est in estimates.items():
        if e not in measured or measured[e] <= 0:
            continue
        ratio = est["cpu_s"] / measured[e]
        rows.append({"experiment": e, "estimate_s": est["cpu_s"], "measured_s": measured[e],
                     "ratio": ratio, "within": abs(ratio - 1) <= TOLERANCE + 1e-12,
                     "basis": est["basis"]})
    known = [startups[r["experiment"]] for r in rows if startups and r["experiment"] in startups]
    median = statistics.median(known) if known else math.nan
    for r in rows:
        value = (startups or {}).get(r["experiment"], math.nan)
        r["startup_x"] = value / median if median > 0 else math.nan
    return rows


def check_table(rows: list[dict], model_line: str = "") -> str:
    """The check's text: a row per job, then the share within TOLERANCE and the totals."""
    width = max([len(r["experiment"]) for r in rows] + [len("experiment")])
    out = ([model_line] if model_line else []) + [
        f"{'experiment':<{width}}  {'estimate_s':>10}  {'measured_s':>10}  {'ratio':>6}  within  "
        f"startup_x  basis"]
    for r in rows:
        x = r.get("startup_x", math.nan)
        out.append(f"{r['experiment']:<{width}}  {r['estimate_s']:10.2f}  {r['measured_s']:10.2f}  "
                   f"{r['ratio']:6.2f}  {'yes' if r['within'] else 'no':<6}  "
                   f"{'-' if math.isnan(x) else f'{x:.2f}':>9}  {r['basis']}")
    busy = [r for r in rows if r.get("startup_x", math.nan) > BUSY_STARTUP]
    if busy:
        rest = [r for r in rows if r not in busy]
        out.append(f"jobs whose start-up took over {BUSY_STARTUP}x the median (a busier machine then): "
                   f"{sum(r['within'] for r in busy)} of {len(busy)} within {100 * TOLERANCE:.0f} %; "
                   f"the other jobs: {sum(r['within'] for r in rest)} of {len(rest)}")
    n_in = sum(r["within"] for r in rows)
    est, meas = sum(r["estimate_s"] for r in rows), sum(r["measured_s"] for r in rows)
    share = n_in / len(rows) if rows else float("nan")
    out.append(f"within {100 * TOLERANCE:.0f} %: {n_in} of {len(rows)} run jobs ({100 * share:.0f} %); "
               f"total estimate {est:.1f} s, measured {meas:.1f} s (ratio {est / meas if meas else float('nan'):.2f})")
    return "\n".join(out) + "\n"

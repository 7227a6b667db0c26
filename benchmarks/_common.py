"""Shared helpers of the asv benchmarks: problems at paper size and at scale, algorithms
from the registry and one round of them, interleaved timing, the streaming read bandwidth
and traced peak memory.

Machine noise. The development machine is shared, so absolute times drift between (and
within) runs. Every ratio a ``track_`` benchmark reports is therefore measured inside one
benchmark call, with the two sides interleaved (A, B, A, B, ...) and the best time of each
side kept: a burst of load slows a few repetitions of both sides, not one side only.
"""

from __future__ import annotations

import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from rfl.algorithms import Fixed
from rfl.problems import PROBLEMS
from rfl.random import stream
from rfl.registry import ALGORITHMS

ROOT = Path(__file__).resolve().parents[1]

#: data seed of every benchmark problem (as config/config.yaml)
SEED = 2024

#: problems at paper size (Table 1 / Section 5; the School split and the digits as the config),
#: with the geometry, batch size B, step size and K of the benchmarks. MBCFSti uses the
#: polar retraction and the projection transport (the speed-up target's setting).
PAPER = {
    "cpesph": dict(params=dict(d=25, nu=1e-3, S=10, N=80), B=64, alpha=1.0, K=10,
                   geometry=dict(retraction="normalize", transport="parallel")),
    "cfmspd": dict(params=dict(d=2, D_W=1.0, S=10, N=60), B=30, alpha=3e-3, K=10,
                   geometry=dict(retraction="exp", transport="parallel")),
    "mbcfsti": dict(params=dict(d=25, p=2, S=20, N=50), B=25, alpha=3e-3, K=10,
                    geometry=dict(retraction="polar", transport="projection")),
    "multitask": dict(params=dict(S=20, N=50, m=100, r=5, d_min=10, d_max=50, noise=1e-6,
                                  lam=0.0), B=25, alpha=3e-3, K=10,
                      geometry=dict(retraction="svd", transport="parallelization")),
    "kpca": dict(params=dict(S=10, r=3, split="iid"), B=50, alpha=0.25, K=5,
                 geometry=dict(retraction="polar", transport="parallelization")),
    "school": dict(params=dict(r=4, lam=1e-3, S=6, N=23, train_fraction=0.8), B=18, alpha=1e-6,
                   K=10, geometry=dict(retraction="svd", transport="parallelization")),
    # federated TD(0) as config/config.yaml (lsa_het_n10 / lsa_het_n100, experiments *_h10):
    # exact oracle, so a local step is one mean-field evaluation A_bar_c theta - b_bar_c
    "lsa-n10": dict(params=dict(setting="heterogeneous", n_agents=10, perturbation=0.05,
                                oracle="exact"), B=1, alpha=10.0, K=10, geometry={}),
    "lsa-n100": dict(params=dict(setting="heterogeneous", n_agents=100, perturbation=0.05,
                                 oracle="exact"), B=1, alpha=10.0, K=10, geometry={}),
}


class Skip(NotImplementedError):
    """Raised in ``setup``: asv reports the benchmark as skipped (n/a)."""


def school_raw_file() -> Path:
    """A checksum-verified ILEA567.DAT from ``$RFL_SCHOOL_MIRROR`` (never downloaded here)."""
    from rfl.data import school

    mirror = os.environ.get(school.MIRROR_ENV, "").strip()
    if not mirror or not any((Path(mirror) / p / school.ILEA_FILENAME).is_file()
                             for p in (".", "raw")):
        raise Skip(f"School data: set {school.MIRROR_ENV} to a directory holding "
                   f"{school.ILEA_FILENAME} (or raw/{school.ILEA_FILENAME})")
    cache = ROOT / ".asv" / "school"
    return school.fetch_ilea(cache, mirror=mirror)


def paper_arrays(name: str, instance: str = "0") -> dict:
    """The arrays of a paper-size data set (the project's generators, seed ``SEED``)."""
    cfg = PAPER[name]
    if name == "school":
        rng = stream(SEED, "data", "school_r4", instance)
        return generate("school", rng, school_raw_file(), **cfg["params"])
    kind = problem_kind(name)
    if kind not in PROBLEMS:
        raise Skip(f"no {kind} problem in this version")
    return generate(kind, stream(SEED, "data", name), **cfg["params"])


def generate(kind: str, rng, *inputs, **params) -> dict:
    """The arrays of problem ``kind``'s generator."""
    return PROBLEMS[kind].generate(rng, *inputs, **params)


def problem_kind(name: str) -> str:
    """The problem of a benchmark data set name (``lsa-n10`` -> ``lsa``)."""
    return name.split("-")[0]


def paper_problem(name: str, **geometry):
    """A paper-size problem with the benchmark geometry (overridable)."""
    cfg = PAPER[name]
    kind = problem_kind(name)
    if kind not in PROBLEMS:
        raise Skip(f"no {kind} problem in this version")
    geo = {**cfg["geometry"], **geometry}
    return PROBLEMS[kind].from_arrays(paper_arrays(name), cfg["params"], **geo)


def make_algorithm(name: str, problem, K: int, B: int, alpha: float, **kwargs):
    """Federated strategy ``name`` of the registry with a fixed step alpha (``kwargs``:
    participation and the strategy's declared options)."""
    cls = ALGORITHMS.get(name)
    if cls is None or not cls.federated:
        raise Skip(f"no federated algorithm {name!r} in this version")
    return cls(problem, Fixed(alpha), K, B, **kwargs)


def round_function(algorithm, x0: np.ndarray, seed: int = 0):
    """A callable running one federated round from x0 (a fresh sampler, drawn on from call to
    call); the state a strategy carries across rounds (set by ``reset(x0)``: RFedProj's x_bar
    and corrections, SCAFFLSA's control variates) evolves from call to call."""
    sampler = algorithm.sampler(np.random.default_rng(seed))
    algorithm.reset(x0)

    def run():
        algorithm.round(x0, 0, sampler)
    return run


# ---- timing -------------------------------------------------------------------------------
def interleaved_best(functions: dict, repeat: int, number: int | None = None,
                     sample_time: float = 0.01) -> dict:
    """Best (minimum) seconds per call of each function: the functions take turns ``repeat``
    times, each turn timing ``number`` calls (default: as many as fill ``sample_time``
    seconds, from the warm-up call), so a burst of load on the shared machine hits a few
    samples of every function rather than all samples of one."""
    numbers = {}
    for name, f in functions.items():
        t = time.perf_counter()
        f()
        elapsed = time.perf_counter() - t
        numbers[name] = number or max(1, int(sample_time / max(elapsed, 1e-9)))
    best = dict.fromkeys(functions, np.inf)
    for _ in range(repeat):
        for name, f in functions.items():
            n = numbers[name]
            t = time.perf_counter()
            for _ in range(n):
                f()
            best[name] = min(best[name], (time.perf_counter() - t) / n)
    return best


class Bandwidth:
    """Streaming read bandwidth of numpy on this machine: ``big.sum()`` over ``nbytes`` of
    float64 (default 512 MiB, far beyond the last-level cache), in bytes per second."""

    def __init__(self, nbytes: int = 512 << 20):
        self.array = np.ones(nbytes // 8)        # written once: every page is resident

    def __call__(self) -> float:
        self.array.sum()

    @property
    def nbytes(self) -> int:
        return self.array.nbytes


def report(line: str) -> None:
    """One line of details on stderr (shown by ``asv run --show-stderr``)."""
    print(line, file=sys.stderr, flush=True)


# ---- memory -------------------------------------------------------------------------------
def traced_peak(fn) -> tuple[int, object]:
    """(Peak bytes allocated while ``fn()`` runs, above what was allocated before, as traced
    by tracemalloc, which numpy reports its buffers to; ``fn()``'s result)."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    try:
        out = fn()
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return peak, out


# ---- data at scale (memory-frugal; same laws as the project's generators) -------------------
def _chunks(S: int, per_agent_bytes: int, chunk_bytes: int = 64 << 20):
    step = max(1, chunk_bytes // max(1, per_agent_bytes))
    for i in range(0, S, step):
        yield i, min(i + step, S)


def mbcfsti_arrays(S: int, N: int = 50, d: int = 25, p: int = 2, seed: int = 0) -> dict:
    """A_ij = B + B^T, B standard normal (``rfl.data.mbcfsti``), written agent chunk by chunk so
    the peak is the data plus one chunk."""
    rng = np.random.default_rng(seed)
    A = np.empty((S, N, d, d))
    for i, j in _chunks(S, N * d * d * 8):
        b = rng.standard_normal((j - i, N, d, d))
        np.add(b, b.swapaxes(-1, -2), out=A[i:j])
    return {"A": A, "p": np.array(p)}


def cpesph_arrays(S: int, N: int = 80, d: int = 25, nu: float = 1e-3, seed: int = 0) -> dict:
    """``rfl.data.cpesph.generate`` (its temporaries are a few times the data: small here)."""
    return generate("cpesph", np.random.default_rng(seed), d=d, nu=nu, S=S, N=N)


def multitask_arrays(S: int, N: int = 50, m: int = 100, r: int = 5, d_min: int = 10,
                     d_max: int = 50, noise: float = 1e-6, seed: int = 0) -> dict:
    """The law of ``rfl.data.multitask.generate`` (X standard normal on the first d_ij rows,
    y = X U* v + noise e, v ~ N(0, I_r)), written agent chunk by chunk."""
    rng = np.random.default_rng(seed)
    d = rng.integers(d_min, d_max + 1, size=(S, N)).astype(np.int64)
    U = np.linalg.qr(rng.standard_normal((m, r)))[0]
    X = np.empty((S, N, d_max, m))
    y = np.empty((S, N, d_max))
    for i, j in _chunks(S, N * d_max * m * 8):
        mask = np.arange(d_max)[None, None, :] < d[i:j, :, None]
        x = rng.standard_normal((j - i, N, d_max, m))
        x *= mask[..., None]
        X[i:j] = x
        v = rng.standard_normal((j - i, N, r))
        y[i:j] = (np.einsum("sndm,mr->sndr", x, U) @ v[..., None])[..., 0]
        y[i:j] += noise * rng.standard_normal((j - i, N, d_max))
        y[i:j] *= mask
    return {"X": X, "y": y, "d": d, "U_star": U}


def data_bytes(arrays: dict) -> int:
    return int(sum(np.asarray(a).nbytes for a in arrays.values()))

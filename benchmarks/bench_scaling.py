"""Scaling in the number of agents, S in {10, 100, 1000, 10000}.

For each problem, ``setup_cache`` sweeps S once (same per-agent sizes at every S) and records,
per S, the best time of one RFedAGS round (K = 10) and the peak memory of building the problem
from its data and running one round, as traced by tracemalloc (numpy reports its buffers to
it), on top of the data themselves:

- ``<Problem>ScalingLarge.track_scaling_slope``: the least-squares slope of log(time per round) against log(S)
  over S = 100, 1000, 10000 (target 0.9-1.1: linear in S);
- ``<Problem>ScalingLarge.track_peakmem_ratio``: max over S >= 100 of (data bytes + traced peak) / data bytes
  (target <= 2: no temporaries of the size of the data; agents are processed in chunks).

Per-agent sizes: MBCFSti and CPESph as in the paper (Table 1: N=50, d=25, p=2, B=25 /
N=80, d+1=26, B=64), so S = 10000 holds 2.5 GB / 166 MB of data; multitask with N=10 tasks of
10-25 rows, m=50, r=5, B=5 (100 kB per agent, 1 GB at S = 10000: the paper's 2 MB per agent
would need 20 GB). Each S's numbers go to stderr (with ``track_scaling_slope``).

``PeakmemRoundLarge.peakmem_round`` puts the process's peak RSS (data included) of a round at
each S on the dashboard. All of these are "Large" (excluded from the CI quick run).
"""

from __future__ import annotations

import gc

import numpy as np

from ._common import (cpesph_arrays, data_bytes, interleaved_best, mbcfsti_arrays,
                      multitask_arrays, report, round_function, traced_peak)
from rfl.algorithms import Fixed, RFedAGS
from rfl.problems import PROBLEMS

S_VALUES = (10, 100, 1000, 10000)
K = 10

SWEEPS = {
    "mbcfsti": dict(arrays=lambda S: mbcfsti_arrays(S), params={"p": 2}, B=25, alpha=3e-3,
                    geometry={"retraction": "polar", "transport": "projection"}),
    "cpesph": dict(arrays=lambda S: cpesph_arrays(S), params={}, B=64, alpha=1.0,
                   geometry={"retraction": "normalize", "transport": "parallel"}),
    "multitask": dict(arrays=lambda S: multitask_arrays(S, N=10, m=50, r=5, d_min=10, d_max=25),
                      params={"r": 5, "lam": 0.0}, B=5, alpha=3e-3,
                      geometry={"retraction": "svd", "transport": "parallelization"}),
}


def _build(name: str, arrays: dict):
    cfg = SWEEPS[name]
    problem = PROBLEMS[name].from_arrays(arrays, cfg["params"], **cfg["geometry"])
    alg = RFedAGS(problem, Fixed(cfg["alpha"]), K, cfg["B"])
    return round_function(alg, problem.initial_point(np.random.default_rng(1)))


def sweep(name: str, s_values=S_VALUES) -> dict:
    """{S: {"seconds": best time of one round, "data": bytes, "peak": traced bytes}}."""
    out = {}
    # one untraced round first: numba loads its compiled kernels (from its cache) on their
    # first call, once per process, which is not the memory of a round
    _first_round(name, SWEEPS[name]["arrays"](min(s_values)))
    for S in s_values:
        arrays = SWEEPS[name]["arrays"](S)
        size = data_bytes(arrays)
        peak, run = traced_peak(lambda arrays=arrays: _first_round(name, arrays))
        repeat = 7 if S <= 1000 else 3              # best of: the machine is shared
        seconds = interleaved_best({"round": run}, repeat, number=1 if S >= 1000 else None)["round"]
        out[S] = {"seconds": seconds, "data": size, "peak": peak}
        del run, arrays
        gc.collect()
    return out


def _first_round(name, arrays):
    run = _build(name, arrays)
    run()
    return run


def describe(name: str, results: dict) -> None:
    """The sweep's numbers, one line per S, on stderr."""
    for S in sorted(results):
        r = results[S]
        report(f"scaling {name}: S={S}: {1e3 * r['seconds']:.2f} ms per round, data "
               f"{r['data'] / 1e6:.1f} MB, peak above the data {r['peak'] / 1e6:.1f} MB "
               f"(ratio {(r['data'] + r['peak']) / r['data']:.2f})")
    report(f"scaling {name}: log-log slope (S >= 100) {slope(results):.3f}, "
           f"peak / data (S >= 100) {peak_ratio(results):.2f}")


def slope(results: dict) -> float:
    S = np.array([s for s in sorted(results) if s >= 100], dtype=float)
    t = np.array([results[s]["seconds"] for s in sorted(results) if s >= 100])
    return float(np.polyfit(np.log(S), np.log(t), 1)[0])


def peak_ratio(results: dict) -> float:
    """max over S >= 100 of (data + traced peak) / data. (At S = 10 the data are 0.2-2.5 MB and
    fixed-size buffers, e.g. CPESph's one-step gather of 133 kB, weigh more; those ratios are in
    stderr.)"""
    return max((r["data"] + r["peak"]) / r["data"] for s, r in results.items() if s >= 100)


class _Sweep:
    """The tracks of one problem's sweep; each subclass names the problem and defines its own
    ``setup_cache`` (asv keys the cache by the method's source line, so a shared one would
    hand every problem the same sweep)."""

    name = ""
    timeout = 3600
    rounds = 1
    repeat = 1
    number = 1
    warmup_time = 0

    def _sweep(self):
        return sweep(self.name)

    def track_scaling_slope(self, results):
        describe(self.name, results)
        return slope(results)

    def track_peakmem_ratio(self, results):
        return peak_ratio(results)

    track_scaling_slope.unit = "d log t / d log S"
    track_peakmem_ratio.unit = "peak / data"


class MBCFStiScalingLarge(_Sweep):
    name = "mbcfsti"

    def setup_cache(self):
        return self._sweep()


class CPESphScalingLarge(_Sweep):
    name = "cpesph"

    def setup_cache(self):
        return self._sweep()


class MultitaskScalingLarge(_Sweep):
    name = "multitask"

    def setup_cache(self):
        return self._sweep()


class PeakmemRoundLarge:
    """Peak RSS of the process (data, problem and one RFedAGS round) at each S."""

    params = [list(SWEEPS), list(S_VALUES)]
    param_names = ["problem", "S"]
    timeout = 1200
    rounds = 1

    def setup(self, name, S):
        self.arrays = SWEEPS[name]["arrays"](S)

    def peakmem_round(self, name, S):
        _first_round(name, self.arrays)

    def teardown(self, name, S):
        del self.arrays
        gc.collect()

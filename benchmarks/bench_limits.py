"""Time per local step against the physical limit, at S = 1000 agents.

A local step must read at least the mini-batch's data. The limit is (bytes that must be read)
/ (read bandwidth), the bandwidth measured in the same call by a numpy streaming reduction
(``sum`` over 512 MiB, ``_common.Bandwidth``), interleaved with the rounds (``_common``).
``track_memory_ratio_*`` = (time of one RFedAGS round / K) / limit. ``track_roofline_ratio_*``
divides by the roofline instead, max(memory limit, compute floor), the floor being the step's
flops at the rate BLAS reaches on the step's own product shape with its data in cache (both
terms on stderr, with the step against their sum: the bound when the reads and the arithmetic
do not overlap); target <= 1.5.

Bytes that must be read per agent and local step:
- MBCFSti (S=1000, N=50, d=25, p=2, B=25, K=10; polar retraction, projection transport):
  B d^2 float64 (the B samples of the mini-batch);
- CPESph (S=1000, N=80, d+1=26, B=64, K=10; normalisation, parallel transport): B (d+1) float64;
- multitask (S=1000, N=50 tasks, m=100, r=5, B=25, K=10, tasks of d_ij ~ U{10..50} rows stored
  padded to D=50; SVD retraction, parallelization transport): the B tasks' valid rows,
  B E[d_ij] (m + 1) float64 (``track_memory_ratio_multitask``; the kernel reads only those),
  and, for comparison, the padded rows B D (m + 1) float64 (stderr): reading a task's valid
  rows and skipping its padding streams at about half the bandwidth of one long read (the
  hardware prefetchers restart at every task), so the padded-rows time is about what reading
  the valid rows costs.

The time per step includes everything a local step does (the sampler's draws, the gradient,
the transport and the retraction); ``track_kernel_ratio_*`` is the mini-batch gradient alone
(a fixed batch), to separate the data-reading kernel from the rest; the sampler's draw of one
step's mini-batches (``batch_indices``: S x B counter-based draws) is reported on stderr. Details
of each measurement (bandwidth, milliseconds) go to stderr (``asv run --show-stderr``).

These benchmarks hold 0.3-2.6 GB of data ("Large": excluded from the CI quick run).
"""

from __future__ import annotations

import numpy as np

from ._common import (Bandwidth, cpesph_arrays, interleaved_best, mbcfsti_arrays, multitask_arrays,
                      report, round_function)
from rfl.algorithms import Fixed, RFedAGS
from rfl.problems import PROBLEMS

S = 1000
K = 10
REPEAT = 5


class _Limit:
    timeout = 1200
    rounds = 1
    repeat = 1
    number = 1
    warmup_time = 0

    def _build(self, name, arrays, params, geometry, B, alpha):
        self.problem = PROBLEMS[name].from_arrays(arrays, params, **geometry)
        self.B = B
        alg = RFedAGS(self.problem, Fixed(alpha), K, B)
        x0 = self.problem.initial_point(np.random.default_rng(1))
        self.round = round_function(alg, x0)
        rng = np.random.default_rng(2)
        self.agents = np.arange(S)
        self.sampler = alg.sampler(rng)
        self.batch = self.sampler.batches(self.agents)
        self.x = np.repeat(x0[None], S, axis=0)
        self.bandwidth = Bandwidth()

    def _kernel(self):
        self.problem.minibatch_egrad(self.x, self.agents, self.batch)

    def _draw(self):
        self.sampler.batches(self.agents)

    def _ratios(self, name, need_bytes: dict):
        """(step / limit, kernel / limit) for each entry of need_bytes; the limits in seconds:
        ``self.limits``."""
        best = interleaved_best({"bandwidth": self.bandwidth, "round": self.round,
                                 "kernel": self._kernel, "sampler": self._draw}, REPEAT, number=1)
        bw = self.bandwidth.nbytes / best["bandwidth"]
        step = best["round"] / K
        out = {}
        self.limits = {}
        for label, nbytes in need_bytes.items():
            limit = self.limits[label] = nbytes / bw
            out[label] = (step / limit, best["kernel"] / limit)
            report(f"memory limit {name} [{label}]: S={S}, read bandwidth {bw / 1e9:.1f} GB/s, "
                   f"{nbytes / 1e6:.1f} MB per step -> limit {1e3 * limit:.2f} ms; local step "
                   f"{1e3 * step:.2f} ms (ratio {step / limit:.2f}), gradient kernel "
                   f"{1e3 * best['kernel']:.2f} ms (ratio {best['kernel'] / limit:.2f}), sampler's "
                   f"draw of the step's mini-batches {1e3 * best['sampler']:.2f} ms "
                   f"(ratio {best['sampler'] / limit:.2f})")
        return out


    def _roofline(self, name, label):
        """step / roofline, the roofline of a local step being max(memory limit ``label``,
        compute floor): the floor is the step's flops (``self.flops``) at the rate the
        machine's BLAS reaches on the step's own product shape with the data in cache
        (``self._product``: 8 agents' worth, 10 calls per sample). Both terms go to stderr."""
        ratios = self._ratios(name, self.need)
        product, flops_per_call = self._product()
        rate = flops_per_call / interleaved_best({"product": product}, REPEAT, number=10)["product"]
        floor = self.flops / rate
        limit = self.limits[label]
        step = ratios[label][0] * limit
        roof = max(limit, floor)
        report(f"roofline {name}: memory term {1e3 * limit:.2f} ms ({self.need[label] / 1e6:.1f} MB), "
               f"compute term {1e3 * floor:.2f} ms ({self.flops / 1e9:.3f} GFlop at "
               f"{rate / 1e9:.1f} GFlop/s); local step {1e3 * step:.2f} ms = {step / roof:.2f} x "
               f"the roofline, {step / (limit + floor):.2f} x memory + compute (the bound when "
               f"reads and arithmetic do not overlap)")
        return step / roof


class MBCFStiLarge(_Limit):
    def setup(self):
        self._build("mbcfsti", mbcfsti_arrays(S), {"p": 2},
                    {"retraction": "polar", "transport": "projection"}, B=25, alpha=3e-3)
        d, p = self.problem.d, self.problem.p
        self.need = {"B d^2": S * self.B * d * d * 8}
        # per agent: the sum of B d x d samples, then (d x d) @ (d x p)
        self.flops = S * (self.B * d * d + 2 * d * d * p)

    def _product(self):
        d, p = self.problem.d, self.problem.p
        rng = np.random.default_rng(3)
        a, x, out = rng.standard_normal((8, d, d)), rng.standard_normal((8, d, p)), np.empty((8, d, p))
        return (lambda: np.matmul(a, x, out=out)), 8 * 2 * d * d * p

    def track_roofline_ratio_mbcfsti(self):
        return self._roofline("mbcfsti", "B d^2")

    def track_memory_ratio_mbcfsti(self):
        return self._ratios("mbcfsti", self.need)["B d^2"][0]

    def track_kernel_ratio_mbcfsti(self):
        return self._ratios("mbcfsti", self.need)["B d^2"][1]

    track_memory_ratio_mbcfsti.unit = track_kernel_ratio_mbcfsti.unit = "time / limit"
    track_roofline_ratio_mbcfsti.unit = "time / roofline"


class CPESphLarge(_Limit):
    def setup(self):
        self._build("cpesph", cpesph_arrays(S), {},
                    {"retraction": "normalize", "transport": "parallel"}, B=64, alpha=1.0)
        n = self.problem.Z.shape[2]
        self.need = {"B (d+1)": S * self.B * n * 8}
        # per agent: Z_b x, then Z_b^T (Z_b x)
        self.flops = S * 4 * self.B * n

    def _product(self):
        n = self.problem.Z.shape[2]
        rng = np.random.default_rng(3)
        z, x, out = rng.standard_normal((8, self.B, n)), rng.standard_normal((8, n, 1)), np.empty((8, self.B, 1))
        return (lambda: np.matmul(z, x, out=out)), 8 * 2 * self.B * n

    def track_roofline_ratio_cpesph(self):
        return self._roofline("cpesph", "B (d+1)")

    def track_memory_ratio_cpesph(self):
        return self._ratios("cpesph", self.need)["B (d+1)"][0]

    def track_kernel_ratio_cpesph(self):
        return self._ratios("cpesph", self.need)["B (d+1)"][1]

    track_memory_ratio_cpesph.unit = track_kernel_ratio_cpesph.unit = "time / limit"
    track_roofline_ratio_cpesph.unit = "time / roofline"


class MultitaskLarge(_Limit):
    timeout = 1800

    def setup(self):
        arrays = multitask_arrays(S)
        self._build("multitask", arrays, {"r": 5, "lam": 0.0},
                    {"retraction": "svd", "transport": "parallelization"}, B=25, alpha=3e-3)
        D, m = self.problem.X.shape[2:]
        # expected valid rows of B tasks, d_ij ~ U{10, ..., 50}: B * 30 per agent
        mean_rows = float(self.problem.d.mean())
        self.need = {"valid rows": S * self.B * mean_rows * (m + 1) * 8,
                     "padded rows": S * self.B * D * (m + 1) * 8}
        # per valid row: X U (2 m r), then X^T res (2 m)
        self.flops = S * self.B * mean_rows * (2 * m * self.problem.r + 2 * m)

    def _product(self):
        """One local step's kind of product, (B D x m) @ (m x r) per agent, on 8 agents' worth of
        rows (8 MB, read from cache after the first of the timed calls): the rate OpenBLAS
        reaches on this skinny shape when memory is not the bottleneck."""
        D, m = self.problem.X.shape[2:]
        r = self.problem.r
        rng = np.random.default_rng(3)
        a = rng.standard_normal((8, self.B * D, m))
        u = rng.standard_normal((8, m, r))
        out = np.empty((8, self.B * D, r))
        return (lambda: np.matmul(a, u, out=out)), 8 * 2 * self.B * D * m * r

    def track_roofline_ratio_multitask(self):
        """Against the valid rows; the compute term (``_product``) is the larger one."""
        return self._roofline("multitask", "valid rows")

    def track_memory_ratio_multitask(self):
        """Against the valid rows; the padded-layout and kernel-only ratios go to stderr (one
        measurement: the 2 GB of data are built once per benchmark)."""
        return self._ratios("multitask", self.need)["valid rows"][0]

    track_memory_ratio_multitask.unit = "time / limit"
    track_roofline_ratio_multitask.unit = "time / roofline"

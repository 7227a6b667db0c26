"""Every vectorised federated strategy against its per-agent reference loop.

The loop is the straightforward implementation: the tests' oracle (``benchmarks/_loops.py``),
a Python loop over agents and local steps through pymanopt's single-point maps. Both run one
round from the same point on the same problem at paper size, with the same K and B, each
with its own ``AgentSampler``. Targets: RFedAGS on MBCFSti (S=20, N=50, d=25, p=2,
B=25, K=10, polar retraction, projection transport) >= 5x, on CPESph >= 10x; every other
federated algorithm >= 5x faster than its own loop.

``track_speedup`` measures loop time / vectorised time inside one call (interleaved, best of
``REPEAT`` each: see ``_common``); ``time_vectorised`` and ``time_loop`` put both on the
dashboard.
"""

from __future__ import annotations

from ._common import PAPER, interleaved_best, make_algorithm, paper_problem, report, round_function
from ._loops import loop_round_function

#: case -> (algorithm, problem, options); K, B and alpha are those of ``_common.PAPER``
CASES = {
    "rfedags/mbcfsti": ("rfedags", "mbcfsti", {}),
    "rfedags/cpesph": ("rfedags", "cpesph", {}),
    "rfedavg/cpesph": ("rfedavg", "cpesph", {}),
    "rfedsvrg/cpesph": ("rfedsvrg", "cpesph", {}),
    "rfedproj/mbcfsti": ("rfedproj", "mbcfsti", {}),
    "fedavg/lsa-n10": ("fedavg", "lsa-n10", {}),
    "fedavg/lsa-n100": ("fedavg", "lsa-n100", {}),
    "scafflsa/lsa-n10": ("scafflsa", "lsa-n10", {}),
    "scafflsa/lsa-n100": ("scafflsa", "lsa-n100", {}),
}
#: the minimum speed-ups (5x where not listed)
TARGET = {"rfedags/cpesph": 10.0}
REPEAT = 25


class Speedup:
    params = [list(CASES)]
    param_names = ["algorithm/problem"]
    timeout = 300

    def setup(self, case):
        algorithm, problem_name, options = CASES[case]
        cfg = PAPER[problem_name]
        self.problem = paper_problem(problem_name)
        import numpy as np
        x0 = self.problem.initial_point(np.random.default_rng(1))
        alg = make_algorithm(algorithm, self.problem, cfg["K"], cfg["B"], cfg["alpha"], **options)
        self.vectorised = round_function(alg, x0)
        self.loop = loop_round_function(algorithm, self.problem, x0, cfg["K"], cfg["B"],
                                        cfg["alpha"], **options)

    def time_vectorised(self, case):
        self.vectorised()

    def time_loop(self, case):
        self.loop()

    def track_speedup(self, case):
        best = interleaved_best({"vectorised": self.vectorised, "loop": self.loop}, REPEAT,
                                sample_time=0.02)
        ratio = best["loop"] / best["vectorised"]
        algorithm, problem_name, _ = CASES[case]
        agent_steps = self.problem.n_agents * PAPER[problem_name]["K"]
        target = TARGET.get(case, 5.0)
        report(f"speedup {case}: loop {1e3 * best['loop']:.2f} ms/round "
               f"({1e6 * best['loop'] / agent_steps:.1f} us per agent-local-step), vectorised "
               f"{1e3 * best['vectorised']:.3f} ms/round: {ratio:.1f}x (target >= {target:g}x)")
        return ratio

    track_speedup.unit = "x (loop / vectorised)"

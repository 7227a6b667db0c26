"""Time and peak memory of one federated round, per algorithm x problem, at paper size.

The pairs the project runs (config/config.yaml), with the experiments' geometry, K, batch size
and step size (``CASES``; the problem sizes of ``_common.PAPER``). ``peakmem_round`` is the
process's peak RSS, the data included.
"""

from __future__ import annotations

import numpy as np

from ._common import PAPER, make_algorithm, paper_problem, round_function

#: case -> (algorithm, problem, geometry overrides, K)
CASES = {
    "rfedags/cpesph": ("rfedags", "cpesph", {}, 10),
    "rfedavg/cpesph": ("rfedavg", "cpesph", {}, 10),
    "rfedsvrg/cpesph": ("rfedsvrg", "cpesph", {}, 10),
    "rfedproj/cpesph": ("rfedproj", "cpesph", {}, 10),
    "rfedags/cfmspd": ("rfedags", "cfmspd", {}, 10),
    "rfedavg/cfmspd": ("rfedavg", "cfmspd", {}, 10),
    "rfedags/mbcfsti": ("rfedags", "mbcfsti", {"transport": "parallelization"}, 10),
    "rfedsvrg/mbcfsti": ("rfedsvrg", "mbcfsti", {"transport": "parallelization"}, 8),
    "rfedproj/mbcfsti": ("rfedproj", "mbcfsti", {"transport": "parallelization"}, 8),
    "rfedags/multitask": ("rfedags", "multitask", {}, 10),
    "rfedags/school": ("rfedags", "school", {}, 10),
    "rfedavg/school": ("rfedavg", "school", {}, 1),
    "rfedags/kpca": ("rfedags", "kpca", {}, 10),
    "rfedavg/kpca": ("rfedavg", "kpca", {}, 5),
    "rfedsvrg/kpca": ("rfedsvrg", "kpca", {}, 5),
    "rfedproj/kpca": ("rfedproj", "kpca", {}, 5),
    "fedavg/lsa-n100": ("fedavg", "lsa-n100", {}, 10),
    "scafflsa/lsa-n100": ("scafflsa", "lsa-n100", {}, 10),
}


class Round:
    params = [list(CASES)]
    param_names = ["algorithm/problem"]
    timeout = 300

    def setup(self, case):
        algorithm, name, geometry, K = CASES[case]
        cfg = PAPER[name]
        problem = paper_problem(name, **geometry)
        alg = make_algorithm(algorithm, problem, K, cfg["B"], cfg["alpha"])
        self.run = round_function(alg, problem.initial_point(np.random.default_rng(1)))

    def time_round(self, case):
        self.run()

    def peakmem_round(self, case):
        self.run()

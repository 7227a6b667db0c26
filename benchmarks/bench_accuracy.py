"""Accuracy tracks: what a fixed number of RFedAGS rounds reaches on each paper problem, so a
change that makes the methods less accurate shows on the dashboard (not only a slower one).

Each track runs the paper's experiment settings (config/config.yaml: geometry, batch size,
fixed step size, K = 10) for a fixed number of rounds from a seeded starting point (the runner's
streams: ``stream(seed, "init", dataset)`` and the experiment's draws ``Draws(seed, experiment)``,
sampler version 3: the track values changed with it)
and returns the final excess risk F(x_T) - F*, with F* from the closed form (CPESph, MBCFSti,
kPCA) or the Karcher-mean fixed point (CFMSPD); for the multitask problem the principal-angle
distance to the planted subspace U* (Figure 2b); for School (split 0, r = 4) the best test NMSE
over the rounds (Figure 3 / Table 2). The School track needs ``$RFL_SCHOOL_MIRROR`` (skipped
otherwise).
"""

from __future__ import annotations

import numpy as np

from ._common import PAPER, make_algorithm, paper_problem, school_raw_file
from rfl.algorithms.sampling import Draws
from rfl.random import stream

SEED = 0

#: problem -> (experiment, rounds, geometry overrides, step size)
RUNS = {
    "cpesph": ("cpesph_fixed", 150, {}, 1.0),
    "cfmspd": ("cfmspd_fixed", 200, {}, 3e-3),
    "mbcfsti": ("mbcfsti_fixed", 400, {"transport": "parallelization"}, 3e-3),
    "multitask": ("multitask", 100, {}, 3e-3),
    "kpca": ("kpca_iid", 150, {}, 0.25),
    "school": ("school_r4", 100, {}, 1e-6),
}


def _run(name: str, every=None):
    """Final iterate of RFedAGS (K = 10) on ``name``; ``every(problem, x)`` after each round."""
    experiment, rounds, geometry, alpha = RUNS[name]
    problem = paper_problem(name, **geometry)
    alg = make_algorithm("rfedags", problem, 10, PAPER[name]["B"], alpha)
    x = problem.initial_point(stream(SEED, "init", name))
    for _, x, _ in alg.iterate(x, rounds, Draws(SEED, experiment)):
        if every is not None:
            every(problem, x)
    return problem, x


class Accuracy:
    timeout = 600
    rounds = 1

    def track_excess_risk_cpesph(self):
        problem, x = _run("cpesph")
        return problem.cost(x) - problem.cost(problem.closed_form_optimum())

    def track_excess_risk_cfmspd(self):
        problem, x = _run("cfmspd")
        return problem.cost(x) - problem.cost(problem.frechet_mean())

    def track_excess_risk_mbcfsti(self):
        problem, x = _run("mbcfsti")
        return problem.cost(x) - problem.optimal_value()

    def track_excess_risk_kpca(self):
        problem, x = _run("kpca")
        return problem.cost(x) - problem.optimal_value()

    def track_subspace_distance_multitask(self):
        problem, x = _run("multitask")
        return problem.extra_metrics(x)["subspace_dist"]

    track_excess_risk_cpesph.unit = track_excess_risk_cfmspd.unit = "excess risk"
    track_excess_risk_mbcfsti.unit = track_excess_risk_kpca.unit = "excess risk"
    track_subspace_distance_multitask.unit = "subspace distance"


class SchoolAccuracy:
    timeout = 600
    rounds = 1

    def setup(self):
        school_raw_file()                          # raises Skip without the School data

    def track_best_nmse_school(self):
        best = [np.inf]

        def keep(problem, x):
            best[0] = min(best[0], problem.test_nmse(x))
        _run("school", keep)
        return best[0]

    track_best_nmse_school.unit = "NMSE"

"""The benchmark's standard instances: one per problem and size.

Each entry is a problem of the registry with the data, geometry and budget every method gets
on it: dataset params and seed, retraction and transport, rounds T, local steps K, batch size
B (every agent takes part), and the centre alpha_0 of the step grid. The grid is
alpha_0 x ``GRID[size]`` (the same factors for every problem and method); the tuning seed is
``TUNING_SEED`` (never a reported seed). The instances are heterogeneous where the problem
has such a setting (CPESph's per-agent V_i, kPCA's one digit class per agent), so that client
drift separates the methods; they need no downloaded file.

Sizes: ``smoke`` (toy: exercises the pipeline, decides nothing), ``default`` (designed for
<= 10 minutes on 2 cores with the built-in baselines; its alpha_0 is near the step the grid
chose on a first run, so that the grid brackets it), ``paper`` (the papers' sizes: Table 1
of the RFedAGS paper, Li & Ma's kPCA, the authors' PCAStief_Syn_40 and LRMCGrass_Syn).
"""

from __future__ import annotations

import copy

SIZES = ("smoke", "default", "paper")
#: the reported seeds per size (the sign interval of the median needs 6 seeds for 95%)
SEEDS = {"smoke": [0, 1, 2], "default": [0, 1, 2, 3, 4, 5], "paper": list(range(10))}
#: the tuning seed: its runs choose the step and are never reported
TUNING_SEED = 1000
#: the step grid, as factors of a problem's alpha_0
GRID = {"smoke": (0.3, 1.0), "default": (0.1, 0.3, 1.0, 3.0), "paper": (0.1, 0.3, 1.0, 3.0)}

#: the built-in baselines (every federated Riemannian strategy of rfl with its default options)
BASELINES = ("rfedags", "rfedavg", "rfedprox", "rfedsvrg", "rfedproj", "zorfedproj")


def _instance(problem, params, geometry, smoke, default, paper, seed=2024, reference=None):
    """One problem's entry: ``smoke``/``default``/``paper`` are (params update, T, K, B, alpha_0)."""
    out = {"problem": problem, "seed": seed, "geometry": geometry, "sizes": {}}
    for size, (update, rounds, K, B, alpha) in zip(SIZES, (smoke, default, paper)):
        out["sizes"][size] = {"params": {**params, **update}, "rounds": rounds, "K": K,
                              "batch_size": B, "alpha": alpha}
        if reference is not None:
            out["sizes"][size]["reference"] = reference
    return out


#: bench problem name -> its entry (``instance`` reads one size of it)
INSTANCES = {
    "cpesph": _instance(
        "cpesph", {"nu": 0.1, "heterogeneous": True}, {"retraction": "normalize", "transport": "parallel"},
        smoke=({"d": 8, "S": 4, "N": 20}, 10, 3, 5, 1.0),
        default=({"d": 25, "S": 10, "N": 80}, 100, 5, 16, 3.0),
        paper=({"d": 25, "S": 10, "N": 80}, 400, 5, 64, 1.0)),
    "cfmspd": _instance(
        "cfmspd", {"D_W": 1.0}, {"retraction": "exp", "transport": "parallel"},
        smoke=({"d": 2, "S": 3, "N": 8}, 10, 3, 4, 0.05),
        default=({"d": 2, "S": 10, "N": 60}, 100, 5, 10, 0.01),
        paper=({"d": 2, "S": 10, "N": 60}, 200, 5, 30, 0.003)),
    "mbcfsti": _instance(
        "mbcfsti", {}, {"retraction": "polar", "transport": "parallelization"},
        smoke=({"d": 6, "p": 2, "S": 3, "N": 6}, 10, 3, 3, 0.01),
        default=({"d": 15, "p": 2, "S": 10, "N": 30}, 100, 5, 10, 0.01),
        paper=({"d": 25, "p": 2, "S": 20, "N": 50}, 400, 5, 25, 0.003)),
    "multitask": _instance(
        "multitask", {"noise": 1.0e-6, "lam": 0.0}, {"retraction": "svd", "transport": "parallelization"},
        smoke=({"S": 3, "N": 6, "m": 10, "r": 2, "d_min": 4, "d_max": 8}, 10, 3, 3, 0.003),
        default=({"S": 10, "N": 20, "m": 40, "r": 3, "d_min": 8, "d_max": 20}, 100, 5, 10, 0.01),
        paper=({"S": 20, "N": 50, "m": 100, "r": 5, "d_min": 10, "d_max": 50}, 100, 5, 25, 0.003),
        reference={"tolerance": 1.0e-9, "max_iterations": 2000}),
    "kpca": _instance(
        "kpca", {"split": "label"}, {"retraction": "polar", "transport": "parallelization"},
        smoke=({"S": 4, "r": 2, "n_per_agent": 20}, 10, 3, 5, 0.25),
        default=({"S": 10, "r": 3, "n_per_agent": 60}, 100, 5, 20, 0.1),
        paper=({"S": 10, "r": 3}, 150, 5, 50, 0.25)),
    "pca_stiefel": _instance(
        "pca_stiefel", {}, {"retraction": "qr", "transport": "projection"},
        smoke=({"d": 5, "r": 2, "S": 4, "N": 10, "block": 10, "n_blocks": 4}, 10, 3, 5, 0.012),
        default=({"d": 20, "r": 3, "S": 20, "N": 40, "block": 40, "n_blocks": 20}, 200, 5, 20, 0.12),
        paper=({"d": 100, "r": 5, "S": 40, "N": 100, "block": 100, "n_blocks": 40}, 1000, 5, 50, 0.012)),
    "lrmc": _instance(
        "lrmc", {"noise": 1.0e-6}, {"retraction": "cayley", "transport": "cayley"},
        smoke=({"m": 12, "n": 24, "r": 2, "S": 3, "OS": 2.0, "test_fraction": 0.2}, 10, 3, 4, 0.02),
        default=({"m": 40, "n": 200, "r": 3, "S": 10, "OS": 4.0, "test_fraction": 0.1}, 100, 5, 10, 0.02),
        paper=({"m": 200, "n": 1000, "r": 5, "S": 20, "OS": 6.0, "test_fraction": 0.1}, 100, 5, 25, 0.002),
        reference={"tolerance": 1.0e-9, "max_iterations": 500}),
}


def instance(problem: str, size: str) -> dict:
    """The standard instance of ``problem`` at ``size``: {problem, seed, geometry, params,
    rounds, K, batch_size, alpha (the grid's centre), reference?} (a copy)."""
    entry = INSTANCES[problem]
    return copy.deepcopy({"problem": entry["problem"], "seed": entry["seed"],
                          "geometry": entry["geometry"], **entry["sizes"][size]})

"""Rule fedavg_bias_expansion on constructed run tables: both sides of rel_tol, of the
remainder's slope and of the resolution threshold."""

from __future__ import annotations

import numpy as np

from rfl.claims.rule import Evidence
from rfl.claims.rules.fedavg_bias_expansion import FedAvgBiasExpansion
from rfl.claims.verdicts import NOT, PARTLY, REPRODUCED, UNDECIDED
from rfl.testing.run_files import write_run


def runs(tmp_path, cells, part="heterogeneity"):
    """cells: [(eta, measured vector, predicted vector, noise amplitude, seeds)]."""
    spec_runs = {}
    for i, (eta, measured, predicted, noise, seeds) in enumerate(cells):
        name = f"e{i}"
        spec_runs[name] = []
        for s in range(seeds):
            n = 200
            rng = np.random.default_rng(s)
            cols = {f"err_{j + 1}": measured[j] + noise * rng.standard_normal(n) if j < len(measured)
                    else np.zeros(n) for j in range(4)}
            path = tmp_path / f"{name}_{s}.csv"
            write_run(path, {"excess_risk": np.ones(n), "cost": np.ones(n), **cols},
                      {"dataset": {"problem": "logistic"}, "seed": s,
                       "algorithm": {"name": "fedavg", "K": 4, "batch_size": 1},
                       "step": {"rule": "fixed", "alpha": eta}},
                      predictions={"fedavg_bias": {part: list(predicted)}})
            spec_runs[name].append(str(path))
    return Evidence({"config": {}, "runs": spec_runs}, list(spec_runs))


def judge(ev, **params):
    rule = FedAvgBiasExpansion()
    return rule.judge(ev, {**rule.defaults(), "part": "heterogeneity", **params})


def test_remainder_of_order_eta_squared_and_small_error_reproduces(tmp_path):
    etas = [0.4, 0.2, 0.1]
    cells = [(e, [e + e ** 2, -e], [e, -e], 0.0, 1) for e in etas]      # remainder e^2: slope 2
    j = judge(runs(tmp_path, cells), rel_tol=0.1)
    assert j.verdict == REPRODUCED
    assert abs(j.rows[-1]["rel. error"] - 0.01 / np.hypot(0.1, 0.1)) < 1e-12
    assert "slope 2" in j.notes[0]


def test_same_remainder_beyond_rel_tol_is_partly(tmp_path):
    cells = [(e, [e + 10 * e ** 2, -e], [e, -e], 0.0, 1) for e in [0.4, 0.2, 0.1]]
    assert judge(runs(tmp_path, cells), rel_tol=0.1).verdict == PARTLY


def test_a_sign_error_is_not_reproduced(tmp_path):
    cells = [(e, [-e, e], [e, -e], 0.0, 1) for e in [0.4, 0.2, 0.1]]   # remainder 2 e: slope 1
    assert judge(runs(tmp_path, cells)).verdict == NOT


def test_unresolved_cells_are_undecided(tmp_path):
    cells = [(e, [e, -e], [e, -e], 5.0, 3) for e in [0.4, 0.2, 0.1]]    # se >> 0.2 |pred|
    j = judge(runs(tmp_path, cells))
    assert j.verdict == UNDECIDED and "eta = 0.1" in j.decide


def test_exact_order_threshold(tmp_path):
    ok = judge(runs(tmp_path, [(0.1, [1.0 + 1e-8, 2.0], [1.0, 2.0], 0.0, 1)]), order="exact", rel_tol=1e-6)
    (tmp_path / "b").mkdir()
    bad = judge(runs(tmp_path / "b", [(0.1, [1.0 + 1e-4, 2.0], [1.0, 2.0], 0.0, 1)]), order="exact",
                rel_tol=1e-6)
    assert ok.verdict == REPRODUCED and bad.verdict == NOT


def test_remainders_within_their_noise_bound_the_remainder_or_stay_undecided(tmp_path):
    """Seeds whose window means scatter (+d, -d, +d/10) around the prediction: the remainder
    (d/30) lies far inside 2 standard errors of 0 at every eta, so its log-log slope is the
    noise's and measures no order. With d = 0.02 eta the remainder's upper bound at the smallest
    eta (d/30 + 2 se, se about 0.55 d per component) is far below rel_tol x the prediction:
    reproduced, the remainder bounded; with d = 0.15 eta (still resolved: se below 0.2 x the
    prediction) the bound exceeds rel_tol = 0.1: undecided, never 'not reproduced' (what a slope
    through noise gave); the same scatter around a remainder of order eta (a sign error) fails."""
    def ev(root, offset, scale=0.02):
        root.mkdir(exist_ok=True)
        spec_runs = {}
        for i, eta in enumerate([0.4, 0.2, 0.1]):
            pred = np.array([eta, -eta])
            d = scale * eta
            spec_runs[f"e{i}"] = []
            for s, dev in enumerate((d, -d, d / 10)):
                m = pred + offset(eta) + dev
                path = root / f"e{i}_{s}.csv"
                write_run(path, {"excess_risk": np.ones(50), "cost": np.ones(50),
                                 "err_1": np.full(50, m[0]), "err_2": np.full(50, m[1]),
                                 "err_3": np.zeros(50), "err_4": np.zeros(50)},
                          {"dataset": {"problem": "logistic"}, "seed": s,
                           "algorithm": {"name": "fedavg", "K": 4, "batch_size": 1},
                           "step": {"rule": "fixed", "alpha": eta}},
                          predictions={"fedavg_bias": {"heterogeneity": list(pred)}})
                spec_runs[f"e{i}"].append(str(path))
        return Evidence({"config": {}, "runs": spec_runs}, list(spec_runs))

    small = judge(ev(tmp_path / "a", lambda eta: np.zeros(2)), rel_tol=0.1)
    assert small.verdict == REPRODUCED and "eta = 0.1" in small.margin and "bounded" in small.notes[-1]
    wide = judge(ev(tmp_path / "b", lambda eta: np.zeros(2), scale=0.15), rel_tol=0.1)
    assert len(wide.rows) == 3 and all(r["se"] <= 0.2 * r["norm predicted"] for r in wide.rows)
    assert wide.verdict == UNDECIDED and "eta = 0.1" in wide.decide and "relative error" in wide.margin
    assert judge(ev(tmp_path / "c", lambda eta: np.array([-2 * eta, 2 * eta]))).verdict == NOT


def _numbers(margin: str, what: str):
    """(value, [low, high] or None, bound) of ``"what v [lo, hi], claim <=|>= b"``."""
    import re
    m = re.search(re.escape(what) + r" (\S+)(?: \[(\S+), (\S+)\])?, claim [<>]=? (\S+)", margin)
    assert m, margin
    return float(m[1]), (float(m[2]), float(m[3])) if m[2] else None, float(m[4])


def test_exact_order_margin_is_the_largest_relative_error_against_rel_tol(tmp_path):
    # deterministic runs: rel. errors 1e-4 / sqrt(5) (eta 0.1) and 1e-5 / sqrt(5) (eta 0.05), se 0
    cells = [(0.1, [1.0 + 1e-4, 2.0], [1.0, 2.0], 0.0, 1), (0.05, [1.0 + 1e-5, 2.0], [1.0, 2.0], 0.0, 1)]
    j = judge(runs(tmp_path, cells), order="exact", rel_tol=1e-6)
    assert j.verdict == NOT and j.margin.startswith("eta = 0.1: largest relative error")
    v, iv, bound = _numbers(j.margin, "largest relative error")
    assert abs(v / (1e-4 / np.sqrt(5)) - 1) < 5e-3 and bound == 1e-6
    assert iv[0] == iv[1] == v and j.margin.endswith("(2 of 2 step sizes resolved)")
    # noisy seeds: the bracket is the relative error +- se / norm(prediction) of the worst cell
    (tmp_path / "n").mkdir()
    j = judge(runs(tmp_path / "n", [(0.1, [1.05, 2.0], [1.0, 2.0], 0.01, 3)]), order="exact", rel_tol=0.1)
    r = j.rows[0]
    v, (lo, hi), bound = _numbers(j.margin, "largest relative error")
    u = r["se"] / r["norm predicted"]
    assert j.verdict == REPRODUCED and u > 0 and bound == 0.1
    assert abs(v / r["rel. error"] - 1) < 5e-3
    assert abs(hi - lo - 2 * u) < 1e-3 * v + 0.01 * u


def test_early_undecided_paths_have_a_margin(tmp_path):
    cells = [(e, [e, -e], [e, -e], 5.0, 3) for e in [0.4, 0.2, 0.1]]    # se >> 0.2 |pred|
    j = judge(runs(tmp_path, cells))
    r = j.rows[-1]                                                       # eta = 0.1
    v, iv, bound = _numbers(j.margin, "se / norm(prediction)")
    assert j.margin.startswith("eta = 0.1: ") and iv is None and bound == 0.2
    assert abs(v / (r["se"] / r["norm predicted"]) - 1) < 5e-3 and v > 0.2
    assert j.margin.endswith("(0 step size(s) resolved, 2 needed)")
    (tmp_path / "z").mkdir()
    j = judge(runs(tmp_path / "z", [(0.1, [1.0, 2.0], [0.0, 0.0], 0.0, 1)]))
    assert j.verdict == UNDECIDED
    assert j.margin == "step sizes with a nonzero heterogeneity prediction 0, claim >= 1"
    j = judge(Evidence({"config": {}, "runs": {"e": []}}, ["e"]))
    assert j.margin == "step sizes with FedAvg runs 0, claim >= 1"

"""The bias rules (``bias_order``, ``bias_ratio``), their estimate (``rfl.claims.bias``) and the
measurement ``plateau_ratio``, judged from run files whose answer is known: error coordinates
err_1 = c eta^p exactly (deterministic runs), or two seeds at b +- delta (a known standard
error delta). Each rule on both sides of its thresholds and on its undecided side."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rfl.claims.bias import Bias, estimate
from rfl.claims.judge import judge_claim
from rfl.claims.verdicts import NOT, PARTLY, REPRODUCED, UNDECIDED
from rfl.testing.run_files import write_run

ETAS = (0.4, 0.2, 0.1, 0.05, 0.025)


class Study:
    """Run files of fixed-step experiments (one step each) and the config that names them."""

    def __init__(self, root):
        self.root = root
        self.config = {"datasets": {}, "experiments": {}, "figures": {}}
        self.runs: dict[str, list[str]] = {}

    def run(self, experiment, eta, name, err, seed=0, dataset="d", values=None):
        """One run whose err_1 column is ``err`` (a number: every round; an array: per round)
        and whose excess risk is ``values`` (default err^2)."""
        self.config["datasets"].setdefault(dataset, {"problem": "logistic", "params": {}})
        exp = self.config["experiments"].setdefault(
            experiment, {"dataset": dataset, "step": {"rule": "fixed", "alpha": eta}, "methods": []})
        if {"algorithm": name, "K": [5]} not in exp["methods"]:
            exp["methods"].append({"algorithm": name, "K": [5]})
        err = np.broadcast_to(np.asarray(err, float), (20,)) if np.ndim(err) == 0 else np.asarray(err, float)
        rid = f"{name}_K5_seed{seed}"
        path = self.root / "runs" / experiment / f"{rid}.csv"
        if values is not None:
            err = np.broadcast_to(err[:1], (len(values),)) if np.ndim(values) else err
        zeros = np.zeros(len(err))
        cols = {"round": np.arange(len(err)), "err_1": err, "err_2": zeros, "err_3": zeros, "err_4": zeros,
                "dist_to_opt": np.abs(err),
                "excess_risk": err ** 2 if values is None else np.asarray(values, float)}
        write_run(path, cols, {"experiment": experiment, "run_id": rid, "seed": seed,
                               "algorithm": {"name": name, "K": 5, "participation": None},
                               "dataset": {"name": dataset, "problem": "logistic", "params": {}}})
        self.runs.setdefault(experiment, []).append(str(path))
        return self

    def judge(self, rule, experiments, params=None):
        claim = {"section": "s", "statement": "c", "rule": rule, "params": params or {},
                 "experiments": experiments}
        return judge_claim({"config": self.config, "runs": self.runs, "tables": {}}, "c", claim)


def table(err, dist=None):
    err = np.asarray(err, float)
    return pd.DataFrame({"round": np.arange(len(err)), "err_1": err, "err_2": np.zeros(len(err)),
                         "dist_to_opt": np.abs(err) if dist is None else dist, "status": "ok"})


# ---- the estimate ----------------------------------------------------------------------------
def test_estimate_of_a_constant_run_is_its_error_without_uncertainty():
    b = estimate([table(np.full(10, -0.3))], 0.5)
    assert b == Bias(pytest.approx(0.3), 0.0, 1, 9, "coordinates")


def test_estimate_over_seeds_has_their_standard_error():
    """Seeds at 2 + 0.1 and 2 - 0.1: mean 2, standard error std/sqrt(2) = 0.1."""
    b = estimate([table(np.full(10, 2.1)), table(np.full(10, 1.9))], 0.5)
    assert b.value == pytest.approx(2.0) and b.uncertainty == pytest.approx(0.1) and b.seeds == 2


def test_estimate_averages_the_window_only_and_counts_its_drift():
    """err = 100 for the first half, then 1, 2, 3, 4 over the last 4 of 8 rounds (window 0.5):
    mean 2.5; drift half the difference of the halves' means (3.5 - 1.5) / 2 = 1."""
    b = estimate([table([100.0] * 4 + [1.0, 2.0, 3.0, 4.0])], 0.5)
    assert b.value == pytest.approx(2.5) and b.uncertainty == pytest.approx(1.0)
    assert estimate([table([100.0] * 4 + [1.0, 2.0, 3.0, 4.0])], 1.0).value == pytest.approx(410 / 8)


def test_estimate_without_coordinates_reads_the_last_distance():
    t = pd.DataFrame({"round": [0, 1, 2], "dist_to_opt": [5.0, 1.0, 0.25], "status": "ok"})
    b = estimate([t], 0.5)
    assert (b.value, b.uncertainty, b.source) == (0.25, 0.0, "dist_to_opt")


def test_estimate_leaves_out_diverged_runs():
    bad = table(np.full(5, 1.0)).assign(status=["ok", "ok", "ok", "ok", "diverged"])
    assert estimate([bad], 0.5).seeds == 0 and np.isnan(estimate([bad], 0.5).value)
    assert estimate([bad, table(np.full(5, 0.5))], 0.5).value == pytest.approx(0.5)


# ---- bias_order ------------------------------------------------------------------------------
def order_study(tmp_path, p_avg=1.0, p_rr=2.0, etas=ETAS):
    s = Study(tmp_path)
    for eta in etas:
        e = f"het_{eta}"
        s.run(e, eta, "fedavg", 0.05 * eta ** p_avg).run(e, eta, "fedrr", 0.3 * eta ** p_rr)
    return s, [f"het_{eta}" for eta in etas]


DET = {"min_seeds": 1}          # deterministic runs: one seed is the whole sample


@pytest.mark.parametrize("p_avg, p_rr, want", [(1.0, 2.0, REPRODUCED), (1.25, 1.75, REPRODUCED),
                                                (1.0, 1.65, PARTLY), (1.35, 2.0, PARTLY),
                                                (1.0, 1.0, PARTLY), (2.0, 1.0, NOT)])
def test_bias_order_slopes_within_the_tolerance(tmp_path, p_avg, p_rr, want):
    s, names = order_study(tmp_path, p_avg, p_rr)
    j = s.judge("bias_order", names, DET)
    assert j["verdict"] == want
    text = "\n".join(j["notes"])
    assert (f"local slope {p_avg:.2f} [{p_avg:.2f}, {p_avg:.2f}] over eta = 0.025..0.1 (3 smallest "
            f"resolved step sizes; expected 1)") in text
    assert f"local slope {p_rr:.2f}" in text
    rr = [r for r in j["rows"] if r["method"].startswith("FedRR")]
    assert [r["eta"] for r in rr] == sorted(ETAS)
    assert rr[0]["bias"] == pytest.approx(0.3 * 0.025 ** p_rr)


def test_bias_order_reads_the_smallest_steps_not_those_beyond_the_first_order_regime(tmp_path):
    """FedAvg's bias eta + 30 eta^3: slope 1 as eta -> 0, but the cubic term dominates at 0.2
    and 0.4 (one fit over all five steps: 1.6, out of 1 +- 0.3). The local slope at 0.025..0.1
    is about 1.15: reproduced."""
    s = Study(tmp_path)
    for eta in ETAS:
        s.run(f"h{eta}", eta, "fedavg", eta + 30 * eta ** 3)
    j = s.judge("bias_order", [f"h{eta}" for eta in ETAS], {"orders": {"fedavg": 1}, **DET})
    assert j["verdict"] == REPRODUCED
    assert "over all 5 resolved: 1.6" in "\n".join(j["notes"])


def test_bias_order_local_slope_interval_is_the_delta_method_closed_form(tmp_path):
    """Two steps (local = 2), each bias the mean of two seeds b (1 +- r): standard error b r,
    se(log b) = r; the slope's se is sqrt(2) r / log 2 and its interval slope +- 1.96 se."""
    from scipy import stats as sps
    r = 0.05
    s = Study(tmp_path)
    for eta in (0.1, 0.05):
        for seed, sign in enumerate((1, -1)):
            s.run(f"h{eta}", eta, "fedavg", eta * (1 + sign * r), seed=seed)
    j = s.judge("bias_order", ["h0.1", "h0.05"], {"orders": {"fedavg": 1}, "min_steps": 2, "local": 2,
                                                 "min_seeds": 2})
    half = sps.norm.ppf(0.975) * np.sqrt(2) * r / np.log(2)
    assert f"slope 1 [{1 - half:.3g}, {1 + half:.3g}], claim in [0.7, 1.3]" in j["margin"]
    assert j["verdict"] == REPRODUCED            # half = 0.196 < 0.3


def test_bias_order_one_seed_of_noisy_runs_decides_nothing(tmp_path):
    s, names = order_study(tmp_path, 2.0, 1.0)                 # far from both orders
    j = s.judge("bias_order", names)                           # default: at least 3 seeds
    assert j["verdict"] == UNDECIDED and "1 seed; at least 3 decide it" in j["decide"]


def test_bias_order_with_too_few_steps_is_undecided(tmp_path):
    s, names = order_study(tmp_path, etas=ETAS[:4])
    j = s.judge("bias_order", names, DET)
    assert j["verdict"] == UNDECIDED and "1 more step sizes" in j["decide"]


def test_bias_order_leaves_an_unresolved_bias_out_and_says_what_resolves_it(tmp_path):
    """At eta = 0.025 FedRR's seeds sit at 1e-4 +- 1e-3 (standard error 1e-3, 10 times the
    bias): left out, 4 resolved step sizes of 5 needed; resolving it to 1e-4 / (2 z) takes
    (1e-3 / (1e-4 / 6))^2 = 3600 times the seeds x rounds."""
    s, names = order_study(tmp_path, etas=ETAS[:4])
    s.run("het_0.025", 0.025, "fedavg", 0.05 * 0.025)
    s.run("het_0.025", 0.025, "fedrr", 1e-4 + 1e-3, seed=0).run("het_0.025", 0.025, "fedrr", 1e-4 - 1e-3, seed=1)
    j = s.judge("bias_order", names + ["het_0.025"], DET)
    assert j["verdict"] == UNDECIDED
    assert "4 of 5 step sizes resolved, 5 needed" in "\n".join(j["notes"])
    assert "about 3600.0x the seeds x rounds (2 seeds, 19 rounds now)" in j["decide"]


# ---- bias_ratio ----------------------------------------------------------------------------------
@pytest.mark.parametrize("ratio, want", [(1e-6, REPRODUCED), (0.009, REPRODUCED), (0.011, NOT), (0.5, NOT)])
def test_bias_ratio_removes(tmp_path, ratio, want):
    s = Study(tmp_path)
    s.run("e", 0.1, "fedavg", 0.2).run("e", 0.1, "scaffold", 0.2 * ratio)
    j = s.judge("bias_ratio", ["e"], {"method": "scaffold", "relation": "removes", "factor": 0.01})
    assert j["verdict"] == want
    assert j["rows"][0]["ratio"] == pytest.approx(ratio) and j["rows"][0]["eta"] == 0.1


def test_bias_ratio_removes_undecided_while_the_uncertainty_straddles(tmp_path):
    """FedRR at 0.2 +- 0.05 against FedAvg 1 (exact): r = 0.2, u_r = 0.05, z = 3: 0.35 > 0.25."""
    s = Study(tmp_path)
    s.run("e", 2.0, "fedavg", 1.0)
    s.run("e", 2.0, "fedrr", 0.25, seed=0).run("e", 2.0, "fedrr", 0.15, seed=1)
    j = s.judge("bias_ratio", ["e"], {"method": "fedrr", "relation": "removes", "factor": 0.25})
    assert j["verdict"] == UNDECIDED and j["rows"][0]["uncertainty"] == pytest.approx(0.05)
    assert j["decide"].startswith("`e`: the ratio's uncertainty below 0.017 (now 0.05)")
    j = s.judge("bias_ratio", ["e"], {"method": "fedrr", "relation": "removes", "factor": 0.4})
    assert j["verdict"] == REPRODUCED and j["decide"] is None


@pytest.mark.parametrize("ratio, want", [(1.1, REPRODUCED), (0.7, REPRODUCED), (1.6, NOT), (0.6, NOT)])
def test_bias_ratio_keeps(tmp_path, ratio, want):
    s = Study(tmp_path)
    s.run("e", 2.0, "fedavg", -0.5).run("e", 2.0, "scaffold", -0.5 * ratio)
    j = s.judge("bias_ratio", ["e"], {"method": "scaffold", "relation": "keeps", "factor": 1.5})
    assert j["verdict"] == want


def test_bias_ratio_keeps_undecided_near_the_bound_and_when_the_reference_is_not_resolved(tmp_path):
    s = Study(tmp_path)
    s.run("e", 2.0, "fedavg", 1.0)
    s.run("e", 2.0, "scaffold", 1.5, seed=0).run("e", 2.0, "scaffold", 1.3, seed=1)     # 1.4 +- 0.1
    j = s.judge("bias_ratio", ["e"], {"method": "scaffold", "relation": "keeps", "factor": 1.5})
    assert j["verdict"] == UNDECIDED
    s = Study(tmp_path / "b")
    s.run("e", 2.0, "fedavg", 0.2, seed=0).run("e", 2.0, "fedavg", -0.1, seed=1)       # 0.05 +- 0.15
    s.run("e", 2.0, "scaffold", 0.05)
    j = s.judge("bias_ratio", ["e"], {"method": "scaffold", "relation": "keeps", "factor": 1.5})
    assert j["verdict"] == UNDECIDED and "fedavg's bias 0.05 is within 3 x 0.15 of 0" in j["notes"][0]


def test_bias_ratio_without_the_method_is_undecided(tmp_path):
    s = Study(tmp_path)
    s.run("e", 2.0, "fedavg", 1.0)
    j = s.judge("bias_ratio", ["e"], {"method": "scaffold"})
    assert j["verdict"] == UNDECIDED and "no runs of scaffold" in j["notes"][0]


def margin_numbers(margin: str, what: str) -> tuple[float, float, float, str]:
    """(value, low, high, claim) of the first ``"what v [lo, hi], claim ..."`` in a margin."""
    import re
    m = re.search(re.escape(what) + r" (\S+) \[(\S+), (\S+)\], (claim [^;]+)", margin)
    assert m, margin
    return float(m[1]), float(m[2]), float(m[3]), m[4]


def test_bias_ratio_margin_is_the_ratio_with_z_uncertainties_against_the_factor(tmp_path):
    """FedRR 0.2 +- 0.05 over FedAvg 1 (exact), z = 3: ratio 0.2 [0.05, 0.35], claim <= 0.25;
    keeps (factor 1.5): scaffold 1.4 +- 0.1 over 1: [1.1, 1.7] against [1/1.5, 1.5]."""
    s = Study(tmp_path)
    s.run("e", 2.0, "fedavg", 1.0)
    s.run("e", 2.0, "fedrr", 0.25, seed=0).run("e", 2.0, "fedrr", 0.15, seed=1)
    j = s.judge("bias_ratio", ["e"], {"method": "fedrr", "relation": "removes", "factor": 0.25})
    v, lo, hi, claim = margin_numbers(j["margin"], "ratio")
    assert (v, lo, hi) == pytest.approx((0.2, 0.05, 0.35)) and claim == "claim <= 0.25"
    s = Study(tmp_path / "k")
    s.run("e", 2.0, "fedavg", 1.0)
    s.run("e", 2.0, "scaffold", 1.5, seed=0).run("e", 2.0, "scaffold", 1.3, seed=1)
    j = s.judge("bias_ratio", ["e"], {"method": "scaffold", "relation": "keeps", "factor": 1.5})
    v, lo, hi, claim = margin_numbers(j["margin"], "ratio")
    assert (v, lo, hi) == pytest.approx((1.4, 1.1, 1.7)) and claim == "claim in [0.667, 1.5]"


def test_bias_ratio_margin_of_an_unresolved_reference_and_of_missing_runs(tmp_path):
    """FedAvg at 0.05 +- 0.15 (z = 3): its bias [-0.4, 0.5] is not clear of 0."""
    s = Study(tmp_path)
    s.run("e", 2.0, "fedavg", 0.2, seed=0).run("e", 2.0, "fedavg", -0.1, seed=1)
    s.run("e", 2.0, "scaffold", 0.05)
    j = s.judge("bias_ratio", ["e"], {"method": "scaffold", "relation": "keeps", "factor": 1.5})
    v, lo, hi, claim = margin_numbers(j["margin"], "fedavg ||bias||")
    assert (v, lo, hi) == pytest.approx((0.05, -0.4, 0.5)) and claim == "claim > 0"
    s = Study(tmp_path / "m")
    s.run("e", 2.0, "fedavg", 1.0)
    j = s.judge("bias_ratio", ["e"], {"method": "scaffold"})
    assert j["margin"] == "`e`: no runs of scaffold, claim <= 0.05"


# ---- plateau_ratio ---------------------------------------------------------------------------
def test_plateau_ratio_against_the_reference_on_the_same_dataset(tmp_path):
    """RFedAGS levels at 0.1, its RR at 0.02 (same experiment) and the control at 0.05 (its
    own experiment, same dataset): ratios 0.2 and 0.5; a measurement without a verdict."""
    s = Study(tmp_path)
    s.run("a", 0.03, "rfedags", 0.0, values=np.full(30, 0.1))
    s.run("a", 0.03, "rfedags_rr", 0.0, values=np.full(30, 0.02))
    s.run("b", 0.03, "rfedags_rr", 0.0, values=np.full(30, 0.05))
    j = s.judge("plateau_ratio", ["a", "b"])
    assert j["verdict"] is None
    got = {(r["experiment"], r["method"]): r["/ rfedags"] for r in j["rows"]}
    assert got[("a", "RFedAGS-RR-K=5")] == pytest.approx(0.2) and got[("b", "RFedAGS-RR-K=5")] == pytest.approx(0.5)
    assert got[("a", "RFedAGS-K=5")] == pytest.approx(1.0)


def test_bias_order_counts_replicas_as_its_sample(tmp_path, monkeypatch):
    """One seed of runs with 512 replicas each: the bias's standard error is across the replicas
    (``rfl.claims.bias``), so the sample is 512, not the 1 seed that alone decides nothing."""
    import dataclasses

    from rfl.claims.rules import bias_order

    real = bias_order.estimate

    def with_replicas(runs, window):
        b = real(runs, window)
        return dataclasses.replace(b, uncertainty=0.01 * b.value, replicas=512)

    s, names = order_study(tmp_path, 1.0, 2.0)
    assert s.judge("bias_order", names)["verdict"] == UNDECIDED          # 1 seed, no replicas
    monkeypatch.setattr(bias_order, "estimate", with_replicas)
    j = s.judge("bias_order", names)
    assert j["verdict"] == REPRODUCED and "n = replicas x seeds" in j["margin"]
    assert {r["replicas"] for r in j["rows"]} == {512}

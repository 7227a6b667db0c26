"""Claim rules ``converges_to_objective`` and ``sooner_in_time`` on constructed run files whose
answer follows from the formula (exact geometric decays to a chosen floor, a time column with
a chosen cost per round): each threshold from both sides, and the undecided side."""

from __future__ import annotations

import numpy as np
import pytest

from rfl.claims.judge import judge_claim
from rfl.claims.verdicts import NOT, PARTLY, REPRODUCED, UNDECIDED
from rfl.participation import tag
from rfl.testing.run_files import write_run

P = [0.9, 0.2, 0.5]
BERN = {"scheme": "bernoulli", "rho": 0.5, "probabilities": P}
EST = {"scheme": "bernoulli_estimated", "rho": 0.5, "probabilities": P}
BIASED = {"scheme": "biased", "rho": 0.5, "probabilities": P}
GAPS = {"gap_F": 1.0, "gap_weighted": 2.0}


def decay(floor, T=400, q=0.95, start=1.0):
    return start * q ** np.arange(T + 1) + floor


class Study:
    def __init__(self, root):
        self.root, self.runs = root, {}
        self.config = {"datasets": {"d": {"problem": "cpesph", "params": {}}}, "experiments": {}, "figures": {}}

    def run(self, e, part, er, erw=None, time=None, seed=0, gaps=GAPS, status=None):
        exp = self.config["experiments"].setdefault(e, {"dataset": "d", "methods": []})
        m = {"algorithm": "rfedags", "K": [5], "participation": part}
        if m not in exp["methods"]:
            exp["methods"].append(m)
        rid = f"rfedags_K5{tag(part)}_seed{seed}"
        path = self.root / e / f"{rid}.csv"
        cols = {"round": np.arange(len(er)), "excess_risk": np.asarray(er, float)}
        if erw is not None:
            cols["excess_risk_weighted"] = np.asarray(erw, float)
        if time is not None:
            cols["time"] = np.asarray(time, float)
        if status is not None:
            cols["status"] = status
        meta = {"weighted_objective": dict(gaps)} if gaps else {}
        write_run(path, cols, {"experiment": e, "run_id": rid, "seed": seed,
                               "algorithm": {"name": "rfedags", "K": 5, "participation": part}}, **meta)
        self.runs.setdefault(e, []).append(str(path))
        return self

    def judge(self, rule, params=None, experiments=("e",)):
        claim = {"section": "s", "statement": "c", "rule": rule, "params": params or {},
                 "experiments": list(experiments)}
        return judge_claim({"config": self.config, "runs": self.runs, "tables": {}}, "c", claim)


def _verdict(result):
    return result["verdict"]


# ---- converges_to_objective -------------------------------------------------------------
def _study(tmp_path, biased_target_floor=0.02, biased_other=1.0, unbiased_floor=0.01, unbiased_other=2.0,
           biased_q=0.95, biased_start=1.0):
    s = Study(tmp_path)
    for part in (BERN, EST):
        s.run("e", part, decay(unbiased_floor), decay(unbiased_other))
    s.run("e", BIASED, decay(biased_other), decay(biased_target_floor, q=biased_q, start=biased_start))
    return s


def test_converges_to_objective_reproduced(tmp_path):
    r = _study(tmp_path).judge("converges_to_objective")
    assert _verdict(r) == REPRODUCED
    rows = {row["method"].split(", ")[1]: row for row in r["rows"]}
    assert rows["biased p_i given"]["minimises"] == "F~"
    # plateau: the median of the last 40 of 401 rounds, (q^380 + q^381) / 2 + floor
    tail = (0.95 ** 380 + 0.95 ** 381) / 2
    assert rows["biased p_i given"]["ratio F~"] == pytest.approx((0.02 + tail) / 2, rel=1e-12)
    assert rows["bernoulli p_i given"]["ratio F"] == pytest.approx((0.01 + tail) / 1, rel=1e-12)
    assert rows["bernoulli p_i given"]["ratio F~"] == pytest.approx((2.0 + tail) / 2, rel=1e-12)
    # the biased scheme: its target F~ at 0.02 / 2 = 0.01 of the gap, F at 1 / 1 of F's gap
    b = rows["biased p_i given"]["method"]
    assert (f"`e`, {b}: plateau / gap in F~ 0.01, claim <= 0.1; `e`, {b}: plateau / gap in F 1, "
            f"claim in [0.5, 1.5]") in r["margin"]
    u = rows["bernoulli p_i given"]["method"]
    assert (f"`e`, {u}: plateau / gap in F 0.01, claim <= 0.1; `e`, {u}: plateau / gap in F~ 1, "
            f"claim in [0.5, 1.5]") in r["margin"]
    assert r["margin"].count("; ") == 5                  # three schemes, two cases each


@pytest.mark.parametrize("floor, verdict", [(0.19, REPRODUCED), (0.21, PARTLY)])
def test_target_plateau_threshold_small(tmp_path, floor, verdict):
    """The biased run's plateau against F~ at 0.095 / 0.105 x its gap 2 (small = 0.1), levelled."""
    r = _study(tmp_path, biased_target_floor=floor).judge("converges_to_objective")
    assert _verdict(r) == verdict
    assert f"plateau / gap in F~ {floor / 2:.3g}, claim <= 0.1" in r["margin"]


@pytest.mark.parametrize("other, verdict", [(1.45, REPRODUCED), (1.55, PARTLY), (0.55, REPRODUCED),
                                            (0.45, PARTLY)])
def test_other_objective_within_tol_of_its_gap(tmp_path, other, verdict):
    """The biased run against F sits at ``other`` x gap_F = 1 (tol = 0.5)."""
    assert _verdict(_study(tmp_path, biased_other=other).judge("converges_to_objective")) == verdict


def test_every_scheme_at_the_wrong_minimiser_is_not_reproduced(tmp_path):
    s = Study(tmp_path)
    s.run("e", BERN, decay(1.0), decay(0.0))          # unbiased sitting at x~*
    s.run("e", BIASED, decay(0.0), decay(2.0))        # biased sitting at x*
    assert _verdict(s.judge("converges_to_objective")) == NOT


def test_still_falling_target_is_undecided(tmp_path):
    """20 x 0.995^t: at 1.5 x its gap over the last 10% of rounds, and 0.995^-40 = 1.22 > 1.2 x
    lower than the 10% before: still falling, not levelled off."""
    r = _study(tmp_path, biased_target_floor=0.0, biased_q=0.995, biased_start=20.0).judge("converges_to_objective")
    assert _verdict(r) == UNDECIDED
    assert "more rounds" in r["decide"]


def test_without_recorded_gaps_or_with_equal_minimisers_undecided(tmp_path):
    s = Study(tmp_path)
    s.run("e", BERN, decay(0.0), decay(2.0), gaps=None)
    assert _verdict(s.judge("converges_to_objective")) == UNDECIDED
    s2 = Study(tmp_path / "b")
    s2.run("e", BERN, decay(0.0), decay(0.0), gaps={"gap_F": 0.0, "gap_weighted": 0.0})
    assert _verdict(s2.judge("converges_to_objective")) == UNDECIDED


# ---- sooner_in_time -----------------------------------------------------------------------
def _time_study(tmp_path, first_cost, second_cost, first_floor=0.01, second_floor=0.01, with_time=True,
                seeds=3):
    """The same decay per seed; a round of the first scheme costs ``first_cost``, of the second
    ``second_cost`` (a number, or one per seed)."""
    s = Study(tmp_path)
    T = 300
    costs = np.broadcast_to(np.asarray(second_cost, float), (seeds,))
    for seed in range(seeds):
        for part, cost, floor in ((BERN, first_cost, first_floor), (3, costs[seed], second_floor)):
            s.run("e", part, decay(floor, T), time=cost * np.arange(T + 1) if with_time else None,
                  gaps=None, seed=seed)
    return s


def _t_interval(ratios):
    """The 95% Student-t interval of the mean log ratio, shown as ratios (the oracle)."""
    from scipy import stats as sps
    logs = np.log(ratios)
    half = sps.t.ppf(0.975, len(logs) - 1) * np.std(logs, ddof=1) / np.sqrt(len(logs))
    return tuple(float(np.exp(logs.mean() + d)) for d in (0.0, -half, half))


def test_sooner_in_time_both_sides(tmp_path):
    """Same curves; a round of the first scheme costs 2, of the second 5, on 3 seeds: the first
    reaches every level at the same round, in 2/5 of the time, on every seed (interval [0.4,
    0.4]); the costs swapped: 5/2, not sooner; equal costs: a tie, not sooner."""
    r = _time_study(tmp_path / "a", 2.0, 5.0).judge("sooner_in_time", {"level_factors": [2.0, 1.2]})
    assert _verdict(r) == REPRODUCED
    assert all(row["time ratio"] == pytest.approx(0.4) and row["seeds paired"] == 3 for row in r["rows"])
    assert r["margin"] == ("`e`, c = 2: time ratio 0.4 [0.4, 0.4], claim < 1 (3 seeds, t); "
                           "`e`, c = 1.2: time ratio 0.4 [0.4, 0.4], claim < 1 (3 seeds, t)")
    assert _verdict(_time_study(tmp_path / "b", 5.0, 2.0).judge("sooner_in_time")) == NOT
    assert _verdict(_time_study(tmp_path / "c", 3.0, 3.0).judge("sooner_in_time")) == NOT   # a tie is not sooner


@pytest.mark.parametrize("first_cost", [2.0, 5.0])
def test_sooner_in_time_one_seed_never_decides(tmp_path, first_cost):
    """One seed, 2/5 or 5/2 of the time: undecided either way (one seed never refutes nor
    confirms a comparison), and the row says so."""
    r = _time_study(tmp_path, first_cost, 7.0 - first_cost, seeds=1).judge("sooner_in_time")
    assert _verdict(r) == UNDECIDED
    assert "1 seed; at least 3 decide it" in r["decide"]


@pytest.mark.parametrize("upper, verdict", [(-0.01, REPRODUCED), (0.01, UNDECIDED)])
def test_sooner_in_time_interval_threshold(tmp_path, upper, verdict):
    """Per-seed time ratios exp(m + (-0.05, 0, 0.05)), m set so that the t interval's upper end
    on the log scale is ``upper``: just below 1 the first scheme is sooner, just above the
    interval straddles 1 (its estimate below): undecided, with the seeds that would decide."""
    from scipy import stats as sps
    d = np.array([-0.05, 0.0, 0.05])
    m = upper - sps.t.ppf(0.975, 2) * 0.05 / np.sqrt(3)
    ratios = np.exp(m + d)
    r = _time_study(tmp_path, 1.0, 1.0 / ratios).judge("sooner_in_time")
    assert _verdict(r) == verdict
    e, lo, hi = _t_interval(ratios)
    assert r["margin"] == f"`e`, c = 2: time ratio {e:.3g} [{lo:.3g}, {hi:.3g}], claim < 1 (3 seeds, t)"
    if verdict == UNDECIDED:
        assert "straddles the bound" in r["decide"]


@pytest.mark.parametrize("lower, verdict", [(0.01, NOT), (-0.01, UNDECIDED)])
def test_sooner_in_time_not_sooner_threshold(tmp_path, lower, verdict):
    """The other bound: the interval's lower end at exp(+-0.01): wholly above 1, not sooner;
    touching below 1, undecided."""
    from scipy import stats as sps
    d = np.array([-0.05, 0.0, 0.05])
    m = lower + sps.t.ppf(0.975, 2) * 0.05 / np.sqrt(3)
    r = _time_study(tmp_path, 1.0, 1.0 / np.exp(m + d)).judge("sooner_in_time")
    assert _verdict(r) == verdict


def test_sooner_in_time_level_from_the_higher_plateau(tmp_path):
    """First: floor 0.1 at cost 1; second: floor 0.01 at cost 2 (3 seeds alike). Level 2 x 0.1
    = 0.2: the first reaches it at round ceil(log 0.1 / log 0.95) = 45 (time 45), the second at
    ceil(log 0.19 / log 0.95) = 33 (time 66): sooner. Level 1.02 x 0.1 = 0.102: the first
    needs ln(0.002)/ln(0.95) = 122 rounds (time 122), the second ln(0.092)/ln(0.95) = 47 (time
    94): later: partly."""
    s = _time_study(tmp_path, 1.0, 2.0, first_floor=0.1, second_floor=0.01)
    r = s.judge("sooner_in_time", {"level_factors": [2.0, 1.02]})
    assert _verdict(r) == PARTLY
    a, b = r["rows"]
    assert (a["first: round"], a["first: time"], a["second: round"], a["second: time"]) == (45, 45, 33, 66)
    assert a["sooner"] == "yes" and b["sooner"] == "no"
    assert b["first: round"] == np.ceil(np.log(0.002) / np.log(0.95))
    assert b["second: round"] == np.ceil(np.log(0.092) / np.log(0.95))
    assert a["time ratio"] == pytest.approx(45 / 66) and b["time ratio"] == pytest.approx(122 / 94)


def test_sooner_in_time_level_is_each_seeds_own(tmp_path):
    """Seed 2's first scheme levels off at 0.1, the others at 0.01 (the second at 0.01, cost 2
    against 1): at c = 2 seeds 0 and 1 reach 0.02 at the same round (ratio 1/2); seed 2's level
    is 2 x its own higher plateau 0.1 (first at round 45, second at 33: 45/66), so every seed
    counts, where one level from the median curves (0.02) would leave seed 2 out."""
    s, T = Study(tmp_path), 300
    for seed, floor in enumerate((0.01, 0.01, 0.1)):
        s.run("e", BERN, decay(floor, T), time=1.0 * np.arange(T + 1), gaps=None, seed=seed)
        s.run("e", 3, decay(0.01, T), time=2.0 * np.arange(T + 1), gaps=None, seed=seed)
    r = s.judge("sooner_in_time")
    assert _verdict(r) == REPRODUCED
    e, lo, hi = _t_interval(np.array([0.5, 0.5, 45 / 66]))
    assert r["rows"][0]["seeds paired"] == 3
    assert r["margin"] == f"`e`, c = 2: time ratio {e:.3g} [{lo:.3g}, {hi:.3g}], claim < 1 (3 seeds, t)"


def test_sooner_in_time_diverged_seed_is_never_sooner(tmp_path):
    """Two seeds 2/5 of the time; on the third the first scheme diverges at round 5, before
    reaching the level: it never gets there (time +inf), so the interval has no upper end and
    the case stays open (never "sooner" on a run that did not get there)."""
    s, T = Study(tmp_path), 300
    for seed in range(3):
        n = 6 if seed == 2 else T + 1                  # a run stops at the round it diverged on
        status = np.array(["ok"] * (n - 1) + ["diverged" if seed == 2 else "ok"], dtype=object)
        s.run("e", BERN, decay(0.01, T)[:n], time=2.0 * np.arange(n), gaps=None, seed=seed, status=status)
        s.run("e", 3, decay(0.01, T), time=5.0 * np.arange(T + 1), gaps=None, seed=seed)
    r = s.judge("sooner_in_time")
    assert _verdict(r) == UNDECIDED
    assert ", inf], claim < 1 (3 seeds, t)" in r["margin"]


def test_sooner_in_time_without_time_column_undecided(tmp_path):
    r = _time_study(tmp_path, 1.0, 2.0, with_time=False).judge("sooner_in_time")
    assert _verdict(r) == UNDECIDED and r["margin"] == "`e`: no time ratio, claim < 1"

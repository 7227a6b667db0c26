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

    def run(self, e, part, er, erw=None, time=None, seed=0, gaps=GAPS):
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
def _time_study(tmp_path, first_cost, second_cost, first_floor=0.01, second_floor=0.01, with_time=True):
    s = Study(tmp_path)
    T = 300
    for part, cost, floor in ((BERN, first_cost, first_floor), (3, second_cost, second_floor)):
        s.run("e", part, decay(floor, T), time=cost * np.arange(T + 1) if with_time else None, gaps=None)
    return s


def test_sooner_in_time_both_sides(tmp_path):
    """Same curves; a round of the first scheme costs 2, of the second 5: the first reaches every
    level at the same round, in 2/5 of the time."""
    r = _time_study(tmp_path / "a", 2.0, 5.0).judge("sooner_in_time", {"level_factors": [2.0, 1.2]})
    assert _verdict(r) == REPRODUCED
    assert all(row["time ratio"] == pytest.approx(0.4) for row in r["rows"])
    assert r["margin"] == ("`e`, c = 2: time ratio (medians) 0.4, claim < 1; "
                           "`e`, c = 1.2: time ratio (medians) 0.4, claim < 1")
    assert _verdict(_time_study(tmp_path / "b", 5.0, 2.0).judge("sooner_in_time")) == NOT
    assert _verdict(_time_study(tmp_path / "c", 3.0, 3.0).judge("sooner_in_time")) == NOT   # a tie is not sooner


def test_sooner_in_time_level_from_the_higher_plateau(tmp_path):
    """First: floor 0.1 at cost 1; second: floor 0.01 at cost 2. Level 2 x 0.1 = 0.2: the first
    reaches it at round ceil(log 0.1 / log 0.95) = 45 (time 45), the second at
    ceil(log 0.19 / log 0.95) = 33 (time 66): sooner. Level 1.02 x 0.1 = 0.102: the first
    needs ln(0.002)/ln(0.95) = 122 rounds (time 122 > the second's 2 x 45): later: partly."""
    s = _time_study(tmp_path, 1.0, 2.0, first_floor=0.1, second_floor=0.01)
    r = s.judge("sooner_in_time", {"level_factors": [2.0, 1.02]})
    assert _verdict(r) == PARTLY
    a, b = r["rows"]
    assert (a["first: round"], a["first: time"], a["second: round"], a["second: time"]) == (45, 45, 33, 66)
    assert a["sooner"] == "yes" and b["sooner"] == "no"
    assert b["first: round"] == np.ceil(np.log(0.002) / np.log(0.95))


def test_sooner_in_time_without_time_column_undecided(tmp_path):
    r = _time_study(tmp_path, 1.0, 2.0, with_time=False).judge("sooner_in_time")
    assert _verdict(r) == UNDECIDED and r["margin"] == "`e`: no time ratio, claim < 1"


def test_sooner_in_time_margin_has_the_per_seed_interval(tmp_path):
    """Three seeds, the same curve; a round of the first scheme costs 2, of the second 4, 5, 8
    by seed: both reach the level at the same round R, the median times are 2R and 5R (ratio
    0.4), the per-seed ratios 1/2, 2/5, 1/4, whose t interval on the log scale is
    exp(mean +- t_{0.975, 2} sd / sqrt(3)) around the geometric mean 0.05^(1/3)."""
    from scipy import stats as sps
    s, T = Study(tmp_path), 300
    for seed, cost in enumerate((4.0, 5.0, 8.0)):
        s.run("e", BERN, decay(0.01, T), time=2.0 * np.arange(T + 1), gaps=None, seed=seed)
        s.run("e", 3, decay(0.01, T), time=cost * np.arange(T + 1), gaps=None, seed=seed)
    r = s.judge("sooner_in_time")
    assert _verdict(r) == REPRODUCED
    logs = np.log([0.5, 0.4, 0.25])
    half = sps.t.ppf(0.975, 2) * np.std(logs, ddof=1) / np.sqrt(3)
    e, lo, hi = (np.exp(logs.mean() + d) for d in (0.0, -half, half))
    assert r["margin"] == (f"`e`, c = 2: time ratio (medians) 0.4, per seed {e:.3g} [{lo:.3g}, {hi:.3g}] "
                           f"(3 seeds, t), claim < 1")

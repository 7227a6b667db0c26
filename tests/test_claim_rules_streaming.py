"""The streaming / online claim rules (level_order, db_gap, step_tradeoff, cheaper_same_value)
on constructed run tables, each on both sides of its threshold, and their per-run statistics
by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from test_claim_rules_newer import Study

from rfl.claims.rules.level_order import level
from rfl.claims.rules.step_tradeoff import settling_round
from rfl.claims.verdicts import NOT, PARTLY, REPRODUCED, UNDECIDED

T = 400


def msd_curve(steady_db, tau, seed, noise_db=0.2, start_db=6.0):
    """An MSD curve falling from start_db to steady_db with time constant tau (rounds), with a
    little seeded noise in dB."""
    t = np.arange(T + 1.0)
    rng = np.random.default_rng(seed)
    dbs = steady_db + (start_db - steady_db) * np.exp(-t / tau) + noise_db * rng.standard_normal(t.size)
    return 10 ** (dbs / 10)


def add(st, experiment, name, steady_db, tau=50.0, seeds=3, S=20, offset=0.0):
    st.config["datasets"].setdefault(experiment, {"problem": "streaming_pca", "params": {"S": S}})
    for s in range(seeds):
        m = msd_curve(steady_db + offset * s, tau, seed=hash((experiment, name, s)) % 2 ** 32)
        st.run(experiment, np.zeros(T + 1), name=name, K=1, seed=s, params={"S": S},
               extra={"msd": m})
    return st


def test_level_is_the_tail_mean_or_final_value():
    table = pd.DataFrame({"round": np.arange(11), "msd": np.arange(11.0), "status": "ok"})
    assert level(table, "msd", "tail", 0.2) == pytest.approx(np.mean([9.0, 10.0]))
    assert level(table, "msd", "final") == 10.0


@pytest.mark.parametrize("levels, want", [((-9.6, -17.6, -19.9, -23.6), REPRODUCED),
                                          ((-9.6, -19.9, -17.6, -23.6), NOT)])
def test_level_order_of_four_methods(tmp_path, levels, want):
    st = Study(tmp_path)
    for name, lv in zip(["noncooperative", "drsgd", "diffusion", "fusion_centre"], levels):
        add(st, "pca", name, lv)
    r = st.judge("level_order", ["pca"], {})
    assert r["verdict"] in ((want,) if want == REPRODUCED else (NOT, PARTLY))
    if want != REPRODUCED:
        assert r["verdict"] != REPRODUCED


def test_level_order_margin_separates_close_levels(tmp_path):
    st = Study(tmp_path)
    add(st, "pca", "noncooperative", -10.0)
    add(st, "pca", "diffusion", -10.5)
    assert st.judge("level_order", ["pca"], {"methods": ["noncooperative", "diffusion"],
                                             "margin_db": 0.2})["verdict"] == REPRODUCED
    assert st.judge("level_order", ["pca"], {"methods": ["noncooperative", "diffusion"],
                                             "margin_db": 1.0})["verdict"] == NOT


def test_level_order_along_experiments_of_final_values(tmp_path):
    st = Study(tmp_path)
    for e, final in [("t0_5", 126.0), ("t0_20", 81.0)]:
        st.config["datasets"][e] = {"problem": "dynamic_frechet_h2", "params": {}}
        for s in range(3):
            st.run(e, np.zeros(T + 1), name="dprgd", K=1, seed=s,
                   extra={"dynamic_regret": np.linspace(0, final * (1 + 0.01 * s), T + 1)})
    assert st.judge("level_order", ["t0_5", "t0_20"], {"methods": ["dprgd"], "metric": "dynamic_regret",
                                                       "statistic": "final"})["verdict"] == REPRODUCED
    assert st.judge("level_order", ["t0_20", "t0_5"], {"methods": ["dprgd"], "metric": "dynamic_regret",
                                                       "statistic": "final"})["verdict"] == NOT


@pytest.mark.parametrize("gap, want", [(-13.0, REPRODUCED), (-11.8, REPRODUCED), (-10.0, NOT), (-16.5, NOT)])
def test_db_gap_against_minus_10_log10_s(tmp_path, gap, want):
    """S = 20: the prediction is -13.01 dB; tolerance 1.5 dB."""
    st = Study(tmp_path)
    add(st, "pca", "noncooperative", -9.0)
    add(st, "pca", "fusion_centre", -9.0 + gap)
    assert st.judge("db_gap", ["pca"], {})["verdict"] == want


def test_settling_round_by_hand():
    """A step from 0 dB to -10 dB at round 100: settles at round 100 (no smoothing)."""
    dbs = np.where(np.arange(T + 1) < 100, 0.0, -10.0)
    table = pd.DataFrame({"round": np.arange(T + 1), "msd": 10 ** (dbs / 10), "status": "ok"})
    assert settling_round(table, "msd", 0.2, 1.0, 1) == 100


@pytest.mark.parametrize("taus, levels, want", [((120, 80, 50), (-20, -18, -16), REPRODUCED),
                                                ((50, 80, 120), (-20, -18, -16), NOT),
                                                ((120, 80, 50), (-16, -18, -20), NOT)])
def test_step_tradeoff(tmp_path, taus, levels, want):
    st = Study(tmp_path)
    names = ["mu05", "mu07", "mu09"]
    for e, tau, lv in zip(names, taus, levels):
        add(st, e, "diffusion", lv, tau=tau)
    r = st.judge("step_tradeoff", names, {"smooth": 5})
    if want == REPRODUCED:
        assert r["verdict"] == REPRODUCED
    else:
        assert r["verdict"] != REPRODUCED and r["verdict"] != UNDECIDED


@pytest.mark.parametrize("ratio, cost, want", [(1.01, 0.1, REPRODUCED), (1.2, 0.1, PARTLY),
                                               (1.01, 0.9, PARTLY), (1.3, 0.9, NOT)])
def test_cheaper_same_value(tmp_path, ratio, cost, want):
    st = Study(tmp_path)
    st.config["datasets"]["h2"] = {"problem": "dynamic_frechet_h2", "params": {}}
    for s in range(3):
        st.run("h2", np.zeros(11), name="dprgd", K=1, seed=s,
               extra={"dynamic_regret": np.linspace(0, 100 + s, 11), "log_maps": np.linspace(0, 1000, 11)})
        st.run("h2", np.zeros(11), name="idprgd", K=1, seed=s,
               extra={"dynamic_regret": np.linspace(0, (100 + s) * ratio * (1 + 0.001 * s), 11),
                      "log_maps": np.linspace(0, 1000 * cost, 11)})
    assert st.judge("cheaper_same_value", ["h2"], {})["verdict"] == want


def test_missing_runs_leave_it_undecided(tmp_path):
    st = Study(tmp_path)
    add(st, "pca", "noncooperative", -9.0)
    assert st.judge("db_gap", ["pca"], {})["verdict"] == UNDECIDED
    assert st.judge("cheaper_same_value", ["pca"], {})["verdict"] == UNDECIDED

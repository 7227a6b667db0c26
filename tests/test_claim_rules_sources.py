"""The seed-paired rules of the sources' claims, on constructed run tables,
each on both sides of its threshold: outperforms, removes_drift, optimal_k_above_one,
k_not_too_large, cost_falls_with_k, comparable_value, rounds_fraction. One seed never
refutes (``rfl.claims.stats``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rfl.claims.judge import claim_params
from rfl.claims.rule import Evidence
from rfl.claims.verdicts import NOT, PARTLY, REPRODUCED, UNDECIDED
from rfl.registry import RULES

ROUNDS = 101


def table(seed, excess, **columns):
    """A run table: rounds 0..100, ``excess_risk`` (array or callable of the rounds), floats
    10 per round, and ``columns``."""
    t = np.arange(ROUNDS, dtype=float)
    df = pd.DataFrame({"round": t.astype(int), "status": "ok",
                       "excess_risk": excess(t) if callable(excess) else excess,
                       "floats": 10.0 * t, **columns})
    df.attrs["seed"] = seed
    return df


def decay(start, rate, floor):
    """start * rate^t + floor: an initial contraction that levels off at ``floor``."""
    return lambda t: start * rate ** t + floor


def judge(rule, groups, seeds=range(5), **params):
    """Judge ``rule`` on one experiment whose runs are ``groups``: key -> (seed -> table)."""
    runs = {key: [make(s) for s in seeds] for key, make in groups.items()}
    ev = Evidence({"config": {}, "runs": {"e": ["x"]}}, ["e"], groups={"e": runs})
    return RULES[rule]().judge(ev, claim_params({"rule": rule, "params": params}))


def jitter(s):
    return 1 + 0.03 * ((s * 7) % 5 - 2)          # deterministic per-seed spread, within +-6%


# ---- outperforms --------------------------------------------------------------------------------
def _three(first_floor, second_floor):
    return {("rfedsvrg", 5, None): lambda s: table(s, decay(1, 0.8, first_floor * jitter(s))),
            ("rfedavg", 5, None): lambda s: table(s, decay(1, 0.8, second_floor * jitter(s + 1))),
            ("rfedprox", 5, None): lambda s: table(s, decay(1, 0.8, second_floor * jitter(s + 2)))}


def test_outperforms_on_both_sides_of_the_ratio():
    assert judge("outperforms", _three(1e-3, 1e-2)).verdict == REPRODUCED
    assert judge("outperforms", _three(1e-2, 1e-3)).verdict == NOT
    # levels 0.9x the others': below ratio 1, above ratio 0.8
    assert judge("outperforms", _three(0.9e-2, 1e-2)).verdict == REPRODUCED
    assert judge("outperforms", _three(0.9e-2, 1e-2), ratio=0.8).verdict == NOT
    j = judge("outperforms", _three(1e-3, 1e-2))
    assert "level ratio rfedsvrg/rfedavg" in j.margin and "claim <= 1" in j.margin


def test_outperforms_floors_round_off_levels_and_one_seed_decides_nothing():
    groups = _three(1e-2, 1e-2)
    groups[("rfedsvrg", 5, None)] = lambda s: table(s, lambda t: np.where(t > 30, -1e-16, 1.0))
    assert judge("outperforms", groups).verdict == REPRODUCED      # -1e-16 counts as 1e-14
    assert judge("outperforms", _three(1e-2, 1e-3), seeds=[0]).verdict == UNDECIDED
    one_missing = _three(1e-3, 1e-2)
    del one_missing[("rfedprox", 5, None)]
    assert judge("outperforms", one_missing).verdict == UNDECIDED  # no FedProx run: open


# ---- removes_drift ------------------------------------------------------------------------------
def test_removes_drift_converged_first_and_a_levelled_second():
    ok = {("rfedsvrg", 5, None): lambda s: table(s, decay(1, 0.6 + 0.01 * s, 0)),
          ("rfedavg", 5, None): lambda s: table(s, decay(1, 0.8, 1e-2 * jitter(s)))}
    assert judge("removes_drift", ok).verdict == REPRODUCED
    # the first stops at 1e-6 of its start: not converged to 1e-10
    stalled = {**ok, ("rfedsvrg", 5, None): lambda s: table(s, decay(1, 0.6, 1e-6 * jitter(s)))}
    assert judge("removes_drift", stalled).verdict == PARTLY
    assert judge("removes_drift", stalled, converged=1e-5).verdict == REPRODUCED
    # the second still contracting at the last round: no plateau yet, undecided
    falling = {**ok, ("rfedavg", 5, None): lambda s: table(s, decay(1, 0.97, 1e-9))}
    assert judge("removes_drift", falling).verdict == UNDECIDED
    # the second levelled off only 100x above the first's floor: short of stall 1e3
    near = {("rfedsvrg", 5, None): lambda s: table(s, decay(1, 0.6, 1e-12 * jitter(s))),
            ("rfedavg", 5, None): lambda s: table(s, decay(1, 0.6, 1e-10 * jitter(s + 1)))}
    assert judge("removes_drift", near, converged=1e-9).verdict == PARTLY


# ---- optimal K > 1, K not too large -------------------------------------------------------------
def _ks(levels):
    return {("rfedags", K, None): (lambda lv: lambda s: table(s, decay(1, 0.7, lv * jitter(s + K))))(lv)
            for K, lv in levels.items()}


@pytest.mark.parametrize("levels, above_one, not_too_large", [
    ({1: 1e-2, 4: 5e-3, 8: 8e-3}, REPRODUCED, REPRODUCED),      # interior optimum at K = 4
    ({1: 1e-3, 4: 5e-3, 8: 8e-3}, NOT, REPRODUCED),             # K = 1 best
    ({1: 1e-2, 4: 5e-3, 8: 2e-3}, REPRODUCED, NOT),             # still falling at the largest K
])
def test_optimal_k_rules_on_both_sides(levels, above_one, not_too_large):
    assert judge("optimal_k_above_one", _ks(levels)).verdict == above_one
    assert judge("k_not_too_large", _ks(levels)).verdict == not_too_large


def test_optimal_k_needs_k_one_and_three_seeds():
    assert judge("optimal_k_above_one", _ks({5: 1e-2, 10: 5e-3})).verdict == UNDECIDED
    assert judge("k_not_too_large", _ks({1: 1e-2, 4: 5e-3, 8: 2e-3}), seeds=[0, 1]).verdict == UNDECIDED


# ---- communication to a level -------------------------------------------------------------------
def test_cost_falls_with_k_on_both_sides():
    faster = {("rfedags", 1, None): lambda s: table(s, decay(1, 0.9 + 0.002 * s, 1e-6)),
              ("rfedags", 4, None): lambda s: table(s, decay(1, 0.6 + 0.01 * s, 1e-6))}
    j = judge("cost_falls_with_k", faster)
    assert j.verdict == REPRODUCED and "floats ratio K = 4 / K = 1" in j.margin
    slower = {("rfedags", 1, None): faster[("rfedags", 4, None)], ("rfedags", 4, None): faster[("rfedags", 1, None)]}
    assert judge("cost_falls_with_k", slower).verdict == NOT
    # floats per round differ: K = 4 reaches each level in fewer rounds but pays 4x per round
    costly = {**faster, ("rfedags", 4, None):
              lambda s: table(s, decay(1, 0.8, 1e-6)).assign(floats=lambda d: 40.0 * d["round"])}
    assert judge("cost_falls_with_k", costly).verdict == NOT


# ---- comparable value ---------------------------------------------------------------------------
def _school(final_gap):
    """Final costs: RFedAGS K = 4 ``final_gap`` above the centralised solvers, K = 1 twice that."""
    def run(v):
        return lambda s: table(s, 0.0, cost=np.full(ROUNDS, v * jitter(s)))
    return {("rfedags", 1, None): run(2.0 * (1 + 2 * final_gap)), ("rfedags", 4, None): run(2.0 * (1 + final_gap)),
            **{(m, None, None): run(2.0) for m in ("rsd", "rcg", "rlbfgs")}}


def test_comparable_value_within_and_beyond_the_tolerance():
    j = judge("comparable_value", _school(0.02))
    assert j.verdict == REPRODUCED and "relative gap rfedags K = 4 - rsd" in j.margin
    assert judge("comparable_value", _school(0.2)).verdict == NOT
    assert judge("comparable_value", _school(0.2), tolerance=0.3).verdict == REPRODUCED


# ---- rounds to the best score -------------------------------------------------------------------
def _nmse(best):
    """test_nmse with its minimum at round best[K] (+ a seed shift), rising after it."""
    def make(K):
        return lambda s: table(s, 0.0, test_nmse=(np.arange(ROUNDS) - (best[K] + s)) ** 2 / 1e4 + 0.4)
    return {("rfedags", K, None): make(K) for K in best}


def test_rounds_fraction_on_both_sides_of_one_half():
    assert judge("rounds_fraction", _nmse({1: 90, 4: 30, 8: 20, 10: 15})).verdict == REPRODUCED
    assert judge("rounds_fraction", _nmse({1: 90, 4: 70, 8: 60, 10: 55})).verdict == NOT
    assert judge("rounds_fraction", _nmse({1: 90, 4: 30, 8: 60, 10: 15})).verdict == PARTLY
    assert judge("rounds_fraction", _nmse({1: 90, 4: 30})).verdict == UNDECIDED   # K = 8, 10 not run


# ---- level along an experiment setting ----------------------------------------------------------
def test_level_falls_along_the_batch_size_on_both_sides():
    from rfl.claims.rules.level_falls_along import LevelFallsAlong

    def judge_batches(levels, seeds=range(5)):
        runs = {f"b{b}": {("rfedproj", 5, None): [table(s, decay(1, 0.7, lv * jitter(s))) for s in seeds]}
                for b, lv in levels.items()}
        config = {"experiments": {f"b{b}": {"batch_size": b} for b in levels}}
        names = list(reversed(list(runs)))                 # declared out of order: sorted by batch_size
        ev = Evidence({"config": config, "runs": dict.fromkeys(names, ["x"])}, names, groups=runs)
        return LevelFallsAlong().judge(ev, claim_params({"rule": "level_falls_along",
                                                         "params": {"algorithm": "rfedproj"}}))

    j = judge_batches({10: 1e-2, 40: 3e-3, 160: 1e-3})
    assert j.verdict == REPRODUCED and "level ratio batch_size 40 / 10" in j.margin
    assert judge_batches({10: 1e-3, 40: 3e-3, 160: 1e-2}).verdict == NOT
    assert judge_batches({10: 1e-2, 40: 3e-3, 160: 1e-2}).verdict == PARTLY
    assert judge_batches({10: 1e-3, 40: 3e-3}, seeds=[0, 1]).verdict == UNDECIDED


def test_rounds_fraction_counts_the_best_to_the_printed_digits():
    """A curve that reaches 0.4372 at round 20 and creeps to 0.4370 by round 100 has its best,
    to 3 digits (0.437), at round 20; with 5 digits at round 100."""
    def creeping(best):
        def make(s):
            t = np.arange(ROUNDS, dtype=float)
            v = np.where(t < best, 0.9 - (0.9 - 0.4372) * t / best, 0.4372 - 2e-4 * (t - best) / (ROUNDS - 1 - best))
            return table(s, 0.0, test_nmse=v * jitter(s) ** 0.001)
        return make
    groups = {("rfedags", 1, None): creeping(90), ("rfedags", 4, None): creeping(20)}
    assert judge("rounds_fraction", groups, ks=[4]).verdict == REPRODUCED
    assert judge("rounds_fraction", groups, ks=[4], digits=5).verdict == NOT

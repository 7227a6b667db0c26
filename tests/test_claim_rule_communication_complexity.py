"""The rule ``communication_complexity`` (Mangold et al.: SCAFFLSA's rounds to reach eps^2 do not
grow with 1/eps beyond a logarithm, FedLSA's grow like 1/eps, and FedLSA at SCAFFLSA's H stays
above eps^2) on constructed run tables: geometric curves e_0 q^t + floor whose rounds to eps^2
are found here by a plain loop, both sides of the threshold, one seed, a run that never
reaches eps^2."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rfl.claims.judge import claim_params
from rfl.claims.rule import Evidence
from rfl.claims.verdicts import NOT, PARTLY, REPRODUCED, UNDECIDED
from rfl.registry import RULES

E0, LARGE, SMALL = 30.0, 0.8, 0.05
SPAN = 0.5 * math.log(LARGE / SMALL)          # log(eps_large / eps_small)


def curve(seed, kappa, floor=0.0, rounds=4000):
    """A run table whose error falls as E0 exp(-t / kappa) + floor (kappa: rounds per e-fold)."""
    t = np.arange(rounds + 1)
    df = pd.DataFrame({"round": t, "status": "ok", "excess_risk": E0 * np.exp(-t / kappa) + floor})
    df.attrs["seed"] = seed
    return df


def first_round(values, eps_sq):
    """The oracle: a plain loop over the rounds."""
    for t, v in enumerate(values):
        if v <= eps_sq:
            return t
    return None


def runs(exp_s, exp_f, *, seeds=range(3), at_hs_floor=2.0, kappa=20.0):
    """Two levels: SCAFFLSA's rounds per e-fold kappa (eps/eps_large)^-exp_s, FedLSA's
    2 kappa (eps/eps_large)^-exp_f (seed jitter +-2%); FedLSA at SCAFFLSA's H levels off at
    ``at_hs_floor`` at the small level."""
    def k(e, eps_sq, s):
        return kappa * (math.sqrt(eps_sq / LARGE)) ** (-e) * (1 + 0.01 * ((3 * s) % 5 - 2))
    groups = {}
    for name, eps_sq in (("large", LARGE), ("small", SMALL)):
        groups[f"{name}_fed"] = {("fedavg", 4 if name == "large" else 16, None):
                                 [curve(s, 2 * k(exp_f, eps_sq, s)) for s in seeds]}
        scaf = {("scafflsa", 16 if name == "large" else 256, None): [curve(s, k(exp_s, eps_sq, s)) for s in seeds]}
        if name == "small":
            scaf[("fedavg", 256, None)] = [curve(s, 3.0, floor=at_hs_floor) for s in seeds]
        groups[f"{name}_scaf"] = scaf
    return groups


def judge(groups, **params):
    eps = {"large_fed": LARGE, "large_scaf": LARGE, "small_fed": SMALL, "small_scaf": SMALL}
    ev = Evidence({"config": {}, "runs": {e: ["x"] for e in groups}}, list(groups), groups=groups)
    return RULES["communication_complexity"]().judge(
        ev, claim_params({"rule": "communication_complexity", "params": {"eps_sq": eps, **params}}))


def test_the_exponent_is_that_of_the_rounds_per_efold_read_by_a_plain_loop():
    g = runs(0.0, 1.0)
    j = judge(g)
    assert j.verdict == REPRODUCED
    # seed 0, SCAFFLSA: T at each level from the loop, over log(E0 / eps^2)
    a = g["small_scaf"][("scafflsa", 256, None)][0]["excess_risk"]
    b = g["large_scaf"][("scafflsa", 16, None)][0]["excess_risk"]
    want = math.log((first_round(a, SMALL) / math.log(E0 / SMALL))
                    / (first_round(b, LARGE) / math.log(E0 / LARGE))) / SPAN
    assert abs(want) < 0.05                                   # the construction: kappa flat
    assert f"SCAFFLSA exponent of T / log in 1/eps" in j.margin and "claim <= 0.5" in j.margin
    assert "FedLSA exponent of T / log in 1/eps" in j.margin and "claim >= 0.5" in j.margin


@pytest.mark.parametrize("exp_s, verdict", [(0.4, REPRODUCED), (0.6, PARTLY)])
def test_scafflsa_on_both_sides_of_the_threshold(exp_s, verdict):
    # FedLSA holds (exponent 1) and FedLSA at H_S stays above: only SCAFFLSA's case moves
    assert judge(runs(exp_s, 1.0)).verdict == verdict


@pytest.mark.parametrize("exp_f, verdict", [(0.6, REPRODUCED), (0.4, PARTLY)])
def test_fedlsa_on_both_sides_of_the_threshold(exp_f, verdict):
    assert judge(runs(0.0, exp_f)).verdict == verdict


def test_every_case_failing_is_not_reproduced_and_fedlsa_at_hs_below_eps_fails():
    assert judge(runs(1.0, 0.0, at_hs_floor=0.01)).verdict == NOT
    j = judge(runs(0.0, 1.0, at_hs_floor=0.01))               # FedLSA at H_S reaches eps^2
    assert j.verdict == PARTLY and "FedLSA level at H = 256 / eps^2" in j.margin


def test_one_seed_never_refutes():
    j = judge(runs(1.0, 0.0, seeds=[0], at_hs_floor=0.01))
    assert j.verdict == UNDECIDED and "at least 3 decide it" in j.decide


def test_a_run_that_never_reaches_eps_is_undecided_with_more_rounds():
    g = runs(0.0, 1.0)
    key = ("fedavg", 16, None)
    g["small_fed"][key] = [curve(s, 2 * 20.0 * 4, rounds=100) for s in range(3)]   # too few rounds
    j = judge(g)
    assert j.verdict == UNDECIDED
    assert "FedLSA (H = 16) does not reach eps^2 in 3 seed(s): more rounds" in j.decide

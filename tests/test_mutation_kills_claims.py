"""rfl.claims against documented rules that surviving mutants could change: the toy-size
judgement keeps the rule's margin; a log-scale claim's bound at or below 0 is -inf (log of a
non-positive bound); a sample of no runs is an empty float series; the every-agent level is
lowest (lowest_level.lowest's four cases); a curve too short to fit fits 0 rounds; a rule's
contract names what is wrong (params_schema, a default its schema refuses); bias_ratio's
``removes`` region and words."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rfl.claims import curves as C
from rfl.claims import stats as S
from rfl.claims.judge import toy
from rfl.claims.rule import Judgement, Rule
from rfl.claims.rules.bias_ratio import BiasRatio, claim_of
from rfl.claims.rules.lowest_level import lowest
from rfl.claims.verdicts import FAIL, OK, OPEN, REPRODUCED, UNDECIDED


def test_toy_size_keeps_rows_notes_and_margin_and_is_undecided():
    j = Judgement(REPRODUCED, [{"K": "1"}], ["a note"], None, "ratio 0.66 [0.55, 0.78], claim <= 1")
    t = toy(j)
    assert t.verdict == UNDECIDED
    assert t.rows == [{"K": "1"}] and t.notes[0] == "a note"
    assert t.margin == "ratio 0.66 [0.55, 0.78], claim <= 1"


@pytest.mark.parametrize("low,high,expected", [
    (0.0, 1.0, (-math.inf, 0.0)),
    (-1.0, 2.0, (-math.inf, math.log(2.0))),
    (0.5, math.inf, (math.log(0.5), math.inf)),
    (-math.inf, 0.0, (-math.inf, -math.inf)),          # nothing positive lies below 0
    (-math.inf, -1.0, (-math.inf, -math.inf)),
])
def test_log_bounds_of_a_claim(low, high, expected):
    assert S.Claim("ratio", low=low, high=high).bounds(log=True) == expected
    assert S.Claim("ratio", low=low, high=high).bounds(log=False) == (low, high)


def test_a_sample_of_no_runs_is_an_empty_float_series():
    s = S.per_seed([], lambda t: 1.0)
    assert len(s) == 0 and s.dtype == np.float64
    runs = [pd.DataFrame({"v": [3]}), pd.DataFrame({"v": [1]})]
    runs[0].attrs["seed"], runs[1].attrs["seed"] = 7, 2
    s = S.per_seed(runs, lambda t: t["v"].iloc[0])
    assert list(s.index) == [2, 7] and s.tolist() == [1.0, 3.0] and s.dtype == np.float64


def _lv(level, exact=True):
    return {"level": level, "exact": exact}


def test_lowest_level_cases_of_its_docstring():
    # holds for certain: every partial level exact and at or above the full one (ties hold)
    assert lowest(_lv(1.0), [_lv(1.0), _lv(2.0)]) == OK
    # broken for certain: an exact full level above a partial one (exact or not)
    assert lowest(_lv(1.0), [_lv(0.5), _lv(2.0)]) == FAIL
    assert lowest(_lv(1.0), [_lv(0.5, exact=False)]) == FAIL
    # a still-decreasing full level is only an upper bound: not broken by a lower partial
    assert lowest(_lv(1.0, exact=False), [_lv(0.5)]) == OPEN
    # a partial level still decreasing could fall below the full one
    assert lowest(_lv(1.0), [_lv(2.0), _lv(3.0, exact=False)]) == OPEN
    assert lowest(_lv(1.0, exact=False), [_lv(2.0)]) == OK
    # no finite level: open
    assert lowest(_lv(np.nan), [_lv(2.0)]) == OPEN
    assert lowest(_lv(1.0), [_lv(2.0), _lv(np.inf)]) == OPEN


@pytest.mark.parametrize("n", [0, 1, C.MIN_FIT_ROUNDS])
def test_a_curve_too_short_to_fit_fits_no_rounds(n):
    fit = C.linear_phase(pd.Series(0.9 ** np.arange(n, dtype=float)))
    assert fit["status"] == "insufficient" and fit["rounds"] == 0
    assert np.isnan(fit["rate"]) and np.isnan(fit["r2"]) and np.isnan(fit["decrease"])
    diverged = C.linear_phase(pd.Series([1.0, 0.5, np.inf, np.inf]))
    assert diverged["status"] == "diverged" and diverged["rounds"] == 0 and diverged["diverged_at"] == 2


def _rule_class(schema):
    class Probe(Rule):                  # no ``name``: the registry leaves it undeclared
        summary = "probe"
        params_schema = schema

        def judge(self, ev, p):
            return None

        def describe(self, p):
            return ""
    return Probe


def test_a_rule_contract_names_params_schema_and_a_refused_default():
    errors = _rule_class(["not", "a", "mapping"]).contract_errors()
    assert errors == ["declares params_schema as list; allowed: a JSON schema (a mapping)"]
    bad_default = {"type": "object", "properties": {"factor": {"type": "number", "minimum": 1, "default": 0.5}}}
    errors = _rule_class(bad_default).contract_errors(deep=True)
    assert len(errors) == 1
    assert errors[0].startswith("declares parameter 'factor' whose default 0.5 it refuses")
    good = {"type": "object", "properties": {"factor": {"type": "number", "minimum": 1, "default": 2}}}
    assert _rule_class(good).contract_errors(deep=True) == []


def test_bias_ratio_removes_is_at_most_factor_and_keeps_is_a_band():
    removes = claim_of("removes", 2.0)
    assert (removes.what, removes.low, removes.high) == ("ratio", -np.inf, 2.0)
    keeps = claim_of("keeps", 2.0)
    assert (keeps.what, keeps.low, keeps.high) == ("ratio", 0.5, 2.0)
    params = {**BiasRatio.defaults(), "method": "a", "reference": "b", "factor": 2.0}
    assert "is at most 2 times b's" in BiasRatio().describe({**params, "relation": "removes"})
    assert "is between 0.5 and 2 times b's" in BiasRatio().describe({**params, "relation": "keeps"})


def test_fedlsa_is_stationary_when_its_transient_is_within_its_own_plateau_se():
    """variance_in_n's docstring: FedLSA's transient at most FedLSA's se (not SCAFFLSA's)."""
    from rfl.claims.rules.variance_in_n import stationary

    r = {"transient": 0.5, "fedlsa_plateau": 3.0, "predicted_bias_sq_pool": 1.0, "fedlsa_plateau_se": 1.0,
         "scafflsa_plateau": 2.0, "scafflsa_plateau_se": 0.1, "scafflsa_rate": 0.5, "rounds": 100}
    assert stationary(r, "FedLSA", 2.0) is True
    assert stationary({**r, "transient": 1.5}, "FedLSA", 2.0) is False
    assert stationary({**r, "transient": np.nan}, "FedLSA", 2.0) is False
    # SCAFFLSA: further fall plateau (1 - rate^rounds) = 2 (1 - 0.5^100) against z se = 2 x 0.1
    assert stationary(r, "SCAFFLSA", 2.0) is False
    assert stationary({**r, "scafflsa_plateau_se": 1.0}, "SCAFFLSA", 2.0) is True


def test_the_replica_estimate_is_the_mean_and_standard_error_over_every_replica():
    from rfl.algorithms.replicas import window_start
    from rfl.claims.bias import COORDINATES, replica_estimate

    cols, rounds, window = list(COORDINATES), 9, 0.5
    rng = np.random.default_rng(0)
    runs, sample = [], []
    for seed in range(2):
        err = rng.normal(size=(3, len(cols)))                    # 3 replicas x coordinates
        t = pd.DataFrame({"round": np.arange(rounds + 1), **{c: np.ones(rounds + 1) for c in cols}})
        t.attrs["replicas"] = {"err_mean": err.tolist(), "columns": cols,
                               "window_start": window_start(rounds, window)}
        runs.append(t)
        sample.append(err)
    sample = np.vstack(sample)                                    # (6, coordinates)
    mean, se, n = replica_estimate(runs, window)
    assert n == 6
    np.testing.assert_allclose(mean, sample.mean(axis=0), rtol=1e-12)
    # flat err_* columns: no drift, se = sample std / sqrt(n)
    np.testing.assert_allclose(se, sample.std(axis=0, ddof=1) / np.sqrt(6), rtol=1e-12)
    runs[1].attrs["replicas"] = None
    assert replica_estimate(runs, window) is None


# ---- rules judged on constructed run tables (as tests/test_claim_rules_sources.py builds them) ---
def _table(seed, excess, rounds=101):
    t = np.arange(rounds, dtype=float)
    df = pd.DataFrame({"round": t.astype(int), "status": "ok", "excess_risk": excess(t), "floats": 10.0 * t})
    df.attrs["seed"] = seed
    return df


def _judge(rule, experiments: dict, seeds=range(5), **params):
    """``rule`` on the experiments {name: {key: seed -> table}}."""
    from rfl.claims.judge import claim_params
    from rfl.claims.rule import Evidence
    from rfl.registry import RULES

    groups = {e: {key: [make(s) for s in seeds] for key, make in g.items()} for e, g in experiments.items()}
    ev = Evidence({"config": {}, "runs": {e: ["x"] for e in experiments}}, list(experiments), groups=groups)
    return RULES[rule]().judge(ev, claim_params({"rule": rule, "params": params}))


def test_cost_falls_with_k_judges_every_experiment_after_one_without_two_k():
    """An experiment with runs at one K is reported missing; the next ones are still judged,
    each case labelled with its experiment."""
    def decay(rate):
        return lambda s: _table(s, lambda t: (rate + 0.002 * s) ** t + 1e-6)
    one_k = {("rfedags", 1, None): decay(0.9)}
    two_k = {("rfedags", 1, None): decay(0.9), ("rfedags", 4, None): decay(0.6)}
    j = _judge("cost_falls_with_k", {"e1": one_k, "e2": two_k})
    assert [r["experiment"] for r in j.rows] == ["e2"]
    assert "`e2`" in j.margin


def test_comparable_value_rows_name_the_k_of_each_case():
    def run(v):
        return lambda s: _table(s, lambda t: 0.0 * t).assign(cost=v * (1 + 0.01 * s))
    j = _judge("comparable_value", {"e": {("rfedags", 1, None): run(2.1), ("rfedags", 4, None): run(2.05),
                                          **{(m, None, None): run(2.0) for m in ("rsd", "rcg", "rlbfgs")}}})
    assert j.rows and all(r["K"] in ("1", "4") for r in j.rows)        # the case's K, as text


def test_best_within_describes_its_row_selection():
    from rfl.claims.rules.best_within import BestWithin

    p = {**BestWithin.defaults(), "methods": ["a"], "reference": ["b"], "where": {"protocol": "heldout"}}
    assert "of `table2` (protocol = heldout), the lowest" in BestWithin().describe(p)


def test_decreasing_in_k_rows_give_each_k_its_seed_count():
    def run(rel):
        return lambda s: _table(s, lambda t: 0.9 ** t).assign(rel_error=np.linspace(1.0, rel * (1 + 0.01 * s), 101))
    j = _judge("decreasing_in_k", {"e": {("rfedags", 1, None): run(1e-2), ("rfedags", 4, None): run(1e-4)}},
               seeds=range(4), metric="rel_error")
    assert [(r["K"], r["seeds"]) for r in j.rows] == [("1", "4"), ("4", "4")]


def test_bias_ratio_names_the_missing_side_in_its_note_and_margin():
    only_mine = {("scaffold", 1, None): lambda s: _table(s, lambda t: 0.9 ** t)}
    j = _judge("bias_ratio", {"e": only_mine}, method="scaffold", reference="fedavg")
    assert j.verdict == UNDECIDED
    assert "- `e`: no runs of fedavg." in j.notes
    assert j.margin.startswith("`e`: no runs of fedavg, claim <= 0.05")
    only_ref = {("fedavg", 1, None): lambda s: _table(s, lambda t: 0.9 ** t)}
    j = _judge("bias_ratio", {"e": only_ref}, method="scaffold", reference="fedavg")
    assert "- `e`: no runs of scaffold." in j.notes and j.margin.startswith("`e`: no runs of scaffold, ")

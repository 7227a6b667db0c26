"""``identical_runs`` (RFedAGS paper Section 3.3: RFedAGS is RFedAvg at K = 1 with Exp and
parallel transport, and on R^d for every K) on constructed run tables: both sides of the
tolerance, relative to each metric's scale, seeds paired by seed, the worst seed and round on
the verdict line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from test_claim_rules_newer import Study

from rfl import io
from rfl.claims.judge import claim_lines
from rfl.claims.rules.identical_runs import relative_difference
from rfl.claims.verdicts import NOT, PARTLY, REPRODUCED, UNDECIDED

T = 12


def curve(scale=1.0, rate=0.5):
    """scale 2^-t-like values, exact in binary for scale and rate powers of two."""
    return scale * rate ** np.arange(T, dtype=float)


def pair(st, a, b, *, K=1, seed=0, dist_a=None, dist_b=None, experiment="identity", b_first=False):
    """RFedAGS and RFedAvg of one seed, excess risk a / b, distance to x* dist_a / dist_b
    (default the excess risk)."""
    runs = [("rfedags", a, dist_a), ("rfedavg", b, dist_b)]
    for name, values, dist in (runs[::-1] if b_first else runs):
        st.run(experiment, values, name=name, K=K, seed=seed,
               extra={"dist_to_opt": np.asarray(values if dist is None else dist, float)})
    return st


def judge(st, **params):
    return st.judge("identical_runs", ["identity"], params)


def test_equal_runs_are_reproduced_with_difference_zero_on_the_verdict_line(tmp_path):
    r = judge(pair(Study(tmp_path), curve(), curve()))
    assert r["verdict"] == REPRODUCED and r["decide"] is None
    assert [row["largest relative difference"] for row in r["rows"]] == [0.0, 0.0]
    assert r["margin"].startswith("largest relative difference 0 (")
    assert r["margin"].endswith("claim <= 1e-10")
    verdict_line = next(line for line in claim_lines(r) if line.startswith("**Verdict"))
    assert verdict_line.startswith("**Verdict: reproduced.** Margin: largest relative difference 0 (")
    assert "claim" in verdict_line.split("Margin:", 1)[1]


@pytest.mark.parametrize("eps, want", [(2.0 ** -34, REPRODUCED), (2.0 ** -33, NOT)])
def test_at_exactly_the_tolerance(tmp_path, eps, want):
    """Scale 1 (the round-0 value), one round off by eps: eps = tolerance holds, 2 x fails."""
    b = curve()
    b[3] += eps                                      # 2^-3 + 2^-34: exact in binary
    r = judge(pair(Study(tmp_path), curve(), b), tolerance=2.0 ** -34)
    assert r["verdict"] == want
    row = next(row for row in r["rows"] if row["metric"] == "excess_risk")
    assert row["largest relative difference"] == eps and row["at seed, round"] == "0, 3"


@pytest.mark.parametrize("scale, eps, want", [(1e-6, 1e-15, NOT), (1e6, 1e-5, REPRODUCED),
                                              (1.0, 5e-11, REPRODUCED), (1.0, 2e-10, NOT)])
def test_the_difference_is_relative_to_the_metrics_scale(tmp_path, scale, eps, want):
    """The same absolute difference fails on a small quantity and holds on a large one."""
    a = curve(scale)
    b = a.copy()
    b[5] += eps
    r = judge(pair(Study(tmp_path), a, b))
    assert r["verdict"] == want
    row = next(row for row in r["rows"] if row["metric"] == "excess_risk")
    assert row["largest relative difference"] == pytest.approx(eps / scale, rel=1e-3)
    assert row["scale"] == pytest.approx(scale)


def test_a_difference_in_the_distance_alone_fails(tmp_path):
    d = curve(2.0)
    d2 = d.copy()
    d2[-1] *= 1.5
    r = judge(pair(Study(tmp_path), curve(), curve(), dist_a=d, dist_b=d2))
    assert r["verdict"] == PARTLY                   # excess risk holds, distance fails
    assert "dist_to_opt" in r["margin"]
    assert judge(pair(Study(tmp_path / "x"), curve(), curve(), dist_a=d, dist_b=d2),
                 metrics=["excess_risk"])["verdict"] == REPRODUCED


def test_seeds_are_paired_by_seed_not_by_file_order(tmp_path):
    """Seeds 0, 1, 2 with different curves, RFedAvg's files written in another order: equal
    seed by seed, so reproduced; a pairing by order would compare seed 0 with seed 2."""
    st = Study(tmp_path)
    for seed in (0, 1, 2):
        st.run("identity", curve(rate=0.5 + 0.1 * seed), name="rfedags", K=1, seed=seed,
               extra={"dist_to_opt": curve()})
    for seed in (2, 0, 1):
        st.run("identity", curve(rate=0.5 + 0.1 * seed), name="rfedavg", K=1, seed=seed,
               extra={"dist_to_opt": curve()})
    assert judge(st)["verdict"] == REPRODUCED


def test_the_worst_seed_and_round_decide_and_are_named(tmp_path):
    st = Study(tmp_path)
    for seed in (0, 1, 2):
        b = curve()
        if seed == 2:
            b[7] += 1e-6
        pair(st, curve(), b, seed=seed)
    r = judge(st)
    assert r["verdict"] == NOT
    assert "seed 2, round 7" in r["margin"] and "1e-06" in r["margin"]
    assert {row["seeds"] for row in r["rows"]} == {"3"}


def test_runs_that_stop_at_different_rounds_are_not_identical(tmp_path):
    """RFedAGS diverged after round 5 (its table ends there), RFedAvg did not."""
    a = curve()[:6].copy()
    status = ["ok"] * 5 + ["diverged"]
    a[-1] = np.nan
    st = Study(tmp_path)
    st.run("identity", a, name="rfedags", K=1, status=status, extra={"dist_to_opt": a})
    st.run("identity", curve(), name="rfedavg", K=1, extra={"dist_to_opt": curve()})
    r = judge(st)
    assert r["verdict"] == NOT and "inf" in r["margin"]
    rel, t, _ = relative_difference(pd.Series(curve()[:6]), pd.Series(curve()))
    assert np.isinf(rel) and t == 6                  # the first round one run lacks
    one_nan = curve()
    one_nan[4] = np.nan
    rel, t, _ = relative_difference(pd.Series(one_nan), pd.Series(curve()))
    assert np.isinf(rel) and t == 4


def test_only_the_declared_K_are_compared(tmp_path):
    """A K = 5 pair that differs (RFedAGS and RFedAvg differ on a manifold at K > 1) does not
    count unless K = 5 is declared (as on R^d, where they coincide for every K)."""
    st = pair(Study(tmp_path), curve(), curve())
    b5 = curve()
    b5[2] *= 1.01
    pair(st, curve(), b5, K=5)
    assert judge(st)["verdict"] == REPRODUCED
    assert judge(st, K=[1, 5])["verdict"] == PARTLY


def test_without_the_second_method_it_is_undecided_and_says_what_would_decide(tmp_path):
    st = Study(tmp_path).run("identity", curve(), name="rfedags", K=1, extra={"dist_to_opt": curve()})
    r = judge(st)
    assert r["verdict"] == UNDECIDED and r["margin"] is None
    assert "runs of both rfedags and rfedavg" in r["decide"] and "`identity` at K = 1" in r["decide"]


def test_a_seed_of_one_method_only_is_named_and_the_others_are_judged(tmp_path):
    st = pair(Study(tmp_path), curve(), curve(), seed=0)
    st.run("identity", curve(), name="rfedags", K=1, seed=1, extra={"dist_to_opt": curve()})
    r = judge(st)
    assert r["verdict"] == REPRODUCED
    assert any("seed(s) 1 ran one method only" in n for n in r["notes"])


def test_runs_drawn_before_common_random_numbers_are_not_judged(tmp_path):
    """Runs of sampler 2 (each method its own draws) that differ: undecided, with the rerun that
    would decide it, never "not reproduced" (the identity needs shared draws)."""
    b = curve()
    b[4] *= 1.5
    st = pair(Study(tmp_path), curve(), b)
    for path in st.runs["identity"]:
        meta = io.read_json(io.run_meta_path(path))
        io.write_json(io.run_meta_path(path), {**meta, "sampler": 2})
    r = judge(st)
    assert r["verdict"] == UNDECIDED and r["margin"] is None
    assert "sampler 2" in r["decide"] and "shared draws" in r["decide"]

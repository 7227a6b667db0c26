"""``consensus_contraction`` on constructed run tables: consensus errors that contract exactly
at sigma^t (holds), at sigma^{t(1 +- 0.2)} (fails with tolerance 0.1), noisy around the bound
(undecided), a graph with sigma_2 = 0 (left out), and the ratio of one seed by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from test_claim_rules_newer import Study

from rfl.claims.rules.consensus_contraction import seed_ratio
from rfl.claims.verdicts import NOT, REPRODUCED, UNDECIDED


def consensus(rate, T=80, floor=1e-15, start=0.8):
    """A consensus error start * rate^t falling to a rounding floor."""
    return np.maximum(start * rate ** np.arange(T + 1.0), floor)


def graph(st, experiment, sigma2_t, rates):
    """DRSGD runs of one graph: seed s's consensus error contracts at rates[s]."""
    for s, r in enumerate(rates):
        curve = consensus(r)
        st.run(experiment, np.full(curve.shape, 1e-3), name="drsgd", K=1, seed=s,
               extra={"consensus_error": curve, "sigma2": np.full(curve.shape, sigma2_t),
                      "sigma2_t": np.full(curve.shape, sigma2_t)})
    return st


def test_one_seeds_ratio_by_hand():
    table = pd.DataFrame({"round": np.arange(81), "consensus_error": consensus(0.5 ** 1.3),
                          "sigma2_t": 0.5, "status": "ok"})
    ratio, status = seed_ratio(table)
    assert status == "ok" and ratio == pytest.approx(1.3, rel=1e-9)   # log(0.5^1.3) / log(0.5)


@pytest.mark.parametrize("power, want", [(1.0, REPRODUCED), (1.09, REPRODUCED), (0.91, REPRODUCED),
                                         (1.2, NOT), (0.8, NOT)])
def test_contraction_at_sigma_t_holds_and_away_from_it_fails(tmp_path, power, want):
    st = Study(tmp_path)
    graph(st, "ring", 0.8, [0.8 ** power] * 3)
    graph(st, "hypercube", 0.5, [0.5 ** power] * 3)
    r = st.judge("consensus_contraction", ["ring", "hypercube"], {"tolerance": 0.1})
    assert r["verdict"] == want


def test_seeds_straddling_the_bound_leave_it_undecided(tmp_path):
    st = graph(Study(tmp_path), "ring", 0.8, [0.8 ** 0.95, 0.8 ** 1.25, 0.8 ** 1.05])
    r = st.judge("consensus_contraction", ["ring"], {"tolerance": 0.1})
    assert r["verdict"] == UNDECIDED and r["decide"]


def test_a_graph_with_sigma2_zero_is_left_out(tmp_path):
    st = Study(tmp_path)
    graph(st, "complete", 0.0, [0.1, 0.1, 0.1])
    graph(st, "ring", 0.8, [0.8] * 3)
    r = st.judge("consensus_contraction", ["complete", "ring"], {})
    assert r["verdict"] == REPRODUCED
    assert any("finitely many steps" in n for n in r["notes"])
    assert [row["outcome"] for row in r["rows"]][0] == "left out"


def test_no_runs_of_the_algorithm_is_undecided(tmp_path):
    st = Study(tmp_path)
    st.run("ring", np.ones(10), name="drgta", K=1)
    assert st.judge("consensus_contraction", ["ring"], {})["verdict"] == UNDECIDED

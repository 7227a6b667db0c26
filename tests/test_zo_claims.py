"""The claim of PCAStief_Syn_40 about ZO-RFedProj (``curves_within_factor`` with
``participation: any``, factor 2 on the rates as the config sets it): constructed run tables
of runs under partial participation, on both sides of the factor, and the default (every
agent) that does not see them."""

import numpy as np
import pytest

from rfl.claims.rule import Evidence
from rfl.claims.verdicts import NOT, REPRODUCED, UNDECIDED
from rfl.registry import RULES
from rfl.testing.run_files import write_run


def _run(root, name, values, s=3, seed=0):
    path = root / "runs" / "e" / f"{name}_K5_s{s}_seed{seed}.csv"
    write_run(path, {"round": np.arange(len(values)), "excess_risk": np.asarray(values, float),
                     "status": np.array(["ok"] * len(values), dtype=object)},
              {"experiment": "e", "run_id": path.stem, "seed": seed,
               "algorithm": {"name": name, "K": 5, "batch_size": 1, "participation": s}})
    return str(path)


def _judge(tmp_path, ratio, **params):
    """RFedProj at 0.2 x 0.99^t, ZO-RFedProj at 0.2 x 0.99^(ratio t): rates in the ratio, 3 seeds."""
    t = np.arange(400.0)
    runs = {"e": [_run(tmp_path, name, 0.2 * 0.99 ** (c * t), seed=s)
                  for s in range(3) for name, c in (("rfedproj", 1.0), ("zorfedproj", ratio))]}
    rule = RULES["curves_within_factor"]()
    spec = {"config": {"experiments": {"e": {}}}, "runs": runs, "tables": {}}
    p = {**rule.defaults(), "first": "zorfedproj", "second": "rfedproj", **params}
    return rule.judge(Evidence(spec, ["e"]), p)


@pytest.mark.parametrize("ratio, want", [(1.9, REPRODUCED), (2.1, NOT), (0.55, REPRODUCED), (0.45, NOT)])
def test_zo_within_a_factor_of_rfedproj_under_partial_participation(tmp_path, ratio, want):
    j = _judge(tmp_path, ratio, participation="any", factor=2.0)
    assert j.verdict == want
    assert j.rows[0]["rate ratio"] == pytest.approx(ratio, rel=1e-9)


def test_default_compares_only_runs_with_every_agent(tmp_path):
    j = _judge(tmp_path, 1.5)
    assert j.verdict == UNDECIDED and j.rows == []
    assert "participation" in RULES["curves_within_factor"]().describe(
        {**RULES["curves_within_factor"]().defaults(), "participation": "any"})

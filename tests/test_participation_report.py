"""The participation-schemes section of REPRODUCTION.md (rfl.reporting.participation) on
hand-made run files whose levels are known."""

import numpy as np
import pytest

from rfl.participation import tag
from rfl.reporting.participation import participation_section, scheme_experiments
from rfl.reporting.reproduction import NOT, PARTLY, REPRODUCED, Report
from rfl.testing.run_files import write_run

SCHEMES = {"full": None, "uniform": 5, "bernoulli": {"scheme": "bernoulli", "rho": 0.5, "probabilities": None},
           "bernoulli_estimated": {"scheme": "bernoulli_estimated", "rho": 0.5, "probabilities": None}}


def _write(root, experiment, levels: dict, seeds=(0, 1)):
    """Runs of 50 rounds falling from 1 to the scheme's level (reached at round 20)."""
    paths = []
    for scheme, level in levels.items():
        part = SCHEMES[scheme]
        if isinstance(part, dict):
            part = {**part, "rho": level[1]}
        elif isinstance(part, int):
            part = int(round(level[1] * 10))
        for seed in seeds:
            values = np.maximum(np.geomspace(1.0, level[0], 21).tolist() + [level[0]] * 29, level[0])
            rid = f"rfedags_K5{tag(part)}_seed{seed}"
            csv = root / "runs" / experiment / f"{rid}.csv"
            write_run(csv, {"round": np.arange(50), "excess_risk": values},
                      {"experiment": experiment, "run_id": rid, "seed": seed,
                       "algorithm": {"name": "rfedags", "K": 5, "batch_size": 1, "participation": part},
                       "dataset": {"name": "d", "problem": "cpesph", "params": {"S": 10}}})
            paths.append(str(csv))
    return paths


def _config(exps):
    m = [{"algorithm": "rfedags", "K": [5]},
         {"algorithm": "rfedags", "K": [5], "participation": {"scheme": "bernoulli", "rho": 0.5}}]
    return {"experiments": {e: {"methods": m} for e in exps}}


def _section(tmp_path, data):
    runs = {e: _write(tmp_path, e, levels) for e, levels in data.items()}
    rep = Report()
    participation_section(rep, {"config": _config(list(data)), "runs": runs, "tables": {}})
    return rep


def test_ordering_and_monotonicity_are_computed_from_the_levels(tmp_path):
    data = {"p3": {"full": (1e-5, 1.0), "uniform": (3e-4, 0.3), "bernoulli": (2e-4, 0.3),
                   "bernoulli_estimated": (4e-4, 0.3)},
            "p7": {"full": (1e-5, 1.0), "uniform": (9e-5, 0.7), "bernoulli": (7e-5, 0.7),
                   "bernoulli_estimated": (5e-4, 0.7)}}
    rep = _section(tmp_path, data)
    assert rep.summary[-1][2] == REPRODUCED
    text = "\n".join(rep.lines)
    assert "share 0.3: 0.0002, share 0.7: 7e-05 (decreasing in the share)" in text
    assert "bernoulli_estimated: share 0.3: 0.0004, share 0.7: 0.0005 (not monotone in the share)" in text
    assert "| RFedAGS-K=5 | full | full | 1 | 1e-05 |" in text


def test_a_partial_scheme_below_full_is_not_the_authors_ordering(tmp_path):
    data = {"p3": {"full": (1e-4, 1.0), "uniform": (3e-4, 0.3), "bernoulli": (5e-5, 0.3)},
            "p5": {"full": (1e-4, 1.0), "uniform": (3e-5, 0.5)}}
    assert _section(tmp_path, data).summary[-1][2] == NOT
    data = {"p3": {"full": (1e-4, 1.0), "uniform": (3e-4, 0.3)},
            "p5": {"full": (1e-4, 1.0), "uniform": (3e-5, 0.5)}}
    assert _section(tmp_path / "b", data).summary[-1][2] == PARTLY


def test_scheme_experiments_are_those_with_a_scheme_mapping():
    cfg = {"experiments": {"a": {"methods": [{"algorithm": "rfedags", "participation": 3}]},
                           "b": {"methods": [{"algorithm": "rfedags",
                                              "participation": {"scheme": "bernoulli"}}]}}}
    assert scheme_experiments(cfg) == ["b"]


def test_scheme_and_expected_share_of_each_participation():
    from rfl.reporting.participation import _scheme_of

    assert _scheme_of({"participation": None}, 12) == (None, 1.0)
    assert _scheme_of({}, 12) == (None, 1.0)
    assert _scheme_of({"participation": 3}, 12) == ("uniform", 0.25)          # s / S
    probs = [0.2, 0.4, 0.6]
    assert _scheme_of({"participation": {"scheme": "bernoulli", "rho": 0.5, "probabilities": probs}}, 3) \
        == ("bernoulli", np.mean(probs))                                       # the given p_i, not rho
    assert _scheme_of({"participation": {"scheme": "bernoulli_estimated", "rho": 0.3,
                                         "probabilities": None}}, 3) == ("bernoulli_estimated", 0.3)


def test_levels_one_row_per_algorithm_K_and_scheme(tmp_path):
    """Two seeds of RFedAGS K = 1 and K = 5 (every agent), RFedAvg K = 5, and RFedAGS K = 5 with
    s = 2 of n_agents = 8 (no S in the dataset's params): each its own row with its level."""
    from rfl.reporting.participation import levels

    paths = []
    cases = [("rfedags", 1, None, 1e-3), ("rfedags", 5, None, 1e-4), ("rfedavg", 5, None, 2e-4),
             ("rfedags", 5, 2, 5e-4)]
    for name, K, part, level in cases:
        for seed, shift in enumerate((1.0, 3.0)):
            values = np.full(30, level * shift)
            values[0] = 1.0
            rid = f"{name}_K{K}{tag(part)}_seed{seed}"
            csv = tmp_path / "runs" / "e" / f"{rid}.csv"
            write_run(csv, {"round": np.arange(30), "excess_risk": values},
                      {"experiment": "e", "run_id": rid, "seed": seed,
                       "algorithm": {"name": name, "K": K, "batch_size": 1, "participation": part},
                       "dataset": {"name": "d", "problem": "lsa", "params": {"n_agents": 8}}})
            paths.append(str(csv))
    t = levels({"runs": {"e": paths}}, "e")
    assert list(t.columns) == ["method", "algorithm", "K", "scheme", "share", "plateau", "seeds"]
    assert len(t) == 4 and set(t["seeds"]) == {2}
    for name, K, part, level in cases:
        row = t[(t["algorithm"] == name) & (t["K"] == K) & ((t["scheme"].isna()) if part is None
                                                             else (t["scheme"] == "uniform"))]
        assert len(row) == 1
        # median over the two seeds (level and 3 x level) of the last rounds
        assert row["plateau"].iloc[0] == pytest.approx(np.median([level, 3 * level]))
        assert row["share"].iloc[0] == (1.0 if part is None else part / 8)
    assert levels({"runs": {"e": paths}}, "other").empty


def test_experiments_without_runs_or_without_a_partial_scheme_are_missing(tmp_path):
    """p3 holds the ordering; p5 has only every-agent runs and pe no run at all: both count as
    missing (1 of 3 holds, 2 missing: partly); with p5 and pe alone: insufficient data."""
    runs = {e: _write(tmp_path, e, levels) for e, levels in
            {"p3": {"full": (1e-5, 1.0), "uniform": (3e-4, 0.3)}, "p5": {"full": (1e-5, 1.0)}}.items()}
    runs["pe"] = []
    rep = Report()
    participation_section(rep, {"config": _config(["pe", "p3", "p5"]), "runs": runs, "tables": {}})
    assert "- `pe`: no runs." in rep.lines
    assert rep.summary[-1][2] == PARTLY
    assert "Every agent: 1e-05; partial schemes from 0.0003 to 0.0003 (full lowest)." in rep.lines
    rep = Report()
    participation_section(rep, {"config": _config(["pe", "p5"]), "runs": runs, "tables": {}})
    assert rep.summary[-1][2] == "insufficient data"


def test_a_partial_scheme_at_the_full_level_keeps_the_ordering(tmp_path):
    rep = _section(tmp_path, {"p3": {"full": (1e-4, 1.0), "uniform": (1e-4, 0.3)}})
    assert rep.summary[-1][2] == REPRODUCED
    assert "Every agent: 0.0001; partial schemes from 0.0001 to 0.0001 (full lowest)." in rep.lines


def test_share_lines_need_two_shares_and_a_strict_decrease(tmp_path):
    """uniform at the same level for shares 0.3 and 0.7: not a decrease; bernoulli at one share
    only: no line."""
    rep = _section(tmp_path, {"p3": {"full": (1e-5, 1.0), "uniform": (2e-4, 0.3), "bernoulli": (3e-4, 0.3)},
                              "p7": {"full": (1e-5, 1.0), "uniform": (2e-4, 0.7)}})
    assert "- uniform: share 0.3: 0.0002, share 0.7: 0.0002 (not monotone in the share)" in rep.lines
    assert not any(ln.startswith("- bernoulli:") for ln in rep.lines)


def test_levels_of_a_dataset_without_params(tmp_path):
    from rfl.reporting.participation import levels

    csv = tmp_path / "runs" / "e" / "rfedags_K5_seed0.csv"
    write_run(csv, {"round": np.arange(10), "excess_risk": np.full(10, 2e-3)},
              {"experiment": "e", "run_id": "rfedags_K5_seed0", "seed": 0,
               "algorithm": {"name": "rfedags", "K": 5}, "dataset": {"name": "d", "problem": "cpesph"}})
    t = levels({"runs": {"e": [str(csv)]}}, "e")
    assert t.loc[0, "share"] == 1.0 and t.loc[0, "plateau"] == pytest.approx(2e-3) and t.loc[0, "scheme"] is None

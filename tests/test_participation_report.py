"""The participation-schemes section of REPRODUCTION.md (rfl.reporting.participation) on
hand-made run files whose levels are known."""

import numpy as np

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

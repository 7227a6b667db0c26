"""Verdicts of the newer-version sections (rfl/reporting/newer_version.py) on synthetic runs
whose behaviour is known: they must pass what holds and fail what does not."""

import numpy as np
import pytest

from rfl.reporting.newer_version import newer_version_section
from rfl.reporting.reproduction import Report
from rfl.testing.run_files import write_run

T = np.arange(201)


def _config():
    return {"datasets": {"m": {"problem": "pca_sphere"}, "h": {"problem": "hsp"}},
            "experiments": {"mf": {"dataset": "m", "step": {"rule": "fixed"}},
                            "md": {"dataset": "m", "step": {"rule": "decaying"}},
                            "hf": {"dataset": "h", "step": {"rule": "fixed"}}}}


def _run(tmp_path, exp, name, er, dist=None):
    path = tmp_path / exp / f"{name}.csv"
    path.parent.mkdir(exist_ok=True)
    cols = {"round": T, "excess_risk": er}
    if dist is not None:
        cols["dist_true"] = dist
    write_run(path, cols, {"experiment": exp, "run_id": name,
                           "algorithm": {"name": name, "K": 5, "batch_size": 2}})
    return str(path)


@pytest.mark.parametrize("decay_better", [True, False])
def test_mnist_verdicts(tmp_path, decay_better):
    fixed = np.maximum(100 * 0.8 ** T, 1e-3)
    decay = np.maximum(100 * 0.8 ** T, 1e-4 if decay_better else 1e-2)
    runs = {"mf": [_run(tmp_path, "mf", "rfedags", fixed)],
            "md": [_run(tmp_path, "md", "rfedags", decay)], "hf": []}
    rep = Report()
    newer_version_section(rep, {"config": _config(), "runs": runs})
    verdicts = dict((c, v) for _, c, v in rep.summary)
    assert verdicts["RFedAGS with a fixed step converges linearly to a neighbourhood of the "
                    "minimiser"] == "reproduced"
    assert verdicts["a decaying step reaches a more accurate solution than a fixed one"] == (
        "reproduced" if decay_better else "not reproduced")


def test_hsp_convergence_verdict_fails_for_a_stalled_method(tmp_path):
    good = np.maximum(0.2 * 0.95 ** T, 1e-7)
    stalled = np.full(T.size, 0.1)
    runs = {"hf": [_run(tmp_path, "hf", "rfedags", good, np.full(T.size, 0.3)),
                   _run(tmp_path, "hf", "rfedavg", stalled, np.full(T.size, 0.5))]}
    rep = Report()
    newer_version_section(rep, {"config": _config(), "runs": runs})
    verdicts = dict((c, v) for _, c, v in rep.summary)
    assert verdicts["RFedAGS, RFedAvg and RFedSVRG converge to the minimiser (fixed step)"] == \
        "partly reproduced"
    assert "0.5" in "\n".join(rep.lines)                     # the distance to y_true is reported

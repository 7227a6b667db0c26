"""The provenance lines at the head of REPRODUCTION.md (rfl/reporting/reproduction.py), read
back against the run files and the spec they were written from: which config files, how many
runs and which diverged, the code commits, which data stood in and for which experiments,
what was not run and why, the versions, and the toy-size warning. (Content only: the layout of
the report's summary is tested with the claims.)"""

from __future__ import annotations

import numpy as np

from rfl.reporting import reproduction
from rfl.testing.run_files import write_run


def _run(root, experiment, name, *, diverged=False, commit="c0ffee1", data=None):
    status = np.array(["ok", "ok", "diverged" if diverged else "ok"], dtype=object)
    path = root / experiment / f"{name}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_run(path, {"excess_risk": np.array([1.0, 0.5, np.nan if diverged else 0.25]), "status": status},
              {"experiment": experiment, "run_id": name}, commit=commit,
              versions={"numpy": "2.1.0", "scipy": "1.14.1"}, **({"data": data} if data else {}))
    return str(path)


def test_the_provenance_lines_name_what_the_report_was_computed_from(tmp_path):
    runs = {"e1": [_run(tmp_path, "e1", "a_seed0", data={"note": "fixture F"}),
                   _run(tmp_path, "e1", "a_seed1", diverged=True, data={"note": "fixture F"})],
            "e2": [_run(tmp_path, "e2", "b_seed0", commit="deadbee", data={"images_note": "MNIST stand-in"}),
                   _run(tmp_path, "e2", "b_seed1", diverged=True)],
            "e3": [_run(tmp_path, "e3", "c_seed0", commit="deadbee", data={"note": "fixture F"})]}
    spec = {"runs": runs, "config": {"toy_size": True, "output_dir": "out/x/"},
            "configfiles": ["config/smoke.yaml", "extra.yaml"],
            "skipped": {"school": "skipped school_r3: no School data (set RFL_SCHOOL_MIRROR)"}}
    lines = reproduction.provenance(spec)
    text = "\n".join(lines)
    assert "**Toy size.**" in lines[0] and "`config/smoke.yaml, extra.yaml`" in lines[0]
    assert "- config: `config/smoke.yaml`, `extra.yaml` (outputs under `out/x/`)" in lines
    assert "- runs: 5 (2 diverged: a_seed1, b_seed1)" in lines
    assert "- code: commit(s) c0ffee1, deadbee" in lines        # the first run of each experiment
    # each kind of data once, with the experiments that used it (sorted)
    assert "- data: fixture F: e1, e3" in lines and "- data: MNIST stand-in: e2" in lines
    assert "- not run (data absent): school_r3 (no School data (set RFL_SCHOOL_MIRROR))" in lines
    assert "- versions: numpy 2.1.0, scipy 1.14.1" in lines
    assert text.count("- data:") == 2 and "- written: " in text


def test_without_toy_size_files_or_skips_the_defaults_are_said(tmp_path):
    spec = {"runs": {"e": [_run(tmp_path, "e", "a_seed0")]}, "config": {}}
    lines = reproduction.provenance(spec)
    assert lines[0] == "- config: `config/config.yaml`"
    assert "- runs: 1 (0 diverged)" in lines
    assert not any("Toy size" in ln or "not run" in ln or "- data:" in ln for ln in lines)

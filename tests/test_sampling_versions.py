"""Run metadata name the mini-batch sampler, and figures, tables and reports refuse to mix run
tables drawn with different samplers (two random streams are not comparable draw for draw)."""

import time

import numpy as np
import pytest

from rfl import io, runner
from rfl.algorithms.sampling import SAMPLER_VERSION
from rfl.reporting.figures import load_runs
from rfl.testing.run_files import write_run


def test_run_metadata_record_the_sampler_version():
    meta = runner._metadata({"seed": 1}, time.time(), "ok")
    assert meta["sampler"] == SAMPLER_VERSION == 3


def _runs(tmp_path, versions):
    paths = []
    for i, v in enumerate(versions):
        path = tmp_path / f"run{i}.csv"
        extra = {} if v is None else {"sampler": v}
        write_run(path, {"excess_risk": np.array([1.0, 0.5])}, {}, **extra)
        if v is None:                                 # metadata written before the key existed
            meta = io.read_json(io.run_meta_path(path))
            del meta["sampler"]
            io.write_json(io.run_meta_path(path), meta)
        paths.append(path)
    return paths


def test_runs_of_one_sampler_are_read_together(tmp_path):
    paths = _runs(tmp_path, [SAMPLER_VERSION] * 3)
    io.check_sampler_versions(paths)
    assert sum(len(v) for v in load_runs(paths).values()) == 3


def test_metadata_without_the_key_are_the_first_sampler(tmp_path):
    paths = _runs(tmp_path, [None, 1])
    assert io.sampler_version(io.read_run_meta(io.run_meta_path(paths[0]))) == 1
    io.check_sampler_versions(paths)


@pytest.mark.parametrize("versions", [[2, None], [1, 2, 2], [3, 2, 3]])
def test_mixed_samplers_are_refused_naming_the_files_and_the_fix(tmp_path, versions):
    paths = _runs(tmp_path, versions)
    for check in (io.check_sampler_versions, load_runs):
        with pytest.raises(io.RunTableError) as err:
            check(paths)
        msg = str(err.value)
        assert "different mini-batch samplers" in msg and "rm -r results/runs" in msg and "rerun" in msg
        for v in {1 if v is None else v for v in versions}:
            assert f"sampler {v}: " in msg
        for p in paths:
            assert str(p) in msg

"""Synthetic run files for tests: a run table with every column ``rfl.io.read_run_table``
checks, and its metadata record, from just the columns and spec keys a test cares about."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rfl import io


def write_run(path, columns: dict, spec: dict, **meta) -> None:
    """Write run table ``path`` (``X.csv``) and ``X.meta.json``: ``columns`` (e.g. round,
    excess_risk, status) completed with the other columns of ``rfl.io.COLUMNS`` (rounds
    0..n-1, status ok, zeros), ``spec`` completed with placeholder experiment, run id, rounds
    and dataset problem, and ``meta`` (e.g. status, predictions) with the rest of the record."""
    from rfl.io import COLUMNS

    n = max(len(np.atleast_1d(v)) for v in columns.values())
    table = {c: np.zeros(n) for c in COLUMNS}
    table.update(round=np.arange(n), status="ok")
    table.update(columns)
    df = pd.DataFrame(table)
    spec = {"experiment": "e", "run_id": "r", "rounds": n - 1, **spec}
    spec["dataset"] = {"problem": "cpesph", **spec.get("dataset", {})}
    spec["algorithm"] = {"name": "rfedavg", **spec.get("algorithm", {})}
    status = "diverged" if (df["status"] == "diverged").any() else "ok"
    from rfl.algorithms.sampling import SAMPLER_VERSION
    record = {"spec": spec, "status": status, "rounds_completed": n - 1, "commit": "test",
              "versions": {}, "sampler": SAMPLER_VERSION, **meta}
    io.write_json(io.run_meta_path(path), record)
    io.write_table(path, df)

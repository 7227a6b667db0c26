"""rfl.io.write_rows: a run job's table written without pandas, byte for byte what
``io.write_table(pandas.DataFrame(rows, columns=columns))`` writes (the oracle here)."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rfl import io

_FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
_VALUES = st.one_of(
    st.integers(-2**62, 2**62), _FLOATS, st.none(), st.booleans(),
    _FLOATS.map(np.float64), st.integers(-2**62, 2**62).map(np.int64),
    st.text(alphabet='ab,"\n x', max_size=5),
)


def _both(tmp_path, columns, rows):
    io.write_rows(tmp_path / "rows.csv", columns, rows)
    io.write_table(tmp_path / "frame.csv", pd.DataFrame(rows, columns=columns))
    return (tmp_path / "rows.csv").read_bytes(), (tmp_path / "frame.csv").read_bytes()


@settings(max_examples=300, deadline=None)
@given(data=st.data(), n_cols=st.integers(1, 4), n_rows=st.integers(0, 5))
def test_rows_are_written_as_pandas_writes_them(tmp_path_factory, data, n_cols, n_rows):
    columns = [f"c{j}" for j in range(n_cols)]
    # each column drawn from one kind of value, or mixed (object columns)
    kinds = [data.draw(st.sampled_from(["int", "float", "mixed_num", "bool", "str", "any"])) for _ in columns]
    by_kind = {"int": st.integers(-2**62, 2**62), "float": st.one_of(_FLOATS, st.none()),
               "mixed_num": st.one_of(st.integers(-2**62, 2**62), _FLOATS, _FLOATS.map(np.float64)),
               "bool": st.booleans(), "str": st.text(alphabet='ab,"\n x', max_size=5), "any": _VALUES}
    rows = [{c: data.draw(by_kind[k]) for c, k in zip(columns, kinds)} for _ in range(n_rows)]
    got, want = _both(tmp_path_factory.mktemp("rows"), columns, rows)
    assert got == want


def test_a_run_table_is_written_as_before(tmp_path):
    """The columns of a run table: rounds, counters, metrics with NaN, status."""
    rows = [{"round": 0, "cost": -0.7199301034933494, "excess_risk": 260.53821701919162,
             "grad_norm": 1e-300, "dist_to_opt": float("nan"), "grad_evals": 0, "floats": 0,
             "wall_time": 0.0, "status": "ok"},
            {"round": 1, "cost": np.float64(-1.1210252172863804), "excess_risk": -0.0,
             "grad_norm": math.inf, "dist_to_opt": np.float64(1.5316663449290955),
             "grad_evals": 24000, "floats": 94080, "wall_time": 1.0366480350057827, "status": "diverged"}]
    columns = list(rows[0])
    got, want = _both(tmp_path, columns + ["time"], rows)       # a column no row has: empty
    assert got == want
    # %.17g: 17 significant digits, trailing zeros dropped; NaN and a missing column empty
    assert got.decode().splitlines()[1] == "0,-0.7199301034933494,260.53821701919162,1e-300,,0,0,0,ok,"
    assert got.decode().splitlines()[2].startswith("1,-1.1210252172863804,-0,inf,")


def test_no_rows_is_the_header_alone(tmp_path):
    got, want = _both(tmp_path, ["round", "cost"], [])
    assert got == want == b"round,cost\n"


def test_a_run_job_never_imports_pandas():
    """The run path (runner, io, every registry) reads and writes without pandas: a job's
    start-up pays for it otherwise."""
    code = ("import sys, rfl.runner, rfl.registry as r\n"
            "for reg in (r.PROBLEMS, r.ALGORITHMS, r.MANIFOLDS): reg.names()\n"
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"

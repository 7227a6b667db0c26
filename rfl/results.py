"""The results table: every run of a workflow in one flat table, and merging such tables.

One row per run and round, in Parquet (through pyarrow) with a CSV beside it:
    spec_hash           ``spec_hash(spec)``: the run's identity (sha256 of its canonical JSON)
    spec.<key>          the run's parameters (its spec flattened: ``spec.algorithm.K``,
                        ``spec.dataset.params.S``, ...; a list as its JSON text)
    env.<key>           where and how it ran: ``env.commit``, ``env.machine.*``,
                        ``env.version.<package>``, ``env.sampler``, ``env.start_time``,
                        ``env.duration_s``
    run.<key>           the run's outcome: ``run.status``, ``run.rounds_completed``,
                        ``run.F_star``, ``run.reference_method``
    round, cost, ...    the run table's columns (``rfl.io.COLUMNS``, then the problem's)
    meta_json           in the run's first row (round 0) only: its metadata record as JSON
    table_columns       in that row too: the run table's columns and their dtypes (JSON)
The last two make the table lossless: ``runs_of`` gives back each run's table and metadata
exactly as ``rfl.io.read_run_table`` reads them from the run's files, so ``ResultsSource``
can stand in for the files (``rfl.io.run_source``) and the figures, tables and the report are
drawn from a results table as from the runs themselves. Runs are in the order (experiment,
run id, spec hash), columns in the order above (each group sorted by name), so one set of
runs gives one table whatever order they were read in.

``merge`` joins tables (from several machines): a run present in several with the same result
is kept once (the first); two different results for one spec hash are refused (``ResultsError``,
one line naming both). The same result: every column but the machine's measurements
(``wall_time``) equal, NaN equal to NaN, and the metadata equal but for where and when it ran
(``ENVIRONMENT``).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from rfl import io

#: the metadata keys saying where and when a run ran (``rfl.runner._metadata``): not part of its
#: result, so two machines' copies of a run may differ in them and still be one result
ENVIRONMENT = ("commit", "versions", "machine", "start_time", "duration_s")
#: run table columns that measure the machine, not the method (excluded from "same result")
MEASURED = ("wall_time",)
#: the run-level outcome columns: column -> metadata key
RUN_KEYS = {"run.status": "status", "run.rounds_completed": "rounds_completed",
            "run.F_star": "F_star", "run.reference_method": "reference_method"}
SUFFIXES = (".parquet", ".csv")
#: how read_csv reads back the floats a CSV holds exactly: pandas 3 does by default (and
#: deprecates the option), pandas 2 needs its round-trip converter
_ROUND_TRIP = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}


class ResultsError(ValueError):
    """A results table that cannot be read or merged (one line naming the file and why)."""


def spec_hash(spec: dict) -> str:
    """The identity of a run: the first 16 hex digits of the sha256 of its spec as canonical JSON
    (keys sorted, no spaces). Two runs with one hash ran the same spec."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _flat(obj: dict, prefix: str) -> dict:
    """A nested mapping as {prefix.key.subkey: scalar}; a list (or an empty mapping) as its JSON."""
    out = {}
    for key, value in obj.items():
        name = f"{prefix}.{key}"
        if isinstance(value, dict) and value:
            out.update(_flat(value, name))
        elif isinstance(value, (dict, list, tuple)):
            out[name] = json.dumps(value, sort_keys=True)
        else:
            out[name] = value
    return out


def _run_columns(meta: dict) -> dict:
    """The run-level columns of a run (spec.*, env.*, run.*) from its metadata."""
    env = {"commit": meta.get("commit"), "sampler": io.sampler_version(meta),
           "start_time": meta.get("start_time"), "duration_s": meta.get("duration_s"),
           "machine": meta.get("machine") or {}, "version": meta.get("versions") or {}}
    out = {"spec_hash": spec_hash(meta["spec"]), **_flat(meta["spec"], "spec"), **_flat(env, "env")}
    out.update({col: meta.get(key) for col, key in RUN_KEYS.items()})
    return out


def _column_of(values: list) -> pd.Series | list:
    """One run-level column from its values (None: absent): booleans, integers (nullable),
    numbers, or else text (a number or boolean among text as its JSON)."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pd.Series(values, dtype="boolean")
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pd.Series(values, dtype="Int64")
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pd.Series([np.nan if v is None else float(v) for v in values], dtype="float64")
    return pd.Series([v if v is None or isinstance(v, str) else json.dumps(v) for v in values],
                     dtype="string")


def _arrays(table: pd.DataFrame) -> dict[str, np.ndarray]:
    """A run table's columns as arrays (read with its ``attrs`` set aside: pandas deep-copies
    them on every column access, and a run with replicas carries its sample there)."""
    saved, table.attrs = table.attrs, {}
    try:
        return {c: table[c].to_numpy() for c in table.columns}
    finally:
        table.attrs = saved


def _result_column(name: str, tables: list[dict], lengths: list[int]) -> pd.Series:
    """Run table column ``name`` of every table (``_arrays``), one after the other: integers
    (nullable) where every table that has it holds integers, numbers where they hold numbers,
    else text; absent from a table: missing there."""
    kinds = {t[name].dtype.kind for t in tables if name in t}
    parts = [(t.get(name), n) for t, n in zip(tables, lengths)]
    if kinds and kinds <= {"i", "u"}:
        values = np.concatenate([np.zeros(n, np.int64) if a is None else a.astype(np.int64) for a, n in parts])
        mask = np.concatenate([np.full(n, a is None) for a, n in parts])
        return pd.Series(pd.arrays.IntegerArray(values, mask))
    if kinds and kinds <= {"i", "u", "f"}:
        return pd.Series(np.concatenate([np.full(n, np.nan) if a is None else a.astype(np.float64)
                                         for a, n in parts]), dtype="float64")
    return pd.Series(np.concatenate([np.full(n, None, object) if a is None else a.astype(object)
                                     for a, n in parts] or [np.array([], object)]), dtype="string")


def build(runs) -> pd.DataFrame:
    """The results table of ``runs``: (table, metadata) pairs as ``rfl.io.read_run_table``
    returns them. One row per run and round; see the module docstring for the columns."""
    runs = sorted(runs, key=lambda r: (r[1]["spec"]["experiment"], r[1]["spec"]["run_id"],
                                       spec_hash(r[1]["spec"])))
    level = [_run_columns(meta) for _, meta in runs]
    names = {k for cols in level for k in cols} - {"spec_hash"}
    ordered = (["spec_hash"] + sorted(k for k in names if k.startswith("spec."))
               + sorted(k for k in names if k.startswith("env."))
               + [k for k in RUN_KEYS if k in names])
    results = list(io.COLUMNS) + sorted({c for t, _ in runs for c in t.columns} - set(io.COLUMNS))
    lengths = [len(t) for t, _ in runs]
    out = {}
    for name in ordered:
        col = _column_of([cols.get(name) for cols in level])
        out[name] = (col.repeat(lengths).reset_index(drop=True) if len(runs)
                     else pd.Series([], dtype=col.dtype))
    arrays = [_arrays(t) for t, _ in runs]
    for name in results:
        out[name] = _result_column(name, arrays, lengths)
    meta_json, columns = [None] * sum(lengths), [None] * sum(lengths)
    for start, (table, meta) in zip(np.cumsum([0] + lengths[:-1]), runs):
        meta_json[start] = json.dumps(meta, sort_keys=True)
        columns[start] = json.dumps([[c, str(dtype)] for c, dtype in table.dtypes.items()])
    meta_json, columns = pd.Series(meta_json, dtype="string"), pd.Series(columns, dtype="string")
    out["meta_json"], out["table_columns"] = meta_json, columns
    return pd.DataFrame(out)


def write_results(df: pd.DataFrame, out_parquet) -> None:
    """``df`` (``build``) as ``out_parquet`` and, beside it, the same table as CSV (pyarrow's:
    each float in the shortest text that reads back to it), each written atomically."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    out_parquet = Path(out_parquet)
    table = pa.Table.from_pandas(df, preserve_index=False)
    with io.atomic_path(out_parquet) as tmp:
        pq.write_table(table, tmp)
    with io.atomic_path(out_parquet.with_suffix(".csv")) as tmp:   # floats: shortest round trip
        pcsv.write_csv(table, tmp)


def read_results(path) -> pd.DataFrame:
    """A results table (``.parquet``, or its ``.csv``), ResultsError (one line) if it is not one."""
    path = Path(path)
    if path.suffix not in SUFFIXES:
        raise ResultsError(f"{path}: not a results table; allowed: a .parquet or .csv file "
                           f"that rfl results or rfl merge wrote")
    try:
        if path.suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq
            df = pq.read_table(path).to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
        else:
            df = pd.read_csv(path, dtype={"spec_hash": "string", "meta_json": "string",
                                          "table_columns": "string"}, **_ROUND_TRIP)
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such results table") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError,
            OSError) as exc:
        what = "Parquet" if path.suffix == ".parquet" else "CSV"
        raise ResultsError(f"{path}: not a {what} results table "
                           f"({' '.join(str(exc).split())[:120]})") from None
    missing = [c for c in ("spec_hash", "meta_json", "table_columns", "round") if c not in df.columns]
    if missing:
        raise ResultsError(f"{path}: lacks column(s) {', '.join(missing)}; allowed: a table that "
                           f"rfl results or rfl merge wrote")
    return df


def runs_of(df: pd.DataFrame, where) -> list[tuple[pd.DataFrame, dict]]:
    """The runs of a results table: (table, metadata) per run, in the table's order, each table
    with its own columns and dtypes and checked as ``rfl.io.read_run_table`` checks a run's
    files (RunTableError naming ``where`` and the run otherwise)."""
    starts = np.flatnonzero(df["meta_json"].notna().to_numpy())
    if len(df) and (not len(starts) or starts[0] != 0):
        raise ResultsError(f"{where}: row 0 has no meta_json; allowed: a table that rfl results "
                           f"or rfl merge wrote")
    out = []
    for start, stop in zip(starts, list(starts[1:]) + [len(df)]):
        rows = df.iloc[start:stop]
        label = f"{where}: row {start}"
        try:
            meta = json.loads(rows["meta_json"].iloc[0])
            columns = json.loads(rows["table_columns"].iloc[0])
        except (TypeError, json.JSONDecodeError):
            raise ResultsError(f"{label}: meta_json or table_columns is not JSON") from None
        meta = io.check_run_meta(meta, label)
        label = f"{where}: run {meta['spec']['experiment']}/{meta['spec']['run_id']}"
        if rows["spec_hash"].nunique() != 1 or rows["spec_hash"].iloc[0] != spec_hash(meta["spec"]):
            raise ResultsError(f"{label}: spec_hash {rows['spec_hash'].iloc[0]} is not the hash of "
                               f"its spec ({spec_hash(meta['spec'])}); the table was edited")
        try:
            table = pd.DataFrame({name: rows[name].to_numpy(dtype=object) for name, _ in columns})
            table = table.astype(dict(columns))
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultsError(f"{label}: its columns cannot be restored "
                               f"({' '.join(str(exc).split())[:120]})") from None
        out.append(io.check_run_table(table, meta, label))
    return out


def _key(meta: dict) -> str:
    return f"{meta['spec']['experiment']}/{meta['spec']['run_id']}"


def difference(a: tuple[pd.DataFrame, dict], b: tuple[pd.DataFrame, dict]) -> str | None:
    """Where two copies of one run differ in their result (None: the same result): a metadata key
    outside ``ENVIRONMENT``, the columns, or the first round of a column (``MEASURED`` aside)."""
    (ta, ma), (tb, mb) = a, b
    for key in sorted(set(ma) | set(mb)):
        if key not in ENVIRONMENT and json.dumps(ma.get(key), sort_keys=True) != json.dumps(mb.get(key), sort_keys=True):
            return f"metadata key {key!r}"
    if list(ta.columns) != list(tb.columns):
        return "columns"
    if len(ta) != len(tb):
        return f"rounds ({len(ta) - 1} against {len(tb) - 1})"
    for col in ta.columns:
        if col in MEASURED:
            continue
        x, y = ta[col].to_numpy(), tb[col].to_numpy()
        same = np.array([u == v or (_nan(u) and _nan(v)) for u, v in zip(x, y)], dtype=bool)
        if not same.all():
            i = int(np.flatnonzero(~same)[0])
            return f"{col} from round {ta['round'].iloc[i]} ({x[i]!r} against {y[i]!r})"
    return None


def _nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def merge(paths) -> tuple[pd.DataFrame, dict]:
    """The results tables ``paths`` joined (``build``), each run once, and counts {runs, kept
    from each path, duplicates}. Two different results for one spec hash: ResultsError naming
    the run, the hash, both files and the first difference."""
    kept: dict[str, tuple] = {}
    counts = {"duplicates": 0, "from": {}}
    for path in paths:
        n = 0
        for run in runs_of(read_results(path), path):
            h = spec_hash(run[1]["spec"])
            if h in kept:
                why = difference(kept[h][1], run)
                if why is not None:
                    raise ResultsError(f"two results for spec {h} (run {_key(run[1])}): {kept[h][0]} "
                                       f"and {path} differ in {why}; allowed: one result per spec "
                                       f"(keep one table's run, or rerun it)")
                counts["duplicates"] += 1
                continue
            kept[h] = (path, run)
            n += 1
        counts["from"][str(path)] = n
    counts["runs"] = len(kept)
    return build([run for _, run in kept.values()]), counts


class ResultsSource:
    """Runs read from a results table instead of their files (``rfl.io.run_source``): the run
    table ``.../<experiment>/<run_id>.csv`` (the workflow's layout, ``rfl.workflow.Plan``; or
    ``.../<experiment>/<folder>/<run_id>.csv``, the nearest folder that names an experiment of
    the table) is the table's run of that experiment and run id. RunTableError if it holds none, or several
    (runs of two specs under one name: tables of two configs)."""

    def __init__(self, path):
        self.path = Path(path)
        self.runs: dict[tuple[str, str], list[tuple[pd.DataFrame, dict]]] = {}
        for table, meta in runs_of(read_results(path), path):
            self.runs.setdefault((meta["spec"]["experiment"], meta["spec"]["run_id"]), []).append((table, meta))

    def _run(self, path) -> tuple[pd.DataFrame, dict]:
        p = Path(path)
        run_id = p.name[: -len(".csv")] if p.name.endswith(".csv") else p.stem
        # the experiment's folder is the parent, or a folder above it (a benchmark's tuning
        # runs sit in <experiment>/tune/)
        keys = [(parent.name, run_id) for parent in p.parents if parent.name]
        key = next((k for k in keys if k in self.runs), keys[0] if keys else ("", run_id))
        found = self.runs.get(key, [])
        if not found:
            raise io.RunTableError(f"{self.path}: no run {key[0]}/{key[1]} (asked for {path}); "
                                   f"merge in the results table of the machine that ran it")
        if len(found) > 1:
            hashes = ", ".join(spec_hash(m["spec"]) for _, m in found)
            raise io.RunTableError(f"{self.path}: {len(found)} runs named {key[0]}/{key[1]} "
                                   f"(specs {hashes}); allowed: one (the tables of two configs?)")
        return found[0]

    def read(self, path) -> tuple[pd.DataFrame, dict]:
        table, meta = self._run(path)
        return table.copy(), json.loads(json.dumps(meta))

    def meta(self, path) -> dict:
        return json.loads(json.dumps(self._run(path)[1]))


def results_of(paths) -> pd.DataFrame:
    """The results table of the run tables ``paths`` (read and checked from the current source)."""
    return build([io.read_run_table(p) for p in paths])

"""Result files: atomic writes, tidy tables (CSV), metadata (JSON), arrays (npz, no pickle).

Every writer goes through a temporary file in the destination directory and
``os.replace``, so an interrupted job never leaves a file that looks complete.
"""

from __future__ import annotations

import contextlib
import copy
import csv
import json
import math
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:                 # pandas is imported where a table is read or written as one;
    import pandas as pd           # a run or data job never does (rfl.runner, write_rows)

#: the columns every run table starts with, in this order (``rfl.runner.run`` writes them; a
#: problem's ``metrics`` follow, then ``time`` for runs on a simulated clock)
COLUMNS = ["round", "cost", "excess_risk", "grad_norm", "dist_to_opt",
           "grad_evals", "floats", "wall_time", "status"]


def _create_temp(path: Path) -> str:
    """Create an empty, hidden, uniquely named file beside ``path`` and return its name.

    Unlike ``tempfile.mkstemp`` (always mode 0600), the file is created with mode 0666 and
    the kernel applies the process umask (or the directory's default ACL), exactly as for a
    file opened with ``open(path, "w")``: finished outputs get the usual permissions. No
    umask is queried or changed, so this is safe in threaded processes.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp{path.suffix}"
        try:
            fd = os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return str(tmp)
    raise FileExistsError(f"could not create a temporary file beside {path}")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path beside ``path``; rename it onto ``path`` on success only.

    The temporary file is hidden (``.<name>.<random>.tmp<suffix>``), so a job killed before
    the rename leaves no file under an output's name; the finished file has mode 0666 minus
    the umask, like any file the process creates.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _create_temp(path)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json(path, obj) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def sync_json(path, obj) -> bool:
    """Write ``obj`` as JSON unless the file already holds exactly that; True if written.

    Leaves an unchanged file (and its mtime) alone, so make-like tools rerun only what a
    changed spec affects.
    """
    text = json.dumps(obj, indent=2, sort_keys=True) + "\n"
    path = Path(path)
    if path.exists() and path.read_text() == text:
        return False
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return True


def read_json(path):
    return json.loads(Path(path).read_text())


#: bounds on what a YAML file may make the loader build: anchors are for a few shared
#: settings, not for documents that expand to millions of nodes ("billion laughs")
YAML_MAX_DEPTH = 64
YAML_MAX_NODES = 200_000


class YAMLError(ValueError):
    """A YAML file that must not be used: not YAML, a duplicate key, too deep, too large."""


def _yaml_loader():
    import yaml

    class StrictLoader(yaml.SafeLoader):
        """SafeLoader that refuses a key given twice in one mapping (YAML says keys are
        unique; PyYAML keeps the last silently). Merge keys (``<<: *anchor``) may still be
        overridden by the mapping's own keys, as YAML's merge type defines."""

        def construct_mapping(self, node, deep=False):
            seen = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    continue                        # SafeLoader's own error names it below
                if key in seen:
                    raise YAMLError(f"duplicate key {key!r} at line {key_node.start_mark.line + 1} "
                                    f"(first at line {seen[key] + 1}); allowed: each key once "
                                    f"per mapping")
                seen[key] = key_node.start_mark.line
            return super().construct_mapping(node, deep=deep)

    return yaml, StrictLoader


def _expanded_size(node) -> int:
    """Nodes the document expands to, aliases counted at every use: ``(size, depth)`` bounded
    by YAML_MAX_NODES / YAML_MAX_DEPTH; a node that contains itself is refused."""
    sizes: dict[int, tuple[int, int]] = {}
    active: set[int] = set()

    def walk(n, level):
        if level > YAML_MAX_DEPTH:
            raise YAMLError(f"nesting deeper than {YAML_MAX_DEPTH} levels at line "
                            f"{n.start_mark.line + 1}; allowed: at most {YAML_MAX_DEPTH}")
        key = id(n)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise YAMLError(f"an alias at line {n.start_mark.line + 1} refers to a node that "
                            f"contains it (a recursive structure); allowed: aliases of finished "
                            f"nodes only")
        active.add(key)
        children = []
        if isinstance(n.value, list):
            for item in n.value:
                children.extend(item if isinstance(item, tuple) else (item,))
        size, depth = 1, 0
        for child in children:
            s, d = walk(child, level + 1)
            size, depth = size + s, max(depth, d + 1)
            if size > YAML_MAX_NODES:
                raise YAMLError(f"the document expands to more than {YAML_MAX_NODES} nodes "
                                f"(aliases counted at each use); allowed: at most {YAML_MAX_NODES}")
        active.discard(key)
        sizes[key] = (size, depth)
        return sizes[key]

    walk(node, 0)
    return sizes[id(node)][0]


def _check_depth(yaml, text: str) -> None:
    """Refuse nesting deeper than YAML_MAX_DEPTH from the event stream, before PyYAML's
    recursive composer would run out of stack on it."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > YAML_MAX_DEPTH:
                raise YAMLError(f"nesting deeper than {YAML_MAX_DEPTH} levels at line "
                                f"{event.start_mark.line + 1}; allowed: at most {YAML_MAX_DEPTH}")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def parse_yaml(text: str, source: str = "<string>"):
    """YAML text -> Python objects, refusing duplicate keys, recursive aliases, nesting
    deeper than YAML_MAX_DEPTH and documents that expand beyond YAML_MAX_NODES nodes, with
    one message naming ``source`` (``YAMLError``)."""
    yaml, Loader = _yaml_loader()
    loader = Loader(text)
    try:
        _check_depth(yaml, text)
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node)
        return loader.construct_document(node)
    except YAMLError as exc:
        raise YAMLError(f"{source}: {exc}") from None
    except yaml.YAMLError as exc:
        raise YAMLError(f"{source}: not valid YAML: {' '.join(str(exc).split())}") from None
    finally:
        loader.dispose()


def read_yaml(path):
    """A YAML file, read with ``parse_yaml``'s checks."""
    return parse_yaml(Path(path).read_text(), str(path))


#: how a table's floats are written: full round-trip precision
FLOAT_FORMAT = "%.17g"


def write_table(path, df: pd.DataFrame) -> None:
    """Tidy CSV; floats are written with full round-trip precision."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, float_format=FLOAT_FORMAT)


def _column_kind(values) -> str:
    """The dtype pandas gives a column built from ``values`` (a DataFrame from dicts), as far as
    ``to_csv`` writes it: "bool", "int", "float" (numbers with a float, NaN or None among
    them) or "object"."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, (bool, np.bool_)) for v in present):
        return "bool" if len(present) == len(values) else "object"
    if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
           for v in present):
        if present and len(present) == len(values) and all(isinstance(v, (int, np.integer)) for v in present):
            return "int"
        return "float"
    return "object"


def _cell(v, kind: str) -> str:
    if v is None or (isinstance(v, (float, np.floating)) and math.isnan(v)):
        return ""
    if kind == "float":
        return FLOAT_FORMAT % float(v)
    if kind == "int":
        return str(int(v))
    if isinstance(v, (float, np.floating)):    # a float in a column of mixed types: str, as pandas
        return repr(float(v))
    return str(v)


def write_rows(path, columns: list[str], rows: list[dict]) -> None:
    """``rows`` (dicts; a missing key is empty) as the tidy CSV ``write_table`` writes of
    ``pandas.DataFrame(rows, columns=columns)``, byte for byte, without pandas: a run job
    writes its tables this way."""
    cells = [[row.get(c) for row in rows] for c in columns]
    text = [[_cell(v, kind) for v in col] for col, kind in zip(cells, map(_column_kind, cells))]
    with atomic_path(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(zip(*text))


def read_table(path) -> pd.DataFrame:
    import pandas as pd

    return pd.read_csv(path)


class RunTableError(ValueError):
    """A run table or its metadata that a figure or table must not use."""


#: the status of a row or run
RUN_STATUSES = ("ok", "diverged")
#: the metadata keys readers of run tables use, with their types
_META_KEYS = {"spec": dict, "status": str, "rounds_completed": int, "commit": str, "versions": dict}
_META_SPEC_KEYS = {"experiment": str, "run_id": str, "algorithm": dict, "dataset": dict, "rounds": int}


def run_meta_path(table_path) -> Path:
    """The metadata record beside run table ``X.csv``: ``X.meta.json``."""
    p = Path(table_path)
    stem = p.name[: -len(".csv")] if p.name.endswith(".csv") else p.name
    return p.with_name(stem + ".meta.json")


def _type_ok(value, want) -> bool:
    return isinstance(value, want) and not (want is int and isinstance(value, bool))


def read_run_meta(path) -> dict:
    """The metadata record of a run (``X.meta.json``), checked for the keys its readers use;
    RunTableError (one line naming the file) otherwise."""
    path = Path(path)
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunTableError(f"{path}: the metadata of a run table is missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        why = f"{exc.msg} at line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        raise RunTableError(f"{path}: run metadata is not valid JSON ({why}); rerun the run") from None
    return check_run_meta(meta, path)


def check_run_meta(meta, path) -> dict:
    """``meta``, a run's metadata record, checked for the keys its readers use (``path``: where
    it was read, named in the RunTableError)."""
    if not isinstance(meta, dict):
        raise RunTableError(f"{path}: run metadata must be a JSON object, got {type(meta).__name__}")
    for keys, obj, prefix in ((_META_KEYS, meta, ""), (_META_SPEC_KEYS, meta.get("spec"), "spec.")):
        for key, want in keys.items():
            if key not in obj:
                raise RunTableError(f"{path}: run metadata lacks key {prefix + key!r}; rerun the run")
            if not _type_ok(obj[key], want):
                raise RunTableError(f"{path}: run metadata key {prefix + key!r} must be "
                                    f"{want.__name__}, got {json.dumps(obj[key])[:60]}")
    spec = meta["spec"]
    if not _type_ok(spec["algorithm"].get("name"), str):
        raise RunTableError(f"{path}: run metadata lacks key 'spec.algorithm.name'; rerun the run")
    if not _type_ok(spec["dataset"].get("problem"), str):
        raise RunTableError(f"{path}: run metadata lacks key 'spec.dataset.problem'; rerun the run")
    if meta["status"] not in RUN_STATUSES:
        raise RunTableError(f"{path}: run metadata status {meta['status']!r}; allowed: "
                            f"{', '.join(RUN_STATUSES)}")
    if not 0 <= meta["rounds_completed"] <= spec["rounds"]:
        raise RunTableError(f"{path}: rounds_completed = {meta['rounds_completed']} is outside "
                            f"0..{spec['rounds']} (the spec's rounds)")
    return meta


#: the mini-batch stream of runs whose metadata predate the "sampler" key
_FIRST_SAMPLER = 1


def sampler_version(meta: dict) -> int:
    """The mini-batch sampler a run drew its batches with (metadata key ``sampler``,
    ``rfl.algorithms.sampling.SAMPLER_VERSION``; absent: 1, the first)."""
    return int(meta.get("sampler", _FIRST_SAMPLER))


def check_sampler_versions(tables) -> None:
    """RunTableError unless every run table in ``tables`` (paths of ``X.csv``) was drawn with the
    same mini-batch sampler: one figure, table or report must not mix two random streams. The
    message names the files of each version and how to recover."""
    by_version: dict[int, list[str]] = {}
    for path in tables:
        meta = run_meta(path)
        by_version.setdefault(sampler_version(meta), []).append(str(path))
    if len(by_version) <= 1:
        return
    listing = "; ".join(f"sampler {v}: " + ", ".join(paths[:5]) + (f" and {len(paths) - 5} more"
                                                                   if len(paths) > 5 else "")
                        for v, paths in sorted(by_version.items()))
    raise RunTableError(f"run tables drawn with different mini-batch samplers cannot be used "
                        f"together ({listing}); delete the old runs (rm -r results/runs) and rerun "
                        f"the workflow so that every run uses the current sampler")


class RunFiles:
    """Where runs are read from by default: run table ``X.csv`` and its metadata ``X.meta.json``
    (``rfl.runner.run`` writes them). Another source (``rfl.results.ResultsSource``: the runs
    of a results table) has the same two methods; ``run_source`` makes one the current."""

    def read(self, path) -> tuple[pd.DataFrame, dict]:
        """(table, metadata) of the run table ``path``, unchecked."""
        import pandas as pd

        path = Path(path)
        meta = read_run_meta(run_meta_path(path))
        try:
            table = pd.read_csv(path)
        except FileNotFoundError:
            raise RunTableError(f"{path}: no such run table") from None
        except pd.errors.EmptyDataError:
            raise RunTableError(f"{path}: the run table is empty; rerun the run") from None
        except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
            raise RunTableError(f"{path}: not a CSV run table ({' '.join(str(exc).split())[:120]})") from None
        return table, meta

    def meta(self, path) -> dict:
        """The metadata of the run table ``path`` (checked: ``read_run_meta``)."""
        return read_run_meta(run_meta_path(path))


_SOURCE: list = [RunFiles()]


@contextlib.contextmanager
def run_source(source):
    """Within the block, every reader of runs (``read_run_table``, ``run_meta``: the figures,
    tables and claims) reads them from ``source`` (an object with ``read(path)`` and
    ``meta(path)`` as ``RunFiles``), e.g. a merged results table instead of per-run files."""
    _SOURCE.append(source)
    try:
        yield source
    finally:
        _SOURCE.pop()


#: the run tables read so far while ``memoised_runs`` is active: (source, path) -> (table, meta)
_MEMO: list = []


@contextlib.contextmanager
def memoised_runs():
    """Within the block, ``read_run_table`` reads and checks each run table of the current
    source once and hands out copies afterwards: a step whose figures, tables or claims read
    the same runs many times (the reproduction report: 4168 reads of 1408 tables) parses each
    once. The files must not change within the block (a workflow step's inputs do not)."""
    _MEMO.append({})
    try:
        yield
    finally:
        _MEMO.pop()


def run_meta(path) -> dict:
    """The metadata of run table ``path`` from the current source (``run_source``)."""
    return _SOURCE[-1].meta(path)


def read_run_table(path) -> tuple[pd.DataFrame, dict]:
    """A run table ``X.csv`` and its metadata, from the current source (``run_source``;
    default the files ``X.csv`` and ``X.meta.json``), checked (``check_run_table``); within
    ``memoised_runs``, a copy of the first read."""
    if not _MEMO:
        table, meta = _SOURCE[-1].read(path)
        return check_run_table(table, meta, path)
    source = _SOURCE[-1]
    key = (id(source), os.path.abspath(path))      # the source is kept, so its id is not reused
    if key not in _MEMO[-1]:
        table, meta = source.read(path)
        _MEMO[-1][key] = (source, *check_run_table(table, meta, path))
    _, table, meta = _MEMO[-1][key]
    return table.copy(), copy.deepcopy(meta)


def check_run_table(table: pd.DataFrame, meta: dict, path) -> tuple[pd.DataFrame, dict]:
    """A run table and its metadata, both checked before any figure or table uses them: the
    metadata (``read_run_meta``); the table's columns (those of ``COLUMNS`` and the problem's
    metrics); rows t = 0..rounds_completed in order, as many as the metadata says; each row's
    status ok or diverged, diverged only in the last row and only when the metadata says
    diverged; a finite cost and excess_risk in every ok row. Anything else raises
    RunTableError, one line naming ``path`` (where the run was read) and what is wrong."""
    import pandas as pd

    from rfl.registry import PROBLEMS

    problem = meta["spec"]["dataset"]["problem"]
    extra = list(PROBLEMS[problem].metrics) if problem in PROBLEMS else []
    missing = [c for c in COLUMNS + extra if c not in table.columns]
    if missing:
        raise RunTableError(f"{path}: run table lacks column(s) {', '.join(missing)}; "
                            f"needed: {', '.join(COLUMNS + extra)}")
    n = len(table)
    want = meta["rounds_completed"] + 1
    if n == 0:
        raise RunTableError(f"{path}: the run table has a header and no rows; rerun the run")
    numeric = [c for c in COLUMNS + extra if c != "status"]
    for col in numeric:
        if not pd.api.types.is_numeric_dtype(table[col]):
            raise RunTableError(f"{path}: column {col!r} holds non-numbers "
                                f"(e.g. {table[col].astype(str).iloc[0]!r}); allowed: numbers")
    rounds = table["round"].to_numpy()
    if not (np.isfinite(rounds).all() and (rounds == np.arange(n)).all()):
        bad = int(np.flatnonzero(~(rounds == np.arange(n)))[0])
        raise RunTableError(f"{path}: rows must be rounds 0..{n - 1} in order; row {bad} has round "
                            f"{rounds[bad]}")
    status = table["status"]
    bad_status = ~status.isin(RUN_STATUSES)
    if bad_status.any():
        i = int(np.flatnonzero(bad_status.to_numpy())[0])
        raise RunTableError(f"{path}: row {i} has status {status.iloc[i]!r} (a row cut short?); "
                            f"allowed: {', '.join(RUN_STATUSES)}")
    if n != want:
        raise RunTableError(f"{path}: {n} rows, but its metadata says rounds 0..{want - 1} "
                            f"({want} rows); the table is incomplete or not this run's")
    diverged = (status == "diverged").to_numpy()
    if diverged[:-1].any():
        i = int(np.flatnonzero(diverged)[0])
        raise RunTableError(f"{path}: row {i} is diverged but rows follow it; a run stops at "
                            f"divergence")
    if bool(diverged[-1]) != (meta["status"] == "diverged"):
        raise RunTableError(f"{path}: the last row's status is {status.iloc[-1]!r} but the "
                            f"metadata says {meta['status']!r}")
    ok = ~diverged
    for col in ("cost", "excess_risk"):
        values = table[col].to_numpy(dtype=float)
        bad = ok & ~np.isfinite(values)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise RunTableError(f"{path}: row {i} has status ok but {col} = {values[i]}; "
                                f"allowed: a finite number in every ok row")
    rep = meta.get("replicas")
    if rep is not None:              # a run with replicas (rfl.algorithms.replicas): its sample
        err = rep.get("err_mean")
        if err is not None and np.asarray(err, dtype=float).shape != (rep.get("count"), len(rep.get("columns", []))):
            raise RunTableError(f"{path}: run metadata key 'replicas.err_mean' must be a "
                                f"count x columns list; rerun the run")
        sq = rep.get("sq_dist_mean")
        if sq is not None and np.asarray(sq, dtype=float).shape != (rep.get("count"),):
            raise RunTableError(f"{path}: run metadata key 'replicas.sq_dist_mean' must be a list "
                                f"of count numbers; rerun the run")
        table.attrs["replicas"] = rep
    return table, meta


def write_arrays(path, arrays: dict[str, np.ndarray]) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)


def read_arrays(path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}

"""Result files: atomic writes, tidy tables (CSV), metadata (JSON), arrays (npz, no pickle).

Every writer goes through a temporary file in the destination directory and
``os.replace``, so an interrupted job never leaves a file that looks complete.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from pathlib import Path

import numpy as np
import pandas as pd


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


def read_yaml(path):
    import yaml

    return yaml.safe_load(Path(path).read_text())


def write_table(path, df: pd.DataFrame) -> None:
    """Tidy CSV; floats are written with full round-trip precision."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, float_format="%.17g")


def read_table(path) -> pd.DataFrame:
    return pd.read_csv(path)


def write_arrays(path, arrays: dict[str, np.ndarray]) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)


def read_arrays(path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}

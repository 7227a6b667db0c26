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

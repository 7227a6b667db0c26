"""No import circle among the modules of rfl/reporting and rfl/claims.

Each module's imports are read with ``ast`` (relative ones resolved, those inside functions
included: a deferred import is still a dependency, and a circle hidden in a function is still
a circle), and the graph restricted to the two packages is searched for a cycle, which the
failure prints.
"""

from __future__ import annotations

import ast
from pathlib import Path

import sys

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("rfl/reporting", "rfl/claims")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``path`` imports, anywhere in it. ``from p import x``
    depends on ``p.x`` if that is a module, else on ``p``."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                up = up[:len(up) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in modules:        # import a.b.c of a module a.b
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def graph() -> dict[str, set[str]]:
    files = [p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")]
    modules = {module_name(p) for p in files}
    return {module_name(p): imports_of(p, modules) for p in files}


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    """One cycle [a, b, ..., a] of ``g``, or None (depth-first search, three colours)."""
    colour, stack = dict.fromkeys(g, 0), []

    def visit(u):
        colour[u] = 1
        stack.append(u)
        for v in sorted(g.get(u, ())):
            if colour.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if colour.get(v) == 0:
                found = visit(v)
                if found:
                    return found
        colour[u] = 2
        stack.pop()
        return None

    for u in sorted(g):
        if colour[u] == 0:
            found = visit(u)
            if found:
                return found
    return None


def test_the_cycle_finder_and_the_import_reader(tmp_path):
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"a"}}) == ["a", "a"]
    g = graph()
    assert "rfl.claims.rule" in g["rfl.claims.judge"]                     # from .rule import ...
    assert "rfl.claims.curves" in g["rfl.claims.rules.linear_rate"]       # from ..curves import ...
    assert "rfl.reporting.figures" in g["rfl.claims.rule"]                # inside a method


def test_the_import_reader_on_from_dot_import_a_module(tmp_path, monkeypatch):
    """``from . import b`` depends on the module p.b, ``from .b import f`` on p.b too, and an
    import of a name that is no module (``from . import x``) on the package."""
    pkg = tmp_path / "p"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("x = 1\n")
    (pkg / "b.py").write_text("def f():\n    return 1\n")
    (pkg / "a.py").write_text("from . import b\nfrom . import x\n\ndef g():\n    from .b import f\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    modules = {"p", "p.a", "p.b"}
    assert imports_of(pkg / "a.py", modules) == {"p", "p.b"}
    assert imports_of(pkg / "b.py", modules) == set()


def test_no_import_circle_in_reporting_and_claims():
    cycle = find_cycle(graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)

"""No import circle in the whole of rfl (rfl/reporting and rfl/claims included), and no module
outside rfl/testing imports the testing package.

Each module's imports are read with ``ast`` (relative ones resolved, those inside functions
included: a deferred import is still a dependency, and a circle hidden in a function is still
a circle; so is ``importlib.import_module("rfl....")`` with a literal name), and the graph of
rfl's modules is searched for a cycle, which the failure prints.
"""

from __future__ import annotations

import ast
from pathlib import Path

import sys

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("rfl",)
#: the package production code never imports (its helpers serve the tests)
TESTING = "rfl.testing"


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
        elif isinstance(node, ast.Call) and _dynamic_import(node):
            targets = [node.args[0].value]
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


def _dynamic_import(call: ast.Call) -> bool:
    """``importlib.import_module("a.b")`` or ``__import__("a.b")`` with a literal absolute name."""
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
    return (name in ("import_module", "__import__") and bool(call.args)
            and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)
            and not call.args[0].value.startswith("."))


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
    g = graph()
    sub = {m: {t for t in deps if t.startswith(("rfl.reporting", "rfl.claims"))}
           for m, deps in g.items() if m.startswith(("rfl.reporting", "rfl.claims"))}
    cycle = find_cycle(sub)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_the_import_reader_sees_imports_in_functions_and_by_name(tmp_path, monkeypatch):
    pkg = tmp_path / "p"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "b.py").write_text("import importlib\n\ndef f():\n    return importlib.import_module('p.c')\n")
    (pkg / "c.py").write_text("class C:\n    def m(self):\n        from p import b\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    modules = {"p", "p.b", "p.c"}
    assert imports_of(pkg / "b.py", modules) == {"p.c"}
    assert imports_of(pkg / "c.py", modules) == {"p.b"}
    assert find_cycle({m: imports_of(pkg / f"{m[2:]}.py", modules) for m in ("p.b", "p.c")}) \
        == ["p.b", "p.c", "p.b"]


def test_the_graph_covers_the_whole_package():
    g = graph()
    assert {"rfl.runner", "rfl.io", "rfl.cli", "rfl.problems.hsp", "rfl.testing.fixtures",
            "rfl.claims.judge", "rfl.reporting.figures"} <= set(g)
    assert "rfl.io" in g["rfl.runner"]                                   # from rfl import io


def test_no_import_circle_in_rfl():
    cycle = find_cycle(graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_no_module_outside_rfl_testing_imports_it():
    """Production code never imports the testing package, not even inside a function: what a
    run needs (e.g. the generated data files) lives with the code that runs it."""
    def in_testing(m):
        return m == TESTING or m.startswith(TESTING + ".")

    found = sorted(f"{m} imports {', '.join(sorted(filter(in_testing, deps)))}"
                   for m, deps in graph().items() if not in_testing(m) and any(map(in_testing, deps)))
    assert not found, "\n".join(found)

"""Registries of components: algorithms, problems and manifolds, each found by name.

A component declares itself: a concrete subclass of ``FederatedStrategy``,
``CentralizedSolver``, ``Problem`` or ``Manifold`` that sets ``name`` in its class body is
added to its kind's registry when the class is created. Nothing else keeps a list of names:
the config checks, the schema's enums, the figure labels, the runner, the CLI and the
benchmarks ask the registry.

Where components come from, in this order (first found wins a name; a second class with a
name already taken is refused):
  1. the modules of the package itself (``rfl/algorithms/*.py``, ...), imported on the
     first look-up, so that a new module is one new file and no list is edited;
  2. Python entry points of installed distributions, in the groups ``rfl.algorithms``,
     ``rfl.problems`` and ``rfl.manifolds`` (the convention pytest's plug-ins use): an
     entry point names a module or a class; loading it defines the classes, which
     register themselves.
"""

from __future__ import annotations

import importlib
import pkgutil
from importlib import metadata


class RegistryError(KeyError):
    """An unknown name, or two components that claim one name."""

    def __str__(self) -> str:           # KeyError's str() quotes the message
        return str(self.args[0]) if self.args else ""


class Registry:
    """name -> class for one kind of component (see the module docstring)."""

    def __init__(self, kind: str, package: str, group: str):
        self.kind, self.package, self.group = kind, package, group
        self._classes: dict[str, type] = {}
        self._loaded = False
        self._loading = False

    # ---- declaration -------------------------------------------------------------------
    def add(self, cls: type) -> type:
        name = cls.__dict__.get("name")
        if not isinstance(name, str) or not name:
            raise TypeError(f"{cls.__module__}.{cls.__qualname__}: a {self.kind} declares a "
                            f"non-empty string 'name' in its class body")
        old = self._classes.get(name)
        if old is not None and old is not cls and _qualified(old) != _qualified(cls):
            raise RegistryError(f"{self.kind} name {name!r} is claimed by both "
                                f"{_qualified(old)} and {_qualified(cls)}")
        self._classes[name] = cls
        return cls

    def remove(self, name: str) -> None:
        """Forget ``name`` (tests that declare throw-away components use it)."""
        self._classes.pop(name, None)

    # ---- discovery ---------------------------------------------------------------------
    def load(self) -> None:
        """Import the package's modules and the installed plug-ins (once)."""
        if self._loaded or self._loading:
            return
        self._loading = True
        try:
            pkg = importlib.import_module(self.package)
            for info in pkgutil.iter_modules(pkg.__path__):
                if not info.name.startswith("_"):
                    importlib.import_module(f"{self.package}.{info.name}")
            for ep in metadata.entry_points(group=self.group):
                try:
                    obj = ep.load()
                except Exception as exc:                      # a broken plug-in names itself
                    raise RegistryError(f"plug-in {ep.name!r} ({ep.value}) of entry-point group "
                                        f"{self.group!r} failed to load: {exc}") from exc
                if isinstance(obj, type) and "name" in obj.__dict__:
                    self.add(obj)
            self._loaded = True
        finally:
            self._loading = False

    # ---- look-up -----------------------------------------------------------------------
    def __getitem__(self, name: str) -> type:
        self.load()
        try:
            return self._classes[name]
        except (KeyError, TypeError):
            raise RegistryError(f"{name!r} is not a known {self.kind}; allowed: "
                                f"{', '.join(self.names())}") from None

    def get(self, name: str, default=None):
        self.load()
        return self._classes.get(name, default)

    def __contains__(self, name) -> bool:
        self.load()
        return name in self._classes

    def names(self) -> list[str]:
        self.load()
        return list(self._classes)

    def items(self):
        self.load()
        return list(self._classes.items())

    def __iter__(self):
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._classes)})"


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


ALGORITHMS = Registry("algorithm", "rfl.algorithms", "rfl.algorithms")
PROBLEMS = Registry("problem", "rfl.problems", "rfl.problems")
MANIFOLDS = Registry("manifold", "rfl.manifolds", "rfl.manifolds")
PARTICIPATION = Registry("participation scheme", "rfl.participation", "rfl.participation")
RULES = Registry("claim rule", "rfl.claims.rules", "rfl.rules")

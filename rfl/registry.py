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

Every registry is one kind of component and is listed in ``REGISTRIES`` (``rfl list`` shows
them all). A kind may name its base class (``base``): a class it registers must subclass it
and pass the base's ``contract_errors`` (the methods it must implement, the declarations it
must make). A plug-in that cannot be imported, claims a taken name or breaks its kind's
contract is refused with one ``RegistryError`` line naming the component, its distribution
and entry point, and what is wrong.
"""

from __future__ import annotations

import importlib
import pkgutil
from importlib import metadata

#: every kind of component, in the order declared below (``rfl list`` shows each)
REGISTRIES: list["Registry"] = []


class RegistryError(KeyError):
    """An unknown name, two components that claim one name, or a plug-in that cannot be
    loaded (one line: the component, its distribution and entry point, what is wrong)."""

    def __str__(self) -> str:           # KeyError's str() quotes the message
        return str(self.args[0]) if self.args else ""


class Registry:
    """name -> class for one kind of component (see the module docstring)."""

    def __init__(self, kind: str, package: str, group: str, base: str | None = None,
                 aliases: tuple[str, ...] = ()):
        """``kind``: what one component is called ("manifold"); ``package``: rfl's package of
        them; ``group``: the plug-ins' entry-point group; ``base``: "module:Class" of the class
        every component subclasses (its ``contract_errors`` is the kind's contract);
        ``aliases``: more words ``rfl list`` accepts for the kind."""
        self.kind, self.package, self.group, self.base = kind, package, group, base
        self._classes: dict[str, type] = {}
        self._entry_points: dict[str, metadata.EntryPoint] = {}   # component name -> its entry point
        self._loaded_eps: list[metadata.EntryPoint] = []
        self._loaded = False
        self._loading = False
        plural = group.rsplit(".", 1)[-1]
        words = {plural, plural[:-1] if plural.endswith("s") else plural, kind,
                 kind.replace(" ", "-"), *aliases}
        self.words = tuple(sorted(words))
        self.title = plural
        REGISTRIES.append(self)

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

    def declare(self, cls: type) -> type:
        """What a base class's ``__init_subclass__`` calls: a subclass with a ``name`` in its class
        body is checked against its own ``contract_errors`` (a TypeError naming it and what it
        lacks) and added; one without is a base or a helper and is left alone."""
        if "name" not in cls.__dict__:
            return cls
        errors = cls.contract_errors()
        if errors:
            raise TypeError(f"{self.kind} {cls.__dict__['name']!r} ({cls.__module__}."
                            f"{cls.__qualname__}) {'; '.join(errors)}")
        return self.add(cls)

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
                before = set(self._classes)
                try:
                    obj = ep.load()
                    if isinstance(obj, type) and "name" in obj.__dict__:
                        errors = self.contract_errors(obj)
                        if errors:
                            raise TypeError(f"{self.kind} {obj.__dict__['name']!r} "
                                            f"({_qualified(obj)}) {'; '.join(errors)}")
                        self.add(obj)
                except Exception as exc:                      # a broken plug-in names itself
                    raise RegistryError(f"{self.kind} plug-in {describe_entry_point(ep)}: "
                                        f"{_why(exc)}") from None
                self._loaded_eps.append(ep)
                for name in set(self._classes) - before:
                    self._entry_points[name] = ep
            self._loaded = True
        finally:
            self._loading = False

    # ---- the kind's contract -----------------------------------------------------------
    def base_class(self) -> type | None:
        if self.base is None:
            return None
        module, _, qualname = self.base.partition(":")
        return getattr(importlib.import_module(module), qualname)

    def contract_errors(self, cls: type, deep: bool = False) -> list[str]:
        """What ``cls`` lacks to be a component of this kind (phrases, empty when nothing):
        not a subclass of the base, or the base's ``contract_errors`` (``deep``: also the
        declared JSON schemas checked, which imports jsonschema)."""
        base = self.base_class()
        if base is None:
            return []
        if not (isinstance(cls, type) and issubclass(cls, base)):
            return [f"is not a subclass of {_qualified(base)}"]
        check = getattr(cls, "contract_errors", None)
        return list(check(deep=deep)) if check is not None else []

    def origin(self, component: str | type) -> str:
        """Where a component (its name, or a class, registered or not) comes from: "rfl", its
        distribution and entry point, or the module that defines it."""
        cls = self[component] if isinstance(component, str) else component
        name = cls.__dict__.get("name")
        ep = self._entry_points.get(name) if self._classes.get(name) is cls else None
        if ep is None:
            module = cls.__module__
            if module == "rfl" or module.startswith("rfl."):
                return "rfl"
            top = module.split(".")[0]               # the entry point's package, its own kind first
            found = [e for r in [self, *REGISTRIES] for e in r._loaded_eps
                     if e.module.split(".")[0] == top]
            if not found:
                return f"module {module}"
            ep = found[0]
        return describe_entry_point(ep)

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


def describe_entry_point(ep: metadata.EntryPoint) -> str:
    """``dist version (entry point group: name = value)``, as one line."""
    dist = getattr(ep, "dist", None)
    who = f"{dist.name} {dist.version}" if dist is not None else "an unknown distribution"
    return f"{who} (entry point {ep.group}: {ep.name} = {ep.value})"


def _why(exc: BaseException) -> str:
    """What went wrong loading a plug-in, in one line."""
    if isinstance(exc, ImportError):
        text = f"cannot be imported ({exc})"
    elif isinstance(exc, (TypeError, RegistryError)):       # a declaration refused by rfl
        text = str(exc)
    else:
        text = f"fails when imported: {type(exc).__name__}: {exc}"
    return " ".join(text.split())


# ---- contracts: what the bases' ``contract_errors`` share -----------------------------------
def unimplemented(cls: type, base: type, methods: tuple[str, ...] = ()) -> list[str]:
    """The abstract methods of ``base`` that ``cls`` leaves abstract, then those of ``methods``
    that ``cls`` inherits from ``base`` unchanged (``base``'s placeholder raising
    NotImplementedError). Works while ``cls`` is being created (``__init_subclass__``)."""
    import inspect

    out = [m for m in sorted(getattr(base, "__abstractmethods__", ()))
           if getattr(getattr(cls, m, None), "__isabstractmethod__", False)]
    return out + [m for m in methods if m not in out and
                  inspect.getattr_static(cls, m, None) is inspect.getattr_static(base, m, None)]


def schema_errors(what: str, schema, deep: bool, default=...) -> list[str]:
    """Why ``schema`` is not a JSON schema (2020-12) object: a mapping always; with ``deep`` a
    valid schema, and ``default`` (when given) valid under it."""
    if not isinstance(schema, dict):
        return [f"declares {what} as {type(schema).__name__}; allowed: a JSON schema (a mapping)"]
    if not deep:
        return []
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
        if default is not ...:
            jsonschema.Draft202012Validator(schema).validate(default)
    except jsonschema.SchemaError as exc:
        return [f"declares {what} that is not a valid JSON schema ({exc.message})"]
    except jsonschema.ValidationError as exc:
        return [f"declares {what} whose default {default!r} it refuses ({exc.message})"]
    return []


def option_errors(options, deep: bool) -> list[str]:
    """Why ``options`` is not a mapping of option names to JSON schemas (see ``schema_errors``)."""
    if not isinstance(options, dict):
        return [f"declares options as {type(options).__name__}; allowed: a mapping of option "
                f"names to JSON schemas"]
    out = []
    for key, schema in options.items():
        if not isinstance(key, str) or not key.isidentifier():
            out.append(f"declares an option named {key!r}; allowed: a Python identifier")
            continue
        out += schema_errors(f"option {key!r}", schema, deep,
                             schema.get("default", ...) if isinstance(schema, dict) else ...)
    return out


ALGORITHMS = Registry("algorithm", "rfl.algorithms", "rfl.algorithms", "rfl.algorithms.base:Declared",
                      aliases=("strategy", "strategies"))
PROBLEMS = Registry("problem", "rfl.problems", "rfl.problems", "rfl.problems.base:Problem")
MANIFOLDS = Registry("manifold", "rfl.manifolds", "rfl.manifolds", "rfl.manifolds.base:Manifold")
PARTICIPATION = Registry("participation scheme", "rfl.participation", "rfl.participation",
                         "rfl.participation.base:ParticipationScheme")
RULES = Registry("claim rule", "rfl.claims.rules", "rfl.rules", "rfl.claims.rule:Rule")
GRAPHS = Registry("graph", "rfl.graphs", "rfl.graphs", "rfl.graphs.base:Topology",
                  aliases=("topology", "topologies"))
WEIGHT_RULES = Registry("weight rule", "rfl.graphs", "rfl.weights", "rfl.graphs.base:WeightRule",
                        aliases=("weight", "weights", "mixing"))

"""The JSON Schema validator of every number a config or spec holds (``config/schema.yaml``,
problems' ``params_schema``, algorithms' and participation schemes' ``options``).

JSON Schema 2020-12 with two stricter types: an ``integer`` is a true int (not 2.0, not a
bool), and a ``number`` is a finite int or float (NaN compares false with every bound, so a
plain validator lets ``rho: .nan`` through ``exclusiveMinimum: 0, maximum: 1``; and no
parameter is infinite). The bounds compare every int exactly, however large.
"""

from __future__ import annotations

import math
import sys

import jsonschema

ValidationError = jsonschema.exceptions.ValidationError


def _is_integer(checker, instance) -> bool:
    """JSON Schema counts 2.0 as an integer; a count, seed or size here must be a true int."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def _is_number(checker, instance) -> bool:
    """A finite int or float: NaN compares false with every bound, and no parameter is infinite."""
    if isinstance(instance, bool):
        return False
    if isinstance(instance, int):      # no math.isfinite: it would overflow on 10**400
        return abs(instance) <= sys.float_info.max
    return isinstance(instance, float) and math.isfinite(instance)


def _bound(compare, text: str):
    """A bound keyword for every int (exact, however large) and finite float: the built-in
    one skips what ``_is_number`` refuses, such as an int beyond the float range."""
    def check(validator, bound, instance, schema):
        if (isinstance(instance, (int, float)) and not isinstance(instance, bool)
                and not (isinstance(instance, float) and not math.isfinite(instance))
                and not compare(instance, bound)):
            yield ValidationError(f"{instance!r} is {text} {bound!r}")
    return check


Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    validators={
        "maximum": _bound(lambda v, b: v <= b, "greater than the maximum of"),
        "minimum": _bound(lambda v, b: v >= b, "less than the minimum of"),
        "exclusiveMaximum": _bound(lambda v, b: v < b, "greater than or equal to the maximum of"),
        "exclusiveMinimum": _bound(lambda v, b: v > b, "less than or equal to the minimum of"),
    },
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_number}))


def allowed(schema: dict) -> str | None:
    """What a numeric ``schema`` allows, as "a number in (0, 1]" or "an integer >= 1"; None
    for a schema of no numeric type."""
    types = schema.get("type")
    types = [types] if isinstance(types, str) else list(types or [])
    if "integer" in types:
        what = "an integer"
    elif "number" in types:
        what = "a finite number"
    else:
        return None
    lo = ("[", schema["minimum"]) if "minimum" in schema else (
        ("(", schema["exclusiveMinimum"]) if "exclusiveMinimum" in schema else None)
    hi = (schema["maximum"], "]") if "maximum" in schema else (
        (schema["exclusiveMaximum"], ")") if "exclusiveMaximum" in schema else None)
    if lo and hi:
        return f"{what} in {lo[0]}{lo[1]}, {hi[0]}{hi[1]}"
    if lo:
        return f"{what} {'>=' if lo[0] == '[' else '>'} {lo[1]}"
    if hi:
        return f"{what} {'<=' if hi[1] == ']' else '<'} {hi[0]}"
    return what


_TYPE_TEXT = {"null": "null", "object": "a mapping", "array": "a list", "string": "a string",
              "boolean": "true or false"}


def _branch(schema: dict) -> str:
    """One alternative of a ``oneOf``/``anyOf``, in words."""
    what = allowed(schema)
    if what is None:
        types = schema.get("type")
        types = [types] if isinstance(types, str) else list(types or [])
        what = " or ".join(_TYPE_TEXT.get(t, t) for t in types) or "a value of another form"
        if schema.get("required"):
            what += f" with key {', '.join(schema['required'])}"
    return what


def describe(err: ValidationError) -> str:
    """``err``'s message and what its schema allows: the range of a number, the alternatives
    of a ``oneOf``, distinct or enough items of a list."""
    schema = err.schema if isinstance(err.schema, dict) else {}
    what = None
    if err.validator in ("type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        what = allowed(schema)
    elif err.validator in ("oneOf", "anyOf"):
        what = "; or ".join(_branch(b) for b in err.validator_value if isinstance(b, dict))
    elif err.validator == "uniqueItems":
        what = "a list without repeated items"
    elif err.validator == "minItems":
        what = f"a list of at least {err.validator_value} item(s)"
    return f"{err.message}; allowed: {what}" if what else err.message


def first_error(instance, schema) -> ValidationError | None:
    """The most relevant error of ``instance`` under ``schema`` (``Validator``), or None."""
    return jsonschema.exceptions.best_match(Validator(schema).iter_errors(instance))

"""rfl.schema against its documented rules: an ``integer`` is a true int (not 2.0, not a bool);
a ``number`` is a finite int or float (an int counts while its magnitude is at most the
largest float); the four bounds compare every int exactly, however large, and skip what is not
a number; ``allowed``/``describe`` word a schema as "a finite number in (0, 1]", "an integer
>= 1", the alternatives of a oneOf, a list without repeats or of at least n items."""

from __future__ import annotations

import math
import sys

import pytest

from rfl import schema

BIG = int(sys.float_info.max)         # exactly the largest float, as an int


def _errors(instance, sch):
    return [e.message for e in schema.Validator(sch).iter_errors(instance)]


@pytest.mark.parametrize("value,ok", [(3, True), (-7, True), (0, True), (2.0, False), (True, False),
                                      (False, False), ("3", False), (None, False), (10**400, True)])
def test_an_integer_is_a_true_int(value, ok):
    assert (not _errors(value, {"type": "integer"})) is ok


@pytest.mark.parametrize("value,ok", [
    (0.5, True), (3, True), (-1e308, True), (sys.float_info.max, True), (BIG, True), (-BIG, True),
    (BIG + 1, False), (-BIG - 1, False), (10**400, False), (-(10**400), False),
    (math.nan, False), (math.inf, False), (-math.inf, False), (True, False), (False, False),
    ("1", False), (None, False)])
def test_a_number_is_a_finite_int_or_float(value, ok):
    assert (not _errors(value, {"type": "number"})) is ok


@pytest.mark.parametrize("keyword,bound,inside,on,outside,text", [
    ("minimum", 0, 1, True, -1, "less than the minimum of"),
    ("maximum", 1, 0.5, True, 2, "greater than the maximum of"),
    ("exclusiveMinimum", 0, 0.25, False, -3, "less than or equal to the minimum of"),
    ("exclusiveMaximum", 1, 0.75, False, 5, "greater than or equal to the maximum of"),
])
def test_each_bound_keyword_and_its_edge(keyword, bound, inside, on, outside, text):
    sch = {keyword: bound}
    assert _errors(inside, sch) == []
    assert (_errors(bound, sch) == []) is on
    if not on:
        assert _errors(bound, sch) == [f"{bound!r} is {text} {bound!r}"]
    assert _errors(outside, sch) == [f"{outside!r} is {text} {bound!r}"]


def test_bounds_compare_ints_exactly_beyond_the_float_range():
    huge = 10**400
    assert _errors(huge + 1, {"maximum": huge}) == [f"{huge + 1!r} is greater than the maximum of {huge!r}"]
    assert _errors(huge, {"maximum": huge}) == []
    assert _errors(huge, {"exclusiveMaximum": huge}) != []
    assert _errors(-huge - 1, {"minimum": -huge}) != []
    # 2**53 + 1 is not a float: converted, it would equal the bound 2**53
    assert _errors(2**53 + 1, {"maximum": 2**53}) != []
    assert _errors(2**53 + 1, {"exclusiveMinimum": 2**53}) == []


@pytest.mark.parametrize("value", [True, False, math.nan, math.inf, -math.inf, "7", None])
def test_bounds_skip_what_is_not_a_number(value):
    """NaN compares false with every bound and a bool is no number: the bounds stay silent (the
    ``type`` keyword refuses them)."""
    for keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        assert _errors(value, {keyword: 0.5}) == []
        assert _errors(value, {keyword: 10}) == []
        assert _errors(value, {keyword: -10}) == []


@pytest.mark.parametrize("sch,words", [
    ({"type": "integer", "minimum": 1}, "an integer >= 1"),
    ({"type": "integer", "exclusiveMinimum": 0}, "an integer > 0"),
    ({"type": "number", "maximum": 2}, "a finite number <= 2"),
    ({"type": "number", "exclusiveMaximum": 1}, "a finite number < 1"),
    ({"type": "number", "exclusiveMinimum": 0, "maximum": 1}, "a finite number in (0, 1]"),
    ({"type": "number", "minimum": 0, "exclusiveMaximum": 1}, "a finite number in [0, 1)"),
    ({"type": "integer", "minimum": 2, "maximum": 9}, "an integer in [2, 9]"),
    ({"type": "number", "exclusiveMinimum": -1, "exclusiveMaximum": 1}, "a finite number in (-1, 1)"),
    ({"type": ["number", "null"], "minimum": 0}, "a finite number >= 0"),
    ({"type": ["null", "integer", "number"]}, "an integer"),
    ({"type": "number"}, "a finite number"),
    ({"type": "string"}, None),
    ({"type": ["string", "null"], "minimum": 0}, None),
    ({"minimum": 0}, None),
    ({}, None),
])
def test_allowed_words_a_numeric_schema(sch, words):
    assert schema.allowed(sch) == words


def _describe(instance, sch):
    err = schema.first_error(instance, sch)
    assert err is not None
    return schema.describe(err)


def test_describe_a_bound_and_a_type():
    sch = {"type": "number", "exclusiveMinimum": 0, "maximum": 1}
    assert _describe(2, sch) == "2 is greater than the maximum of 1; allowed: a finite number in (0, 1]"
    assert _describe(0, sch) == "0 is less than or equal to the minimum of 0; allowed: a finite number in (0, 1]"
    assert _describe(-1, {"type": "integer", "minimum": 1}) == \
        "-1 is less than the minimum of 1; allowed: an integer >= 1"
    assert _describe(7, {"type": "integer", "exclusiveMaximum": 5}) == \
        "7 is greater than or equal to the maximum of 5; allowed: an integer < 5"
    assert _describe(2.5, {"type": "integer"}).endswith("; allowed: an integer")
    assert _describe("x", {"type": "number"}).endswith("; allowed: a finite number")


def test_describe_the_alternatives_of_one_of_and_any_of():
    branches = [{"type": "number", "exclusiveMinimum": 0}, {"type": "null"},
                {"type": "object", "required": ["rule", "alpha"]}, {"type": ["string", "boolean"]},
                {"enum": [1]}, {"type": "frob"}, "not a schema"]
    for key in ("oneOf", "anyOf"):
        text = _describe([1], {key: branches[:4]})
        assert text.endswith("; allowed: a finite number > 0; or null; or a mapping with key rule, alpha; "
                             "or a string or true or false")
        # a branch without a type, one of a type no checker knows, and a non-mapping (skipped)
        err = next(schema.Validator({key: [{"type": "null"}]}).iter_errors(3))
        err.validator_value = branches
        assert schema.describe(err).endswith("; or a value of another form; or frob")


def test_describe_lists_and_a_plain_message():
    assert _describe([1, 1], {"type": "array", "uniqueItems": True}).endswith(
        "; allowed: a list without repeated items")
    assert _describe([], {"type": "array", "minItems": 2}).endswith("; allowed: a list of at least 2 item(s)")
    err = schema.first_error("c", {"enum": ["a", "b"]})
    assert schema.describe(err) == err.message and "allowed" not in err.message
    err.schema = True                                     # a boolean (sub)schema words nothing more
    err.validator = "type"
    assert schema.describe(err) == err.message


def test_first_error_is_none_for_a_valid_instance_and_the_best_match_otherwise():
    sch = {"type": "object", "properties": {"rho": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}}
    assert schema.first_error({"rho": 0.5}, sch) is None
    err = schema.first_error({"rho": math.nan}, sch)
    assert err is not None and list(err.path) == ["rho"] and err.validator == "type"

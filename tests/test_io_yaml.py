"""The YAML reader refuses what PyYAML would silently accept or choke on."""

import time
from pathlib import Path

import pytest

from rfl.io import YAML_MAX_DEPTH, YAML_MAX_NODES, YAMLError, parse_yaml, read_yaml


def test_duplicate_key_is_refused_naming_key_and_lines():
    with pytest.raises(YAMLError, match=r"cfg.yaml: duplicate key 'rounds' at line 3 \(first at line 2\)"):
        parse_yaml("e:\n  rounds: 10\n  rounds: 20\n", "cfg.yaml")


def test_same_key_in_different_mappings_is_fine():
    assert parse_yaml("a: {x: 1}\nb: {x: 2}\n") == {"a": {"x": 1}, "b": {"x": 2}}


def test_merge_key_may_be_overridden():
    # YAML's merge type: the mapping's own keys win over the merged ones
    doc = parse_yaml("base: &b {r: 3, lam: 0.1}\nother:\n  <<: *b\n  r: 4\n")
    assert doc["other"] == {"r": 4, "lam": 0.1}


def test_recursive_alias_is_refused():
    with pytest.raises(YAMLError, match="recursive"):
        parse_yaml("&a [1, *a]")


def test_nesting_bound():
    ok = "[" * YAML_MAX_DEPTH + "]" * YAML_MAX_DEPTH
    assert parse_yaml(ok) is not None
    with pytest.raises(YAMLError, match=f"deeper than {YAML_MAX_DEPTH}"):
        parse_yaml("[" * (YAML_MAX_DEPTH + 1) + "]" * (YAML_MAX_DEPTH + 1))


def test_very_deep_nesting_is_one_error_not_a_recursion_error():
    with pytest.raises(YAMLError):
        parse_yaml("[" * 20000 + "]" * 20000)


def test_alias_bomb_is_refused_quickly():
    lines = ["a0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    tic = time.perf_counter()
    with pytest.raises(YAMLError, match=f"more than {YAML_MAX_NODES} nodes"):
        parse_yaml("\n".join(lines))
    assert time.perf_counter() - tic < 5


def test_a_few_aliases_below_the_bound_are_fine():
    doc = parse_yaml("a: &a [1, 2]\nb: [*a, *a]\n")
    assert doc == {"a": [1, 2], "b": [[1, 2], [1, 2]]}


def test_invalid_yaml_is_one_yaml_error(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("a: [1, 2\n")
    with pytest.raises(YAMLError, match="bad.yaml: not valid YAML"):
        read_yaml(p)


def test_project_configs_read():
    root = Path(__file__).resolve().parents[1] / "config"
    for name in ("config.yaml", "smoke.yaml", "schema.yaml", "paper_values.yaml"):
        assert isinstance(read_yaml(root / name), dict)

"""The mutation-testing wrapper: README's score table is the one its scores file gives, every
package's test selection exists, and the test-data functions are fenced off from mutmut."""

import ast

import pytest

from rfl.testing import mutation


def test_readme_table_is_generated_from_the_scores_file():
    text = mutation.README.read_text()
    assert mutation.readme_block(mutation.load_scores()) in text, \
        "README's mutation table is stale: run python -m rfl.testing.mutation --readme"


@pytest.mark.parametrize("package", sorted(mutation.TESTS))
def test_each_package_selects_existing_tests_of_its_own(package):
    tests = mutation.tests_for(package)
    assert tests and all((mutation.ROOT / t).is_file() for t in tests)
    assert (mutation.ROOT / mutation.source_of(package)).exists()


def test_unknown_package_is_refused_by_name():
    with pytest.raises(SystemExit, match="unknown package or module 'manifold'.*manifolds"):
        mutation.tests_for("manifold")


def test_examples_are_fenced_and_the_module_still_parses(tmp_path):
    src = ('class M:\n'
           '    @classmethod\n'
           '    def examples(cls):\n'
           '        return [cls(3),\n'
           '                cls(4)]\n'
           '\n'
           '    def inner(self, x):\n'
           '        return x\n')
    path = tmp_path / "m.py"
    path.write_text(src)
    mutation.exclude_test_data(path)
    lines = path.read_text().splitlines()
    ast.parse(path.read_text())
    start, end = lines.index("    # pragma: no mutate start"), lines.index("    # pragma: no mutate end")
    assert lines[start + 1] == "    @classmethod" and lines[end - 1].strip() == "cls(4)]"
    assert "def inner" in "\n".join(lines[end:])


def test_a_sampled_score_says_so_in_the_table():
    record = {"killed": 90, "missed": 10, "score": 0.9, "commit": "abc1234", "date": "2026-11-23",
              "sample": {"mutants": 8000, "drawn": 100, "seed": 3, "standard_error": 0.03}}
    row = mutation.table({"reporting": record}).splitlines()[-1]
    assert "100 of 8000 (random sample, seed 3)" in row and "90.0 % ± 3.0" in row and "| yes |" in row
    full = dict(record, killed=89, score=0.89)
    full.pop("sample")
    row = mutation.table({"reporting": full}).splitlines()[-1]
    assert "sample" not in row and "±" not in row and "| no |" in row and "| 99 |" in row


def test_mutant_names_are_read_from_every_meta_file(tmp_path):
    (tmp_path / "mutants" / "rfl" / "a").mkdir(parents=True)
    (tmp_path / "mutants" / "rfl" / "a" / "x.py.meta").write_text(
        '{"exit_code_by_key": {"rfl.a.x.f__mutmut_2": null, "rfl.a.x.f__mutmut_1": 1}}')
    (tmp_path / "mutants" / "rfl" / "y.py.meta").write_text('{"exit_code_by_key": {"rfl.y.g__mutmut_1": null}}')
    assert mutation.mutant_names(tmp_path) == ["rfl.a.x.f__mutmut_1", "rfl.a.x.f__mutmut_2", "rfl.y.g__mutmut_1"]


def test_a_sample_must_hold_at_least_one_mutant(capsys):
    with pytest.raises(SystemExit) as exc:
        mutation.main(["reporting", "--sample", "0"])
    assert exc.value.code == 2 and "--sample must be a positive number" in capsys.readouterr().err


def test_a_note_on_how_a_score_was_measured_is_shown():
    record = {"killed": 9, "missed": 1, "score": 0.9, "commit": "abc1234", "date": "2026-11-23",
              "note": "measured incrementally in one work dir: details"}
    row = mutation.table({"problems": record}).splitlines()[-1]
    assert "| 10 (measured incrementally in one work dir) |" in row

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
    assert (mutation.ROOT / "rfl" / package).is_dir()


def test_unknown_package_is_refused_by_name():
    with pytest.raises(SystemExit, match="unknown package 'manifold'.*manifolds"):
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

"""The mutation wrapper's selection of what to mutate: a name with a folder rfl/<name>/ is a
package (every module in it is mutated), any other known name is the single module
rfl/<name>.py; an unknown name is refused on one line with exit status 2."""

from __future__ import annotations

import re
import subprocess

import pytest

from rfl.testing import mutation

MODULES = ("size", "schema", "simtime")


@pytest.mark.parametrize("name", MODULES)
def test_a_single_module_is_mutated_alone(name):
    assert mutation.source_of(name) == f"rfl/{name}.py"
    assert mutation.only_mutate(name) == f"rfl/{name}.py"
    assert mutation.display(name) == f"rfl/{name}.py"


@pytest.mark.parametrize("name", ("claims", "participation", "flower"))
def test_a_package_is_mutated_whole(name):
    assert mutation.source_of(name) == f"rfl/{name}/"
    assert mutation.only_mutate(name) == f"rfl/{name}/*"
    assert mutation.display(name) == f"rfl/{name}"


@pytest.mark.parametrize("name", MODULES + ("participation",))
def test_a_module_is_tested_by_the_files_that_import_it(name):
    """Each file of the selection names the module (``rfl.size``, ``from rfl import ... size``)
    (``rfl.schema``'s selection is test_sweeps.py and the tests written for it)."""
    pattern = re.compile(rf"rfl\.{name}\b|from rfl import [^\n]*\b{name}\b")
    for rel in mutation.tests_for(name):
        text = (mutation.ROOT / rel).read_text()
        assert pattern.search(text), rel


def test_the_module_mutmut_config_mutates_only_that_module(tmp_path):
    mutation.prepare("simtime", tmp_path)
    config = (tmp_path / "pyproject.toml").read_text()
    section = config[config.index("[tool.mutmut]"):]
    assert 'only_mutate = ["rfl/simtime.py"]' in section
    assert '"tests/test_partbias_runner.py"' in section
    assert "rfl/simtime" + "/" not in section


def test_a_kill_file_joins_its_own_selection_only():
    tracked = subprocess.run(["git", "ls-files", "tests"], cwd=mutation.ROOT, capture_output=True,
                             text=True).stdout.split()
    kills = [t for t in tracked if t.startswith("tests/test_mutation_kills_")]
    assert kills, "no tracked tests/test_mutation_kills_*.py"
    for name in mutation.TESTS:
        own = {k for k in kills if k.startswith(f"tests/test_mutation_kills_{name}")}
        assert set(kills) & set(mutation.tests_for(name)) == own


@pytest.mark.parametrize("bad", ["sizes", "rfl/size.py", "claim", "testing"])
def test_an_unknown_name_is_one_line_and_exit_2(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        mutation.main([bad])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert err.count("\n") == 1 and repr(bad) in err
    assert all(name in err for name in ("claims", "size", "schema", "simtime"))


def test_a_rerun_reads_the_survivors_of_a_report_and_refuses_a_mismatched_one(tmp_path):
    report = tmp_path / "survivors.txt"
    report.write_text("    rfl.size.x_f__mutmut_1: survived\n"
                      "    rfl.size.x_g__mutmut_12: no tests\n"
                      "    rfl.size.x_h__mutmut_3: timeout\n"
                      "# rfl.size.x_f__mutmut_1: survived\n"
                      "--- rfl/size.py\n"
                      "-    return a: b\n")
    assert mutation.survivor_names(str(report)) == ["rfl.size.x_f__mutmut_1", "rfl.size.x_g__mutmut_12",
                                                    "rfl.size.x_h__mutmut_3"]
    previous = {"killed": 10, "missed": 5, "commit": "abc1234"}
    with pytest.raises(SystemExit, match="lists 3 survivors, the recorded size run missed 5"):
        mutation.rerun("size", previous, str(report), 1, None)


def test_a_rerun_updates_the_record_in_the_scores_file(tmp_path, monkeypatch):
    scores = tmp_path / "scores.json"
    scores.write_text('{"size": {"killed": 8, "missed": 2, "score": 0.8}}')
    monkeypatch.setattr(mutation, "SCORES", scores)
    seen = {}

    def fake_rerun(package, previous, report, children, new_report):
        seen.update(package=package, previous=previous, report=report)
        return dict(previous, killed=9, missed=1, score=0.9)
    monkeypatch.setattr(mutation, "rerun", fake_rerun)
    mutation.main(["size", "--rerun", "r.txt"])
    assert seen == {"package": "size", "previous": {"killed": 8, "missed": 2, "score": 0.8}, "report": "r.txt"}
    assert mutation.load_scores()["size"] == {"killed": 9, "missed": 1, "score": 0.9}

"""The README's leaderboard: ``rfl bench-table`` takes the methods x problems summary of a
leaderboard.md (rfl bench) and writes it between the README's markers, as ``rfl perf-table``
does for the performance table."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rfl.bench import leaderboard as lb
from rfl.reporting import performance

REPO = Path(__file__).resolve().parents[1]

SUMMARY = ["| method | cpesph | kpca |", "|---|---|---|", "| RFedAGS | 1: 0.0001 | 2: 0.003 |",
           "| Mine *(yours)* | 2: 0.0002 | n/a |"]
PROBLEM = ["| # | method | final |", "|---|---|---|", "| 1 | RFedAGS | 0.0001 |"]


def leaderboard_md(summary=SUMMARY) -> str:
    return "\n".join(["# Benchmark leaderboard", "", "- seeds 0-5", "", lb.SUMMARY_INTRO, "", *summary, "",
                      "## cpesph", "", *PROBLEM, ""])


def readme(tmp_path, body="old table\n") -> Path:
    path = tmp_path / "README.md"
    begin, end = lb.README_MARKERS
    pbegin, pend = performance.README_BEGIN, performance.README_END
    path.write_text(f"# x\n{pbegin}\nperf\n{pend}\ntext\n{begin}\n{body}{end}\ntail\n")
    return path


def rfl(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "rfl", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_summary_is_the_table_after_its_line_and_nothing_after():
    assert lb.readme_table(leaderboard_md()) == "\n".join(SUMMARY) + "\n"


@pytest.mark.parametrize("text", ["# Benchmark leaderboard\n\n| a |\n|---|\n| 1 |\n",
                                  leaderboard_md(SUMMARY[:2])])
def test_a_file_without_the_summary_or_its_rows_is_refused(text):
    with pytest.raises(ValueError):
        lb.readme_table(text)


def test_the_table_goes_between_its_markers_only(tmp_path):
    path = readme(tmp_path)
    before = path.read_text()
    assert performance.update_readme(path, "T\n", check=True, markers=lb.README_MARKERS)
    assert path.read_text() == before                       # check writes nothing
    assert performance.update_readme(path, "T\n", markers=lb.README_MARKERS)
    begin, end = lb.README_MARKERS
    assert path.read_text() == before.replace(f"{begin}\nold table\n{end}", f"{begin}\nT\n{end}")
    assert not performance.update_readme(path, "T\n", check=True, markers=lb.README_MARKERS)


def test_missing_markers_name_the_table(tmp_path):
    path = tmp_path / "README.md"
    path.write_text("no markers\n")
    with pytest.raises(performance.PerfInputError, match="leaderboard markers"):
        performance.update_readme(path, "T\n", markers=lb.README_MARKERS)


def test_cli_prints_writes_and_checks(tmp_path):
    md = tmp_path / "leaderboard.md"
    md.write_text(leaderboard_md())
    path = readme(tmp_path)
    r = rfl("bench-table", md, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == "\n".join(SUMMARY) + "\n"
    r = rfl("bench-table", md, "--readme", path, "--check", cwd=tmp_path)
    assert r.returncode == 1 and "differs" in r.stderr and "old table" in path.read_text()
    assert rfl("bench-table", md, "--readme", path, cwd=tmp_path).returncode == 0
    assert "\n".join(SUMMARY) in path.read_text() and "old table" not in path.read_text()
    assert rfl("bench-table", md, "--readme", path, "--check", cwd=tmp_path).returncode == 0


def test_cli_refuses_a_file_that_is_not_a_leaderboard_in_one_line(tmp_path):
    md = tmp_path / "other.md"
    md.write_text("# something else\n")
    r = rfl("bench-table", md, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "other.md" in r.stderr


def test_the_readme_shows_a_generated_leaderboard():
    text = (REPO / "README.md").read_text()
    begin, end = lb.README_MARKERS
    block = text[text.index(begin) + len(begin):text.index(end)].strip().splitlines()
    assert block[0].startswith("| method |") and len(block) >= 3
    assert all(line.startswith("|") for line in block)

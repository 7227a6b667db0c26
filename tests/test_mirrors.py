"""Tests that need a data mirror skip, never fail, when it is absent.

Offline, the School data come only from $RFL_SCHOOL_MIRROR and the authors' WordNet and MNIST
files only from $RFL_ANCHORS_MIRROR. A machine may have one and not the other; then every test
that needs the missing one must skip. ``--collect-only`` does not show a test that fails at
run time, so this runs the tests themselves: every test file that mentions the School, WordNet
or MNIST data, a mirror or the smoke config, once with each mirror removed from the
environment (``env -u``), and asserts that pytest reports no failure and no error.

Slow (two runs of those files, several minutes): deselected by default (``-m "not slow"`` in
pyproject.toml); run it with

    python -m pytest -m slow tests/test_mirrors.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rfl.data import school, sources

REPO = Path(__file__).resolve().parents[1]
#: what marks a test file as possibly needing a mirror
NEEDS = re.compile(r"MIRROR|find_raw_inputs|school|wordnet|mnist|anchors|smoke\.yaml", re.I)


def mirror_test_files() -> list[str]:
    here = Path(__file__).name
    return sorted(str(p.relative_to(REPO)) for p in (REPO / "tests").glob("test_*.py")
                  if p.name != here and NEEDS.search(p.read_text()))


def test_the_selection_holds_the_tests_that_read_each_mirror():
    files = mirror_test_files()
    for f in ("tests/test_school.py", "tests/test_sources.py", "tests/test_faults.py",
              "tests/test_hsp.py", "tests/test_pca_sphere.py", "tests/test_workflow.py"):
        assert f in files


@pytest.mark.slow
@pytest.mark.parametrize("removed", [school.MIRROR_ENV, sources.MIRROR_ENV])
def test_tests_skip_without_one_mirror(removed):
    others = {school.MIRROR_ENV, sources.MIRROR_ENV} - {removed}
    if not all(os.environ.get(v) for v in others):
        pytest.skip(f"needs {', '.join(others)} set, to remove only {removed}")
    env = {k: v for k, v in os.environ.items() if k != removed}
    env.pop("PYTEST_ADDOPTS", None)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        *mirror_test_files()], cwd=REPO, env=env, capture_output=True, text=True)
    summary = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-2000:]
    failures = [line for line in r.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    assert r.returncode == 0 and not failures, f"without {removed}: {summary}\n" + "\n".join(failures)
    assert "skipped" in summary, summary        # something did need the mirror

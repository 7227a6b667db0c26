"""The HTML report (`snakemake --report`) in a real headless browser: every figure beside its
claim page, every claim's statement and verdict rendered (scripts/check_report.py).

Marked ``browser`` and skipped unless Chromium, the ``websockets`` package and the outputs of
a finished smoke run (``snakemake --cores 2 --configfile config/smoke.yaml`` in this checkout)
are there: it writes the report of that run (~30 s) and drives Chromium through it. Leave it
out with ``pytest -m "not browser"``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import check_report  # noqa: E402

SMOKE_CLAIMS = REPO / ".smoke" / "paper_tables" / "claims.json"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(check_report.find_chromium() is None, reason="needs Chromium on PATH"),
    pytest.mark.skipif(importlib.util.find_spec("websockets") is None, reason="needs websockets"),
    pytest.mark.skipif(not (SMOKE_CLAIMS.exists() and (REPO / ".snakemake" / "metadata").is_dir()),
                       reason="needs a finished smoke run in this checkout (snakemake --configfile config/smoke.yaml)"),
]


def test_every_figure_claim_and_verdict_is_rendered_in_the_report(tmp_path):
    report = tmp_path / "report.html"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "check_report.py"),
                           "--configfile", "config/smoke.yaml", "--report", str(report),
                           "--screenshot", str(tmp_path / "report.png")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "0 failure(s)" in done.stdout
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_check_fails_when_a_claim_is_missing_from_the_report(tmp_path):
    """The check is not vacuous: a claim whose statement the report does not show fails."""
    from rfl import config as rflconfig

    config = rflconfig.load(REPO / "config" / "smoke.yaml")
    claims = json.loads(SMOKE_CLAIMS.read_text())
    claims[0] = {**claims[0], "statement": "a statement no page shows"}
    report = tmp_path / "report.html"
    subprocess.run(["snakemake", "--configfile", "config/smoke.yaml", "--report", str(report)],
                   cwd=REPO, check=True, capture_output=True)
    failures = check_report.check(report, config, claims, check_report.find_chromium())
    assert failures and all("a statement no page shows" in f for f in failures)
    figures_of_claim = [f for f in claims[0]["figures"]]
    assert len([f for f in failures if "is not on its page" in f]) == len(figures_of_claim)

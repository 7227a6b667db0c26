"""Progress lines: on stderr for a person at a terminal, silent in pipes, logs and benchmarks."""

from __future__ import annotations

import io as _io
import re
from pathlib import Path

from rfl.progress import Progress, enabled

REPO = Path(__file__).resolve().parents[1]


class _Tty(_io.StringIO):
    def isatty(self):
        return True


def test_silent_when_stderr_is_not_a_terminal(monkeypatch):
    monkeypatch.delenv("RFL_PROGRESS", raising=False)
    out = _io.StringIO()
    p = Progress("x", 5, every=0.0, stream=out)
    for t in range(1, 6):
        p.update(t)
    p.close()
    assert out.getvalue() == ""


def test_terminal_shows_rounds_and_eta_and_ends_the_line(monkeypatch):
    monkeypatch.delenv("RFL_PROGRESS", raising=False)
    out = _Tty()
    p = Progress("cpesph_fixed/rfedags_K5_seed0", 4, every=0.0, stream=out)
    for t in range(1, 5):
        p.update(t)
    text = out.getvalue()
    assert re.findall(r"round (\d+)/4", text) == ["1", "2", "3", "4"]
    assert "ETA" in text and text.endswith("\n") and text.count("\n") == 1


def test_early_stop_ends_the_line(monkeypatch):
    monkeypatch.delenv("RFL_PROGRESS", raising=False)
    out = _Tty()
    p = Progress("x", 10, every=0.0, stream=out)
    p.update(3)                       # e.g. a run that diverged at round 3
    p.close()
    assert out.getvalue().endswith("\n") and "round 3/10" in out.getvalue()


def test_environment_forces_either_way(monkeypatch):
    monkeypatch.setenv("RFL_PROGRESS", "0")
    assert not enabled(_Tty())
    monkeypatch.setenv("RFL_PROGRESS", "1")
    assert enabled(_io.StringIO())


def test_workflow_jobs_are_quiet():
    """Every shell command of the workflow runs under PIN (``pinned(...)``), which sets
    RFL_PROGRESS=0."""
    from rfl.workflow import PIN, pinned

    assert "RFL_PROGRESS=0" in PIN.split() and pinned("rfl x").startswith(PIN)
    text = "\n".join(p.read_text() for p in [REPO / "Snakefile", *(REPO / "rules").glob("*.smk")])
    shells = re.findall(r"^\s+shell:\s*\n?\s*(.*)$", text, re.M)
    assert shells and all(s.startswith("pinned(") for s in shells), shells

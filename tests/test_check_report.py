"""scripts/check_report.py without a browser: which pages it looks for (not those of experiments
skipped for want of data), its errors before any work, and that it leaves no process behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import check_report  # noqa: E402


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_kill_group_ends_the_leader_and_its_children():
    """Chromium's renderers are children of its process: the whole group goes, also a child
    that ignores SIGTERM (SIGKILL after the grace period)."""
    proc = subprocess.Popen(["sh", "-c", "sleep 300 & (trap '' TERM; sleep 300) & wait"],
                            start_new_session=True)
    time.sleep(0.3)
    assert _group_alive(proc.pid)
    check_report._kill_group(proc, grace=1.0)
    deadline = time.monotonic() + 5
    while _group_alive(proc.pid) and time.monotonic() < deadline:   # orphans reaped by init
        try:
            os.waitpid(-proc.pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.05)
    out = subprocess.run(["ps", "-o", "pid=,stat=", "-g", str(proc.pid)], capture_output=True, text=True).stdout
    assert all(line.split()[1].startswith("Z") for line in out.splitlines() if line.strip()), out
    assert proc.poll() is not None


def test_kill_group_of_an_ended_process_is_a_no_op():
    """A group already gone: no signal, no wait for the grace period, the exit status kept."""
    proc = subprocess.Popen(["true"], start_new_session=True)
    proc.wait()
    start = time.monotonic()
    check_report._kill_group(proc, grace=5.0)
    assert time.monotonic() - start < 1.0
    assert proc.returncode == 0 and not _group_alive(proc.pid)


def test_skipped_experiments_have_no_page_to_look_for():
    """The pages checked are those of the config the workflow ran: a figure of an experiment
    skipped for want of data is not among them (it has no page; looking for it cost a timeout
    per page and ended in a traceback)."""
    from rfl import config as rflconfig
    from rfl.reporting.claim_pages import pages
    from rfl.workflow import without_skipped

    config = rflconfig.load(REPO / "config" / "smoke.yaml")
    figure, fig = next(iter(config["figures"].items()))
    skipped = {fig["experiment"]: f"skipped {fig['experiment']}: test"}
    kept = pages(without_skipped(config, skipped))
    assert figure in pages(config) and figure not in kept
    others = [f for f, g in config["figures"].items() if g["experiment"] != fig["experiment"]]
    assert others and all(f in kept for f in others)
    assert without_skipped(config, {}) == config


def _main(*args):
    return subprocess.run([sys.executable, str(REPO / "scripts" / "check_report.py"), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.parametrize("args, word", [
    (["--chromium", "/bin/true", "--timeout", "0"], "--timeout"),
    (["--chromium", "/bin/true", "--configfile", "config/no_such.yaml"], "no_such.yaml"),
])
def test_bad_arguments_get_one_line_and_exit_2(args, word):
    done = _main(*args)
    assert done.returncode == 2, done.stderr
    assert word in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1

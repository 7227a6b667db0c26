"""The README's first-hour commands, read from the README and set against the project: the
extras it names exist, the install-only line installs no extra, the first figure and the smoke
target need no data file, and every command with a target after a config file writes
``--configfile=FILE`` (Snakemake takes the words after ``--configfile FILE`` as more config
files, before rfl could say anything)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from rfl import config as rflconfig
from rfl.workflow import raw_inputs_of

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def bash_lines() -> list[str]:
    """The lines of the README's bash blocks."""
    return [line for block in re.findall(r"```bash\n(.*?)```", README, re.S) for line in block.splitlines()]


def test_the_extras_named_exist_and_the_install_only_line_takes_none():
    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    named = set(re.findall(r'pip install -e "\.\[(\w+)\]"', README))
    assert {"report", "flower", "slurm", "test", "dev"} <= named and named <= extras, named - extras
    install_only = [line for line in bash_lines() if line.rstrip().endswith("pip install -e .")]
    assert install_only == ["python -m venv --system-site-packages .venv && . .venv/bin/activate && "
                            "pip install -e ."]


def needs_no_file(cfg: dict, figure: str) -> bool:
    exp = cfg["experiments"][cfg["figures"][figure]["experiment"]]
    ds = cfg["datasets"][exp["dataset"]]
    return raw_inputs_of(ds["problem"], ds.get("params")) == ()


def test_the_first_figure_needs_no_data_file():
    m = re.search(r"A first figure.*?```bash\nsnakemake --cores 2 figures/(\w+)\.pdf\n```", README, re.S)
    assert m, "the README no longer gives a first-figure command"
    cfg = rflconfig.load(REPO / "config" / "config.yaml")
    assert needs_no_file(cfg, m.group(1))
    # the School figure does need one: the check above can fail
    assert not needs_no_file(cfg, "fig3_school_r4")


def test_smoke_targets_follow_the_configfile_with_an_equals_sign():
    cfg = rflconfig.load(REPO / "config" / "smoke.yaml")
    targets = 0
    for line in bash_lines():
        words = line.split("#")[0].split()
        if not words or words[0] != "snakemake" or "--configfile" not in " ".join(words):
            continue
        for i, w in enumerate(words):
            if w == "--configfile":          # the words after FILE would be config files too
                assert i + 2 == len(words), line
        for w in words:
            if w.startswith(".smoke/figures/"):
                targets += 1
                assert needs_no_file(cfg, Path(w).stem), line
    assert targets >= 1


def test_check_report_without_websockets_names_the_extra(monkeypatch, capsys):
    import importlib.util
    import sys

    sys.path.insert(0, str(REPO / "scripts"))
    import check_report

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "websockets" else real(name, *a))
    assert check_report.main(["--chromium", "/bin/true"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and 'pip install -e ".[report]"' in err and "websockets" in err

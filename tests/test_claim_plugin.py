"""A claim judged by a rule of a separate package, with no file of rfl touched: the rule of
docs/extending.md (``docs/examples/ends_below.py``) installed as a distribution with an entry
point in the group ``rfl.rules``, a config that declares a claim with it, the workflow's runs
and ``rfl reproduction``: its verdict is in REPRODUCTION.md's summary. A plug-in rule that
fails to import is one ``rfl: error:`` line and exit status 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from _workflow import WORKFLOW_NO_CONFIGS, copy_workflow  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "docs" / "examples" / "ends_below.py"


def _install(site: Path, package: str, module: str, source: str | None) -> None:
    """A distribution as pip leaves it: ``package`` (with ``module`` from ``source``, or no
    module at all) and its .dist-info declaring ``module`` in the group rfl.rules."""
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text('"""rfl plug-in: a claim rule."""\n')
    if source is not None:
        (site / package / f"{module}.py").write_text(source)
    info = site / f"{package}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[rfl.rules]\n{module} = {package}.{module}\n")


def _config() -> dict:
    """The smoke config's CPESph fixed-step experiment alone (one seed, RFedAGS K = 1, 3),
    and two claims judged by the plug-in's rule: one at a level every finite run is below,
    one at a level no run reaches."""
    smoke = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    exp = {**smoke["experiments"]["cpesph_fixed"], "seeds": [0], "methods": [{"algorithm": "rfedags", "K": [1, 3]}]}
    exp.pop("source", None)              # the source names settings of methods this subset drops
    claim = {"section": "A plug-in's claim", "ref": "its paper", "rule": "ends_below",
             "experiments": ["cpesph_fixed"]}
    return {"output_dir": "out/", "datasets": {"cpesph": smoke["datasets"]["cpesph"]},
            "experiments": {"cpesph_fixed": exp},
            "figures": {"fig_cpesph": {"experiment": "cpesph_fixed", "title": "CPESph"}},
            "claims": {"below_big": {**claim, "statement": "RFedAGS ends below 1e9", "params": {"level": 1e9}},
                       "below_tiny": {**claim, "statement": "RFedAGS ends below 1e-300",
                                      "params": {"level": 1e-300}}}}


def _tree(tmp_path: Path, config: dict) -> Path:
    tree = copy_workflow(tmp_path / "workflow", WORKFLOW_NO_CONFIGS)
    (tree / "config" / "plugin.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return tree


def _env(site: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(site)]), MPLBACKEND="Agg",
               PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    env.pop("SNAKEMAKE_PROFILE", None)
    return env


def test_a_plugin_rule_judges_a_declared_claim_into_the_report(tmp_path):
    for path in [*(REPO / "rfl").rglob("*.py"), *(REPO / "config").glob("*")]:
        assert "ends_below" not in path.read_text(), f"{path} knows the plug-in"
    site = tmp_path / "site"
    _install(site, "rfl_rule_demo", "ends_below", EXAMPLE.read_text())
    tree = _tree(tmp_path, _config())
    env = _env(site)

    def run(*args, timeout=600):
        r = subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True,
                           timeout=timeout)
        assert r.returncode == 0, f"{args}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        return r.stdout

    assert run("-m", "rfl.cli", "validate", "config/plugin.yaml").strip() == "config/plugin.yaml: valid"
    run("-m", "snakemake", "--cores", "1", "out/paper_tables/REPRODUCTION.md", "--configfile",
        "config/plugin.yaml")
    text = (tree / "out" / "paper_tables" / "REPRODUCTION.md").read_text()
    lines = text.splitlines()
    summary = lines[lines.index("## Summary") + 2:]
    # the counts (one group: the config declares no sources), then the claims by figure
    assert summary[2].startswith("| Claims | 1 | 0 | ") and summary[2].endswith(" | 2 |")
    rows = [ln.split(" | ") for ln in summary if "](claims/" in ln]
    assert rows[0][:4] == ["| CPESph", "[RFedAGS ends below 1e9](claims/fig_cpesph.html#below_big)", "reproduced", ""]
    assert rows[1][:2] == ["| ", "[RFedAGS ends below 1e-300](claims/fig_cpesph.html#below_tiny)"]
    assert rows[1][2] in ("not reproduced", "undecided at this size") and rows[1][3]      # with its reason
    assert ("**Verdict: reproduced.** _Rule (ends_below): per K (rfedags, every agent), the median excess "
            "risk over seeds at the last round is below 1e+09; undecided for a K still decreasing above it_") in lines
    assert "| K | last | rounds |" in lines and any(ln.startswith("| 3 | ") and ln.endswith(" | 10 |") for ln in lines)
    assert "claims.json" in os.listdir(tree / "out" / "paper_tables")


def test_a_plugin_rule_that_fails_to_import_is_one_line_and_exit_2(tmp_path):
    site = tmp_path / "site"
    _install(site, "rfl_rule_broken", "broken", "import a_module_that_is_not_there\n")
    tree = _tree(tmp_path, _config())
    for args in (["validate", "config/plugin.yaml"],):
        r = subprocess.run([sys.executable, "-m", "rfl.cli", *args], cwd=tree, env=_env(site),
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert r.stderr == ("rfl: error: claim rule plug-in rfl_rule_broken 0.1 (entry point rfl.rules: "
                            "broken = rfl_rule_broken.broken): cannot be imported (No module named "
                            "'a_module_that_is_not_there')\n")

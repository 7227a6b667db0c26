"""A strategy of a separate package on the benchmark, with no file of rfl touched: the guide's
RFedAGS with a server step (docs/examples/rfedags_server_step.py) installed as a distribution
with an entry point in the group rfl.algorithms, run by ``rfl bench`` at smoke size against two
baselines on three problems, and by the Snakemake target on the config ``rfl bench`` wrote: it
is in both leaderboards (CSV, Markdown, HTML) and in the profile figure, and the two targets give
the same numbers (wall time aside).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml
from _workflow import copy_workflow  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "docs" / "examples" / "rfedags_server_step.py"
DIST = "rfl_bench_demo"
PROBLEMS = ["cpesph", "cfmspd", "mbcfsti"]
METHOD = "rfedags_server_step:server_step=1.5"
MID = "rfedags_server_step_server_step1p5"
LABEL = "RFedAGS-SS (server_step=1.5)"


def _install(site: Path) -> None:
    (site / DIST).mkdir(parents=True)
    (site / DIST / "__init__.py").write_text('"""rfl plug-in: a strategy."""\n')
    shutil.copy2(EXAMPLE, site / DIST / "mine.py")
    info = site / f"{DIST}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DIST}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[rfl.algorithms]\nmine = {DIST}.mine\n")


def _check_board(out: Path) -> pd.DataFrame:
    board = pd.read_csv(out / "leaderboard" / "leaderboard.csv")
    mine = board[board["method"] == MID]
    assert sorted(mine["problem"]) == sorted(PROBLEMS)
    assert (mine["status"] == "ok").all() and (mine["origin"] == "yours").all()
    assert (mine["seeds"] == 3).all() and mine["final_median"].notna().all()
    assert set(board["method"]) == {MID, "rfedags", "rfedavg"}
    assert (board["status"] == "ok").all()          # both baselines run on the three problems
    md = (out / "leaderboard" / "leaderboard.md").read_text()
    rows = [line for line in md.splitlines() if f"| {LABEL} *(yours)* |" in line]
    assert len(rows) == 4 and rows[0].startswith(f"| {LABEL} *(yours)* | ")   # the summary, then per problem
    assert sorted(int(r.split(" | ")[0].strip("| ")) for r in rows[1:]) == sorted(mine["rank"])
    page = (out / "leaderboard" / "leaderboard.html").read_text()
    assert page.count(f'data-method="{MID}"') == 3
    svg = (out / "leaderboard" / "profile.svg").read_text()
    assert svg.count(f">{LABEL} (yours)</text>") == 1          # the legend (shared by the panels)
    prof = pd.read_csv(out / "leaderboard" / "profile.csv")
    assert f"{LABEL} (yours)" in set(prof["method"])
    for ext in ("pdf", "png"):
        assert (out / "leaderboard" / f"profile.{ext}").stat().st_size > 0
    return board


def test_a_plugin_strategy_on_the_benchmark_by_rfl_bench_and_by_snakemake(tmp_path):
    for path in [*(REPO / "rfl").rglob("*.py"), *(REPO / "rules").glob("*"), REPO / "Snakefile",
                 *(REPO / "config").glob("*")]:
        text = path.read_text()
        assert "rfedags_server_step" not in text and "RFedAGS-SS" not in text, f"{path} knows the plug-in"
    site = tmp_path / "site"
    _install(site)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(site)]), MPLBACKEND="Agg",
               PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    env.pop("SNAKEMAKE_PROFILE", None)
    tree = copy_workflow(tmp_path / "wf")

    def run(*args, timeout=900):
        r = subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True,
                           timeout=timeout)
        assert r.returncode == 0, f"{args}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        return r

    r = run("-m", "rfl.cli", "bench", METHOD, "--problems", *PROBLEMS, "--baselines", "rfedags", "rfedavg",
            "--size", "smoke", "--out", "cli/")
    assert "cli/leaderboard/leaderboard.html" in r.stdout.split()
    by_cli = _check_board(tree / "cli")

    # the Snakemake target, on the config rfl bench wrote, in another folder
    config = yaml.safe_load((tree / "cli" / "bench.yaml").read_text())
    assert config["bench"] == {"methods": [METHOD], "problems": PROBLEMS, "baselines": ["rfedags", "rfedavg"],
                               "size": "smoke"}
    (tree / "config" / "bench.yaml").write_text(yaml.safe_dump({**config, "output_dir": "smk/"}))
    run("-m", "snakemake", "--cores", "1", "smk/leaderboard/leaderboard.html", "--configfile",
        "config/bench.yaml")
    by_smk = _check_board(tree / "smk")
    machine = [c for c in by_cli.columns if c.startswith("wall_time")]
    pd.testing.assert_frame_equal(by_cli.drop(columns=machine), by_smk.drop(columns=machine))
    # a second snakemake call has nothing to do: the targets are cached
    r = run("-m", "snakemake", "--cores", "1", "-n", "smk/leaderboard/leaderboard.html", "--configfile",
            "config/bench.yaml")
    assert "Nothing to be done" in r.stdout + r.stderr

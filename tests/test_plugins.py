"""Plug-ins as a user installs them, and what rfl says about them: ``rfl list`` (every kind,
each component's origin and declarations), ``rfl --version``, the CLI's help, and broken
plug-ins (a name clash, an import failure, a missing method, a bad declaration) refused in
one ``rfl: error:`` line naming the component, the distribution and the entry point, with
exit status 2, by ``rfl`` and by the Snakefile's config check.

Each plug-in is a throw-away distribution written into a temporary site directory (its
package and a ``.dist-info`` with ``entry_points.txt``, as pip leaves it; as
tests/test_extending.py installs the guide's examples) and seen by a fresh interpreter
through PYTHONPATH, so this process's registries never hold it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from rfl import cli
from rfl.registry import REGISTRIES

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "docs" / "examples"


def install(site: Path, dist: str, modules: dict[str, str], entry_points: str) -> Path:
    """Distribution ``dist`` 0.1 in ``site``: package ``dist`` with ``modules`` (name -> source)
    and the given ``entry_points.txt``."""
    package = site / dist
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f'"""{dist}: an rfl plug-in of the tests."""\n')
    for name, source in modules.items():
        (package / f"{name}.py").write_text(textwrap.dedent(source))
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    return site


def rfl(site: Path | None, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    path = [str(REPO)] + ([str(site)] if site else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "rfl.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def one_error_line(r: subprocess.CompletedProcess) -> str:
    """The single ``rfl: error:`` line of a refused command (status 2, nothing else on stderr)."""
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rfl: error: "), r.stderr
    assert "Traceback" not in r.stderr
    return lines[0]


def guide_config(**dataset) -> dict:
    """docs/extending.md's config (the mean direction dataset, experiment and figure), with
    the dataset's entries replaced by ``dataset``."""
    text = (REPO / "docs" / "extending.md").read_text()
    block, = [b for b in re.findall(r"^```yaml\n(.*?)^```", text, flags=re.S | re.M)
              if b.startswith("datasets:")]
    config = yaml.safe_load(block)
    config["datasets"]["mean_direction"].update(dataset)
    return config


STRATEGY = """
    from rfl.algorithms.rfedags import RFedAGS

    class Mine(RFedAGS):
        {body}
"""

CLASH = STRATEGY.format(body='name = "rfedags"\n        label = "Mine"')

BROKEN = {
    # plug-in source, what the one line must say
    "import": ("import a_module_nobody_installed\n",
               ["cannot be imported", "a_module_nobody_installed"]),
    "clash": (CLASH, ["algorithm name 'rfedags' is claimed by both",
                      "rfl.algorithms.rfedags.RFedAGS", ".mine.Mine"]),
    "missing_round": ("""
        from rfl.algorithms.base import FederatedStrategy

        class NoRound(FederatedStrategy):
            name = "no_round"
            label = "NoRound"
        """, ["algorithm 'no_round'", "does not implement round"]),
    "name_not_a_string": (STRATEGY.format(body='name = 3\n        label = "Mine"'),
                          ["non-empty string 'name'"]),
    "options_not_schemas": (STRATEGY.format(body='name = "mine"\n        label = "Mine"\n'
                                                 '        options = {"eta": 0.5}'),
                            ["algorithm 'mine'", "declares option 'eta' as float",
                             "allowed: a JSON schema"]),
    "manifold_without_exp": ("""
        from rfl.manifolds.base import EmbeddedSubmanifold

        class Flatland(EmbeddedSubmanifold):
            name = "flatland"
            TRANSPORTS = ("projection",)
        """, ["manifold 'flatland'", "does not implement", "distance_from_manifold", "exp,"]),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_plugin_is_one_line_naming_it_with_status_2(tmp_path, case):
    """Every command that looks components of the plug-in's kind up (validate a config that
    never uses the plug-in, list, and for a strategy run) refuses with one line: the kind, the
    distribution and version, the entry point, and what is wrong."""
    import numpy as np

    source, says = BROKEN[case]
    group = "rfl.manifolds" if case.startswith("manifold") else "rfl.algorithms"
    dist = f"rfl_broken_{case}"
    site = install(tmp_path / "site", dist, {"mine": source},
                   f"[{group}]\nmine = {dist}.mine\n")
    commands = [["validate", "config/smoke.yaml"], ["list", group.split(".")[1]]]
    if group == "rfl.algorithms":             # rfl run looks the spec's algorithm up first
        spec = tmp_path / "spec.json"
        spec.write_text('{"experiment": "e", "run_id": "r", "rounds": 1, "seed": 0, '
                        '"algorithm": {"name": "rfedags"}, "dataset": {"name": "d", '
                        '"instance": "fixed", "problem": "cpesph", "seed": 0, "params": {}}}')
        np.savez(tmp_path / "data.npz", a=np.zeros(1))
        commands.append(["run", str(spec), str(tmp_path / "data.npz"), str(tmp_path / "data.npz"),
                         str(tmp_path / "t.csv"), str(tmp_path / "t.meta.json")])
    for args in commands:
        line = one_error_line(rfl(site, *args))
        assert f"{dist} 0.1 (entry point {group}: mine = {dist}.mine)" in line, (args, line)
        for word in says:
            assert word in line, (args, line)
    assert not (tmp_path / "t.csv").exists()


def test_a_clash_is_a_config_error_in_snakemake_too(tmp_path):
    """The Snakefile's config check reports the plug-in as `rfl` does: one `rfl: error:` line,
    no Python traceback, exit status 2."""
    site = install(tmp_path / "site", "rfl_clash_demo", {"mine": CLASH},
                   "[rfl.algorithms]\nmine = rfl_clash_demo.mine\n")
    tree = tmp_path / "wf"
    tree.mkdir()
    for item in ("Snakefile", "rules", "config", "envs"):
        (shutil.copytree if (REPO / item).is_dir() else shutil.copy2)(REPO / item, tree / item)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(site)]),
               PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    env.pop("SNAKEMAKE_PROFILE", None)
    r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile",
                        "config/smoke.yaml"], cwd=tree, env=env, capture_output=True, text=True,
                       timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "Traceback (most recent call last)" not in out, out
    line, = [x for x in r.stderr.splitlines() if "claimed by both" in x]
    assert line.startswith("rfl: error: algorithm plug-in rfl_clash_demo 0.1 (entry point rfl.algorithms: "
                           "mine = rfl_clash_demo.mine): algorithm name 'rfedags'"), line


# ---- rfl validate: the contract of every component a config uses --------------------------
UNREGISTERED_MANIFOLD = """
    import numpy as np

    from rfl.manifolds.base import EmbeddedSubmanifold
    from {dist}.mean_direction import MeanDirection


    class HalfDone(EmbeddedSubmanifold):
        \"\"\"The sphere without Exp and random points (no ``name``: never registered).\"\"\"

        RETRACTIONS = ("normalize",)
        TRANSPORTS = ("projection",)

        def __init__(self, d, retraction=None, transport=None):
            super().__init__((d,), d - 1, retraction, transport)

        def projection(self, x, u):
            return u - np.sum(x * u, axis=-1, keepdims=True) * x

        def retraction_normalize(self, x, u):
            y = x + u
            return y / np.linalg.norm(y, axis=-1, keepdims=True)

        def distance_from_manifold(self, x):
            return np.abs(np.linalg.norm(x, axis=-1) - 1.0)

        @classmethod
        def examples(cls):
            return [cls(4)]


    class HalfDoneMeanDirection(MeanDirection):
        name = "half_done_mean_direction"
        manifold_class = HalfDone
"""

BAD_OPTION = """
    from rfl.algorithms.rfedags import RFedAGS

    class Mine(RFedAGS):
        name = "rfedags_bad_option"
        label = "Bad"
        options = {"eta": {"type": "positive number", "default": 1.0}}
"""


def test_validate_refuses_a_used_manifold_that_lacks_methods(tmp_path):
    """A plug-in problem on an unregistered manifold class missing ``exp`` and
    ``random_point``: validate names the config key, the manifold, its problem, the plug-in
    and the missing methods, in one line; the same config on the complete problem is valid."""
    dist = "rfl_half_done"
    site = install(tmp_path / "site", dist,
                   {"mean_direction": (EXAMPLES / "mean_direction.py").read_text(),
                    "half_done": UNREGISTERED_MANIFOLD.format(dist=dist)},
                   f"[rfl.problems]\nhalf_done = {dist}.half_done\n")
    geometry = {"retraction": "normalize", "transport": "projection"}
    for problem, good in (("half_done_mean_direction", False), ("mean_direction", True)):
        config = guide_config(problem=problem)
        config["experiments"]["mean_direction"]["geometry"] = geometry
        config["experiments"]["mean_direction"]["methods"] = [{"algorithm": "rfedags", "K": [2]}]
        path = tmp_path / f"{problem}.yaml"
        path.write_text(yaml.safe_dump(config))
        r = rfl(site, "validate", str(path))
        if good:
            assert r.returncode == 0 and r.stdout.strip() == f"{path}: valid", r.stderr
            continue
        line = one_error_line(r)
        assert line == (f"rfl: error: config key datasets.mean_direction.problem: manifold "
                        f"'HalfDone' (the manifold of problem 'half_done_mean_direction') from "
                        f"{dist} 0.1 (entry point rfl.problems: half_done = {dist}.half_done) "
                        f"does not implement exp, random_point")


def test_validate_refuses_a_used_option_that_is_not_a_json_schema(tmp_path):
    """An option whose schema names no JSON type: refused by name when a method uses the
    strategy, before any option value is checked against it."""
    site = install(tmp_path / "site", "rfl_bad_option", {"mine": BAD_OPTION},
                   "[rfl.algorithms]\nmine = rfl_bad_option.mine\n")
    config = guide_config()
    config["experiments"]["mean_direction"]["methods"] = [
        {"algorithm": "rfedags_bad_option", "K": [2], "eta": 2.0}]
    config["datasets"]["mean_direction"]["problem"] = "cpesph"
    config["datasets"]["mean_direction"]["params"] = {"d": 5, "nu": 0.1, "S": 3, "N": 10}
    config["figures"]["fig_mean_direction"]["metrics"] = ["excess_risk"]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    line = one_error_line(rfl(site, "validate", str(path)))
    assert line.startswith("rfl: error: config key experiments.mean_direction.methods.0.algorithm: "
                           "algorithm 'rfedags_bad_option' from rfl_bad_option 0.1 (entry point "
                           "rfl.algorithms: mine = rfl_bad_option.mine) declares option 'eta' "
                           "that is not a valid JSON schema"), line


# ---- rfl list -----------------------------------------------------------------------------
def test_list_shows_every_kind_and_a_plugin_with_its_distribution(tmp_path):
    """``rfl list``: a section per registry of rfl.registry (so a new kind shows with no other
    edit), each built-in from "rfl", the guide's three examples from their distribution and
    entry point, each with its declarations."""
    dist = "rfl_list_demo"
    stems = ("rfedags_server_step", "oblique", "mean_direction")
    site = install(tmp_path / "site", dist, {s: (EXAMPLES / f"{s}.py").read_text() for s in stems},
                   f"[rfl.algorithms]\nss = {dist}.rfedags_server_step\n\n"
                   f"[rfl.manifolds]\nob = {dist}.oblique\n\n"
                   f"[rfl.problems]\nmd = {dist}.mean_direction\n")
    r = rfl(site, "list")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    headers = [x for x in lines if not x.startswith(" ")]
    assert headers == [f"{reg.title} (entry-point group {reg.group}):" for reg in REGISTRIES]
    assert {"algorithms", "problems", "manifolds", "participation"} <= {reg.title for reg in REGISTRIES}

    def entry(name):
        i = lines.index(next(x for x in lines if x.startswith(f"  {name}  [")))
        return lines[i], lines[i + 1].strip()

    assert entry("rfedags") == ("  rfedags  [rfl]", "label: RFedAGS; federated; requires: nothing; "
                                "fields: gradient; options: local_method=\"sgd\"")
    assert entry("rfedags_server_step") == (
        f"  rfedags_server_step  [{dist} 0.1 (entry point rfl.algorithms: ss = {dist}.rfedags_server_step)]",
        "label: RFedAGS-SS; federated; requires: nothing; fields: gradient; options: server_step=1.0")
    assert entry("oblique") == (
        f"  oblique  [{dist} 0.1 (entry point rfl.manifolds: ob = {dist}.oblique)]",
        "retractions: normalize, exp; transports: projection; offers: log, tangent_mean, nearest_point, "
        "ambient_consensus, frechet_consensus")
    assert entry("mean_direction") == (
        f"  mean_direction  [{dist} 0.1 (entry point rfl.problems: md = {dist}.mean_direction)]",
        "manifold: sphere; field: gradient; params: d, S, N, noise, spread?")
    assert entry("uniform") == ("  uniform  [rfl]", "options: s; weights sum to 1: yes")
    assert entry("bernoulli")[1] == "options: rho=0.5, probabilities=null; weights sum to 1: no"


@pytest.mark.parametrize("word,title", [("strategies", "algorithms"), ("strategy", "algorithms"),
                                        ("algorithm", "algorithms"), ("Problems", "problems"),
                                        ("manifold", "manifolds"), ("participation", "participation")])
def test_list_takes_one_kind_singular_or_plural(word, title):
    r = rfl(None, "list", word)
    assert r.returncode == 0, r.stderr
    assert [x for x in r.stdout.splitlines() if not x.startswith(" ")] == [
        f"{title} (entry-point group rfl.{title}):"]


def test_list_refuses_an_unknown_kind_naming_the_kinds():
    line = one_error_line(rfl(None, "list", "optimisers"))
    assert "'optimisers' is not a kind of component; allowed: " in line
    assert all(w in line for w in ("algorithms", "strategies", "problems", "manifold", "participation"))


# ---- version and help ---------------------------------------------------------------------
def test_version_is_the_installed_distributions():
    r = rfl(None, "--version")
    assert r.returncode == 0 and r.stdout == f"rfl {metadata.version('rfl')}\n"


def _subparsers():
    parser = cli.build_parser()
    return parser, parser._subparsers._group_actions[0].choices


def test_every_positional_argument_has_help():
    import argparse
    _, commands = _subparsers()
    for name, sub in commands.items():
        for action in sub._actions:
            if not action.option_strings:
                assert action.help and action.help != argparse.SUPPRESS, f"rfl {name} {action.dest}"


def test_help_lists_the_user_commands_and_not_the_workflow_steps():
    """``rfl --help`` lists what a user runs; the steps only the rules call are left out of it
    but stay callable (each has its own --help)."""
    rules = " ".join(p.read_text() for p in (REPO / "rules").glob("*.smk"))
    called = set(re.findall(r'pinned\("rfl ([a-z0-9-]+)', rules))
    assert set(cli.INTERNAL) <= called
    r = rfl(None, "--help")
    assert r.returncode == 0
    listed = set(re.findall(r"^    ([a-z0-9-]+)\s", r.stdout, flags=re.M))
    _, commands = _subparsers()
    assert listed == set(commands) - set(cli.INTERNAL)
    assert {"validate", "list", "run", "flower", "figure", "perf-table"} <= listed
    for step in cli.INTERNAL:
        assert rfl(None, step, "--help").returncode == 0

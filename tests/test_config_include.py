"""A config's ``include:`` and its experiments' ``geometry:`` / ``step:`` given by name
(rfl/config.py: resolve_includes): what is merged from where, paths relative to the including
file, the schema run on the merged config, and a missing file, a cycle or an unknown name
refused in one line naming the file (exit status 2 from ``rfl validate`` and the workflow)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rfl import config as rflconfig
from rfl import io
from rfl.config import ConfigError, resolve_includes

REPO = Path(__file__).resolve().parents[1]

CPESPH = {"problem": "cpesph", "seed": 7, "params": {"d": 8, "nu": 0.1, "S": 4, "N": 20}}
CPESPH_B = {"problem": "cpesph", "seed": 8, "params": {"d": 6, "nu": 0.1, "S": 3, "N": 10}}
MBCFSTI = {"problem": "mbcfsti", "seed": 7, "params": {"d": 6, "p": 2, "S": 3, "N": 6}}
SPHERE = {"retraction": "normalize", "transport": "parallel"}
FIXED = {"rule": "fixed", "alpha": 1.0}


def experiment(dataset, **keys):
    return {"dataset": dataset, "rounds": 5, "batch_size": 4, "seeds": [0],
            "methods": [{"algorithm": "rfedags", "K": [1]}], **keys}


def write(path: Path, obj) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(obj, sort_keys=False))
    return path


@pytest.fixture
def base(tmp_path):
    """lib/base.yaml: three datasets, School and anchors settings, two experiments."""
    return write(tmp_path / "lib" / "base.yaml", {
        "output_dir": "base_out/", "toy_size": True,
        "school": {"cache_dir": "base/school", "mirror": "base_mirror"},
        "anchors": {"cache_dir": "base/anchors"},
        "datasets": {"a": CPESPH, "b": CPESPH, "m": MBCFSTI},
        "experiments": {"e_fixed": experiment("a", geometry=SPHERE, step=FIXED),
                        "e_decay": experiment("a", step={"rule": "decaying", "alpha0": 0.5,
                                                         "beta": 0.1, "dec": 4})},
        "figures": {"fig_e": {"experiment": "e_fixed", "title": "base"}},
        "claims": {}})


def test_merge_rules(tmp_path, base):
    own = {"include": "lib/base.yaml", "output_dir": "mine/",
           "school": {"cache_dir": "mine/school"},
           "datasets": {"b": CPESPH_B, "c": CPESPH_B},
           "experiments": {"x": experiment("a", geometry="e_fixed", step="e_decay"),
                           "y": experiment("b", step=FIXED)},
           "figures": {"fig_x": {"experiment": "x", "title": "x"}}}
    out = resolve_includes(own, write(tmp_path / "cmp.yaml", own))
    assert "include" not in out
    # datasets by name: the own entry replaces the included one whole (b has seed 8 and d = 6,
    # nothing of base's b); included datasets no experiment uses are dropped (m), own ones kept (c)
    assert out["datasets"] == {"a": CPESPH, "b": CPESPH_B, "c": CPESPH_B}
    # school / anchors key by key, the own key first
    assert out["school"] == {"cache_dir": "mine/school", "mirror": "base_mirror"}
    assert out["anchors"] == {"cache_dir": "base/anchors"}
    # geometry and step by name: copies of the named experiment's
    assert out["experiments"]["x"]["geometry"] == SPHERE
    assert out["experiments"]["x"]["step"] == {"rule": "decaying", "alpha0": 0.5, "beta": 0.1, "dec": 4}
    assert out["experiments"]["y"]["step"] == FIXED
    # everything else is the including file's alone: no included experiment, figure, toy_size
    assert set(out["experiments"]) == {"x", "y"} and set(out["figures"]) == {"fig_x"}
    assert out["output_dir"] == "mine/" and "toy_size" not in out and "claims" not in out
    out["experiments"]["x"]["geometry"]["retraction"] = "changed"      # a copy, not a reference
    assert resolve_includes(own, tmp_path / "cmp.yaml")["experiments"]["x"]["geometry"] == SPHERE


def test_later_includes_win_and_includes_nest(tmp_path, base):
    write(tmp_path / "lib" / "other.yaml", {"include": "base.yaml",           # relative to lib/
                                            "datasets": {"a": CPESPH_B},
                                            "experiments": {"o": experiment("a", step={"rule": "fixed", "alpha": 0.25})}})
    own = {"include": ["lib/base.yaml", "lib/other.yaml"],
           "experiments": {"x": experiment("a", step="o", geometry="e_fixed"),
                           "z": experiment("m", step="e_fixed")}}
    out = resolve_includes(own, write(tmp_path / "cmp.yaml", own))
    assert out["datasets"] == {"a": CPESPH_B, "m": MBCFSTI}          # other.yaml's a, base's m
    assert out["experiments"]["x"]["step"] == {"rule": "fixed", "alpha": 0.25}
    assert out["experiments"]["x"]["geometry"] == SPHERE              # two files down
    assert out["experiments"]["z"]["step"] == FIXED


def test_an_experiment_may_name_one_of_its_own_file(tmp_path):
    cfg = {"datasets": {"a": CPESPH},
           "experiments": {"p": experiment("a", geometry=SPHERE, step=FIXED),
                           "q": experiment("a", geometry="p", step="r"),
                           "r": experiment("a", step="p")}}
    out = resolve_includes(cfg, None)
    assert out["experiments"]["q"]["geometry"] == SPHERE and out["experiments"]["q"]["step"] == FIXED
    assert cfg["experiments"]["q"]["geometry"] == "p"                 # the input is left alone


def test_paths_start_at_the_including_file_not_the_working_directory(tmp_path, base, monkeypatch):
    own = {"include": "../lib/base.yaml", "experiments": {"x": experiment("a", step="e_fixed")}}
    path = write(tmp_path / "configs" / "cmp.yaml", own)
    monkeypatch.chdir(REPO)
    assert resolve_includes(io.read_yaml(path), path)["datasets"] == {"a": CPESPH}


def one_line_error(fn) -> str:
    with pytest.raises(ConfigError) as err:
        fn()
    text = str(err.value)
    assert "\n" not in text, text
    return text


def test_missing_file_cycle_and_bad_values_are_one_line_naming_the_file(tmp_path, base):
    path = write(tmp_path / "cmp.yaml", {"include": "lib/nope.yaml", "experiments": {}})
    text = one_line_error(lambda: rflconfig.load(path))
    assert text.startswith(f"config file {path}: include 'lib/nope.yaml' not found")
    assert str(tmp_path / "lib" / "nope.yaml") in text

    a, b = tmp_path / "cyc" / "a.yaml", tmp_path / "cyc" / "b.yaml"
    write(a, {"include": "b.yaml", "experiments": {}})
    write(b, {"include": "a.yaml"})
    text = one_line_error(lambda: rflconfig.load(a))
    assert f"config file {b}: include 'a.yaml' makes a cycle ({a} -> {b} -> {a})" in text

    me = write(tmp_path / "self.yaml", {"include": "self.yaml"})
    assert "makes a cycle" in one_line_error(lambda: rflconfig.load(me))

    for bad in (3, [], ["ok.yaml", None], {"path": "x"}):
        p = write(tmp_path / "bad.yaml", {"include": bad})
        assert one_line_error(lambda: rflconfig.load(p)).startswith(f"config file {p}: include: ")

    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("just text\n")
    p = write(tmp_path / "inc_scalar.yaml", {"include": "scalar.yaml"})
    assert one_line_error(lambda: rflconfig.load(p)).startswith(f"config file {scalar}: included by {p}")


def test_a_name_that_is_no_experiment_says_which_key_and_the_closest(tmp_path, base):
    p = write(tmp_path / "cmp.yaml", {"include": "lib/base.yaml",
                                      "experiments": {"x": experiment("a", step="e_fixd")}})
    text = one_line_error(lambda: rflconfig.load(p))
    assert text.startswith(f"config file {p}: config key experiments.x.step: 'e_fixd' names no experiment")
    assert "(closest: e_fixed" in text
    loop = {"datasets": {"a": CPESPH}, "experiments": {"p": experiment("a", step="q"),
                                                       "q": experiment("a", step="p")}}
    assert "make a cycle" in one_line_error(lambda: resolve_includes(loop, None))
    nostep = {"datasets": {"a": CPESPH}, "experiments": {"p": experiment("a"), "q": experiment("a", step="p")}}
    assert "experiment 'p' has no step" in one_line_error(lambda: resolve_includes(nostep, None))


def test_the_schema_and_checks_run_on_the_merged_config(tmp_path, base):
    """An included dataset is checked as if written here; a name of a dataset the includes do
    not have is refused by the usual check, naming the key."""
    p = write(tmp_path / "cmp.yaml", {"include": "lib/base.yaml",
                                      "experiments": {"x": experiment("a", step="e_fixed", rounds=0)},
                                      "figures": {}})
    with pytest.raises(ConfigError, match=r"experiments\.x\.rounds"):
        rflconfig.load(p)
    p = write(tmp_path / "cmp2.yaml", {"include": "lib/base.yaml",
                                       "experiments": {"x": experiment("zz", step="e_fixed")},
                                       "figures": {}})
    with pytest.raises(ConfigError, match=r"experiments\.x\.dataset"):
        rflconfig.load(p)
    bad_ds = {**CPESPH, "params": {**CPESPH["params"], "S": 0}}
    write(tmp_path / "lib" / "bad.yaml", {"datasets": {"a": bad_ds}})
    p = write(tmp_path / "cmp3.yaml", {"include": "lib/bad.yaml",
                                       "experiments": {"x": experiment("a", step=FIXED)}, "figures": {}})
    with pytest.raises(ConfigError, match=r"datasets\.a\.params\.S"):
        rflconfig.load(p)


def test_the_documented_comparison_config(tmp_path):
    """docs/examples/compare.yaml: config/config.yaml's cpesph dataset and Figure 1(a)'s
    geometry and step, read here from the raw file as the oracle."""
    raw = io.read_yaml(REPO / "config" / "config.yaml")
    cfg = rflconfig.load(REPO / "docs" / "examples" / "compare.yaml")
    fig1a = raw["experiments"]["cpesph_fixed"]
    exp = cfg["experiments"]["cpesph_prox"]
    assert exp["geometry"] == fig1a["geometry"] and exp["step"] == fig1a["step"]
    assert set(cfg["datasets"]) == {"cpesph"}
    assert {k: cfg["datasets"]["cpesph"][k] for k in raw["datasets"]["cpesph"]} == raw["datasets"]["cpesph"]
    assert list(cfg["experiments"]) == ["cpesph_prox"] and list(cfg["figures"]) == ["fig_cpesph_prox"]
    assert len((REPO / "docs" / "examples" / "compare.yaml").read_text().split("\nexperiments:")[1]
               .strip().splitlines()) < 20                           # a few lines, not a copy


def test_rfl_validate_exits_2_with_one_line(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    write(a, {"include": "b.yaml", "experiments": {}})
    write(b, {"include": "a.yaml"})
    r = subprocess.run([sys.executable, "-m", "rfl", "validate", str(a)], capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "makes a cycle" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.skipif(shutil.which("snakemake") is None, reason="needs snakemake")
def test_the_workflow_reads_includes_and_refuses_a_missing_one_in_one_line(tmp_path):
    for item in ("Snakefile", "rules", "envs", "config", "docs"):
        (shutil.copytree if (REPO / item).is_dir() else shutil.copy2)(REPO / item, tmp_path / item)
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    env.update(PYTHONPATH=str(REPO), RFL_OFFLINE="1")

    def dry(configfile):
        return subprocess.run(["snakemake", "-n", "--quiet", "rules", "--cores", "1",
                               f"--configfile={configfile}"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)

    r = dry("docs/examples/compare.yaml")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "run_cpesph_prox" in r.stdout + r.stderr
    write(tmp_path / "config" / "broken.yaml", {"include": "missing.yaml", "experiments": {}})
    r = dry("config/broken.yaml")
    assert r.returncode == 2, r.stderr[-3000:]
    errors = [line for line in r.stderr.splitlines() if line.startswith("rfl: error:")]
    assert errors == [f"rfl: error: config file {tmp_path / 'config' / 'broken.yaml'}: include "
                      f"'missing.yaml' not found (no file {tmp_path / 'config' / 'missing.yaml'}); "
                      f"allowed: a config file's path relative to {tmp_path / 'config'}"]
    assert "Traceback" not in r.stderr


def test_the_readme_shows_the_documented_comparison_config():
    """The README's include example is docs/examples/compare.yaml (as YAML, comments aside)."""
    readme = (REPO / "README.md").read_text()
    block = readme.split("**Including another config**", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    assert yaml.safe_load(block) == yaml.safe_load((REPO / "docs" / "examples" / "compare.yaml").read_text())


def test_the_including_file_is_the_last_config_file_that_declares_include():
    configs = [("a.yaml", {"include": "x.yaml"}), ("b.yaml", {"datasets": {}}),
               ("c.yaml", {"include": "y.yaml"}), ("d.yaml", None)]
    assert rflconfig.including_file(configs) == "c.yaml"
    assert rflconfig.including_file(configs[1:2]) is None

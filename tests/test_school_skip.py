"""The School data handled like the other pinned files (rfl/workflow.py: absent_data): a machine
that has ILEA567.DAT in neither the cache nor a mirror and cannot fetch it leaves the School
experiments out with one line naming $RFL_SCHOOL_MIRROR, drops Table 2 (which reads only them),
and reports their claims as not run; no message of rfl names a path of its development setup."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rfl import config as rflconfig
from rfl import io
from rfl.claims.judge import judge_claim
from rfl.claims.verdicts import NOT_RUN
from rfl.data import school
from rfl.workflow import OFFLINE_ENV, Plan, absent_data, skip_lines

REPO = Path(__file__).resolve().parents[1]
LINE = "skipped {}: ILEA567.DAT not found; set RFL_SCHOOL_MIRROR=<dir> or run with internet"


def never(name):
    raise AssertionError(f"probed {name}: the network must not be asked")


@pytest.fixture
def cfg(tmp_path, monkeypatch):
    """Two School experiments on one dataset and a synthetic one; an empty cache; no mirror."""
    for var in (school.MIRROR_ENV, OFFLINE_ENV):
        monkeypatch.delenv(var, raising=False)
    return {"school": {"cache_dir": str(tmp_path / "cache"), "mirror": None},
            "anchors": {"cache_dir": str(tmp_path / "anchors"), "mirror": None},
            "datasets": {"school_r2": {"problem": "school", "params": {}},
                         "cpesph": {"problem": "cpesph", "params": {}}},
            "experiments": {"school_a": {"dataset": "school_r2"},
                            "school_b": {"dataset": "school_r2"},
                            "cpesph_fixed": {"dataset": "cpesph"}}}


def test_offline_without_the_file_each_school_experiment_is_skipped_with_one_line(cfg):
    assert absent_data(cfg, offline=True, probe=never) == {"school_a": LINE.format("school_a"),
                                                           "school_b": LINE.format("school_b")}


def test_a_copy_in_the_cache_or_the_mirror_keeps_them(cfg, tmp_path, monkeypatch):
    cached = Path(cfg["school"]["cache_dir"]) / "ILEA567.DAT"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"x")
    assert absent_data(cfg, offline=True, probe=never) == {}
    cached.unlink()
    for layout in ("ILEA567.DAT", "raw/ILEA567.DAT"):           # both layouts fetch_ilea reads
        mirror = tmp_path / layout.replace("/", "_")
        (mirror / layout).parent.mkdir(parents=True, exist_ok=True)
        (mirror / layout).write_bytes(b"x")
        monkeypatch.setenv(school.MIRROR_ENV, str(mirror))
        assert absent_data(cfg, offline=True, probe=never) == {}, layout
    monkeypatch.delenv(school.MIRROR_ENV)
    cfg["school"]["mirror"] = str(tmp_path / "ILEA567.DAT")        # the config key, too
    assert absent_data(cfg, offline=True, probe=never) == {}


def test_the_config_mirror_is_where_the_fetch_looks(cfg, tmp_path, monkeypatch):
    """As fetch_ilea: a config mirror replaces $RFL_SCHOOL_MIRROR; one without the file skips
    (the fetch job would fail on it) even when the variable's folder holds it."""
    env_mirror = tmp_path / "env"
    env_mirror.mkdir()
    (env_mirror / "ILEA567.DAT").write_bytes(b"x")
    monkeypatch.setenv(school.MIRROR_ENV, str(env_mirror))
    cfg["school"]["mirror"] = str(tmp_path / "empty")
    assert set(absent_data(cfg, offline=True, probe=never)) == {"school_a", "school_b"}


def test_online_or_reachable_keeps_them_for_the_fetch_job(cfg, monkeypatch):
    monkeypatch.setenv(OFFLINE_ENV, "0")
    assert absent_data(cfg, probe=never) == {}
    monkeypatch.delenv(OFFLINE_ENV)
    asked = []

    def probe(name):
        asked.append(name)
        return True

    assert absent_data(cfg, probe=probe) == {}
    assert asked == ["school"]                                   # one probe for both experiments
    assert set(absent_data(cfg, probe=lambda name: False)) == {"school_a", "school_b"}


def test_the_plan_drops_table2_and_the_school_figure_and_its_claims_are_not_run():
    config = rflconfig.load(REPO / "config" / "smoke.yaml")
    paper = io.read_yaml(REPO / "config" / "paper_values.yaml")
    skipped = {"school_r2": LINE.format("school_r2")}
    full, plan = Plan(config, paper), Plan(config, paper, skipped=skipped)
    assert "school_raw" in full.jobs() and "school_raw" not in plan.jobs()
    assert "table2" in full.jobs() and "table2" not in plan.jobs()
    assert not any("table2" in t or "fig3_school" in t for t in plan.targets())
    assert not any(e == "school_r2" for e, _ in plan.runs)
    assert "table1" in plan.jobs() and "heterogeneity" in plan.jobs()   # the rest stays
    spec = plan.table_spec("reproduction")
    school_claims = [c for c, claim in config["claims"].items() if claim["experiments"] == ["school_r2"]]
    assert school_claims
    for cid in school_claims:
        r = judge_claim(spec, cid, config["claims"][cid])
        if r["verdict"] is not None:                             # measurements show, never judge
            assert r["verdict"] == NOT_RUN, cid
        assert r["notes"] == [f"Not run: {skipped['school_r2']}."], cid


@pytest.mark.skipif(shutil.which("snakemake") is None, reason="needs snakemake")
def test_the_smoke_workflow_offline_without_school_data_prints_one_line(tmp_path):
    """A dry run of the smoke config, offline, with no School copy anywhere: one skip line
    naming the variable, no School job, exit status 0."""
    for item in ("Snakefile", "rules", "envs", "config"):
        (shutil.copytree if (REPO / item).is_dir() else shutil.copy2)(REPO / item, tmp_path / item)
    env = {k: v for k, v in os.environ.items() if k not in (school.MIRROR_ENV, "SNAKEMAKE_PROFILE")}
    env.update(PYTHONPATH=str(REPO), **{OFFLINE_ENV: "1"})
    r = subprocess.run(["snakemake", "-n", "--quiet", "rules", "--cores", "1", "--configfile",
                        "config/smoke.yaml"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout + r.stderr
    assert [line for line in out.splitlines() if "ILEA567" in line] == [LINE.format("school_r2")]
    assert not re.search(r"\b(school_raw|run_school_r2|table2)\b", out)
    assert re.search(r"\brun_cpesph_fixed\b", out)


def test_no_message_names_a_path_of_the_development_setup():
    """What a user runs (rfl/, the Snakefile, the rules) names only what a user has: the mirror
    variables, the cache, the pinned URLs, never this project's own machine."""
    files = [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk")),
             *sorted((REPO / "rfl").rglob("*.py"))]
    found = [f"{f.relative_to(REPO)}:{i}: {line.strip()}" for f in files
             for i, line in enumerate(f.read_text().splitlines(), 1)
             if "/work/" in line or "shared/" in line]
    assert found == []


def test_the_fetch_error_names_the_variable_and_where_the_file_goes(tmp_path, monkeypatch):
    monkeypatch.delenv(school.MIRROR_ENV, raising=False)
    monkeypatch.setattr(school, "_download", lambda url, dest: (_ for _ in ()).throw(OSError("offline")))
    with pytest.raises(school.DataUnavailableError) as err:
        school.fetch_ilea(tmp_path / "cache")
    text = str(err.value)
    assert "\n" not in text and school.MIRROR_ENV in text and str(tmp_path / "cache" / "ILEA567.DAT") in text


def test_one_printed_line_per_missing_file_naming_its_experiments():
    school_line = "ILEA567.DAT not found; set RFL_SCHOOL_MIRROR=<dir> or run with internet"
    ri_line = "RI.mat not found; set RFL_ANCHORS_MIRROR=<dir> or run with internet"
    names = [f"school_{i}" for i in range(7)]
    skipped = {n: f"skipped {n}: {school_line}" for n in names[:2]}
    skipped["cfmspd_pathmnist"] = f"skipped cfmspd_pathmnist: {ri_line}"
    skipped.update({n: f"skipped {n}: {school_line}" for n in names[2:]})
    assert skip_lines(skipped) == [f"skipped school_0, school_1, school_2 and 4 more: {school_line}",
                                   f"skipped cfmspd_pathmnist: {ri_line}"]
    three = {n: f"skipped {n}: {school_line}" for n in names[:3]}
    assert skip_lines(three) == [f"skipped school_0, school_1, school_2: {school_line}"]
    assert skip_lines({}) == []


@pytest.mark.skipif(shutil.which("snakemake") is None, reason="needs snakemake")
def test_a_failed_fetch_prints_its_error_on_the_console(tmp_path):
    """A School copy that can be found but is wrong (its checksum differs) fails the fetch job;
    the workflow profile shows the job's one-line error on the console, not only in its log."""
    for item in ("Snakefile", "rules", "envs", "config", "profiles"):
        (shutil.copytree if (REPO / item).is_dir() else shutil.copy2)(REPO / item, tmp_path / item)
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "ILEA567.DAT").write_text("not the School data\n")
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    env.update(PYTHONPATH=str(REPO), **{OFFLINE_ENV: "1", school.MIRROR_ENV: str(mirror)})
    r = subprocess.run(["snakemake", "--cores", "1", ".smoke/datasets/school/ILEA567.DAT",
                        "--configfile=config/smoke.yaml"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode != 0
    errors = [line for line in (r.stdout + r.stderr).splitlines() if line.startswith("rfl: error:")]
    assert len(errors) == 1 and f"{mirror / 'ILEA567.DAT'} has sha256" in errors[0], r.stderr[-3000:]
    assert school.MIRROR_ENV in errors[0]

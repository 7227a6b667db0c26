"""Bad inputs: none is silently used, silently dropped or ends in a traceback.

Each refusal is one line naming the key or file, what is wrong and what is allowed, raised
before any work starts (the CLI exits with status 2):

* a cached School file whose sha256 is not the pinned one (edited, truncated) is deleted and
  refused where the data step reads it;
* run tables and their metadata are checked (``rfl.io.read_run_table``) before a figure or
  table uses them;
* config entries that would overwrite or shadow each other (run ids, heterogeneity labels,
  built-in figure names), Table 1/2 pointing at the wrong experiments;
* output directories outside the working tree or in the system's directories;
* datasets too large for this machine's memory, and integers too large for a float;
* command lines: unknown options, unwritable outputs, Ctrl-C, missing or damaged inputs.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rfl import cli, io, runner
from rfl import config as rflconfig
from rfl.data import school as sch
from rfl.registry import PROBLEMS

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "config" / "smoke.yaml"
FUZZ = settings(max_examples=50, deadline=None,   # derandomized by the "ci" profile (conftest)
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def _mirror() -> Path | None:
    env = os.environ.get(sch.MIRROR_ENV, "").strip()
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared" / "datasets" / "school"]:
        found = sch._find_in_mirror(cand)
        if found is not None:
            return found
    return None


#: the good ILEA567.DAT (read before any test points $RFL_SCHOOL_MIRROR elsewhere)
GOOD_DAT = _mirror()


def _call(argv) -> tuple[int, str]:
    """(status, stderr) of ``rfl argv`` run in this process."""
    import contextlib
    import io as _io

    err = _io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(_io.StringIO()):
        try:
            status = cli.main([str(a) for a in argv])
        except SystemExit as exc:
            status = exc.code
    return status, err.getvalue()


def _one_line(status, err, *words):
    lines = err.strip().splitlines()
    assert status == 2, (status, err)
    assert len(lines) == 1 and lines[0].startswith("rfl: error: "), err
    assert "Traceback" not in err
    for w in words:
        assert w in err, (w, err)


def _smoke() -> dict:
    return yaml.safe_load(SMOKE.read_text())


def _refused(cfg, *words):
    with pytest.raises(rflconfig.ConfigError) as ei:
        rflconfig.validate(cfg)
    msg = str(ei.value)
    for w in words:
        assert w in msg, (w, msg)
    return msg


# ---- 1a. the School file is verified where the data step reads it ------------------------
@pytest.fixture
def school_spec(tmp_path):
    cfg = rflconfig.load(SMOKE)
    name = next(n for n, d in cfg["datasets"].items() if d["problem"] == "school")
    spec = rflconfig.dataset_spec(cfg, name, "seed0")
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return path


@pytest.mark.skipif(GOOD_DAT is None, reason=f"needs the School data: set {sch.MIRROR_ENV} to a directory holding {sch.ILEA_FILENAME}")
@pytest.mark.parametrize("damage", ["edited", "truncated"])
def test_a_bad_cached_school_file_is_deleted_and_refused(tmp_path, school_spec, damage, monkeypatch):
    monkeypatch.setenv(sch.MIRROR_ENV, str(tmp_path / "no-mirror"))
    good = GOOD_DAT.read_bytes()
    bad = bytearray(good)
    if damage == "edited":
        bad[4] = ord("9") if bad[4] != ord("9") else ord("8")   # one exam score digit
    else:
        bad = bad[: len(bad) // 2]
    cached = tmp_path / "cache" / sch.ILEA_FILENAME
    cached.parent.mkdir()
    cached.write_bytes(bytes(bad))
    out = tmp_path / "data.npz"
    status, err = _call(["data", school_spec, out, cached])
    _one_line(status, err, str(cached), "sha256", "deleted", sch.MIRROR_ENV, "rerun")
    assert not cached.exists(), "the bad copy must not stay in the cache"
    assert not out.exists()


@pytest.mark.skipif(GOOD_DAT is None, reason=f"needs the School data: set {sch.MIRROR_ENV} to a directory holding {sch.ILEA_FILENAME}")
def test_a_bad_school_file_in_the_mirror_is_refused_but_kept(tmp_path, school_spec, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / sch.ILEA_FILENAME).write_bytes(GOOD_DAT.read_bytes()[:1000])
    monkeypatch.setenv(sch.MIRROR_ENV, str(mirror))
    status, err = _call(["data", school_spec, tmp_path / "d.npz", mirror / sch.ILEA_FILENAME])
    _one_line(status, err, "sha256", "mirror")
    assert (mirror / sch.ILEA_FILENAME).is_file()


@pytest.mark.skipif(GOOD_DAT is None, reason=f"needs the School data: set {sch.MIRROR_ENV} to a directory holding {sch.ILEA_FILENAME}")
def test_the_good_school_file_is_used(tmp_path, school_spec):
    cached = tmp_path / sch.ILEA_FILENAME
    shutil.copy(GOOD_DAT, cached)
    status, err = _call(["data", school_spec, tmp_path / "d.npz", cached])
    assert status == 0, err
    assert cached.is_file() and (tmp_path / "d.npz").is_file()


# ---- 1b. run tables are checked before a figure or table uses them -----------------------
@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    """A real run of the smoke config (few rounds): RUN.csv + RUN.meta.json, and a figure spec."""
    d = tmp_path_factory.mktemp("run")
    spec = dict(rflconfig.expand_runs(rflconfig.load(SMOKE))[0], rounds=6)
    runner.generate_data(spec["dataset"], d / "data.npz")
    runner.compute_reference(spec["dataset"], d / "data.npz", d / "ref.npz")
    runner.run(spec, d / "data.npz", d / "ref.npz", d / "run.csv", d / "run.meta.json")
    (d / "figure.json").write_text(json.dumps({"title": "t", "metrics": ["excess_risk"]}))
    return d


def _copy_run(good: Path, dest: Path) -> tuple[Path, Path]:
    dest.mkdir(parents=True, exist_ok=True)
    table, meta = dest / "run.csv", dest / "run.meta.json"
    shutil.copy(good / "run.csv", table)
    shutil.copy(good / "run.meta.json", meta)
    return table, meta


def _drop_column(t, m):
    df = pd.read_csv(t)
    df.drop(columns=["excess_risk"]).to_csv(t, index=False)


def _gap_in_rounds(t, m):
    df = pd.read_csv(t)
    df.loc[3, "round"] = 7
    df.to_csv(t, index=False)


def _cut_mid_row(t, m):
    text = t.read_text()
    t.write_text(text[: text.rindex(",")])              # the last row stops inside its fields


def _short_of_metadata(t, m):
    lines = t.read_text().splitlines(keepends=True)
    t.write_text("".join(lines[:-2]))                   # whole rows missing at the end


def _nan_in_ok_row(t, m):
    df = pd.read_csv(t)
    df.loc[2, "cost"] = np.nan
    df.to_csv(t, index=False)


def _meta_not_json(t, m):
    m.write_text(m.read_text()[:40])


def _meta_without_spec(t, m):
    meta = json.loads(m.read_text())
    del meta["spec"]
    m.write_text(json.dumps(meta))


def _meta_rounds_mismatch(t, m):
    meta = json.loads(m.read_text())
    meta["rounds_completed"] -= 1
    m.write_text(json.dumps(meta))


def _empty_table(t, m):
    t.write_text("")


def _header_only(t, m):
    t.write_text(t.read_text().splitlines()[0] + "\n")


def _diverged_but_meta_ok(t, m):
    df = pd.read_csv(t)
    df.loc[len(df) - 1, "status"] = "diverged"
    df.to_csv(t, index=False)


DAMAGES = {f.__name__.strip("_"): f for f in (
    _drop_column, _gap_in_rounds, _cut_mid_row, _short_of_metadata, _nan_in_ok_row, _meta_not_json,
    _meta_without_spec, _meta_rounds_mismatch, _empty_table, _header_only, _diverged_but_meta_ok)}


def test_a_good_run_table_is_read_and_drawn(good_run, tmp_path):
    table, meta = io.read_run_table(good_run / "run.csv")
    assert len(table) == meta["rounds_completed"] + 1 == 7
    status, err = _call(["figure", good_run / "figure.json", tmp_path / "f.pdf", good_run / "run.csv"])
    assert status == 0, err
    assert (tmp_path / "f.pdf").is_file()


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_run_table_is_refused_naming_the_file(good_run, tmp_path, damage):
    table, meta = _copy_run(good_run, tmp_path / "runs")
    DAMAGES[damage](table, meta)
    with pytest.raises(io.RunTableError) as ei:
        io.read_run_table(table)
    assert str(table) in str(ei.value) or str(meta) in str(ei.value)
    out = tmp_path / "f.pdf"
    status, err = _call(["figure", good_run / "figure.json", out, table])
    _one_line(status, err, "run")
    assert not out.exists() and not out.with_suffix(".png").exists()


def test_within_memoised_runs_each_table_is_parsed_and_checked_once(good_run, tmp_path, monkeypatch):
    table, meta = _copy_run(good_run, tmp_path / "runs")
    reads, checks = [], []
    read, check = io.RunFiles.read, io.check_run_table
    monkeypatch.setattr(io.RunFiles, "read", lambda self, p: reads.append(p) or read(self, p))
    monkeypatch.setattr(io, "check_run_table", lambda t, m, p: checks.append(p) or check(t, m, p))
    first = io.read_run_table(table)
    with io.memoised_runs():
        a, meta_a = io.read_run_table(table)
        a.loc[0, "cost"] = -1.0                       # a reader that edits its copy ...
        meta_a["spec"]["experiment"] = "edited"
        b, meta_b = io.read_run_table(str(table))     # ... changes nothing the next one gets
    pd.testing.assert_frame_equal(b, first[0])
    assert meta_b == first[1]
    assert len(reads) == len(checks) == 2             # once before the block, once within
    io.read_run_table(table)                          # after the block: read anew
    assert len(reads) == len(checks) == 3


def test_memoised_runs_keep_refusing_a_damaged_table_and_read_each_source_apart(good_run, tmp_path):
    table, meta = _copy_run(good_run, tmp_path / "runs")
    _short_of_metadata(table, meta)

    class Fixed(io.RunFiles):                         # another source: the good run's files
        def read(self, path):
            return io.RunFiles.read(self, good_run / "run.csv")

    with io.memoised_runs():
        for _ in range(2):
            with pytest.raises(io.RunTableError):
                io.read_run_table(table)
        with io.run_source(Fixed()):
            assert len(io.read_run_table(table)[0]) == 7
        with pytest.raises(io.RunTableError):
            io.read_run_table(table)


def _figure_batch(tmp_path, good_run, items) -> Path:
    spec = tmp_path / "batch.json"
    spec.write_text(json.dumps({"figures": [{"spec": str(good_run / "figure.json"), "pdf": str(pdf),
                                             "runs": [str(r) for r in runs]} for pdf, runs in items]}))
    return spec


def test_a_figure_batch_draws_each_figure_as_rfl_figure_does(good_run, tmp_path):
    other, _ = _copy_run(good_run, tmp_path / "other")
    alone = tmp_path / "alone"
    for name, runs in (("a", [good_run / "run.csv"]), ("b", [good_run / "run.csv", other])):
        status, err = _call(["figure", good_run / "figure.json", alone / f"{name}.pdf", *runs])
        assert status == 0, err
    batch = _figure_batch(tmp_path, good_run, [(tmp_path / "batch" / "a.pdf", [good_run / "run.csv"]),
                                               (tmp_path / "batch" / "b.pdf", [good_run / "run.csv", other])])
    status, err = _call(["figures", batch])
    assert status == 0, err
    for name in ("a", "b"):                   # the same pixels as each figure drawn alone
        assert (tmp_path / "batch" / f"{name}.pdf").is_file()
        assert (tmp_path / "batch" / f"{name}.png").read_bytes() == (alone / f"{name}.png").read_bytes()


@pytest.mark.parametrize("damage", ["run_table", "missing_run", "missing_key", "not_a_mapping", "no_runs",
                                    "output_dir"])
def test_a_bad_figure_batch_is_refused_before_any_figure_is_drawn(good_run, tmp_path, damage):
    table, meta = _copy_run(good_run, tmp_path / "runs")
    first = (tmp_path / "out" / "a.pdf", [good_run / "run.csv"])
    second = (tmp_path / "out" / "b.pdf", [table])
    if damage == "run_table":
        _short_of_metadata(table, meta)
    elif damage == "missing_run":
        second = (second[0], [tmp_path / "runs" / "absent.csv"])
    elif damage == "no_runs":
        second = (second[0], [])
    elif damage == "output_dir":
        (tmp_path / "out" / "b.pdf").mkdir(parents=True)
    batch = _figure_batch(tmp_path, good_run, [first, second])
    if damage in ("missing_key", "not_a_mapping"):
        spec = json.loads(batch.read_text())
        spec["figures"][1] = ["b.pdf"] if damage == "not_a_mapping" else \
            {k: v for k, v in spec["figures"][1].items() if k != "pdf"}
        batch.write_text(json.dumps(spec))
    status, err = _call(["figures", batch])
    words = {"run_table": [str(table)], "missing_run": ["figures[1]", "absent.csv"],
             "missing_key": ["figures[1]", "'pdf'"], "not_a_mapping": ["figures[1]", "mapping"],
             "no_runs": ["figures[1]", "runs"], "output_dir": ["figures[1]", "directory"]}[damage]
    _one_line(status, err, *words)
    assert not (tmp_path / "out" / "a.pdf").exists() and not (tmp_path / "out" / "a.png").exists()


@pytest.mark.parametrize("command", ["heterogeneity", "lsa", "table2"])
def test_the_studies_refuse_a_damaged_run_table(good_run, tmp_path, command):
    table, meta = _copy_run(good_run, tmp_path / "runs")
    _short_of_metadata(table, meta)
    specs = {"heterogeneity": {"experiments_by_name": {json.loads(meta.read_text())["spec"]["experiment"]: "x"},
                               "tail": 0.2},
             "lsa": {"experiments": ["x"], "settings": ["homogeneous"], "tail": 0.1},
             "table2": {"experiments": {"2": "x"}, "paper": {}}}
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(specs[command]))
    outs = {"heterogeneity": [tmp_path / "h.pdf", tmp_path / "h.csv"],
            "lsa": [tmp_path / "l.csv"], "table2": [tmp_path / "t.csv"]}[command]
    extra = ["--figures", tmp_path / "l.pdf"] if command == "lsa" else []
    status, err = _call([command, spec, *outs, table, *extra])
    _one_line(status, err, str(table))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs", "spec.json"], "nothing written"


@FUZZ
@given(data=st.data())
def test_fuzz_corrupted_run_tables(good_run, tmp_path_factory, data):
    d = tmp_path_factory.mktemp("fuzz")
    table, meta = _copy_run(good_run, d)
    target = data.draw(st.sampled_from([table, meta]))
    raw = bytearray(target.read_bytes())
    how = data.draw(st.sampled_from(["truncate", "flip", "delete_line", "swap_lines"]))
    if how == "truncate":
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    elif how == "flip":
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.sampled_from(list(b"0123456789,.-naNx\n\"{} ")))
    else:
        lines = bytes(raw).splitlines(keepends=True)
        i = data.draw(st.integers(0, len(lines) - 1))
        if how == "delete_line":
            del lines[i]
        else:
            j = data.draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        raw = bytearray(b"".join(lines))
    target.write_bytes(bytes(raw))
    try:
        io.read_run_table(table)
    except io.RunTableError as exc:
        assert "\n" not in str(exc)
    status, err = _call(["figure", good_run / "figure.json", d / "f.pdf", table])
    assert status in (0, 2), err
    assert "Traceback" not in err


# ---- 2. config entries that would overwrite or shadow each other --------------------------
def test_two_methods_with_one_run_id_are_refused():
    cfg = _smoke()
    methods = cfg["experiments"]["cpesph_fixed"]["methods"]
    methods.append(copy.deepcopy(methods[0]))
    _refused(cfg, "experiments.cpesph_fixed.methods.", "overwrite")


def test_a_method_variant_differing_only_in_an_option_is_refused():
    cfg = _smoke()
    exp = next(e for e in cfg["experiments"].values()
               if any(m["algorithm"] == "rfedproj" for m in e["methods"]))
    m = next(m for m in exp["methods"] if m["algorithm"] == "rfedproj")
    exp["methods"].append(dict(copy.deepcopy(m), server_step=0.5))
    _refused(cfg, "overwrite", "server_step")


def test_a_K_listed_twice_is_refused():
    cfg = _smoke()
    m = next(m for m in cfg["experiments"]["cpesph_fixed"]["methods"] if "K" in m)
    m["K"] = [m["K"][0], m["K"][0]]
    _refused(cfg, "twice")


def test_two_heterogeneity_labels_of_one_experiment_are_refused():
    cfg = _smoke()
    hetero = cfg["heterogeneity"]["experiments"]
    hetero["again"] = next(iter(hetero.values()))
    _refused(cfg, "heterogeneity.experiments.again", "one label per experiment")


@pytest.mark.parametrize("name", ["fig_heterogeneity", "fig_fedlsa_scafflsa_homogeneous"])
def test_a_figure_named_like_a_built_in_one_is_refused(name):
    cfg = _smoke()
    cfg["figures"][name] = next(iter(cfg["figures"].values()))
    _refused(cfg, f"figures.{name}", "draws itself")


def test_table1_rows_must_point_at_the_right_step_rules():
    cfg = _smoke()
    row = cfg["tables"]["table1"]["rows"][0]
    row["fixed"], row["decaying"] = row["decaying"], row["fixed"]
    msg = _refused(cfg, "tables.table1.rows.0.fixed", "tables.table1.rows.0.decaying")
    assert "step rule 'decaying', not 'fixed'" in msg


def test_table2_label_must_be_the_datasets_r():
    cfg = _smoke()
    t2 = cfg["tables"]["table2"]["experiments"]
    label, ename = next(iter(t2.items()))
    t2[str(int(label) + 1)] = t2.pop(label)
    _refused(cfg, f"tables.table2.experiments.{int(label) + 1}", f"params.r = {label}")


def test_run_ids_and_specs_of_the_shipped_configs_are_unchanged():
    """The new checks refuse; they never rename a run of a valid config."""
    for name in ("config", "smoke"):
        runs = rflconfig.expand_runs(rflconfig.load(REPO / "config" / f"{name}.yaml"))
        ids = [(r["experiment"], r["run_id"]) for r in runs]
        assert len(ids) == len(set(ids))


# ---- 3. paths -------------------------------------------------------------------------------
@pytest.mark.parametrize("key,value,words", [
    ("output_dir", "../", ["leaves the working directory"]),
    ("output_dir", "a/../../b/", ["leaves the working directory"]),
    ("output_dir", "/", ["system directory"]),
    ("output_dir", "/etc/", ["system directory"]),
    ("output_dir", "/usr/share/", ["system directory"]),
    ("output_dir", "/no/such/dir/", ["does not exist"]),
    ("cache_dir", "../elsewhere", ["school.cache_dir", "leaves the working directory"]),
    ("cache_dir", "/etc/school", ["school.cache_dir", "system directory"]),
])
def test_output_directories_outside_the_tree_are_refused(key, value, words):
    cfg = _smoke()
    if key == "cache_dir":
        cfg.setdefault("school", {})["cache_dir"] = value
    else:
        cfg[key] = value
    _refused(cfg, *words)


def test_an_existing_writable_absolute_output_dir_is_accepted(tmp_path):
    cfg = _smoke()
    cfg["output_dir"] = str(tmp_path) + "/"
    assert rflconfig.validate(cfg)["output_dir"] == str(tmp_path) + "/"


@pytest.mark.skipif(shutil.which("snakemake") is None, reason="needs snakemake")
def test_snakemake_dry_run_refuses_an_escaping_output_dir_before_writing(tmp_path):
    work = tmp_path / "wf"
    work.mkdir()
    for item in ("Snakefile", "rules", "config", "envs"):
        src = REPO / item
        if src.is_dir():
            shutil.copytree(src, work / item)
        elif src.exists():
            shutil.copy(src, work / item)
    cfg = _smoke()
    cfg["output_dir"] = "../escaped/"
    (work / "config" / "bad.yaml").write_text(yaml.safe_dump(cfg))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run(["snakemake", "-n", "--cores", "1", "--configfile", "config/bad.yaml"],
                       cwd=work, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode != 0
    assert "config key output_dir" in r.stdout + r.stderr
    assert not (tmp_path / "escaped").exists() and not (work / "results").exists()


# ---- 4. sizes -------------------------------------------------------------------------------
def test_a_dataset_too_large_for_memory_is_refused_naming_key_and_estimate():
    cfg = _smoke()
    cfg["datasets"]["cpesph"]["params"]["S"] = 10**30
    msg = _refused(cfg, "datasets.cpesph.params.S = 1e30", "GiB", "this machine has")
    assert len(msg.splitlines()) == 2


@pytest.mark.parametrize("where", ["datasets.cpesph.params.S", "datasets.cpesph.params.nu",
                                   "experiments.cpesph_fixed.rounds",
                                   "experiments.cpesph_fixed.batch_size",
                                   "experiments.cpesph_fixed.seeds.0",
                                   "experiments.cpesph_fixed.step.alpha"])
def test_huge_integers_never_overflow(where):
    cfg = _smoke()
    *path, last = where.split(".")
    obj = cfg
    for p in path:
        obj = obj[int(p)] if isinstance(obj, list) else obj[p]
    if isinstance(obj, list):
        obj[int(last)] = 10**400
    else:
        obj[last] = 10**400
    try:
        rflconfig.validate(cfg)
    except rflconfig.ConfigError as exc:
        assert "0" * 30 not in str(exc), "huge integers are quoted in short"


def test_every_problem_estimates_its_memory():
    for name, cls in PROBLEMS.items():
        need = cls.memory_bytes(cls.test_params)
        assert isinstance(need, int) and need > 0, name


def test_memory_check_uses_the_machine_size():
    cfg = rflconfig.validate(_smoke())
    assert rflconfig._memory_errors(cfg, available=1) != []
    assert rflconfig._memory_errors(cfg, available=2**60) == []


# ---- 5. the command line ------------------------------------------------------------------
def test_an_unknown_option_before_the_command_is_named(tmp_path):
    status, err = _call(["--bogus", "validate", tmp_path / "missing.yaml"])
    _one_line(status, err, "--bogus")
    status, err = _call(["validate", tmp_path / "missing.yaml", "--bogus"])
    _one_line(status, err, "--bogus")


def test_output_paths_that_cannot_be_written_are_refused_first(good_run, tmp_path):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir.pdf").mkdir()
    fig = good_run / "figure.json"
    for out, words in ((tmp_path / "adir.pdf", ["is a directory"]),
                       (tmp_path / "afile" / "f.pdf", ["is a file, not a directory"])):
        status, err = _call(["figure", fig, out, good_run / "run.csv"])
        _one_line(status, err, str(out), *words)
    (tmp_path / "t.png").mkdir()          # the PNG written beside the PDF
    status, err = _call(["figure", fig, tmp_path / "t.pdf", good_run / "run.csv"])
    _one_line(status, err, "t.png")
    assert not (tmp_path / "t.pdf").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_an_unwritable_output_directory_is_refused(good_run, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        status, err = _call(["figure", good_run / "figure.json", ro / "f.pdf", good_run / "run.csv"])
        _one_line(status, err, "not writable")
    finally:
        ro.chmod(0o755)


def test_ctrl_c_gives_one_line_and_status_130(monkeypatch, tmp_path):
    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "read_spec", interrupted)
    (tmp_path / "s.json").write_text("{}")
    status, err = _call(["table1", tmp_path / "s.json", tmp_path / "t.csv"])
    assert status == 130
    assert len(err.strip().splitlines()) == 1 and "interrupted" in err


def test_studies_without_run_tables_are_refused(tmp_path):
    (tmp_path / "l.json").write_text(json.dumps({"experiments": ["x"], "settings": ["homogeneous"],
                                                 "tail": 0.1}))
    status, err = _call(["lsa", tmp_path / "l.json", tmp_path / "l.csv", "--figures", tmp_path / "l.pdf"])
    _one_line(status, err, "no run table")
    assert not (tmp_path / "l.csv").exists()


def test_reproduction_with_a_missing_run_table_is_refused(good_run, tmp_path):
    spec = {"config": {}, "paper": {}, "tables": {},
            "runs": {"e": [str(good_run / "run.csv"), str(tmp_path / "gone.csv")]}}
    (tmp_path / "r.json").write_text(json.dumps(spec))
    status, err = _call(["reproduction", tmp_path / "r.json", tmp_path / "r.md"])
    _one_line(status, err, "gone")
    assert not (tmp_path / "r.md").exists()


def test_numba_caches_to_a_user_directory_when_the_package_is_read_only(monkeypatch, tmp_path):
    from rfl.problems import _kernels

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    here = os.path.dirname(os.path.abspath(_kernels.__file__))
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, m: False if str(p).startswith(here) else real(p, m))
    _kernels._numba_cache_dir()
    assert os.environ["NUMBA_CACHE_DIR"] == str(tmp_path / "rfl" / "numba")
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/mine")
    _kernels._numba_cache_dir()
    assert os.environ["NUMBA_CACHE_DIR"] == "/mine"


def test_numba_keeps_its_in_tree_cache_when_the_package_is_writable(tmp_path):
    """A fresh process, the package writable: no NUMBA_CACHE_DIR is set (numba caches beside
    the kernels), and numba's configuration agrees with the environment."""
    code = ("import os; os.environ.pop('NUMBA_CACHE_DIR', None); import sys; "
            "from rfl.problems import _kernels; import numba; "
            "print(numba.config.CACHE_DIR == os.environ.get('NUMBA_CACHE_DIR', ''))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr


TOKENS = ["validate", "data", "datasets", "reference", "run", "runs", "figure", "fetch-school", "table1",
          "table2", "heterogeneity", "lsa", "reproduction", "--bogus", "--figures", "--specs",
          "--data", "--references", "--raw", "-x", "--", "{d}/missing.json", "{d}/empty.json", "{d}/list.json",
          "{d}/run.csv", "{d}/out.csv", "{d}/out.pdf", "{d}", "{d}/run.meta.json", "{SMOKE}", ""]


@FUZZ
@given(argv=st.lists(st.sampled_from(TOKENS), max_size=7))
def test_fuzz_command_lines(good_run, tmp_path_factory, argv):
    d = tmp_path_factory.mktemp("argv")
    (d / "empty.json").write_text("{}")
    (d / "list.json").write_text("[1]")
    _copy_run(good_run, d)
    status, err = _call([a.format(d=d, SMOKE=SMOKE) for a in argv])
    assert status in (0, 2), (argv, status, err)
    assert "Traceback" not in err


# ---- rfl datasets: several instances of one dataset in one process -------------------------------
def _instance_specs(tmp_path, dataset="cpesph_het", seeds=(0, 1)) -> list[Path]:
    cfg = rflconfig.load(SMOKE)
    cfg["datasets"][dataset]["resample"] = True         # one instance per seed
    paths = []
    for seed in seeds:
        inst = rflconfig.instance_name(cfg["datasets"][dataset], seed)
        p = tmp_path / f"{inst}.json"
        p.write_text(json.dumps(rflconfig.dataset_spec(cfg, dataset, inst)))
        paths.append(p)
    return paths


def test_datasets_writes_what_rfl_data_writes_for_each_instance(tmp_path):
    specs = _instance_specs(tmp_path)
    data = [tmp_path / f"d{i}.npz" for i in range(2)]
    refs = [tmp_path / f"r{i}.npz" for i in range(2)]
    status, err = _call(["datasets", "--specs", *specs, "--data", *data, "--references", *refs])
    assert status == 0, err
    for spec, d, r in zip(specs, data, refs):
        status, err = _call(["data", spec, tmp_path / "one.npz", "--reference", tmp_path / "one_ref.npz"])
        assert status == 0, err
        for got, want in ((d, tmp_path / "one.npz"), (r, tmp_path / "one_ref.npz")):
            a, b = io.read_arrays(got), io.read_arrays(want)
            assert a.keys() == b.keys()
            for k in set(a) - {"seconds"}:                   # the solver's wall time differs
                np.testing.assert_array_equal(a[k], b[k], err_msg=f"{got}: {k}")
    # the instances differ (each its own seed), so no file was written twice
    assert not np.array_equal(io.read_arrays(data[0])["Z"], io.read_arrays(data[1])["Z"])


def test_datasets_refuses_bad_input_before_writing_anything(tmp_path):
    specs = _instance_specs(tmp_path)
    data = [tmp_path / f"d{i}.npz" for i in range(2)]
    refs = [tmp_path / f"r{i}.npz" for i in range(2)]
    # lists of different lengths
    _one_line(*_call(["datasets", "--specs", *specs, "--data", *data, "--references", refs[0]]),
              "--specs, --data and --references must have the same length")
    # a raw file the problem does not read
    _one_line(*_call(["datasets", "--specs", *specs, "--data", *data, "--references", *refs,
                      "--raw", specs[0]]), str(specs[0]), "reads 0 raw file(s)", "--raw")
    # the second spec is broken: the first instance is not written either
    bad = json.loads(specs[1].read_text())
    bad["problem"] = "no_such_problem"
    specs[1].write_text(json.dumps(bad))
    _one_line(*_call(["datasets", "--specs", *specs, "--data", *data, "--references", *refs]),
              str(specs[1]), "no_such_problem", "allowed:")
    # an output that is no .npz
    _one_line(*_call(["datasets", "--specs", specs[0], "--data", tmp_path / "d.csv",
                      "--references", refs[0]]), "--data", ".npz")
    assert not any(p.exists() for p in data + refs)

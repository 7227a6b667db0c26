"""The results table (rfl/results.py), `rfl merge` and `rfl compare`.

A small synthetic config (the smoke config's two CPESph experiments: fixed step, three methods x
two seeds; decaying step, two methods x two seeds) is run in process three times: in full, and
split in two halves (one experiment each) in other output directories, as two machines would.
Then: the merged table of the halves equals the full run's table (every column but the
machine's clock); a run in two tables with the same result is kept once, with another result it
is refused in one line; the report (REPRODUCTION.md, its HTML, claims.json, the claim pages)
drawn from a merged table is byte for byte the one drawn from the runs' files, with the files
gone. Bad input: one line, exit status 2.
"""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from rfl import cli, io, runner
from rfl import config as rflconfig
from rfl.results import read_results, runs_of, spec_hash
from rfl.workflow import Plan

REPO = Path(__file__).resolve().parents[1]
SMOKE = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
PAPER = io.read_yaml(REPO / "config" / "paper_values.yaml")
EXPERIMENTS = ("cpesph_fixed", "cpesph_decaying")
CLAIMS = ("fig1a_linear", "fig1a_decaying", "fig1a_larger_k", "fig1a_ags_avg")
FIGURES = ("fig1a_cpesph_fixed", "fig1d_cpesph_decaying")
#: what differs between two executions of one spec: the machine's clock
CLOCK_COLUMNS = ["wall_time", "env.start_time", "env.duration_s"]
CLOCK_META = ("start_time", "duration_s")


def _config(out: Path, experiments=EXPERIMENTS) -> dict:
    """The smoke config's ``experiments`` (with their figures and, for both, the claims on them),
    validated."""
    out.mkdir(parents=True, exist_ok=True)
    return rflconfig.validate(_raw_config(out, experiments))


def _raw_config(out, experiments=EXPERIMENTS) -> dict:
    cfg = {"output_dir": f"{out}/", "datasets": {"cpesph": SMOKE["datasets"]["cpesph"]},
           "experiments": {e: copy.deepcopy(SMOKE["experiments"][e]) for e in experiments},
           "figures": {f: SMOKE["figures"][f] for f in FIGURES
                       if SMOKE["figures"][f]["experiment"] in experiments}}
    if set(experiments) == set(EXPERIMENTS):
        cfg["claims"] = {c: SMOKE["claims"][c] for c in CLAIMS}
        cfg["sources"] = copy.deepcopy(SMOKE["sources"])     # the sources the claims name
    return cfg


def _execute(plan: Plan) -> list[str]:
    """Data, references and every run of ``plan``, in process; its run tables."""
    for name, instance in rflconfig.dataset_instances(plan.config):
        ds = rflconfig.dataset_spec(plan.config, name, instance)
        data = plan.path(f"results/data/{name}/{instance}.npz")
        runner.generate_data(ds, data)
        runner.compute_reference(ds, data, plan.path(f"results/reference/{name}/{instance}.npz"))
    for e in plan.experiments:
        files = [plan.run_files(e, kind) for kind in ("data", "reference", "csv", "meta.json")]
        specs = [spec for (x, _), spec in plan.runs.items() if x == e]
        runner.run_setting(list(zip(specs, *files)))
    return plan.all_run_tables()


def _cli(*argv) -> int:
    try:
        return cli.main([str(a) for a in argv])
    except SystemExit as exc:
        return exc.code


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{full, a, b}: (plan, run tables, results table) of the full config and its two halves,
    and the merged table of the halves."""
    root = tmp_path_factory.mktemp("results")
    out = {}
    for name, experiments in (("full", EXPERIMENTS), ("a", EXPERIMENTS[:1]), ("b", EXPERIMENTS[1:])):
        plan = Plan(_config(root / name, experiments), PAPER)
        tables = _execute(plan)
        table = root / f"{name}.parquet"
        assert _cli("results", table, *tables) == 0
        out[name] = (plan, tables, table)
    out["merged"] = root / "merged.parquet"
    assert _cli("merge", out["a"][2], out["b"][2], "-o", out["merged"]) == 0
    out["root"] = root
    return out


def _without_clock(df: pd.DataFrame) -> tuple[pd.DataFrame, list[dict]]:
    """``df`` without the clock's columns, and its runs' metadata without the clock's keys."""
    metas = [{k: v for k, v in json.loads(m).items() if k not in CLOCK_META}
             for m in df["meta_json"].dropna()]
    return df.drop(columns=CLOCK_COLUMNS + ["meta_json"]), metas


def test_merge_of_two_half_runs_equals_the_full_runs_table(runs):
    full, merged = pq.read_table(runs["full"][2]).to_pandas(), pq.read_table(runs["merged"]).to_pandas()
    assert list(merged.columns) == list(full.columns)
    (f, fm), (m, mm) = _without_clock(full), _without_clock(merged)
    pd.testing.assert_frame_equal(m, f)
    assert mm == fm
    # one row per run and round: the 10 runs of the two experiments, rounds 0..T each
    plan = runs["full"][0]
    assert len(fm) == len(plan.runs) == 10
    assert len(full) == sum(s["rounds"] + 1 for s in plan.runs.values())
    assert full["spec_hash"].nunique() == 10


def test_the_table_holds_each_runs_numbers_parameters_and_environment(runs):
    """The rows of a run are its run table's, its spec's values are its columns, and the hash is
    sha256 of the spec's canonical JSON (computed here from the run's own spec file)."""
    plan, tables, path = runs["full"]
    df = pq.read_table(path).to_pandas()
    for table_path in tables:
        meta = json.loads(io.run_meta_path(table_path).read_text())
        spec = meta["spec"]
        h = hashlib.sha256(json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]
        rows = df[df["spec_hash"] == h]
        own = pd.read_csv(table_path)
        assert len(rows) == len(own) > 1
        for col in own.columns:
            kind = float if pd.api.types.is_numeric_dtype(own[col]) else str
            np.testing.assert_array_equal(rows[col].to_numpy(dtype=kind), own[col].to_numpy(dtype=kind))
        assert (rows["spec.algorithm.name"] == spec["algorithm"]["name"]).all()
        assert (rows["spec.algorithm.K"] == spec["algorithm"]["K"]).all()
        assert (rows["spec.seed"] == spec["seed"]).all()
        assert (rows["spec.dataset.params.N"] == spec["dataset"]["params"]["N"]).all()
        assert (rows["env.commit"] == meta["commit"]).all()
        assert (rows["env.version.numpy"] == meta["versions"]["numpy"]).all()
        assert (rows["env.machine.arch"] == meta["machine"]["arch"]).all()
        assert rows["meta_json"].notna().sum() == 1 and pd.notna(rows["meta_json"].iloc[0])


def test_spec_hash_is_of_the_spec_alone():
    spec = {"experiment": "e", "run_id": "r", "seed": 0, "algorithm": {"name": "rfedags", "K": 3}}
    reordered = {"algorithm": {"K": 3, "name": "rfedags"}, "seed": 0, "run_id": "r", "experiment": "e"}
    assert spec_hash(spec) == spec_hash(reordered)
    assert spec_hash(spec) != spec_hash({**spec, "seed": 1})
    assert spec_hash(spec) != spec_hash({**spec, "algorithm": {"name": "rfedags", "K": 3.0001}})


def test_the_csv_beside_holds_the_same_runs(runs):
    path = runs["merged"]
    from_parquet = runs_of(read_results(path), path)
    from_csv = runs_of(read_results(path.with_suffix(".csv")), path.with_suffix(".csv"))
    assert len(from_csv) == len(from_parquet) == 10
    for (ta, ma), (tb, mb) in zip(from_parquet, from_csv):
        assert ma == mb
        pd.testing.assert_frame_equal(ta, tb)


def test_runs_read_back_from_a_table_are_those_of_the_files(runs):
    plan, tables, path = runs["full"]
    by_key = {(m["spec"]["experiment"], m["spec"]["run_id"]): (t, m) for t, m in runs_of(read_results(path), path)}
    for p in tables:
        table, meta = io.read_run_table(p)
        t, m = by_key[(Path(p).parent.name, Path(p).stem)]
        assert m == meta
        pd.testing.assert_frame_equal(t, table)


def test_identical_runs_are_kept_once(runs, tmp_path, capsys):
    """A, A and B: A's runs once. The full run and half A ran A's specs separately (other clocks):
    the same result, kept once."""
    out = tmp_path / "m.parquet"
    assert _cli("merge", runs["a"][2], runs["a"][2], runs["b"][2], "-o", out) == 0
    assert "6 identical duplicate(s)" in capsys.readouterr().out
    pd.testing.assert_frame_equal(pq.read_table(out).to_pandas(), pq.read_table(runs["merged"]).to_pandas())
    assert _cli("merge", runs["full"][2], runs["a"][2], "-o", out) == 0
    assert "10 runs" in capsys.readouterr().out
    merged = pq.read_table(out).to_pandas()
    full = pq.read_table(runs["full"][2]).to_pandas()
    pd.testing.assert_frame_equal(merged, full)         # the first copy kept: the full run's


def _altered(src: Path, dst: Path, change) -> None:
    """``src``'s table with ``change(df)`` applied, written to ``dst`` (Parquet)."""
    import pyarrow as pa
    df = pq.read_table(src).to_pandas()
    change(df)
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), dst)


def test_a_conflicting_duplicate_is_refused_in_one_line(runs, tmp_path, capsys):
    a = runs["a"][2]
    bad = tmp_path / "other.parquet"
    df = pq.read_table(a).to_pandas()
    h = df["spec_hash"].iloc[0]
    rows = np.flatnonzero((df["spec_hash"] == h).to_numpy())

    def cost(d):                                      # one run's round 3 cost, one ulp away
        d.loc[rows[3], "cost"] = np.nextafter(d.loc[rows[3], "cost"], np.inf)
        d.loc[rows[3], "excess_risk"] = d.loc[rows[3], "cost"] - json.loads(d.loc[rows[0], "meta_json"])["F_star"]

    _altered(a, bad, cost)
    out = tmp_path / "m.parquet"
    assert _cli("merge", a, bad, "-o", out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rfl: error: ")
    assert h in err and str(a) in err and str(bad) in err and "cost from round 3" in err
    assert not out.exists() and not out.with_suffix(".csv").exists()

    def sampler(d):                                   # the same numbers from other draws
        meta = json.loads(d.loc[rows[0], "meta_json"])
        d.loc[rows[0], "meta_json"] = json.dumps({**meta, "sampler": meta.get("sampler", 1) + 1}, sort_keys=True)

    _altered(a, bad, sampler)
    assert _cli("merge", bad, a, "-o", out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "metadata key 'sampler'" in err and h in err


def _report(plan: Plan, where: Path, *extra) -> dict[str, bytes]:
    """The report of ``plan``'s claims drawn into ``where``: every file, relative path -> bytes."""
    spec = where / "reproduction.json"
    where.mkdir(parents=True)
    spec.write_text(json.dumps(plan.table_spec("reproduction")))
    md = where / "out" / "REPRODUCTION.md"
    assert _cli("reproduction", spec, md, *extra) == 0
    return {str(p.relative_to(md.parent)): p.read_bytes() for p in sorted(md.parent.rglob("*")) if p.is_file()}


def test_a_merged_table_redraws_the_report_byte_for_byte(runs, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    plan = runs["full"][0]
    from_files = _report(plan, tmp_path / "files")
    claims = json.loads(from_files["claims.json"])
    assert [c["id"] for c in claims] == list(CLAIMS)
    assert {"REPRODUCTION.md", "REPRODUCTION.html", "claims.json"} <= set(from_files)
    assert any(k.startswith("claims/") for k in from_files)
    # the runs' files gone: what the report reads comes from the tables
    runs_dir = Path(plan.path("results/runs"))
    shutil.move(runs_dir, tmp_path / "away")
    try:
        assert _report(plan, tmp_path / "merged", "--results", runs["merged"]) == from_files
        assert _report(plan, tmp_path / "full", "--results", runs["full"][2]) == from_files
        assert _cli("reproduction", tmp_path / "files" / "reproduction.json", tmp_path / "x.md") == 2
    finally:
        shutil.move(tmp_path / "away", runs_dir)


def test_a_figure_drawn_from_a_merged_table_is_the_files_one(runs, tmp_path):
    plan, tables, _ = runs["full"]
    spec = tmp_path / "fig.json"
    spec.write_text(json.dumps(plan.specs()[plan.spec("figures/fig1a_cpesph_fixed")]))
    mine = [t for t in tables if "/cpesph_fixed/" in t]
    assert _cli("figure", spec, tmp_path / "f.pdf", *mine) == 0
    assert _cli("figure", spec, tmp_path / "g.pdf", *mine, "--results", runs["merged"]) == 0
    assert (tmp_path / "f.png").read_bytes() == (tmp_path / "g.png").read_bytes()


def _one_line_exit_2(capsys, *argv) -> str:
    assert _cli(*argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rfl: error: ") and "Traceback" not in err, err
    return err


def test_bad_input_is_one_line_and_exit_2(runs, tmp_path, capsys):
    out = tmp_path / "m.parquet"
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    assert "allowed: a .parquet or .csv" in _one_line_exit_2(capsys, "merge", text, "-o", out)
    run_csv = runs["full"][1][0]                      # a run table, not a results table
    assert "lacks column(s)" in _one_line_exit_2(capsys, "merge", run_csv, "-o", out)
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"PAR1 not really")
    assert "not a Parquet results table" in _one_line_exit_2(capsys, "merge", garbage, "-o", out)
    assert "no such file" in _one_line_exit_2(capsys, "merge", tmp_path / "missing.parquet", "-o", out)
    assert ".parquet" in _one_line_exit_2(capsys, "merge", runs["a"][2], "-o", tmp_path / "m.csv")
    _one_line_exit_2(capsys, "merge", runs["a"][2])                         # no -o
    edited = tmp_path / "edited.parquet"
    _altered(runs["a"][2], edited, lambda d: d.__setitem__("spec_hash", "0" * 16))
    assert "is not the hash of its spec" in _one_line_exit_2(capsys, "merge", edited, "-o", out)
    # a report whose runs the table lacks names the run
    plan = runs["full"][0]
    spec = tmp_path / "r.json"
    spec.write_text(json.dumps(plan.table_spec("reproduction")))
    err = _one_line_exit_2(capsys, "reproduction", spec, tmp_path / "r.md", "--results", runs["a"][2])
    assert "no run cpesph_decaying/" in err
    assert not out.exists()


def test_the_results_table_is_a_target_of_the_default_workflow():
    plan = Plan(rflconfig.validate(SMOKE), PAPER)
    assert {".smoke/results/results.parquet", ".smoke/results/results.csv"} <= set(plan.targets())
    assert "results" in plan.jobs()
    rules = (REPO / "rules" / "reporting.smk").read_text()
    assert "rule results:" in rules and "rfl results {output.parquet} {input.runs}" in rules


def test_the_workflow_writes_the_table_and_draws_the_report_from_a_merged_one(runs, tmp_path):
    """snakemake on the small config (a copy of the workflow): its results table equals the one
    built in process, but for the clock; then, its runs' files gone, ``--config results=`` the
    merged table of the halves: the report is drawn again, byte for byte, and nothing is run."""
    import os
    tree = tmp_path / "workflow"
    (tree / "config").mkdir(parents=True)
    for item in ("Snakefile", "rules", "envs", "config/schema.yaml", "config/paper_values.yaml"):
        (shutil.copytree if (REPO / item).is_dir() else shutil.copy2)(REPO / item, tree / item)
    (tree / "config" / "small.yaml").write_text(yaml.safe_dump(_raw_config("out")))
    env = dict(os.environ, PYTHONPATH=str(REPO), MPLBACKEND="Agg", SOURCE_DATE_EPOCH="1767225600",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    env.pop("SNAKEMAKE_PROFILE", None)
    report = tree / "out" / "paper_tables"

    def snakemake(*extra):
        r = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *extra, "--configfile",
                            "config/small.yaml"], cwd=tree, env=env, capture_output=True,
                           text=True, timeout=900)
        assert r.returncode == 0, r.stderr[-3000:]
        return r.stderr

    snakemake("out/results/results.parquet", "out/paper_tables/REPRODUCTION.md")
    made = pq.read_table(tree / "out" / "results" / "results.parquet").to_pandas()
    full = pq.read_table(runs["full"][2]).to_pandas()
    (m, mm), (f, fm) = _without_clock(made), _without_clock(full)
    pd.testing.assert_frame_equal(m, f)
    assert mm == fm
    assert (tree / "out" / "results" / "results.csv").is_file()
    before = {str(p.relative_to(report)): p.read_bytes() for p in sorted(report.rglob("*")) if p.is_file()}
    shutil.rmtree(tree / "out" / "results" / "runs")
    log = snakemake("out/paper_tables/REPRODUCTION.md", "--config", f"results={runs['merged']}")
    assert "rule reproduction:" in log and "merged.parquet" in log   # drawn again, from the table
    assert "run_cpesph" not in log and "rule data" not in log          # nothing was run
    after = {str(p.relative_to(report)): p.read_bytes() for p in sorted(report.rglob("*")) if p.is_file()}
    assert after == before and "claims.json" in after


# ---- rfl compare ---------------------------------------------------------------------------
def _claim(cid, verdict, margin, rows, setting=None):
    return {"id": cid, "verdict": verdict, "margin": margin, "rows": rows, "notes": [],
            **({"setting": setting} if setting else {})}


def test_compare_names_each_changed_claim_and_counts_the_rest(tmp_path, capsys):
    a = [_claim("linear", "reproduced", "rate 0.5 [0.4, 0.6]", [{"K": 1, "rate": 0.5}]),
         _claim("order", "reproduced", None, [{"K": 1, "final": 1e-3}, {"K": 3, "final": 2e-4}]),
         _claim("same", "partly reproduced", "m", [{"x": 1.0}]),
         _claim("swept", "undecided at this size", None, [], setting="K = 1"),
         _claim("gone", "reproduced", None, [])]
    b = copy.deepcopy(a)
    b[0]["verdict"] = "not reproduced"                       # a verdict flips
    b[1]["rows"][1]["final"] = 3e-4                          # one evidence cell moves
    b[3]["setting"] = "K = 2"                                # another setting: two keys
    del b[4]
    b.append(_claim("new", "reproduced", None, []))
    (tmp_path / "A").mkdir()
    (tmp_path / "A" / "claims.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    assert _cli("compare", tmp_path / "A", tmp_path / "b.json") == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    summary = next(line for line in lines if "claim(s):" in line)
    assert summary.startswith("7 claim(s): 1 verdict(s) changed, 6 changed in all") and "1 unchanged" in summary
    table = [line for line in lines if line.startswith("| ") and not line.startswith("| claim")]
    assert table[0].startswith("| linear | reproduced | not reproduced |")   # flipped first
    order = next(line for line in table if line.startswith("| order "))
    assert "evidence (1 cell(s): row 2, final: 0.0002 -> 0.0003)" in order
    assert not any(line.startswith("| same ") for line in table)
    for name, where in (("swept [setting K = 1]", "only in A"), ("swept [setting K = 2]", "only in B"),
                        ("gone", "only in A"), ("new", "only in B")):
        assert any(line.startswith(f"| {name} |") and line.endswith(f"| {where} |") for line in table), name


def test_compare_gives_each_changed_leaderboard_cell_with_its_relative_change(tmp_path, capsys):
    board = pd.DataFrame({"problem": ["cpesph", "cpesph", "kpca"], "method": ["rfedags", "rfedavg", "rfedags"],
                          "median": [2.0, 4.0, 1.0], "rounds_to_1e-3": [10, 20, 30]})
    other = board.copy()
    other.loc[1, "median"] = 3.0                            # 4 -> 3: -25%
    other.loc[2, "rounds_to_1e-3"] = 45                     # 30 -> 45: +50%
    for name, df in (("A", board), ("B", other)):
        (tmp_path / name / "paper_tables").mkdir(parents=True)
        df.to_csv(tmp_path / name / "paper_tables" / "leaderboard.csv", index=False)
    out = tmp_path / "cmp.md"
    assert _cli("compare", tmp_path / "A", tmp_path / "B", "-o", out) == 0
    text = out.read_text()
    assert "2 cell(s) changed or in one set only, 4 unchanged (rows keyed by problem, method)" in text
    assert "| cpesph, rfedavg | median | 4 | 3 | -25.0% |" in text
    assert "| kpca, rfedags | rounds_to_1e-3 | 30 | 45 | +50.0% |" in text
    assert "## Claims" not in text                          # neither set has claims
    (tmp_path / "b.json").write_text("[]")                  # claims against a leaderboard
    assert "no part in common" in _one_line_exit_2(capsys, "compare", tmp_path / "A", tmp_path / "b.json")


def test_compare_refuses_what_is_no_result_set(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "c.json").write_text(json.dumps([{"id": "x", "verdict": None}]))
    assert "holds no claims.json" in _one_line_exit_2(capsys, "compare", tmp_path / "empty", tmp_path / "c.json")
    (tmp_path / "bad.json").write_text(json.dumps({"id": "x"}))
    assert "not a list of judged claims" in _one_line_exit_2(capsys, "compare", tmp_path / "bad.json", tmp_path / "c.json")
    (tmp_path / "t.txt").write_text("x")
    assert "not a result set" in _one_line_exit_2(capsys, "compare", tmp_path / "t.txt", tmp_path / "c.json")
    assert "no such file" in _one_line_exit_2(capsys, "compare", tmp_path / "nowhere", tmp_path / "c.json")

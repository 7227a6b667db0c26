"""Verdicts at the source's size (rfl/source_size.py, rfl/reporting/source_size.py): the subset of
config/paper.yaml that ``rfl source-size subset`` writes, the digest that tells a recorded verdict
stale, ``rfl source-size record`` on a paper run (and its refusals, exit 2), and the report read
back: the default verdict stays the row's, the source-size one beside it in REPRODUCTION.md,
claims.json, the claim page and the summary, and "stale" once config/paper.yaml changed.

The paper run here is a small one written by the test: decentralised PCA (dec_pca_t1 of
config/paper.yaml at 60 rounds) with DRGTA at 2^-t (its level the 1e-14 floor) and DRSGD at
2^-t + 1e-6: DRGTA's level is 1e-8 of DRSGD's, below the claim's 1e-3, on 3 seeds (reproduced);
the "default" run has 2 seeds, fewer than the rule's 3 (undecided)."""

from __future__ import annotations

import contextlib
import copy
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import yaml

from rfl import cli
from rfl import config as rflconfig
from rfl import source_size as ss
from rfl.claims.verdicts import REPRODUCED, UNDECIDED, VERDICTS
from rfl.testing.run_files import write_run

REPO = Path(__file__).resolve().parents[1]
COMMIT = "a" * 40
CLAIMS = ("dec_drgta_exact", "dec_t10_vs_t1")
EXPS = ("dec_pca_t1", "dec_pca_t10")


def _paper_raw(seeds=(0, 1, 2), rounds=60) -> dict:
    """config/paper.yaml's dec_pca_t1 and dec_pca_t10 (their dataset, figures, sources and two
    claims), smaller."""
    raw = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    exps = {e: {**copy.deepcopy(raw["experiments"][e]), "seeds": list(seeds), "rounds": rounds} for e in EXPS}
    return {"output_dir": "paper_t/", "school": raw["school"],
            "datasets": {d: raw["datasets"][d] for d in {x["dataset"] for x in exps.values()}},
            "experiments": exps,
            "figures": {f: v for f, v in raw["figures"].items() if v["experiment"] in EXPS},
            "sources": raw["sources"], "claims": {c: raw["claims"][c] for c in CLAIMS}}


def _write_runs(root: Path, config: dict) -> dict:
    """Run files of every run spec of ``config`` under root/OUT/results/runs (paths relative to
    ``root``): DRGTA 2^-t, DRSGD 2^-t + 1e-6."""
    runs: dict = {}
    for spec in ss.run_specs(config, config["experiments"]):
        rel = f"{config['output_dir']}results/runs/{spec['experiment']}/{spec['run_id']}.csv"
        t = np.arange(spec["rounds"] + 1.0)
        floor = 1e-6 if spec["algorithm"]["name"] == "drsgd" else 0.0
        write_run(root / rel, {"round": t.astype(int), "excess_risk": 0.5 ** t + floor}, spec, commit=COMMIT)
        runs.setdefault(spec["experiment"], []).append(rel)
    return runs


def _report(root: Path, config: dict, runs: dict, configfile: str, source_size: dict | None = None) -> Path:
    """``rfl reproduction`` of ``config``'s runs in root/OUT, as the workflow writes it; returns
    REPRODUCTION.md."""
    out = root / config["output_dir"]
    spec = {"config": config, "paper": {}, "claim_order": list(config["claims"]), "configfiles": [configfile],
            "runs": runs, "tables": {"table2": str(root / "none.csv")},
            **({"source_size": source_size} if source_size else {})}
    spec_path = out / "results" / "specs" / "tables" / "reproduction.json"
    spec_path.parent.mkdir(parents=True, exist_ok=True)
    spec_path.write_text(json.dumps(spec))
    md = out / "paper_tables" / "REPRODUCTION.md"
    md.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.chdir(root):                       # the run paths are the workflow's, relative
        assert cli.main(["reproduction", str(spec_path), str(md)]) == 0
    return md


@pytest.fixture(scope="module")
def paper_run(tmp_path_factory):
    """root/paper.yaml (the test's config/paper.yaml), and its run's report in root/paper_t/."""
    root = tmp_path_factory.mktemp("paper")
    (root / "paper.yaml").write_text(yaml.safe_dump(_paper_raw(), sort_keys=False))
    paper = rflconfig.load(root / "paper.yaml")
    _report(root, paper, _write_runs(root, paper), "config/paper_t.yaml")
    return root, paper


def _record(root: Path, run: Path, record: Path, paper: Path | None = None) -> int:
    return cli.main(["source-size", "record", str(run), "--record", str(record),
                     "--paper", str(paper or root / "paper.yaml")])


# ---- the subset of config/paper.yaml -------------------------------------------------------------------
def _flat(experiments) -> set:
    if isinstance(experiments, dict):
        return {x for v in experiments.values() for x in ([v] if isinstance(v, str) else v)}
    return set(experiments)


def test_subset_holds_the_experiments_their_datasets_and_the_claims_that_read_only_them(tmp_path, capsys):
    out = tmp_path / "paper_dec.yaml"
    names = ["dec_pca_t1", "dec_pca_t10", "frechet_h2_t5"]
    assert cli.main(["source-size", "subset", *names, "-o", str(out)]) == 0
    raw = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    sub = yaml.safe_load(out.read_text())
    assert list(sub["experiments"]) == names and sub["output_dir"] == "paper_dec/"
    assert sub["experiments"]["dec_pca_t10"] == raw["experiments"]["dec_pca_t10"]
    assert set(sub["datasets"]) == {raw["experiments"][e]["dataset"] for e in names}
    oracle = {c for c, d in raw["claims"].items() if _flat(d["experiments"]) <= set(names)}
    assert set(sub["claims"]) == oracle and "dec_drgta_exact" in oracle
    # a claim reading one of them and an experiment left out is not in it
    assert any(_flat(d["experiments"]) & set(names) for c, d in raw["claims"].items() if c not in oracle)
    assert set(sub["figures"]) == {f for f, v in raw["figures"].items() if v["experiment"] in names}
    rflconfig.load(out)                                              # a valid config
    capsys.readouterr()
    assert cli.main(["source-size", "subset", "dec_pca_t1", "no_such_experiment", "-o", str(tmp_path / "x.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rfl: error: ") and "no_such_experiment" in err and "\n" not in err
    assert not (tmp_path / "x.yaml").exists()


def test_a_subset_keeps_the_tables_and_studies_of_its_experiments_only(tmp_path):
    # the claims on Table 2 and on FedLSA's bias read these tables: a subset without them
    # judged them undecided for want of a table
    raw = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    names = ["school_r4", "school_r5", "school_sens_r4_a6", "lsa_hom_n10_h1", "lsa_het_n10_h10",
             "cpesph_fixed", "cpesph_decaying", "cfmspd_fixed", "mbcfsti_het"]
    out = tmp_path / "paper_t.yaml"
    assert cli.main(["source-size", "subset", *names, "-o", str(out)]) == 0
    sub = yaml.safe_load(out.read_text())
    t2 = sub["tables"]["table2"]
    assert t2["experiments"] == {"4": "school_r4", "5": "school_r5"}
    assert t2["sensitivity"] == ["school_r4", "school_sens_r4_a6", "school_r5"]
    assert t2["protocols"] == raw["tables"]["table2"]["protocols"]
    assert sub["tables"]["table1"]["rows"] == [r for r in raw["tables"]["table1"]["rows"]
                                               if r["label"] == "CPESph"]      # CFMSPD lacks its decaying
    assert sub["heterogeneity"]["experiments"] == {"MBCFSti": "mbcfsti_het"}
    assert sub["lsa"] == {**raw["lsa"], "experiments": ["lsa_hom_n10_h1", "lsa_het_n10_h10"]}
    rflconfig.load(out)                                              # a valid config
    # none of them: no table, no study
    none = tmp_path / "paper_n.yaml"
    assert cli.main(["source-size", "subset", "dec_pca_t1", "-o", str(none)]) == 0
    assert not {"tables", "heterogeneity", "lsa"} & set(yaml.safe_load(none.read_text()))


def test_the_recorded_command_names_experiments_the_subset_command_accepts(tmp_path):
    # cpesph_decaying's step has two readings: the run holds its variant too, whose name
    # `rfl source-size subset` refuses; the command names the experiment alone
    paper = rflconfig.load(REPO / "config" / "paper.yaml")
    variants = [e for e, x in paper["experiments"].items()
                if (x.get("reading_of") or {}).get("experiment") == "cpesph_decaying"]
    assert variants
    ran = {e: paper["experiments"][e] for e in ["cpesph_fixed", "cpesph_decaying", *variants]}
    run = {"config": {**paper, "experiments": ran}, "configfile": "config/paper_r.yaml",
           "output_dir": "paper_r/", "claims": [
               {"id": "fig1a_decaying", "statement": "s", "experiments": ["cpesph_decaying"], "size": "x",
                "verdict": "reproduced", "margin": "m", "setting": None}],
           "seeds": {e: 1 for e in ran}, "replicas": {e: 1 for e in ran},
           "commits": {e: ["abc"] for e in ran}, "date": "2026-11-29"}
    cmd = ss.entries(run, paper)["fig1a_decaying"]["command"]
    assert cmd.startswith("rfl source-size subset cpesph_fixed cpesph_decaying -o config/paper_r.yaml")
    assert not any(v in cmd for v in variants)
    names = cmd.split(" -o ")[0].split()[3:]
    assert cli.main(["source-size", "subset", *names, "-o", str(tmp_path / "r.yaml")]) == 0


# ---- the digest ------------------------------------------------------------------------------------------
def test_the_digest_follows_the_claim_and_its_runs_specs_only():
    paper = rflconfig.validate(_paper_raw())
    base = ss.digest(paper, "dec_drgta_exact", ["dec_pca_t1"])
    assert base == ss.digest(copy.deepcopy(paper), "dec_drgta_exact", ["dec_pca_t1"])

    def changed(edit) -> str:
        cfg = copy.deepcopy(paper)
        edit(cfg)
        return ss.digest(cfg, "dec_drgta_exact", ["dec_pca_t1"])

    assert changed(lambda c: c["claims"]["dec_drgta_exact"]["params"].update(ratio=0.01)) != base
    assert changed(lambda c: c["experiments"]["dec_pca_t1"].update(rounds=61)) != base
    assert changed(lambda c: c["experiments"]["dec_pca_t1"].update(seeds=[0, 1])) != base
    assert changed(lambda c: c["datasets"]["dpca"]["params"].update(N=99)) != base
    # another claim, another experiment, a figure's title: not this claim's definition or runs
    assert changed(lambda c: c["claims"]["dec_t10_vs_t1"].update(statement="x")) == base
    assert changed(lambda c: c["experiments"]["dec_pca_t10"].update(rounds=61)) == base
    assert changed(lambda c: [f.update(title="x") for f in c["figures"].values()]) == base
    assert changed(lambda c: c["claims"].pop("dec_drgta_exact")) is None


# ---- rfl source-size record ----------------------------------------------------------------------------------
def test_record_holds_the_runs_verdicts_seeds_commit_command_and_digest(paper_run, tmp_path, capsys):
    root, paper = paper_run
    rec_path = tmp_path / "source_size.json"
    assert _record(root, root / "paper_t", rec_path) == 0
    judged = {r["id"]: r for r in json.loads((root / "paper_t/paper_tables/claims.json").read_text())}
    assert judged["dec_drgta_exact"]["verdict"] == REPRODUCED      # the curves' level ratio is 1e-8
    rec = json.loads(rec_path.read_text())["claims"]
    assert list(rec) == sorted(CLAIMS)
    for cid in CLAIMS:
        e = rec[cid]
        assert e["results"] == [{"setting": None, "verdict": judged[cid]["verdict"], "margin": judged[cid]["margin"]}]
        assert e["experiments"] == {x: {"seeds": 3, "runs": 6} for x in judged[cid]["experiments"]}
        assert e["commits"] == [COMMIT] and e["size"] == judged[cid]["size"]
        written = re.search(r"^- written: (\S+)", (root / "paper_t/paper_tables/REPRODUCTION.md").read_text(), re.M)
        assert e["date"] == written.group(1)[:10]
        assert e["command"] == ("rfl source-size subset dec_pca_t1 dec_pca_t10 -o config/paper_t.yaml --output-dir paper_t/ "
                                "&& snakemake --cores 2 --configfile config/paper_t.yaml")
        assert e["digest"] == ss.digest(paper, cid, judged[cid]["experiments"])
    # the record given a claims.json path or paper_tables/ is the same
    again = tmp_path / "again.json"
    assert _record(root, root / "paper_t/paper_tables/claims.json", again) == 0
    assert json.loads(again.read_text()) == json.loads(rec_path.read_text())
    # a second run replaces its claims' entries and keeps the others
    rec2 = json.loads(rec_path.read_text())
    rec2["claims"]["other_claim"] = {**rec2["claims"]["dec_drgta_exact"]}
    rec_path.write_text(json.dumps(rec2))
    assert _record(root, root / "paper_t", rec_path) == 0
    assert set(json.loads(rec_path.read_text())["claims"]) == {*CLAIMS, "other_claim"}


def _copy_run(root: Path, dest: Path) -> Path:
    shutil.copytree(root / "paper_t", dest / "paper_t")
    return dest / "paper_t"


def _bad_cases():
    def not_claims(run):
        (run / "paper_tables/claims.json").write_text(json.dumps({"config": {}}))

    def truncated(run):
        p = run / "paper_tables/claims.json"
        p.write_text(p.read_text()[:500])

    def missing_claim(run):
        p = run / "paper_tables/claims.json"
        p.write_text(json.dumps(json.loads(p.read_text())[:1]))

    def toy(run):
        p = run / "results/specs/tables/reproduction.json"
        spec = json.loads(p.read_text())
        spec["config"]["toy_size"] = True
        p.write_text(json.dumps(spec))

    def run_missing(run):
        next((run / "results/runs/dec_pca_t1").glob("drsgd*.csv")).unlink()

    def dirty(run):
        meta = next((run / "results/runs/dec_pca_t1").glob("*.meta.json"))
        m = json.loads(meta.read_text())
        m["commit"] = COMMIT + "-dirty"
        meta.write_text(json.dumps(m))
        # (claims.json stays newer than the runs)
        (run / "paper_tables/claims.json").touch()

    def no_spec(run):
        (run / "results/specs/tables/reproduction.json").unlink()

    return {"not a claims.json": (not_claims, "not a claims.json"),
            "half-written JSON": (truncated, "not complete JSON"),
            "a claim's record missing": (missing_claim, "half-written: no record of claim(s) dec_t10_vs_t1"),
            "a toy-size run": (toy, "toy-size run"),
            "a run table missing": (run_missing, "5 of 6 run tables"),
            "a dirty commit": (dirty, "-dirty (not a clean commit)"),
            "no reproduction spec": (no_spec, "reproduction.json")}


@pytest.mark.parametrize("case", list(_bad_cases()))
def test_record_refuses_a_file_that_is_not_a_complete_paper_runs_claims_json(paper_run, tmp_path, capsys, case):
    root, _ = paper_run
    edit, words = _bad_cases()[case]
    run = _copy_run(root, tmp_path)
    edit(run)
    rec = tmp_path / "rec.json"
    assert _record(root, run, rec) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rfl: error: ") and "\n" not in err and words in err, err
    assert not rec.exists()


def test_record_refuses_a_run_whose_config_is_not_that_of_config_paper_yaml(paper_run, tmp_path, capsys):
    root, _ = paper_run
    for edit in (lambda r: r["claims"]["dec_drgta_exact"]["params"].update(ratio=0.01),
                 lambda r: r["experiments"]["dec_pca_t1"].update(rounds=61)):
        raw = _paper_raw()
        edit(raw)
        (tmp_path / "paper.yaml").write_text(yaml.safe_dump(raw))
        assert _record(root, root / "paper_t", tmp_path / "rec.json", tmp_path / "paper.yaml") == 2
        err = capsys.readouterr().err.strip()
        assert "claim dec_drgta_exact" in err and "differ from config/paper.yaml" in err and "\n" not in err
    # the claim not in config/paper.yaml at all
    raw = _paper_raw()
    del raw["claims"]["dec_t10_vs_t1"]
    (tmp_path / "paper.yaml").write_text(yaml.safe_dump(raw))
    assert _record(root, root / "paper_t", tmp_path / "rec.json", tmp_path / "paper.yaml") == 2
    assert "dec_t10_vs_t1 are not in config/paper.yaml" in capsys.readouterr().err


def test_record_refuses_a_report_older_than_its_runs(paper_run, tmp_path, capsys):
    import os

    root, _ = paper_run
    run = _copy_run(root, tmp_path)
    claims = run / "paper_tables/claims.json"
    os.utime(claims, (1, 1))
    assert _record(root, run, tmp_path / "rec.json") == 2
    assert "older than its run" in capsys.readouterr().err


# ---- the report: both verdicts, each in its place ---------------------------------------------------------------
class Sections(HTMLParser):
    """A claim page's sections: id -> the badges' texts in order and the source-size paragraph's text."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.sections: dict = {}
        self._id = self._badge = self._p = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self._id = a.get("id")
            self.sections[self._id] = {"badges": [], "source_size": None}
        elif tag == "span" and "badge" in (a.get("class") or "") and self._id:
            self._badge = ""
        elif tag == "p" and a.get("class") == "source-size" and self._id:
            self._p = ""
            self.sections[self._id]["source_size"] = ""

    def handle_endtag(self, tag):
        if tag == "span" and self._badge is not None:
            self.sections[self._id]["badges"].append(self._badge)
            self._badge = None
        elif tag == "p" and self._p is not None:
            self.sections[self._id]["source_size"] = self._p
            self._p = None
        elif tag == "section":
            self._id = None

    def handle_data(self, data):
        if self._badge is not None:
            self._badge += data
        if self._p is not None:
            self._p += data


def _claim_block(md: str, statement: str) -> list[str]:
    lines = md.splitlines()
    i = lines.index(f"### Claim: {statement} ({_REF[statement]})")
    j = next(k for k in range(i + 1, len(lines)) if lines[k].startswith("#"))
    return lines[i:j]


_REF: dict = {}


def _summary_row(md: str, cid: str) -> list[str]:
    row = next(ln for ln in md.splitlines() if ln.startswith("| ") and f"#{cid})" in ln)
    return [c.strip() for c in row.strip("|").split(" | ")]


@pytest.fixture
def default_run(paper_run, tmp_path):
    """The "default" run (2 seeds) of the same claims, its report with the record beside it:
    returns (root, record, the default config, its runs)."""
    root, paper = paper_run
    rec = tmp_path / "rec.json"
    assert _record(root, root / "paper_t", rec) == 0
    default = rflconfig.validate({**_paper_raw(seeds=(0, 1)), "output_dir": "default/"})
    shutil.copy(root / "paper.yaml", tmp_path / "paper.yaml")
    return tmp_path, rec, default, _write_runs(tmp_path, default)


def test_the_report_shows_the_source_size_verdict_beside_the_default_one(default_run):
    root, rec, default, runs = default_run
    md_path = _report(root, default, runs, "config/config.yaml",
                      {"record": str(rec), "paper": str(root / "paper.yaml")})
    md = md_path.read_text()
    entry = json.loads(rec.read_text())["claims"]["dec_drgta_exact"]
    statement = default["claims"]["dec_drgta_exact"]["statement"]
    _REF[statement] = default["claims"]["dec_drgta_exact"]["ref"]
    # claims.json: the default verdict is the record's verdict; the source-size one beside it
    judged = {r["id"]: r for r in json.loads(md_path.with_name("claims.json").read_text())}
    r = judged["dec_drgta_exact"]
    assert r["verdict"] == UNDECIDED                       # 2 seeds: fewer than the rule's 3
    assert r["source_size"]["state"] == "current"
    assert r["source_size"]["results"][0]["verdict"] == REPRODUCED
    # REPRODUCTION.md: the claim's own verdict line, then the line at the source's size
    block = _claim_block(md, statement)
    verdict = [ln for ln in block if ln.startswith("**Verdict:")]
    assert verdict and verdict[0].startswith(f"**Verdict: {UNDECIDED}.**")
    beside = [ln for ln in block if ln.startswith("**At the source's size")]
    assert len(beside) == 1 and block.index(beside[0]) > block.index(verdict[0])
    assert beside[0].startswith(f"**At the source's size: {REPRODUCED}** (3 seeds; rfl {COMMIT[:10]}, {entry['date']};")
    assert entry["results"][0]["margin"] in beside[0] and f"`{entry['command']}`" in beside[0]
    # the summary: the row's verdict is the default one, the source's size in its own column
    head = next(ln for ln in md.splitlines() if ln.startswith("| figure | claim |"))
    cols = [c.strip() for c in head.strip("|").split(" | ")]
    assert cols[-1] == "at the source's size" and cols[2] == "verdict"
    row = _summary_row(md, "dec_drgta_exact")
    assert row[2] == UNDECIDED and row[-1] == REPRODUCED
    # the counts count the default verdicts only
    counts = [c.strip("* ") for c in next(ln for ln in md.splitlines() if ln.startswith("| **all** |")).strip("|").split("|")]
    assert counts[1 + VERDICTS.index(UNDECIDED)] == str(sum(x["verdict"] == UNDECIDED for x in judged.values()))
    assert counts[1 + VERDICTS.index(REPRODUCED)] == str(sum(x["verdict"] == REPRODUCED for x in judged.values()))
    # the claim page: the heading's badge is the default verdict; the paragraph's the source's size
    page = (md_path.parent / "claims" / f"{r['figures'][0]}.html").read_text()
    sec = Sections(page).sections["dec_drgta_exact"]
    assert sec["badges"] == [UNDECIDED, REPRODUCED]
    assert "At the source's size: reproduced" in sec["source_size"] and entry["command"] in sec["source_size"]
    # the landing page's row: the verdict cell then the source-size cell
    landing = md_path.with_name("summary.rst").read_text()
    tr = re.search(r'<tr class="row" data-claim="dec_drgta_exact">(.*?)</tr>', landing).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", tr)
    assert re.sub("<[^>]+>", "", cells[2]) == UNDECIDED and re.sub("<[^>]+>", "", cells[-1]) == REPRODUCED


def test_a_changed_claim_or_experiment_makes_the_recorded_verdict_stale(default_run):
    root, rec, default, runs = default_run
    raw = _paper_raw()
    raw["claims"]["dec_drgta_exact"]["params"]["ratio"] = 0.01        # the claim changed since
    (root / "paper.yaml").write_text(yaml.safe_dump(raw))
    md_path = _report(root, default, runs, "config/config.yaml",
                      {"record": str(rec), "paper": str(root / "paper.yaml")})
    md = md_path.read_text()
    judged = {r["id"]: r for r in json.loads(md_path.with_name("claims.json").read_text())}
    assert judged["dec_drgta_exact"]["source_size"]["state"] == "stale"
    assert judged["dec_t10_vs_t1"]["source_size"]["state"] == "current"     # its digest is unchanged
    statement = default["claims"]["dec_drgta_exact"]["statement"]
    _REF[statement] = default["claims"]["dec_drgta_exact"]["ref"]
    block = "\n".join(_claim_block(md, statement))
    assert "**At the source's size: stale.**" in block and "not current" in block
    assert f"**At the source's size: {REPRODUCED}**" not in block
    assert _summary_row(md, "dec_drgta_exact")[-1] == f"stale (recorded: {REPRODUCED})"
    page = (md_path.parent / "claims" / f"{judged['dec_drgta_exact']['figures'][0]}.html").read_text()
    assert Sections(page).sections["dec_drgta_exact"]["badges"] == [UNDECIDED, "stale"]
    # an experiment's runs changed: every claim reading it is stale
    raw = _paper_raw()
    raw["experiments"]["dec_pca_t1"]["rounds"] = 61
    (root / "paper.yaml").write_text(yaml.safe_dump(raw))
    md_path = _report(root, default, runs, "config/config.yaml",
                      {"record": str(rec), "paper": str(root / "paper.yaml")})
    judged = json.loads(md_path.with_name("claims.json").read_text())
    assert {r["source_size"]["state"] for r in judged} == {"stale"}


def test_without_a_record_the_report_says_nothing_of_sources_sizes(default_run):
    root, _, default, runs = default_run
    md_path = _report(root, default, runs, "config/config.yaml")
    md = md_path.read_text()
    assert "source's size" not in md
    assert not any("source_size" in r for r in json.loads(md_path.with_name("claims.json").read_text()))


def test_a_bad_record_file_stops_the_report_with_one_line(default_run, capsys):
    root, rec, default, runs = default_run
    rec.write_text("[1, 2]")
    spec = {"config": default, "paper": {}, "claim_order": list(default["claims"]), "runs": runs,
            "tables": {}, "source_size": {"record": str(rec), "paper": str(root / "paper.yaml")}}
    (root / "spec.json").write_text(json.dumps(spec))
    with contextlib.chdir(root):
            assert cli.main(["reproduction", str(root / "spec.json"), str(root / "out" / "REPRODUCTION.md")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rfl: error: ") and str(rec) in err and "not a source-size record" in err


def test_annotate_says_not_run_only_for_an_undecided_claim_that_config_paper_yaml_decides():
    def rec(verdict, decide):
        return {"id": "c", "verdict": verdict, "decide": decide}

    decided_by_paper = "config/paper.yaml, which runs e1"
    results = [rec(UNDECIDED, decided_by_paper), rec(UNDECIDED, "run its experiments"),
               rec(REPRODUCED, None), rec(None, decided_by_paper)]
    ss.annotate(results, {"claims": {}}, None)
    assert [r.get("source_size") for r in results] == [{"state": "not run"}, None, None, None]
    toy = [rec(UNDECIDED, decided_by_paper)]
    ss.annotate(toy, {"claims": {}}, None, toy=True)
    assert "source_size" not in toy[0]


def test_the_workflow_names_the_record_as_an_input_only_where_it_exists(tmp_path, monkeypatch):
    from rfl.workflow import Plan

    config = rflconfig.validate(_paper_raw())
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "paper.yaml").write_text("")
    assert Plan(config, {}).source_size_inputs() == []
    assert "source_size" not in Plan(config, {}).table_spec("reproduction")
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "source_size.json").write_text("{}")
    assert Plan(config, {}).source_size_inputs() == ["records/source_size.json", "config/paper.yaml"]
    assert Plan(config, {}).table_spec("reproduction")["source_size"] == {
        "record": "records/source_size.json", "paper": "config/paper.yaml"}


def test_the_command_of_a_subset_writes_it_and_runs_it_and_that_of_config_paper_yaml_runs_it():
    assert ss.command("config/paper_x.yaml", "paper_x/", ["e1", "e2"]) == (
        "rfl source-size subset e1 e2 -o config/paper_x.yaml --output-dir paper_x/ "
        "&& snakemake --cores 2 --configfile config/paper_x.yaml")
    # never a subset written over config/paper.yaml
    assert ss.command("config/paper.yaml", "paper/", ["e1"]) == "snakemake --cores 2 --configfile config/paper.yaml"


def test_a_claim_whose_data_were_absent_is_left_out_of_the_record(paper_run, tmp_path):
    root, _ = paper_run
    run = _copy_run(root, tmp_path)
    p = run / "results/specs/tables/reproduction.json"
    spec = json.loads(p.read_text())
    spec["skipped"] = {"dec_pca_t10": "skipped dec_pca_t10: data absent"}
    p.write_text(json.dumps(spec))
    (run / "paper_tables/claims.json").touch()
    for f in (run / "results/runs/dec_pca_t10").iterdir():
        f.unlink()
    rec = tmp_path / "rec.json"
    assert _record(root, run, rec) == 0
    assert list(json.loads(rec.read_text())["claims"]) == ["dec_drgta_exact"]   # reads dec_pca_t1 only


def test_the_seeds_line_names_each_experiments_seeds_once_and_its_replicas():
    entry = {"experiments": {"a": {"seeds": 1, "runs": 1, "replicas": 32768}, "b": {"seeds": 20, "runs": 20},
                             "c": {"seeds": 20, "runs": 20}, "d": {"seeds": 1, "runs": 2}}}
    assert ss.seeds_text(entry) == "1 seed x 32768 replicas, 20 seeds, 1 seed"

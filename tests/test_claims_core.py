"""The claim registry's core (``rfl.claims``): how case outcomes combine into a verdict, how
judged claims are rendered into REPRODUCTION.md and claims.json, and how the config's
``claims`` are checked (``rfl.config._claim_errors``, ``rfl validate``).

Verdicts are checked against an oracle written here from the definition in
``rfl.claims.verdicts``; the report's Markdown against what a reader sees (cells, rows,
headings); the config errors against the one-line ``rfl: error:`` contract (the key, what is
allowed, exit status 2).
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rfl import cli
from rfl import config as rflconfig
from rfl.claims.judge import claim_lines, judge_all, sections
from rfl.reporting.triage import summary_lines
from rfl.claims.rule import Judgement, Rule
from rfl.claims.verdicts import FAIL, NOT, OK, OPEN, PARTLY, REPRODUCED, UNDECIDED, VERDICTS, combine
from rfl.registry import RULES

from test_claim_rules import geometric, runs_of

REPO = Path(__file__).resolve().parents[1]


# ---- combine ----------------------------------------------------------------------------------
def _oracle(cases) -> str:
    """The definition: every case holds -> reproduced; some hold and some fail -> partly; none
    holds and some fail -> not; otherwise (no case, or only holding and open ones) undecided."""
    ok, fail = sum(c == OK for c in cases), sum(c == FAIL for c in cases)
    if cases and ok == len(cases):
        return REPRODUCED
    if ok and fail:
        return PARTLY
    if fail:
        return NOT
    return UNDECIDED


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4])
def test_combine_every_combination(n):
    for cases in itertools.product((OK, FAIL, OPEN), repeat=n):
        assert combine(list(cases)) == _oracle(cases), cases


def test_combine_examples_and_a_bad_outcome():
    assert combine([]) == UNDECIDED                     # no case never passes
    assert combine([OK, OPEN]) == UNDECIDED             # the open one could still fail
    assert combine([FAIL, OPEN]) == NOT                 # a failed case already breaks it
    assert combine([OK, FAIL, OPEN]) == PARTLY
    with pytest.raises(ValueError, match="unknown case outcome.*'maybe'.*allowed: ok, fail, undecided"):
        combine([OK, "maybe"])
    with pytest.raises(ValueError, match="is not one of"):
        Judgement("insufficient data")
    assert Judgement(None).verdict is None              # a measurement


# ---- rendering --------------------------------------------------------------------------------
def _result(**kw) -> dict:
    base = {"id": "c", "section": "S", "ref": "Thm 1", "statement": "a claim", "context": "",
            "rule": "r", "params": {}, "rule_text": "the rule", "experiments": ["e"], "figures": [],
            "verdict": REPRODUCED, "rows": [], "notes": [], "decide": None, "size": "at the paper's size"}
    return {**base, **kw}


def summary(results: list[dict]) -> list[str]:
    """The claim rows of the summary (rfl.reporting.triage) of ``results`` in a config that
    declares nothing else."""
    lines = summary_lines({"experiments": {}, "figures": {}, "claims": {}}, results)
    return [ln for ln in lines if ln.startswith("| ") and not ln.startswith(("| source", "| figure", "| **all"))
            and ln.count(" | ") == 4]


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row ("\\|" does not split a cell)."""
    return [c.strip().replace("\\|", "|") for c in
            line.strip().removeprefix("|").removesuffix("|").replace("\\|", "\0").split("|")]


def test_a_bar_in_a_statement_or_cell_does_not_split_a_cell():
    r = _result(statement="|x| < 1 holds", ref="Eq. |2|",
                rows=[{"K": "1", "a|b": "p|q", "v": 0.5}])
    row = summary([r])[0]
    assert [c.replace("\0", "|") for c in _cells(row)] == ["S", "|x| < 1 holds", REPRODUCED, "",
                                                           "size not declared"]
    lines = claim_lines(r)
    table = [ln for ln in lines if ln.startswith("|")]
    assert [len(_cells(ln)) for ln in table] == [3, 3, 3]
    assert [c.replace("\0", "|") for c in _cells(table[2])] == ["1", "p|q", "0.5"]


def test_claim_lines_verdict_decide_and_measurement():
    lines = claim_lines(_result(verdict=UNDECIDED, decide="about 76 rounds", context="Medians.",
                                notes=["- K = 1: undecided."]))
    assert lines[0] == "### Claim: a claim (Thm 1)" and "Medians." in lines
    assert f"**Verdict: {UNDECIDED}.** _Rule (r): the rule_" in lines
    assert "What would decide it: about 76 rounds." in lines and "- K = 1: undecided." in lines
    assert lines[-2] == "Size: at the paper's size."
    decided = claim_lines(_result())
    assert not any(ln.startswith("What would decide it") for ln in decided)
    m = claim_lines(_result(verdict=None, ref=""))
    assert m[0] == "### Measurement: a claim" and not any("Verdict" in ln for ln in m)


def test_the_margin_is_on_the_verdict_line_and_a_failing_one_is_the_summary_rows_reason():
    r = _result(margin="ratio 0.66 [0.55, 0.78], claim <= 1")
    lines = claim_lines(r)
    assert ("**Verdict: reproduced.** Margin: ratio 0.66 [0.55, 0.78], claim <= 1. _Rule (r): the rule_"
            in lines)
    assert _cells(summary([r])[0])[3] == ""                       # green: no reason
    bad = _result(verdict=NOT, margin="K = 1: ratio 0.66 [0.55, 0.78], claim <= 1; K = 2: ratio 1.6 [1.5, 1.7], claim <= 1")
    assert _cells(summary([bad])[0])[3] == "K = 2: ratio 1.6 [1.5, 1.7], claim <= 1"


def test_summary_leaves_out_measurements_and_sections_keep_declaration_order():
    rs = [_result(id="a", section="B", statement="first"), _result(id="b", section="A", statement="m", verdict=None),
          _result(id="c", section="B", statement="second", verdict=NOT), _result(id="d", section="A", statement="third")]
    rows = summary(rs)
    assert [_cells(r)[1] for r in rows] == ["first", "second", "third"]      # no "m"
    heads = [ln for ln in sections(rs) if ln.startswith("#")]
    assert heads == ["## B", "### Claim: first (Thm 1)", "### Claim: second (Thm 1)",
                     "## A", "### Measurement: m (Thm 1)", "### Claim: third (Thm 1)"]


# ---- judge_all on the config's own Figure 1 claims --------------------------------------------
def _figure1_config():
    """config/config.yaml's claims of section 'Figure 1, CPESph' (the rest left out)."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    section = {k for k, c in cfg["claims"].items() if c["section"] == "Figure 1, CPESph"}
    # (and the rows of the optimal K's claims, judged on several seeds: tests/test_claim_rules_sources.py)
    assert section == {"fig1a_linear", "fig1a_decaying", "fig1a_larger_k", "fig1a_ags_avg",
                       "fig1a_not_too_large", "fig1a_communication"}
    claims = {k: cfg["claims"][k] for k in ("fig1a_linear", "fig1a_decaying", "fig1a_larger_k", "fig1a_ags_avg")}
    exps = {e: cfg["experiments"][e] for e in ("cpesph_fixed", "cpesph_decaying")}
    return {"experiments": exps, "datasets": {d: cfg["datasets"][d] for d in {e["dataset"] for e in exps.values()}},
            "figures": {"fig1a": {"experiment": "cpesph_fixed"}}, "claims": claims, "sources": cfg["sources"]}


def _figure1_spec(tmp_path):
    """Three seeds of each method: K = 1: 0.8^t, K = 2 and 4: 0.5^t (K = 4 no faster than K =
    2: a larger K helps up to a point), each levelled at a floor; decaying runs end at half the
    floor; RFedAvg K = 2 is 1.5x RFedAGS: every claim of Figure 1 holds."""
    T = 60
    f1, f2 = geometric(0.8, T, floor=1e-4), geometric(0.5, T, floor=1e-6)
    fixed = runs_of(tmp_path, "cpesph_fixed", {1: [f1] * 3, 2: [f2] * 3, 4: [f2] * 3})
    fixed += runs_of(tmp_path, "cpesph_fixed", {2: [1.5 * f2] * 3}, name="rfedavg")
    dec = runs_of(tmp_path, "cpesph_decaying", {1: [f1 - 0.5e-4] * 3, 2: [f2 - 0.5e-6] * 3,
                                                4: [f2 - 0.5e-6] * 3})
    # (table2: a file that does not exist, for the School section still written by report code)
    return {"config": _figure1_config(), "paper": {}, "tables": {"table2": str(tmp_path / "none.csv")},
            "runs": {"cpesph_fixed": fixed, "cpesph_decaying": dec}}


def test_judge_all_the_declared_figure1_claims(tmp_path):
    results = judge_all(_figure1_spec(tmp_path))
    assert [r["id"] for r in results] == ["fig1a_linear", "fig1a_decaying", "fig1a_larger_k", "fig1a_ags_avg"]
    assert {r["id"]: r["verdict"] for r in results} == dict.fromkeys(
        ["fig1a_linear", "fig1a_decaying", "fig1a_larger_k", "fig1a_ags_avg"], REPRODUCED)
    by = {r["id"]: r for r in results}
    assert by["fig1a_decaying"]["experiments"] == ["cpesph_fixed", "cpesph_decaying"]
    assert by["fig1a_linear"]["figures"] == ["fig1a"]              # drawn from its experiment
    assert by["fig1a_ags_avg"]["params"] == {"first": "rfedags", "second": "rfedavg", "factor": 1.25,
                                             "participation": "every"}
    assert by["fig1a_linear"]["params"] == RULES["linear_rate"].defaults()


def test_a_toy_size_config_calls_every_claim_undecided_and_keeps_what_the_rule_gave(tmp_path):
    spec = _figure1_spec(tmp_path)
    spec["config"]["toy_size"] = True
    results = judge_all(spec)
    assert {r["verdict"] for r in results} == {UNDECIDED}
    for r in results:
        assert r["notes"][-1] == f"At toy size the rule gives: {REPRODUCED} (no evidence about the paper)."
        assert "config/config.yaml" in r["decide"] and "config/paper.yaml" in r["decide"]
    from rfl.reporting.reproduction import provenance
    spec["configfiles"], spec["config"]["output_dir"] = ["config/smoke.yaml"], ".smoke/"
    head = provenance(spec)
    assert head[0].startswith("**Toy size.** `config/smoke.yaml` runs every experiment at toy size")
    assert "- config: `config/smoke.yaml` (outputs under `.smoke/`)" in head
    spec["config"]["toy_size"] = False
    assert not any("Toy size" in line for line in provenance(spec))


def test_a_claim_without_runs_is_undecided(tmp_path):
    spec = _figure1_spec(tmp_path)
    spec["runs"] = {"cpesph_fixed": [], "cpesph_decaying": []}
    results = judge_all(spec)
    assert {r["verdict"] for r in results} == {UNDECIDED}
    assert {r["decide"] for r in results} == {"run its experiments"}


class _Level(Rule):
    """A throw-away measurement: the first K's first value, no verdict."""

    name = "test_level_measurement"
    summary = "the first K's first value"
    judges = False

    def describe(self, p):
        return "measures"

    def judge(self, ev, p):
        (K, runs), *_ = ev.by_k(ev.names()[0]).items()
        return Judgement(None, [{"K": str(K), "first": float(runs[0]["excess_risk"].iloc[0])}])


RULES.remove(_Level.name)          # registered only while a test uses it


@pytest.fixture
def level_rule():
    RULES.add(_Level)
    yield _Level
    RULES.remove(_Level.name)


# ---- rfl reproduction: REPRODUCTION.md and claims.json ----------------------------------------
def cfg_title(source: str) -> str:
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())["sources"][source]["title"]


def test_rfl_reproduction_writes_the_claims_and_claims_json(tmp_path, level_rule):
    spec = _figure1_spec(tmp_path)
    spec["config"]["claims"]["level"] = {"section": "Measured", "statement": "level | first round",
                                         "rule": level_rule.name, "experiments": ["cpesph_fixed"]}
    spec["config"]["claims"]["fig1a_larger_k"]["statement"] = "a larger K | faster"
    spec["runs"]["cpesph_fixed"].append(runs_of(tmp_path / "x", "cpesph_fixed", {8: [(geometric(0.5, 60), 1)]})[0])
    path = tmp_path / "reproduction.json"
    path.write_text(json.dumps(spec))
    out = tmp_path / "paper_tables" / "REPRODUCTION.md"
    out.parent.mkdir()
    assert cli.main(["reproduction", str(path), str(out)]) == 0
    text = out.read_text()
    lines = text.splitlines()
    i = lines.index("## Summary")
    summary_part = lines[i:lines.index("## Figure 1, CPESph")]
    counts = [_cells(ln) for ln in summary_part if ln.startswith("| ") and ln.count(" | ") == 6]
    assert counts[0] == ["source", *VERDICTS, "claims"]
    # the paper's three claims (one partly), rfl's own one, the other sources none
    assert counts[1] == [cfg_title("paper"), "2", "1", "0", "0", "0", "3"]
    assert counts[-2] == [cfg_title("rfl"), "1", "0", "0", "0", "0", "1"]
    assert counts[-1] == ["**all**", "**3**", "**1**", "**0**", "**0**", "**0**", "**4**"]
    rows = [_cells(ln) for ln in summary_part
            if ln.startswith("| ") and ln.count(" | ") == 4 and not ln.startswith("| figure")]
    # grouped by source, then by figure (named on its first row); each claim links to its page
    assert [r[0] for r in rows] == ["fig1a", "", "", "fig1a"]
    # K = 8 (one seed) diverged at round 1: linear fails for it; for larger K its pair with K = 4 is
    # open (one seed), and K = 4 is no faster than K = 2 already: up to a point
    assert [r[2] for r in rows] == [PARTLY, REPRODUCED, REPRODUCED, REPRODUCED]
    assert rows[0][3].startswith("K = 8: ") and [r[3] for r in rows[1:]] == ["", "", ""]
    assert rows[2][1].replace("\0", "|") == "[a larger K | faster](claims/fig1a.html#fig1a_larger_k)"
    assert "- K = 8: fails: the run diverged at round 1 (median over seeds)." in lines
    assert "### Measurement: level | first round" in lines and "## Measured" in lines
    assert "- runs: 22 (1 diverged: rfedags_K8_seed0)" in text
    records = json.loads((out.parent / "claims.json").read_text())
    assert [r["id"] for r in records] == [*spec["config"]["claims"]]
    rec = {r["id"]: r for r in records}
    assert rec["level"]["verdict"] is None and rec["level"]["rows"] == [{"K": "1", "first": pytest.approx(1 + 1e-4)}]
    assert rec["fig1a_linear"]["verdict"] == PARTLY and rec["fig1a_linear"]["rule"] == "linear_rate"
    k4 = next(r for r in rec["fig1a_linear"]["rows"] if r["K"] == "8")
    assert math.isnan(k4["contraction/round"])                      # NaN survives as JSON NaN
    assert rec["fig1a_larger_k"]["margin"].startswith("K = 2 vs 1: rounds ratio ")
    assert set(VERDICTS) >= {r["verdict"] for r in records if r["verdict"]}


# ---- the config's claims are checked ----------------------------------------------------------
def _smoke() -> dict:
    return yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())


BAD = {
    "rule": (lambda c: c["fig1a_linear"].update(rule="nope"),
             "config key claims.fig1a_linear.rule: 'nope' is not a known claim rule; allowed: "),
    "param name": (lambda c: c["fig1a_linear"].update(params={"r3": 0.5}),
                   "config key claims.fig1a_linear.params.r3: not a parameter of claim rule 'linear_rate'; "
                   "allowed: algorithm, linearity, metric, min_decrease, participation"),
    "param type": (lambda c: c["fig1a_linear"].update(params={"linearity": "high"}),
                   "config key claims.fig1a_linear.params.linearity: 'high' is not of type 'number'"),
    "param range": (lambda c: c["fig1a_ags_avg"].update(params={"factor": 1}),
                    "config key claims.fig1a_ags_avg.params.factor: 1 is less than or equal to the minimum of 1"),
    "roles as a list": (lambda c: c["fig1a_decaying"].update(experiments=["cpesph_fixed"]),
                        "config key claims.fig1a_decaying.experiments: ['cpesph_fixed'] is not of type 'object'; "
                        "allowed: a mapping of the roles fixed, decaying to experiment names"),
    "a role missing": (lambda c: c["fig1a_decaying"].update(experiments={"fixed": "cpesph_fixed"}),
                       "config key claims.fig1a_decaying.experiments: 'decaying' is a required property; "
                       "allowed: a mapping of the roles fixed, decaying to experiment names"),
    "empty list": (lambda c: c["fig1a_linear"].update(experiments=[]),
                   "config key claims.fig1a_linear.experiments: [] should be non-empty; allowed: a non-empty "
                   "list of experiment names"),
    "experiment": (lambda c: c["fig1a_linear"].update(experiments=["nope"]),
                   "config key claims.fig1a_linear.experiments.0: 'nope' is not an experiment of this config; "
                   "allowed: cpesph_fixed, "),
    "role's experiment": (lambda c: c["fig1a_decaying"]["experiments"].update(decaying="nope"),
                          "config key claims.fig1a_decaying.experiments.decaying: 'nope' is not an experiment "
                          "of this config; allowed: cpesph_fixed, "),
    "figure": (lambda c: c["fig1a_linear"].update(figures=["nofig"]),
               "config key claims.fig1a_linear.figures.0: 'nofig' is not a figure of this config; allowed: "
               "fig1a_cpesph_fixed, "),
}


@pytest.mark.parametrize("what", BAD)
def test_a_bad_claim_is_one_line_naming_the_key_and_what_is_allowed(what):
    change, says = BAD[what]
    config = _smoke()
    change(config["claims"])
    with pytest.raises(rflconfig.ConfigError) as err:
        rflconfig.validate(config)
    lines = str(err.value).splitlines()
    assert lines[0] == "invalid configuration:" and len(lines) == 2
    assert lines[1].strip().startswith(says), lines[1]


def test_rfl_validate_exits_2_on_a_bad_claim(tmp_path):
    config = _smoke()
    config["claims"]["fig1a_linear"]["rule"] = "nope"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    r = subprocess.run([sys.executable, "-m", "rfl.cli", "validate", str(path)], cwd=REPO, capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("rfl: error: invalid configuration:")
    assert "config key claims.fig1a_linear.rule: 'nope' is not a known claim rule; allowed: " in r.stderr


def test_the_shipped_configs_claims_are_valid():
    for name in ("config.yaml", "smoke.yaml"):
        cfg = rflconfig.validate(yaml.safe_load((REPO / "config" / name).read_text()))
        assert all(c["rule"] in RULES for c in cfg["claims"].values())
        assert copy.deepcopy(cfg["claims"]) == cfg["claims"]

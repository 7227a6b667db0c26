"""What a reader of REPRODUCTION.md sees in the sections the report writer still writes itself
(School, FedLSA) and of Figures 1 and 2: the headings, the tables' columns and numbers, the notes and the verdicts, on
run files whose curves are exact geometric decays, so that the contraction factor, the rounds
of the fit and the levels are known in closed form and computed here with numpy. Every
section must also be well-formed Markdown (``check_markdown``): a table or a heading glued to
the text before or after it does not render."""

from __future__ import annotations

import re

import numpy as np

from rfl.reporting import reproduction as R
from rfl.reporting.reproduction import PARTLY, REPRODUCED, Report
from rfl.testing.run_files import write_run


def check_markdown(lines: list[str]) -> None:
    """Headings and tables stand apart from the text around them (a blank line before and
    after); every row of a table has the header's number of cells, the second row is the
    separator; a verdict line stands apart too (after a list it would continue the list's
    last item) and its rule reads as a clause after "Rule:"; a paragraph ends a sentence."""
    for i, line in enumerate(lines):
        if line.startswith("#"):
            assert i == 0 or lines[i - 1] == "", f"no blank line before heading {line!r}"
            assert i + 1 < len(lines) and lines[i + 1] == "", f"no blank line after heading {line!r}"
        if line.startswith("**Verdict:"):
            # the rule continues "_Rule: " as a clause (lower-case start unless a method's name, no
            # closing full stop), without a "_" that would end the italics early
            assert re.fullmatch(r"\*\*Verdict: (reproduced|partly reproduced|not reproduced|insufficient "
                                r"data)\.\*\* _Rule: ([a-z]|RFedAGS|FedLSA|SCAFFLSA)[^_]*[A-Za-z0-9%)]_",
                                line), line
            assert lines[i - 1] == "", f"no blank line before {line!r}"
            assert i + 1 == len(lines) or lines[i + 1] == "", f"no blank line after {line!r}"
        if line and not line.startswith(("#", "|", "- ", "  ", "**Verdict:")):
            assert line[-1] in ".:)", f"a paragraph that does not end a sentence: {line!r}"
        if line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|")):
            assert i == 0 or lines[i - 1] == "", f"no blank line before table {line!r}"
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            block = lines[i:j]
            cells = [len(ln.strip("|").split("|")) for ln in block]
            assert len(block) >= 3 and set(block[1].strip("|").split("|")) == {"---"}
            assert set(cells) == {cells[1]}, f"a row of table {line!r} has another number of cells"
            assert j == len(lines) or lines[j] == "", f"no blank line after table {line!r}"


def headers(lines: list[str]) -> list[str]:
    """The header row of every table."""
    return [ln for i, ln in enumerate(lines) if ln.startswith("|") and (i == 0 or not lines[i - 1].startswith("|"))]


def rows_of(lines: list[str], header: str) -> list[list[str]]:
    i = lines.index(header) + 2
    out = []
    while i < len(lines) and lines[i].startswith("|"):
        out.append([c.strip() for c in lines[i].strip("|").split("|")])
        i += 1
    return out


# ---- every section of a written report is well-formed -----------------------------------------
from test_verdicts import _figure2, figure1, geometric, school, _gap_cells  # noqa: E402


def test_figure1_section_layout_and_columns(tmp_path):
    """Two K, decaying runs, RFedAvg beside RFedAGS: every table of the section, with the
    columns a reader is told about."""
    f = geometric(0.5, 40, floor=1e-6)
    rep, _ = figure1(tmp_path, {1: [f], 4: [geometric(0.3, 40, floor=1e-6)]}, {1: [f / 2], 4: [f / 2]},
                     avg={1: [1.2 * f]})
    lines = rep.lines
    check_markdown(lines)
    assert lines[0] == "## Figure 1, P"
    for h in ("### Claim: with a fixed step, RFedAGS converges linearly to a neighbourhood of x* (Theorem 4.3)",
              "### Claim: decaying step sizes find a more accurate solution than the fixed step",
              "### Claim: a larger K speeds up convergence (in rounds), up to a point",
              "### Claim: RFedAGS and RFedAvg behave alike (identical for K = 1 with Exp and parallel transport)"):
        assert h in lines
    hs = headers(lines)
    assert hs[0] == ("| K | F(x_1)-F* | contraction/round | R^2 (log-linear) | rounds fitted | decrease "
                     "| level reached |")
    assert hs[1] == ("| K | fixed, last round | decaying, last round | decaying, at the fixed run's last "
                     "round | ratio (dec/fixed) |")
    assert hs[2].startswith("| K | rounds to reach ") and hs[2].endswith(" | level reached |")
    assert hs[3] == "| K | RFedAGS last | RFedAvg last | max abs(log ratio) over rounds |"
    assert [w for w, _, _ in rep.summary] == ["Fig. 1 P"] * 4


def test_figure2_section_layout_and_columns(tmp_path):
    _, text = _figure2(tmp_path, {1: geometric(0.9, 50), 3: geometric(0.7, 50)})
    lines = text.splitlines()
    check_markdown(lines)
    i = lines.index("## Figure 2, multitask feature learning (synthetic)")
    assert lines[i + 2] == "### Claim: RFedAGS converges linearly, and the number of local steps K speeds it up"
    assert ("| K | contraction/round | R^2 | excess risk, first | excess risk, last | subspace distance, last |"
            in headers(lines))
    _, text = _figure2(tmp_path / "d", {1: geometric(0.9, 50), 3: (geometric(0.7, 50), 4)})
    assert ("- K = 3: 1 of 1 seeds diverged (first at round 4); each counts as +inf in the median from "
            "the round it diverged on.") in text.splitlines()


def test_school_section_layout(tmp_path):
    _, text = school(tmp_path, {**_gap_cells(3, 0.01, avg=0.001), **_gap_cells(4, 0.02, avg=0.001)},
                     {(3, "RSD"): 0.5, (4, "RSD"): 0.45})
    check_markdown(text.splitlines())


# ---- School: rules, ordering over r, the closest protocol, the step-size study ------------------
from rfl import io  # noqa: E402
from rfl.reporting import school as SCH  # noqa: E402
from test_verdicts import school_table, spec_for  # noqa: E402


def _school_report(tmp_path, table, sensitivity=None):
    spec = spec_for(tmp_path, {}, table2=table)
    if sensitivity is not None:
        spec["config"]["tables"]["table2"]["sensitivity"] = ["x"]
        io.write_table(tmp_path / "table2_sensitivity.csv", sensitivity)
    rep = Report()
    R.school_section(rep, spec)
    return rep


def _rules(rep):
    return [ln for ln in rep.lines if ln.startswith("**Verdict:")]


def test_school_rules_state_the_thresholds_applied(tmp_path, monkeypatch):
    monkeypatch.setattr(SCH, "SCHOOL_GAP", 0.25)
    monkeypatch.setattr(SCH, "SCHOOL_AVG_TOL", 0.125)
    monkeypatch.setattr(SCH, "TABLE2_TOL", 0.375)
    cells = {(3, "RSD"): 0.5, (3, "RFedAGS-K=1"): 0.55, (3, "RFedAvg"): 0.56,
             (4, "RSD"): 0.45, (4, "RFedAGS-K=1"): 0.5, (4, "RFedAvg"): 0.5}
    rep = _school_report(tmp_path, school_table(cells, {k: v - 0.01 for k, v in cells.items()}))
    rules = "\n".join(_rules(rep))
    assert "within 25% (relative) of the best centralised NMSE" in rules
    assert "differ by at most 0.125, for every r" in rules
    assert "every cell within 0.375 (absolute NMSE)" in rules
    assert "moves in the same direction as the paper's between each pair of consecutive r" in rules
    check_markdown(rep.lines)


def test_school_ordering_over_r(tmp_path):
    """RSD falls with r as the paper's does (0.5, 0.4, 0.3 against 0.47, 0.43, 0.40): same
    direction; RFedAGS-K=1 falls then stays flat (0.5, 0.45, 0.45) while the paper's falls: not
    the same; RFedAGS-K=4 has no paper value (left out); RFedAvg has no NMSE at r = 5 (missing)."""
    ours = {(3, "RFedAvg"): 0.5, (4, "RFedAvg"): 0.45, (5, "RFedAvg"): np.nan,
            (3, "RSD"): 0.5, (4, "RSD"): 0.4, (5, "RSD"): 0.3,
            (3, "RCG"): 0.5, (4, "RCG"): 0.4, (5, "RCG"): 0.35,
            (3, "RFedAGS-K=1"): 0.5, (4, "RFedAGS-K=1"): 0.45, (5, "RFedAGS-K=1"): 0.45,
            (3, "RFedAGS-K=4"): 0.5, (4, "RFedAGS-K=4"): 0.6, (5, "RFedAGS-K=4"): 0.7}
    paper = {(3, "RFedAvg"): 0.51, (4, "RFedAvg"): 0.44, (5, "RFedAvg"): 0.41,
             (3, "RSD"): 0.47, (4, "RSD"): 0.43, (5, "RSD"): 0.40,
             (3, "RCG"): 0.40, (4, "RCG"): 0.43, (5, "RCG"): 0.47,        # rises where ours falls
             (3, "RFedAGS-K=1"): 0.51, (4, "RFedAGS-K=1"): 0.44, (5, "RFedAGS-K=1"): 0.41}
    rep = _school_report(tmp_path, school_table(ours, paper))
    v = {c: x for _, c, x in rep.summary}
    assert v["ordering over r [heldout]"] == PARTLY               # 1 of 3 judged methods, 1 missing
    head = "| method | best r (ours) | best r (paper) | r = 3 | r = 4 | r = 5 |"
    rows = {r[0]: r[1:] for r in rows_of(rep.lines, head)}
    assert rows == {"RSD": ["5", "5", "0.5", "0.4", "0.3"], "RCG": ["5", "3", "0.5", "0.4", "0.35"],
                    "RFedAGS-K=1": ["4", "5", "0.5", "0.45", "0.45"]}
    check_markdown(rep.lines)
    # RSD and RCG alone: partly (RCG falls where the paper rises)
    two = {k: x for k, x in ours.items() if k[1] in ("RSD", "RCG")}
    rep = _school_report(tmp_path / "a", school_table(two, {k: paper[k] for k in two}))
    assert {c: x for _, c, x in rep.summary}["ordering over r [heldout]"] == PARTLY
    # all methods in the paper's direction, with the missing one and RCG dropped: reproduced
    for r in (3, 4, 5):
        for m in ("RFedAvg", "RCG"):
            del ours[(r, m)], paper[(r, m)]
    ours[(5, "RFedAGS-K=1")] = 0.44
    rep = _school_report(tmp_path / "b", school_table(ours, paper))
    assert {c: x for _, c, x in rep.summary}["ordering over r [heldout]"] == REPRODUCED
    # one r only: no ordering claim
    rep = _school_report(tmp_path / "c", school_table({k: x for k, x in ours.items() if k[0] == 3}, paper))
    assert "ordering over r [heldout]" not in {c for _, c, _ in rep.summary}


def _protocol_table(diffs: dict):
    """{(protocol, normalisation): difference of every cell to the paper}: two cells each."""
    parts = []
    paper = {(3, "RSD"): 0.5, (3, "RFedAGS-K=1"): 0.5}
    for (protocol, norm), d in diffs.items():
        t = school_table({k: p + d for k, p in paper.items()}, paper)
        t["protocol"], t["normalisation"] = protocol, norm
        parts.append(t)
    import pandas as pd
    return pd.concat(parts, ignore_index=True)


def test_closest_protocol_ranking(tmp_path, monkeypatch):
    """Ranked by |mean difference|, a protocol without a measurement last; a difference equal
    to the tolerance counts as within."""
    monkeypatch.setattr(SCH, "TABLE2_TOL", 0.25)
    table = _protocol_table({("heldout", "pooled"): 0.25, ("refit_on_test", "pooled"): -0.125,
                             ("heldout", "task_mean"): np.nan})
    rep = _school_report(tmp_path, table)
    i = rep.lines.index("### Which protocol is closest to the paper's numbers")
    assert rep.lines[i + 2:i + 5] == [
        "- refit_on_test, pooled: 2 of 2 cells within 0.25, mean difference (ours - paper) -0.125, "
        "largest |difference| 0.125.",
        "- heldout, pooled: 2 of 2 cells within 0.25, mean difference (ours - paper) +0.250, "
        "largest |difference| 0.250.",
        "- heldout, task_mean: 0 of 2 cells within 0.25, mean difference (ours - paper) +nan, "
        "largest |difference| nan."]
    check_markdown(rep.lines)
    # one protocol and one normalisation: nothing to rank
    rep = _school_report(tmp_path / "b", _protocol_table({("heldout", "pooled"): 0.1}))
    assert "### Which protocol is closest to the paper's numbers" not in rep.lines


def test_sensitivity_table_and_lines(tmp_path):
    """Two step sizes at r = 4 with K = 1, 4 and 10 (K = 4 at the larger step only), and r = 5
    with one step: the table's cells, and a line per (r, protocol) with two steps or more."""
    import pandas as pd
    rows = []
    for r, alpha, cells in ((4, 1e-6, {1: (0.70, 100.0), 10: (0.64, 60.0)}),
                            (4, 1.8e-5, {1: (0.63, 40.0), 4: (0.629, 30.0), 10: (0.628, 20.0)}),
                            (5, 1e-6, {1: (0.60, 90.0), 10: (0.59, 50.0)})):
        for K, (v, rnd) in cells.items():
            rows.append({"r": r, "alpha": alpha, "method": f"RFedAGS-K={K}", "protocol": "heldout",
                         "nmse_mean": v, "nmse_std": 0.01, "round_mean": rnd, "round_std": 0.0,
                         "n_splits": 3, "paper_nmse": 0.4, "K1_minus_K10": cells[1][0] - cells[10][0],
                         "paper_K1_minus_K10": 0.002})
    rep = _school_report(tmp_path, school_table({(4, "RSD"): 0.5, (4, "RFedAGS-K=1"): 0.52}),
                         pd.DataFrame(rows))
    lines = rep.lines
    check_markdown(lines)
    assert "### Measurement: Table 2's K = 1 cells against the step size" in lines
    text = "\n".join(lines)
    assert "With the smallest step here (alpha = 1e-06, the paper's)" in text
    assert "at round 100 (r = 4, heldout); round 90 (r = 5, heldout) (mean over splits)" in text
    head = "| r | alpha | protocol | K=1 | K=1 best round | K=4 | K=10 | K=1 - K=10 | paper K=1 - K=10 |"
    got = {(r[0], r[1]): r[2:] for r in rows_of(lines, head)}
    assert got[("4", "1e-06")] == ["heldout", "0.7", "100", "nan", "0.64", "0.06", "0.002"]   # no K = 4 run
    assert got[("4", "1.8e-05")] == ["heldout", "0.63", "40", "0.629", "0.628", "0.002", "0.002"]
    assert ("- r = 4, heldout: K = 1 is +0.060 from K = 10 at alpha = 1e-06, +0.002 at alpha = 1.8e-05 "
            "(paper: +0.002).") in lines
    assert not any(ln.startswith("- r = 5") for ln in lines)      # one step at r = 5: no line
    has_facts(paragraph(lines, "In the paper's Table 2, RFedAGS with K = 1 is within 0.002 of K = 10 at r = 4 and 5. "
                               "With the smallest step here"),
              "(alpha = 1e-06, the paper's), K = 1 takes 1/10 of K = 10's local steps per round, and its best",
              "(mean over splits). Best NMSE (mean over the splits run) for each K at larger steps, same rounds; "
              "the default config keeps the paper's step",
              end="the paper's step (`paper_tables/table2_sensitivity.md` has every cell):")


# ---- federated kPCA on digits, and the report's provenance --------------------------------------
def _kpca_run(root, exp, name, K, last, floats, seed=0, T=10):
    path = root / "runs" / exp / f"{name}_K{K}_seed{seed}.csv"
    er = np.linspace(1.0, last, T + 1)
    write_run(path, {"round": np.arange(T + 1), "excess_risk": er, "floats": np.linspace(0, floats, T + 1)},
              {"experiment": exp, "run_id": path.stem, "seed": seed,
               "algorithm": {"name": name, "K": K}, "dataset": {"problem": "kpca"}},
              commit="c" * 8, versions={"numpy": "2", "python": "3.11"})
    return str(path)


def test_provenance_lists_runs_diverged_commits_and_versions(tmp_path):
    ok = [_kpca_run(tmp_path, "kx", "rfedags", 4, 1e-3, 1.0, seed) for seed in range(2)]
    bad = []
    for i in range(12):                         # 12 diverged runs: the first 10 named
        path = tmp_path / "runs" / "ky" / f"bad{i:02d}.csv"
        write_run(path, {"round": np.arange(3), "excess_risk": np.array([1.0, 2.0, np.nan]),
                         "status": np.array(["ok", "ok", "diverged"], dtype=object)},
                  {"experiment": "ky", "run_id": path.stem}, commit="b" * 8, versions={"numpy": "2"})
        bad.append(str(path))
    lines = R.provenance({"runs": {"kx": ok, "ky": bad}})
    names = ", ".join(f"bad{i:02d}" for i in range(10))
    assert lines[0] == f"- runs: 14 (12 diverged: {names})"
    assert lines[1] == f"- code: commit(s) {'b' * 8}, {'c' * 8}"
    assert lines[2] == "- versions: numpy 2, python 3.11"
    assert lines[3].startswith("- written: 20")
    assert R.provenance({"runs": {"kx": ok}})[0] == "- runs: 2 (0 diverged)"


def test_lsa_section_layout(tmp_path):
    from test_verdicts import lsa

    # (the FedLSA section's table comes from rfl.reporting.lsa.display; its "||bias||^2" column
    # splits into extra Markdown cells, so only the lines outside the tables are checked here)
    _, text = lsa(tmp_path / "l", [("heterogeneous", 10, 2, 0.001, 1.0, 50.0), ("heterogeneous", 10, 1, np.nan, 1.0, 1e6),
                                   ("homogeneous", 10, 4, 0.5, 1.0, 1e6)])
    check_markdown([ln for ln in text.splitlines() if not ln.startswith("|")])


# ---- the facts each section's opening paragraph must give a reader ------------------------------
def paragraph(lines, start):
    """The one paragraph that opens with ``start``."""
    found = [ln for ln in lines if ln.startswith(start)]
    assert len(found) == 1, f"no single paragraph opening with {start!r}"
    return found[0]


def has_facts(text, *facts, end=None):
    for f in facts:
        assert f in text, f"missing {f!r}"
    if end is not None:
        assert text.endswith(end), f"does not end with {end!r}"


def test_opening_paragraphs_name_scripts_data_and_definitions(tmp_path):
    """Which authors' script an experiment follows, the deviations from it, and what the numbers
    are (medians over seeds, which excess risk): each section's opening paragraph."""
    # School
    rep = _school_report(tmp_path / "s", school_table({(3, "RSD"): 0.5, (3, "RFedAGS-K=1"): 0.52}))
    assert rep.lines[0] == "## Figure 3 and Table 2, School data"
    has_facts(paragraph(rep.lines, "Best test NMSE over the rounds (mean over random 80/20 splits), beside the paper's"),
              end="beside the paper's, under each evaluation protocol:")
    has_facts(paragraph(rep.lines, "The NMSE of the verdicts is the paper's (Section 5.2): squared errors pooled"),
              "squared errors pooled over all test rows, over the variance of all test labels",
              "(`pooled`); `task_mean` (the mean of the per-task MSEs over the same variance)",
              end="the per-task MSEs over the same variance) is shown beside it.")
    assert "### Claim: RFedAGS is comparable to the centralised RSD, RCG and RLBFGS (heldout)" in rep.lines
    assert "### Claim: the numbers of Table 2 (heldout)" in rep.lines
    # Figure 1
    f = geometric(0.5, 30, floor=1e-6)
    rep, _ = figure1(tmp_path / "f", {1: [f]}, {1: [f / 2]})
    has_facts(paragraph(rep.lines, "Experiments `p_fixed` (fixed step) and `p_dec` (decaying step (5.2)); "),
              end="(decaying step (5.2)); curves are medians over seeds of the excess risk F(x_t) - F(x*).")


def test_report_head(tmp_path):
    _, text = _figure2(tmp_path, {1: geometric(0.9, 50), 3: geometric(0.7, 50)})
    lines = text.splitlines()
    assert lines[:2] == ["# Reproduction report", ""]
    has_facts(lines[2], "Written by `rfl reproduction` from the result files of this workflow run; do not edit. "
                        "Each claim of the RFedAGS paper is set against what was measured here, with the rule "
                        "that decides the verdict.")
    i = lines.index("## Summary")
    assert lines[i + 1:i + 4] == ["", "| where | claim | verdict |", "|---|---|---|"]
    assert lines[i + 4] == "| Fig. 2 | linear convergence | reproduced |"
    assert lines[3] == "" and lines[4].startswith("- runs: 2 (0 diverged)") and lines[i - 1] == ""


def test_table2_numbers_with_a_cell_not_measured(tmp_path):
    """Four cells with a paper value: two 0.01 above it, one 0.05 below, one not measured; a
    fifth cell without a paper value is not counted."""
    cells = {(3, "RSD"): 0.51, (3, "RCG"): 0.40, (3, "RLBFGS"): 0.47, (3, "RFedAGS-K=1"): np.nan,
             (3, "RFedAGS-K=4"): 0.6}
    paper = {(3, "RSD"): 0.50, (3, "RCG"): 0.45, (3, "RLBFGS"): 0.46, (3, "RFedAGS-K=1"): 0.5}
    rep = _school_report(tmp_path, school_table(cells, paper))
    lines = rep.lines
    mean = np.mean([0.51 - 0.50, 0.40 - 0.45, 0.47 - 0.46])
    assert ("2 of 4 cells are within 0.02 of the paper's value; the largest difference is 0.050 (RCG, "
            f"r = 3); mean signed difference (ours - paper) {mean:+.3f}.") in lines
    assert "1 of 4 cells have no measured NMSE (insufficient data for them)." in lines
    assert {c: x for _, c, x in rep.summary}["published NMSE values [heldout]"] == PARTLY
    # every cell measured: no such line
    cells[(3, "RFedAGS-K=1")] = 0.5
    rep = _school_report(tmp_path / "b", school_table(cells, paper))
    assert not any("no measured NMSE" in ln for ln in rep.lines)


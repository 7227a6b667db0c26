"""What a reader of REPRODUCTION.md sees around the claims: the provenance header, and well-formed
Markdown (``check_markdown``: a table or a heading glued to the text before or after it does not
render) in a report written from declared claims on run files with known curves."""

from __future__ import annotations

import re

import numpy as np

from rfl import cli
from rfl.reporting import reproduction as R
from rfl.testing.run_files import write_run

from test_claims_core import _figure1_spec


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
            # the margin, where the rule has one, ends a sentence before the rule; the rule continues
            # "_Rule: " as a clause (lower-case start unless a method's name, no closing full stop),
            # without a "_" that would end the italics early
            assert re.fullmatch(r"\*\*Verdict: (reproduced|partly reproduced|not reproduced|undecided "
                                r"at this size)\.\*\*(?: Margin: .+?\.)? _Rule \([a-z0-9_]+\): ([a-z]|RFedAGS|FedLSA|SCAFFLSA)"
                                r"[^_]*[A-Za-z0-9%)]_", line), line
            assert lines[i - 1] == "", f"no blank line before {line!r}"
            assert i + 1 == len(lines) or lines[i + 1] == "", f"no blank line after {line!r}"
        if line and not line.startswith(("#", "|", "- ", "  ", "**Verdict:", "**Toy size.**")):
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
    lines = R.provenance({"config": {}, "runs": {"kx": ok, "ky": bad}})
    assert lines.pop(0) == "- config: `config/config.yaml`"          # (a spec without configfiles)
    names = ", ".join(f"bad{i:02d}" for i in range(10))
    assert lines[0] == f"- runs: 14 (12 diverged: {names})"
    assert lines[1] == f"- code: commit(s) {'b' * 8}, {'c' * 8}"
    assert lines[2] == "- versions: numpy 2, python 3.11"
    assert lines[3].startswith("- written: 20")
    assert R.provenance({"config": {}, "runs": {"kx": ok}})[1] == "- runs: 2 (0 diverged)"


def test_a_written_report_is_well_formed_markdown(tmp_path):
    """Figure 1's declared claims on exact geometric runs, written by ``rfl reproduction``."""
    import json

    spec = _figure1_spec(tmp_path)
    path = tmp_path / "reproduction.json"
    path.write_text(json.dumps(spec))
    out = tmp_path / "REPRODUCTION.md"
    assert cli.main(["reproduction", str(path), str(out)]) == 0
    lines = out.read_text().splitlines()
    check_markdown(lines)
    assert sum(ln.startswith("**Verdict:") for ln in lines) == 4
    spec["config"]["toy_size"] = True
    path.write_text(json.dumps(spec))
    assert cli.main(["reproduction", str(path), str(out)]) == 0
    check_markdown(out.read_text().splitlines())

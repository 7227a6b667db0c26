"""What a reader of REPRODUCTION.md sees in the sections of the newer version (HSP, MNIST PCA)
and of Figure 2: the headings, the tables' columns and numbers, the notes and the verdicts, on
run files whose curves are exact geometric decays, so that the contraction factor, the rounds
of the fit and the levels are known in closed form and computed here with numpy. Every
section must also be well-formed Markdown (``check_markdown``): a table or a heading glued to
the text before or after it does not render."""

from __future__ import annotations

import re

import numpy as np
import pytest

from rfl.reporting import reproduction as R
from rfl.reporting.newer_version import newer_version_section
from rfl.reporting.reproduction import INSUFFICIENT, NOT, PARTLY, REPRODUCED, Report
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


T = 205                                   # 0.9 T = 184.5: no tie at the 90% mark
t = np.arange(T + 1)


def fit_of_geometric(q, start=1.0):
    """A pure geometric curve start q^t over rounds 0..T: its log is exactly linear, so the fit
    has contraction q and R^2 = 1 over the rounds to 90% of the log-decrease (the first round
    t with t >= 0.9 T), and the level is the median of its last 10% of rounds."""
    c = start * q ** t
    rounds = int(np.ceil(0.9 * T))
    return {"rate": q, "rounds": rounds, "plateau": float(np.median(c[-((T + 1) // 10):]))}


def _run(root, exp, name, er, K=5, dist=None, seed=0):
    path = root / exp / f"{name}_K{K}_seed{seed}.csv"
    cols = {"round": np.arange(len(er)), "excess_risk": er}
    if dist is not None:
        cols["dist_true"] = dist
    write_run(path, cols, {"experiment": exp, "run_id": path.stem, "seed": seed,
                           "algorithm": {"name": name, "K": K, "batch_size": 2}})
    return str(path)


def _config(problem_of: dict):
    """{experiment: (problem, step rule)} -> the config the sections read."""
    return {"datasets": {f"d_{p}": {"problem": p} for p, _ in problem_of.values()},
            "experiments": {e: {"dataset": f"d_{p}", "step": {"rule": rule}} for e, (p, rule) in problem_of.items()}}


# ---- HSP on WordNet ---------------------------------------------------------------------------
@pytest.mark.parametrize("ratio, want", [(0.9e-3, REPRODUCED), (1e-3, REPRODUCED), (1.1e-3, PARTLY)])
def test_hsp_converged_means_a_fall_by_1e3_from_round_0(tmp_path, ratio, want):
    """RFedAGS falls by 1e-6 (converged); RFedAvg ends exactly ``ratio`` times its round-0 value."""
    ags = 0.2 * 0.9 ** t
    avg = np.full(T + 1, 0.2)
    avg[-1] = 0.2 * ratio
    runs = {"hf": [_run(tmp_path, "hf", "rfedags", ags, dist=np.full(T + 1, 0.3)),
                   _run(tmp_path, "hf", "rfedavg", avg, K=1, dist=np.full(T + 1, 0.5))]}
    rep = Report()
    newer_version_section(rep, {"config": _config({"hf": ("hsp", "fixed")}), "runs": runs})
    v = {c: x for _, c, x in rep.summary}
    assert v["RFedAGS, RFedAvg and RFedSVRG converge to the minimiser (fixed step)"] == want


def test_hsp_section_tables_and_notes(tmp_path):
    """Two seeds of RFedAGS K = 5 (0.9^t and 3 x 0.9^t: median 2 x 0.9^t), RFedAGS K = 1 (0.8^t)
    and RFedAvg: the table's median numbers, the fit of each K of RFedAGS, the verdicts."""
    runs = {"hf": [_run(tmp_path, "hf", "rfedags", s * 0.9 ** t, dist=np.linspace(1.0, d, T + 1), seed=seed)
                   for seed, (s, d) in enumerate(((1.0, 0.3), (3.0, 0.5)))],
            "hx": []}                                       # an experiment without runs: no section
    runs["hf"].append(_run(tmp_path, "hf", "rfedags", 0.8 ** t, K=1, dist=np.full(T + 1, 0.2)))
    runs["hf"].append(_run(tmp_path, "hf", "rfedavg", 0.9 ** t, K=1, dist=np.full(T + 1, 0.25)))
    rep = Report()
    cfg = _config({"hf": ("hsp", "fixed"), "hx": ("hsp", "fixed")})
    newer_version_section(rep, {"config": cfg, "runs": runs})
    lines = rep.lines
    check_markdown(lines)
    assert lines[0] == "## Newer version: hyperbolic structured prediction on WordNet mammals (H^2)"
    assert "### `hf`" in lines and "### `hx`" not in lines
    head = "| method | excess risk, round 0 | excess risk, last | d(x, y_true), last | rounds |"
    assert headers(lines) == [head]
    rows = {r[0]: r[1:] for r in rows_of(lines, head)}
    assert rows["RFedAGS-K=5"] == [f"{2.0:.4g}", f"{2 * 0.9 ** T:.4g}", f"{0.4:.4g}", str(T)]
    assert rows["RFedAGS-K=1"] == ["1", f"{0.8 ** T:.4g}", "0.2", str(T)]
    assert rows["RFedAvg-K=1"][2] == "0.25"
    for K, q, s in ((1, 0.8, 1.0), (5, 0.9, 2.0)):
        f = fit_of_geometric(q, s)
        assert (f"- RFedAGS K = {K}: contraction {q:.4f} per round over {f['rounds']} rounds "
                f"(R^2 = 1.000), then a plateau at {f['plateau']:.2e}.") in lines
    v = {c: x for _, c, x in rep.summary}
    assert v["RFedAGS, RFedAvg and RFedSVRG converge to the minimiser (fixed step)"] == REPRODUCED
    assert v["RFedAGS with a fixed step converges linearly to a neighbourhood of the minimiser"] == REPRODUCED
    assert all(w == "HSP, WordNet" for w, _, _ in rep.summary) and len(rep.summary) == 2


def test_hsp_a_K_without_enough_rounds_says_so(tmp_path):
    runs = {"hf": [_run(tmp_path, "hf", "rfedags", np.array([1.0, 0.5]), dist=np.array([0.3, 0.3])),
                   _run(tmp_path, "hf", "rfedags", 0.5 ** t, K=1, dist=np.full(T + 1, 0.3))]}
    rep = Report()
    newer_version_section(rep, {"config": _config({"hf": ("hsp", "fixed")}), "runs": runs})
    assert f"- K = 5: insufficient data (fewer than {R.MIN_FIT_ROUNDS + 1} recorded rounds)." in rep.lines
    v = {c: x for _, c, x in rep.summary}
    assert v["RFedAGS with a fixed step converges linearly to a neighbourhood of the minimiser"] == PARTLY


# ---- PCA on the sphere with MNIST ---------------------------------------------------------------
@pytest.mark.parametrize("dec_floor, want", [(1e-4, REPRODUCED), (1e-3, NOT), (1e-2, NOT)])
def test_mnist_decaying_below_fixed_strictly(tmp_path, dec_floor, want):
    """Fixed step: 100 x 0.8^t floored at 1e-3; decaying: the same floored at ``dec_floor``
    (equal plateaus are not "more accurate")."""
    fixed = np.maximum(100 * 0.8 ** t, 1e-3)
    runs = {"mf": [_run(tmp_path, "mf", "rfedags", fixed)],
            "md": [_run(tmp_path, "md", "rfedags", np.maximum(100 * 0.8 ** t, dec_floor))]}
    rep = Report()
    cfg = _config({"mf": ("pca_sphere", "fixed"), "md": ("pca_sphere", "decaying")})
    newer_version_section(rep, {"config": cfg, "runs": runs})
    v = {c: x for _, c, x in rep.summary}
    assert v["a decaying step reaches a more accurate solution than a fixed one"] == want
    assert f"Plateau with the decaying step {dec_floor:.2e}, with the fixed step {1e-3:.2e}." in rep.lines


def test_mnist_section_table_fits_and_verdicts(tmp_path):
    """Two fixed-step experiments (0.9^t and 0.5^t x 100, pure geometric) and RFedAvg runs, which
    the section leaves out (listed first: skipped, not the end of the list); no decaying one:
    no decaying verdict."""
    runs = {"mf": [_run(tmp_path, "mf", "rfedavg", np.full(T + 1, 5.0)),
                   _run(tmp_path, "mf", "rfedags", 100 * 0.9 ** t)],
            "mg": [_run(tmp_path, "mg", "rfedags", 100 * 0.5 ** t)]}
    rep = Report()
    cfg = _config({"mf": ("pca_sphere", "fixed"), "mg": ("pca_sphere", "fixed")})
    newer_version_section(rep, {"config": cfg, "runs": runs})
    lines = rep.lines
    check_markdown(lines)
    assert lines[0] == "## Newer version: PCA on the sphere with MNIST (S^783)"
    head = "| experiment | method | step | excess risk, round 0 | plateau (last 10%) | rounds |"
    assert headers(lines) == [head]
    rows = rows_of(lines, head)
    assert [r[:3] for r in rows] == [["mf", "RFedAGS-K=5", "fixed"], ["mg", "RFedAGS-K=5", "fixed"]]
    f9, f5 = fit_of_geometric(0.9, 100.0), fit_of_geometric(0.5, 100.0)
    assert rows[0][3:] == ["100", f"{f9['plateau']:.4g}", str(T)]
    assert rows[1][4] == f"{f5['plateau']:.4g}"
    for e, q, f in (("mf", 0.9, f9), ("mg", 0.5, f5)):
        assert (f"- `{e}`, RFedAGS-K=5: contraction {q:.4f} per round over {f['rounds']} rounds "
                f"(R^2 = 1.000), plateau {f['plateau']:.2e}.") in lines
    assert rep.summary == [("PCA, MNIST", "RFedAGS with a fixed step converges linearly to a "
                            "neighbourhood of the minimiser", REPRODUCED)]


def test_mnist_a_fixed_run_too_short_to_fit(tmp_path):
    runs = {"mf": [_run(tmp_path, "mf", "rfedags", np.array([1.0, 0.5]))]}
    rep = Report()
    newer_version_section(rep, {"config": _config({"mf": ("pca_sphere", "fixed")}), "runs": runs})
    assert "- K = 5: insufficient data (fewer than 3 recorded rounds)." in rep.lines
    assert rep.summary[0][2] == NOT                       # no K fitted: none of the one case holds
    rep = Report()
    newer_version_section(rep, {"config": _config({"mf": ("pca_sphere", "fixed")}), "runs": {"mf": []}})
    assert rep.lines == [] and rep.summary == []


def test_mnist_without_fixed_runs_has_no_case(tmp_path):
    runs = {"md": [_run(tmp_path, "md", "rfedags", np.maximum(100 * 0.8 ** t, 1e-4))]}
    rep = Report()
    newer_version_section(rep, {"config": _config({"md": ("pca_sphere", "decaying")}), "runs": runs})
    assert rep.summary == [("PCA, MNIST", "RFedAGS with a fixed step converges linearly to a "
                            "neighbourhood of the minimiser", INSUFFICIENT)]


# ---- every section of a written report is well-formed -----------------------------------------
from test_newer_synthetic_verdicts import _report as newer_synthetic_report  # noqa: E402


def test_newer_synthetic_sections_layout(tmp_path):
    _, text = newer_synthetic_report(tmp_path)
    lines = text.splitlines()
    check_markdown(lines)
    assert "## Newer experiments: low-rank matrix completion on Gr(r, m), synthetic (`lrmc`)" in lines
    assert "## Newer experiments: PCA on St(d, r), synthetic (the authors' `PCAStief_Syn`)" in lines
    assert "### Study: S grows (`pca_stiefel_agents_*`)" in lines
    assert "### RFedAGS against the tangent mean (`pca_stiefel_ags_vs_tm`)" in lines
    hs = headers(lines)
    assert ("| method | contraction/round | R^2 | excess risk, last | rel_error, last | test_rmse, last "
            "| test_rmse_refit, last |") in hs
    assert ("| S | experiment | K | contraction/round | R^2 | excess risk, first | plateau | plateau / abs(F*) "
            "| levelled off |") in hs
    assert "| RFedAGS plateau | RFedAvg plateau | level | RFedAGS rounds | RFedAvg rounds |" in hs


from rfl import io  # noqa: E402


# ---- federated kPCA on digits, and the report's provenance --------------------------------------
def _kpca_run(root, exp, name, K, last, floats, seed=0, T=10):
    path = root / "runs" / exp / f"{name}_K{K}_seed{seed}.csv"
    er = np.linspace(1.0, last, T + 1)
    write_run(path, {"round": np.arange(T + 1), "excess_risk": er, "floats": np.linspace(0, floats, T + 1)},
              {"experiment": exp, "run_id": path.stem, "seed": seed,
               "algorithm": {"name": name, "K": K}, "dataset": {"problem": "kpca"}},
              commit="c" * 8, versions={"numpy": "2", "python": "3.11"})
    return str(path)


def test_kpca_section_medians_and_the_drift_line(tmp_path):
    """Per method of each kPCA figure: the median over seeds of the last excess risk and of the
    floats communicated; the drift line compares RFedSVRG/RFedProj's worst with RFedAGS's best
    for K > 1 (K = 1, here the lowest, is left out)."""
    runs = {"kx": [_kpca_run(tmp_path, "kx", "rfedags", 4, last, fl, seed)
                   for seed, (last, fl) in enumerate(((1e-3, 100.0), (3e-3, 300.0), (2e-3, 200.0)))]}
    runs["kx"] += [_kpca_run(tmp_path, "kx", "rfedags", 1, 1e-6, 10.0),
                   _kpca_run(tmp_path, "kx", "rfedsvrg", 4, 5e-5, 400.0),
                   _kpca_run(tmp_path, "kx", "rfedproj", 4, 7e-5, 500.0),
                   _kpca_run(tmp_path, "kx", "rsd", None, 1e-9, 0.0)]
    config = {"figures": {"fa": {"experiment": "kx", "title": "Digits, split A"},
                          "other": {"experiment": "mx", "title": "not kPCA"}},
              "datasets": {"dk": {"problem": "kpca"}, "dm": {"problem": "multitask"}},
              "experiments": {"kx": {"dataset": "dk"}, "mx": {"dataset": "dm"}}}
    rep = Report()
    R.kpca_section(rep, {"config": config, "runs": runs})
    lines = rep.lines
    check_markdown(lines)
    assert lines[0] == "## Beyond the paper: federated kPCA on digits (St(64, r))"
    assert "### Digits, split A (`kx`)" in lines and not any("not kPCA" in ln for ln in lines)
    head = "| method | excess risk, last | rounds | floats communicated |"
    rows = {r[0]: r[1:] for r in rows_of(lines, head)}
    assert rows["RFedAGS-K=4"] == [f"{np.median([1e-3, 3e-3, 2e-3]):.4g}", "10", "200"]
    assert rows["RSD"] == ["1e-09", "10", "0"] and rows["RFedAGS-K=1"][0] == "1e-06"
    assert ("Drift-corrected methods (RFedSVRG, RFedProj) end at 7.00e-05 at worst; RFedAGS with K > 1 "
            "at 2.00e-03 at best.") in lines
    assert rep.summary == []
    # drift-corrected methods without an RFedAGS run with K > 1: no comparison line
    rep = Report()
    R.kpca_section(rep, {"config": config, "runs": {"kx": runs["kx"][3:]}})
    assert not any(ln.startswith("Drift-corrected") for ln in rep.lines) and "### Digits, split A (`kx`)" in rep.lines
    # without a kPCA figure: no section
    rep = Report()
    R.kpca_section(rep, {"config": {**config, "figures": {"other": config["figures"]["other"]}}, "runs": runs})
    assert rep.lines == []


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


# ---- newer synthetic experiments: LRMC and PCA on St(d, r) --------------------------------------
from rfl.reporting import newer_synthetic as NS  # noqa: E402
from test_newer_synthetic_verdicts import _run as ns_run  # noqa: E402


def _ns(datasets, experiments, runs):
    rep = Report()
    NS.newer_synthetic_section(rep, {"config": {"datasets": datasets, "experiments": experiments}, "runs": runs})
    return rep


def test_newer_synthetic_without_its_experiments_writes_nothing():
    for config in ({}, {"experiments": {"x": {"dataset": "missing"}}}, {"experiments": {"x": {}}}):
        rep = Report()
        NS.newer_synthetic_section(rep, {"config": config, "runs": {}})
        assert rep.lines == [] and rep.summary == []


def test_lrmc_table_numbers_and_runs_without_the_completion_columns(tmp_path):
    """K = 1 at 0.9^t and K = 4 at 0.6^t (pure geometric, 60 rounds): contraction 0.9 and 0.6,
    R^2 = 1; the completion errors never measured (NaN): NaN in the table and no relative-error
    verdict possible."""
    T = 60
    nan = {c: np.full(T + 1, np.nan) for c in ("rel_error", "test_rmse", "test_rmse_refit")}
    runs = {"lrmc_none": [],
            "lrmc": [ns_run(tmp_path, "lrmc", "lrmc", 0.9 ** np.arange(T + 1), K=1, extra=nan),
                     ns_run(tmp_path, "lrmc", "lrmc", 0.6 ** np.arange(T + 1), K=4, extra=nan)]}
    datasets = {"g": {"problem": "lrmc"}}
    rep = _ns(datasets, {"lrmc_none": {"dataset": "g"}, "lrmc": {"dataset": "g"}}, runs)
    lines = rep.lines
    check_markdown(lines)
    assert not any("`lrmc_none`" in ln for ln in lines)
    head = ("| method | contraction/round | R^2 | excess risk, last | rel_error, last | test_rmse, last "
            "| test_rmse_refit, last |")
    rows = {r[0]: r[1:] for r in rows_of(lines, head)}
    assert rows["RFedAGS-K=1"] == ["0.9", "1", f"{0.9 ** T:.4g}", "nan", "nan", "nan"]
    assert rows["RFedAGS-K=4"][:3] == ["0.6", "1", f"{0.6 ** T:.4g}"]
    v = {c: x for _, c, x in rep.summary}
    assert v == {"linear convergence (every agent)": REPRODUCED, "larger K faster": REPRODUCED,
                 "larger K, smaller relative error": INSUFFICIENT}
    assert {w for w, _, _ in rep.summary} == {"LRMCGrass_Syn"}


def test_lrmc_a_K_too_short_to_fit_is_not_a_rate(tmp_path):
    extra = lambda n: {c: np.linspace(1.0, 0.1, n) for c in ("rel_error", "test_rmse", "test_rmse_refit")}  # noqa: E731
    runs = {"lrmc": [ns_run(tmp_path, "lrmc", "lrmc", np.array([1.0, 0.5]), K=1, extra=extra(2)),
                     ns_run(tmp_path, "lrmc", "lrmc", 0.6 ** np.arange(61), K=4, extra=extra(61))]}
    rep = _ns({"g": {"problem": "lrmc"}}, {"lrmc": {"dataset": "g"}}, runs)
    v = {c: x for _, c, x in rep.summary}
    assert v["linear convergence (every agent)"] == PARTLY       # 1 of 2, the short one unjudged
    assert v["larger K faster"] == INSUFFICIENT                   # one rate left
    assert "- K = 1: insufficient data (fewer than 3 recorded rounds)." in rep.lines


def _pca_exp(tmp_path, datasets, experiments, runs, name, params, curves):
    """An experiment of the PCA studies: dataset ``name`` with ``params``; ``curves``:
    [(algorithm, K, curve)]."""
    datasets[name] = {"problem": "pca_stiefel", "params": params}
    experiments[name] = {"dataset": name}
    runs[name] = [ns_run(tmp_path, name, "pca_stiefel", c, name=a, K=K) for a, K, c in curves]


def test_pca_studies_smallest_K_dim_study_and_skipped_experiments(tmp_path):
    """Datasize study: N = 50 (RFedAGS K = 1 floored at 2e-3, and K = 5 floored at 1e-9, which
    is not the one used), N = 100 (floored at 1e-3), N = 75 (RFedAvg only: skipped, not the end). Dim study:
    two sizes, no ordering claim. An AGS-vs-TM experiment without RFedAvg: no comparison."""
    g = lambda floor: 0.8 ** np.arange(201) + floor                 # noqa: E731
    datasets, experiments, runs = {}, {}, {}
    _pca_exp(tmp_path, datasets, experiments, runs, "pca_stiefel_datasize_n100", {"N": 100},
             [("rfedags", 1, g(1e-3))])
    _pca_exp(tmp_path, datasets, experiments, runs, "pca_stiefel_datasize_n50", {"N": 50},
             [("rfedags", 5, g(1e-9)), ("rfedags", 1, g(2e-3))])
    _pca_exp(tmp_path, datasets, experiments, runs, "pca_stiefel_datasize_n75", {"N": 75},
             [("rfedavg", 1, g(5e-3))])
    _pca_exp(tmp_path, datasets, experiments, runs, "pca_stiefel_dim_a", {"d": 10, "r": 2},
             [("rfedags", 1, g(1e-3))])
    _pca_exp(tmp_path, datasets, experiments, runs, "pca_stiefel_dim_b", {"d": 20, "r": 3},
             [("rfedags", 1, g(2e-3))])
    _pca_exp(tmp_path, datasets, experiments, runs, "pca_stiefel_ags_vs_tm", {"S": 2},
             [("rfedags", 50, g(1e-6))])
    rep = _ns(datasets, experiments, runs)
    lines = rep.lines
    check_markdown(lines)
    v = {(w, c): x for w, c, x in rep.summary}
    assert v[("PCAStief_Syn (datasize)", "more local data, lower plateau")] == REPRODUCED
    assert v[("PCAStief_Syn (dim)", "linear rate with a fixed step")] == REPRODUCED
    assert not any(w == "PCAStief_Syn (dim)" and c != "linear rate with a fixed step" for w, c in v)
    assert not any("AGS vs TM" in w for w, _ in v)
    assert "### Study: N grows (`pca_stiefel_datasize_*`)" in lines
    assert "### Study: (d, r) grows (`pca_stiefel_dim_*`)" in lines
    head = ("| N | experiment | K | contraction/round | R^2 | excess risk, first | plateau | plateau / abs(F*) "
            "| levelled off |")
    rows = rows_of(lines, head)
    assert [r[:3] for r in rows] == [["50", "pca_stiefel_datasize_n50", "1"],
                                     ["100", "pca_stiefel_datasize_n100", "1"]]
    assert rows[0][6] == f"{np.median(g(2e-3)[-20:]):.4g}" and rows[0][8] == "yes"
    dims = rows_of(lines, head.replace("| N |", "| (d, r) |"))
    assert [r[0] for r in dims] == ["10, 2", "20, 3"]


def test_participation_section_layout(tmp_path):
    from test_participation_report import _section

    rep = _section(tmp_path / "p", {"p3": {"full": (1e-5, 1.0), "uniform": (3e-4, 0.3), "bernoulli": (2e-4, 0.3)},
                                    "p7": {"full": (1e-5, 1.0), "uniform": (9e-5, 0.7)}})
    check_markdown(rep.lines)
    assert ("## Beyond the first version: RFedAGS under the participation schemes of the authors' newer code"
            in rep.lines)
    assert "| method | scheme | authors | expected share of agents | excess risk, level |" in headers(rep.lines)


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
    # newer version: HSP and MNIST
    T_ = np.arange(30)
    runs = {"hf": [_run(tmp_path, "hf", "rfedags", 0.5 ** T_, dist=np.full(30, 0.3))],
            "mf": [_run(tmp_path, "mf", "rfedags", 0.5 ** T_)]}
    rep = Report()
    newer_version_section(rep, {"config": _config({"hf": ("hsp", "fixed"), "mf": ("pca_sphere", "fixed")}),
                                "runs": runs})
    has_facts(paragraph(rep.lines, "The authors' `HSPHyper_WordNet_Fixed.m`: the embedding of `primate`"),
              "predicted as a kernel-weighted Fréchet mean of the other nodes' embeddings, 9 agents",
              "fixed step. Here every agent participates in every round (upstream samples agent i",
              "with a random probability p_i)",
              end="probability p_i). Median over seeds after the last round:")
    has_facts(paragraph(rep.lines, "d(x, y_true) is the distance of the prediction to primate's own embedding"),
              end="the optimiser cannot reduce below that of the minimiser.")
    has_facts(paragraph(rep.lines, "The authors' `PCASphere_MNIST` (Figures 7 and 8 scripts), RFedAGS with K = 5"),
              "K = 5 and full participation. Deviation: upstream uses the 60000 training images",
              "missing from the authors' repository; here the 10000 test images, 60 agents x 160",
              "(8 label shards each, as upstream's `noniid_small`)",
              end="`noniid_small`). Excess risk F(x) - F(x*), x* the top eigenvector.")
    # newer synthetic: LRMC and PCA on St(d, r)
    _, text = newer_synthetic_report(tmp_path / "ns")
    lines = text.splitlines()
    has_facts(paragraph(lines, "The authors' `LRMCGrass_Syn`. Median over seeds, every method"),
              "every method of the experiment; test RMSE held out (w fitted on a column's training",
              "scored on its test entries) and refitted",
              end="entries) and refitted (the authors' `RMSE`: w refitted on the test entries).")
    has_facts(paragraph(lines, "Excess risk F(x_t) - F(x*) of RFedAGS (x* in closed form; our cost is half the authors'"),
              "half the authors', so is the gap). Agent rows have growing scales",
              "(blocks of rows scaled by b / n_blocks), so a study's datasets differ in more than",
              "the parameter that grows: more agents or more local rows also add rows of larger scale",
              end="local rows also add rows of larger scale, as in the authors' scripts.")
    # participation schemes
    from test_participation_report import _section
    rep = _section(tmp_path / "p", {"p3": {"full": (1e-5, 1.0), "uniform": (3e-4, 0.3)},
                                    "p7": {"full": (1e-5, 1.0), "uniform": (9e-5, 0.7)}})
    has_facts(paragraph(rep.lines, "The schemes of `RFedAGSP.m`: every agent (`full`), s agents uniformly"),
              "(`uniform`, their 'sampling'), Bernoulli joins weighted by the estimated probability",
              "(`bernoulli_estimated`, 'estimating') or by the true one (`bernoulli`, unbiased)",
              "Level: median over the last 10% of rounds",
              end="of rounds of the median excess risk over seeds.")
    assert "Measured (no claim of the authors): the level of each partial scheme against its expected " \
           "share of agents per round:" in rep.lines
    assert ("### Claim: every agent in every round reaches the lowest excess risk (the ordering of the "
            "authors' participation figures)") in rep.lines
    rep = Report()
    R.kpca_section(rep, {"config": {"figures": {"fa": {"experiment": "kx", "title": "A"}},
                                    "datasets": {"dk": {"problem": "kpca"}}, "experiments": {"kx": {"dataset": "dk"}}},
                         "runs": {"kx": [_kpca_run(tmp_path / "k", "kx", "rfedags", 4, 1e-3, 1.0)]}})
    has_facts(paragraph(rep.lines, "Median over seeds of the excess risk after the last round, and the floats communicated "),
              end="the floats communicated until then (centralised methods communicate nothing).")


def test_heterogeneity_paragraph(tmp_path):
    """(The report's head: tests/test_claims_core.py.)"""
    import pandas as pd
    rows = [{"problem": "CPESph", "method": m, "participation": 1.0, "K": K, "mean": v, "std": 0.0,
             "seeds": 2, "diverged": 0} for m, K, v in (("RFedAGS", 1, 1e-3), ("RFedAGS", 8, 5e-3))]
    path = tmp_path / "het.csv"
    io.write_table(path, pd.DataFrame(rows))
    rep = Report()
    R.heterogeneity_section(rep, {"tables": {"heterogeneity": str(path)}})
    check_markdown(rep.lines)
    assert rep.lines[0] == "## Beyond the paper: RFedAGS with heterogeneous agents and partial participation"
    has_facts(paragraph(rep.lines, "Stationary excess risk (mean over the last rounds, mean over seeds; see "
                                   "`paper_tables/heterogeneity.md` for every cell). The paper analyses i.i.d. "
                                   "agents with full participation and names these settings as open "
                                   "directions; there is no claim to verify, only measurements:"))


def test_ags_vs_tm_table_numbers(tmp_path):
    """The AGS-vs-TM experiment of the newer-synthetic report: RFedAGS 0.5^t + 1e-6, RFedAvg
    0.6^t + 4e-6 over 150 rounds. Plateaus: medians of the last 15 rounds; the level: the
    geometric mean of the common start and the higher plateau; rounds: first strictly below."""
    _, text = newer_synthetic_report(tmp_path, ags_tm=(1e-6, 4e-6))
    lines = text.splitlines()
    t_ = np.arange(151)
    ags, tm = 0.5 ** t_ + 1e-6, 0.6 ** t_ + 4e-6
    pa, pt = np.median(ags[-15:]), np.median(tm[-15:])
    level = np.sqrt(min(ags[0], tm[0]) * max(pa, pt))
    ta, tt = np.argmax(ags < level), np.argmax(tm < level)
    row = rows_of(lines, "| RFedAGS plateau | RFedAvg plateau | level | RFedAGS rounds | RFedAvg rounds |")
    assert row == [[f"{pa:.4g}", f"{pt:.4g}", f"{level:.4g}", f"{ta:.4g}", f"{tt:.4g}"]]
    assert ta < tt


def test_heterogeneity_lines_per_problem_and_method(tmp_path):
    """CPESph: RFedAGS (s/S = 1 at K = 1, 8; s/S = 0.5 at K = 8), RFedProj at K = 4 only (no
    value at the largest K); CFMSPD: RFedAGS and RFedSVRG at K = 1 and 2."""
    import pandas as pd
    cells = [("CPESph", "RFedAGS", 0.5, 8, 7e-3), ("CPESph", "RFedAGS", 1.0, 1, 1e-3),
             ("CPESph", "RFedAGS", 1.0, 8, 5e-3), ("CPESph", "RFedProj", 1.0, 4, 2e-4),
             ("CFMSPD", "RFedAGS", 1.0, 2, 3e-2), ("CFMSPD", "RFedAGS", 1.0, 1, 4e-2),
             ("CFMSPD", "RFedSVRG", 1.0, 1, 6e-5), ("CFMSPD", "RFedSVRG", 1.0, 2, 9e-5)]
    rows = [{"problem": p, "method": m, "participation": s, "K": K, "mean": v, "std": 0.0, "seeds": 2,
             "diverged": 0} for p, m, s, K, v in cells]
    path = tmp_path / "het.csv"
    io.write_table(path, pd.DataFrame(rows))
    rep = Report()
    R.heterogeneity_section(rep, {"tables": {"heterogeneity": str(path)}})
    lines = rep.lines
    assert "- CPESph, K = 8: RFedAGS 0.005 (K = 1: 0.001), RFedProj nan." in lines
    assert "- CFMSPD, K = 2: RFedAGS 0.03 (K = 1: 0.04), RFedSVRG 9e-05." in lines
    assert not any("RFedSVRG" in ln for ln in lines if ln.startswith("- CPESph"))
    assert "- CPESph, RFedAGS by participation s/S (columns) and K (rows): K=1: 0.5: nan, 1: 0.001; K=8: 0.5: 0.007, 1: 0.005." in lines
    assert "- CFMSPD, RFedAGS by participation s/S (columns) and K (rows): K=1: 1: 0.04; K=2: 1: 0.03." in lines
    assert lines[-1] == ""
    rep = Report()
    R.heterogeneity_section(rep, {"tables": {"heterogeneity": str(tmp_path / "missing.csv")}})
    R.heterogeneity_section(rep, {"tables": {}})
    assert rep.lines == []


def test_orderings_compare_the_last_level_with_the_first():
    """[3, 1, 2]: not non-increasing, and the last (2) is below the first (3) though above the
    second: partly."""
    assert NS.ordering([3.0, 1.0, 2.0]) == PARTLY
    assert NS.rel_error_in_k([3.0, 1.0, 2.0]) == PARTLY
    assert NS.ordering_with_bounds([3.0, 1.0, 2.0], [True, True, True]) == PARTLY

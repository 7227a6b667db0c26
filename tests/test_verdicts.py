"""The rules that turn result files into the verdicts of REPRODUCTION.md.

Every input here is made in the test with a known answer: excess risks that are exactly
r^t (with or without a floor), decaying runs that end a known factor below or above the
fixed ones, Table 2 and FedLSA tables with chosen differences. Each rule is checked on both
sides of each of its thresholds, and on the inputs that could crash it or pass silently:
runs that diverged (after one round or later), runs of one round or none after round 0,
rows without a value. The files have the runner's format (a table with its columns and
``X.meta.json`` beside it), and the report is also written through ``rfl reproduction``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from rfl import cli, io
from rfl.reporting import reproduction as R
from rfl.reporting import school as SCH
from rfl.reporting.reproduction import INSUFFICIENT, NOT, PARTLY, REPRODUCED, Report
from rfl.claims import curves as C
from rfl.claims.rules.contraction_in_k import order as contraction_order
from rfl.claims.rules.linear_rate import case as linear_case
from rfl.claims.verdicts import OK
from rfl.runner import COLUMNS
from rfl.testing.run_files import write_run as write_run_files


def is_linear(fit: dict) -> bool:
    """The linear-rate case of a fit holds (``linear_rate``'s defaults: R^2 >= 0.9, a 2x decrease)."""
    return linear_case(fit, pd.Series(dtype=float), 0.9, 2.0)[0] == OK


# ---- result files -----------------------------------------------------------------------------
def _problem_of(extra) -> str:
    """The problem whose run tables carry the ``extra`` columns (the reports do not read it)."""
    extra = extra or {}
    return "school" if "test_nmse" in extra else "multitask" if "subspace_dist" in extra else "cpesph"


def write_run(root, experiment, values, *, name="rfedags", K=1, participation=None, seed=0,
              diverge_at=None, extra=None):
    """A run table (rounds 0..len(values)-1, excess risk = ``values``) and its metadata. With
    ``diverge_at`` the run stops there as the runner stops one: a last row of status
    "diverged" with no metric. ``extra``: {column: values} (test_nmse, subspace_dist)."""
    rows = []
    for t, v in enumerate(values):
        ok = diverge_at is None or t < diverge_at
        row = {"round": t, "cost": v + 1.0 if ok else np.nan, "excess_risk": v if ok else np.nan,
               "grad_norm": math.sqrt(v) if ok and v >= 0 else np.nan, "dist_to_opt": np.nan,
               "grad_evals": 4 * t, "floats": 10 * t, "wall_time": 0.01 * t,
               "status": "ok" if ok else "diverged"}
        for col, vals in (extra or {}).items():
            row[col] = vals[t] if ok else np.nan
        rows.append(row)
        if not ok:
            break
    table = pd.DataFrame(rows, columns=COLUMNS + list(extra or {}))
    run_id = f"{name}_K{K}_seed{seed}" if K is not None else f"{name}_seed{seed}"
    csv = root / "runs" / experiment / f"{run_id}.csv"
    write_run_files(csv, {c: table[c].to_numpy() for c in table.columns},
                    {"algorithm": {"name": name, "K": K, "batch_size": 1, "participation": participation},
                     "dataset": {"name": experiment, "problem": _problem_of(extra)},
                     "experiment": experiment, "run_id": run_id, "seed": seed, "rounds": len(values) - 1},
                    seed=seed, commit="0" * 40, versions={"python": "3"})
    return str(csv)


def spec_for(root, runs: dict, *, table1=(), figures=None, datasets=None, experiments=None,
             table2=None, lsa=None, lsa_config=None):
    """The spec ``rfl reproduction`` reads (the keys the Snakefile writes)."""
    config = {"tables": {"table1": {"rows": list(table1)}}, "figures": figures or {},
              "datasets": datasets or {}, "experiments": experiments or {}}
    tables = {"table2": str(root / "none.csv")}
    if table2 is not None:
        path = root / "table2.csv"
        io.write_table(path, table2)
        tables["table2"], config["tables"]["table2"] = str(path), {"experiments": {}}
    if lsa is not None:
        path = root / "fedlsa_bias.csv"
        io.write_table(path, lsa)
        tables["lsa"], config["lsa"] = str(path), lsa_config or {"tail": 0.1}
    return {"config": config, "paper": {}, "runs": runs, "tables": tables}


def summary_of(md_path) -> dict:
    """{(where, claim): verdict} from the summary table of a written report."""
    lines = open(md_path).read().split("## Summary", 1)[1].splitlines()
    out = {}
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("where", "---"):
            out[(cells[0], cells[1])] = cells[2]
        elif line.startswith("## "):
            break
    return out


def geometric(r, T, floor=0.0, start=1.0):
    return start * r ** np.arange(T + 1) + floor


ROW = {"label": "P", "fixed": "p_fixed", "decaying": "p_dec"}


def figure1(tmp_path, fixed: dict, dec: dict, avg: dict | None = None):
    """Write Figure 1 runs ({K: [curve per seed] or (curve, diverge_at)}) and return the
    Report of figure1_section and the spec."""
    runs = {"p_fixed": [], "p_dec": []}
    for exp, group, name in (("p_fixed", fixed, "rfedags"), ("p_dec", dec, "rfedags"),
                             ("p_fixed", avg or {}, "rfedavg")):
        for K, seeds in group.items():
            for seed, item in enumerate(seeds):
                curve, div = item if isinstance(item, tuple) else (item, None)
                runs[exp].append(write_run(tmp_path, exp, curve, name=name, K=K, seed=seed,
                                           diverge_at=div))
    spec = spec_for(tmp_path, runs, table1=[ROW])
    rep = Report()
    R.figure1_section(rep, spec, ROW)
    return rep, spec


def verdicts(rep: Report) -> dict:
    return {claim: v for _, claim, v in rep.summary}


# ---- the verdict from counts ------------------------------------------------------------------
@pytest.mark.parametrize("n_ok, n, missing, want", [
    (3, 3, 0, REPRODUCED), (0, 3, 0, NOT), (1, 3, 0, PARTLY), (2, 3, 0, PARTLY),
    (0, 0, 0, INSUFFICIENT),            # no case at all never passes
    (0, 2, 2, INSUFFICIENT), (1, 2, 1, PARTLY), (0, 2, 1, NOT)])
def test_verdict_from_counts(n_ok, n, missing, want):
    assert R._verdict(n_ok, n, missing) == want


# ---- linear phase -----------------------------------------------------------------------------
def test_linear_phase_of_an_exact_geometric_curve():
    r, T = 0.5, 30
    fit = C.linear_phase(pd.Series(geometric(r, T)))
    assert fit["status"] == "ok"
    assert fit["rate"] == pytest.approx(r, rel=1e-12) and fit["r2"] == pytest.approx(1.0, abs=1e-12)
    # 90% of the total log-decrease (30 log 2) is first made at t = 27
    assert fit["rounds"] == 27 and fit["decrease"] == pytest.approx(2.0 ** 27, rel=1e-9)
    assert fit["start"] == 1.0
    assert is_linear(fit)


def test_linear_phase_stops_where_the_curve_levels_off():
    """max(r^t, r^20): linear until 20, then flat; 90% of the decrease is made at t = 18, the fit
    sees only the geometric part and the level is the floor."""
    r = 0.7
    curve = pd.Series(np.maximum(geometric(r, 60), r ** 20))
    fit = C.linear_phase(curve)
    assert fit["rounds"] == 18
    assert fit["rate"] == pytest.approx(r, rel=1e-10) and fit["r2"] == pytest.approx(1.0, abs=1e-10)
    assert fit["decrease"] == pytest.approx(r ** -18, rel=1e-10)
    assert fit["plateau"] == pytest.approx(r ** 20, rel=1e-12)
    assert is_linear(fit)


def test_plateau_is_the_median_of_the_last_tenth():
    curve = pd.Series(np.r_[np.full(90, 5.0), np.arange(10.0)])      # last 10: 0..9
    assert C.plateau(curve) == 4.5
    assert C.plateau(pd.Series([9.0, 1.0, 2.0, 3.0])) == 2.0         # at least three rounds
    assert C.plateau(pd.Series(np.r_[np.full(28, 7.0), [1.0, 2.0]])) == 2.0   # 30 rounds: last 3


@pytest.mark.parametrize("L", [0.5, 5.0])
def test_linear_phase_of_a_step_is_not_linear(L):
    """log c = 0, 0, 0, -L, -L, ...: the fit covers t = 0..3 (the first round with 90% of the
    decrease), and R^2 is the squared correlation of (0, 1, 2, 3) with (0, 0, 0, -1) = 0.6."""
    curve = pd.Series(np.exp(np.r_[0.0, 0.0, 0.0, np.full(20, -L)]))
    fit = C.linear_phase(curve)
    assert fit["rounds"] == 3
    assert fit["r2"] == pytest.approx(np.corrcoef([0, 1, 2, 3], [0, 0, 0, -1])[0, 1] ** 2)
    assert fit["rate"] < 1 and fit["decrease"] == pytest.approx(np.exp(L))
    assert not is_linear(fit)


def test_linear_phase_window_where_90_percent_is_not_a_whole_round():
    """0.5^t over 25 rounds: 90% of the decrease is 22.5 halvings, first made at t = 23."""
    fit = C.linear_phase(pd.Series(geometric(0.5, 25)))
    assert fit["rounds"] == 23 and fit["decrease"] == pytest.approx(2.0 ** 23)


def test_linear_phase_of_a_curve_that_reaches_zero():
    """An excess risk of exactly 0 is clipped to 1e-300 before the logarithm: a fit, no NaN."""
    fit = C.linear_phase(pd.Series([1.0, 0.1, 0.01, 0.0, 0.0, 0.0]))
    assert fit["status"] == "ok" and np.isfinite(fit["rate"]) and np.isfinite(fit["r2"])
    assert fit["rounds"] == 3 and fit["decrease"] == pytest.approx(1e300)


@pytest.mark.parametrize("curve", [np.ones(20), 1.0 + 0.01 * np.arange(20.0)])
def test_a_flat_or_rising_curve_is_not_linear(curve):
    fit = C.linear_phase(pd.Series(curve))
    assert fit["status"] == "ok" and fit["rate"] >= 1 and not is_linear(fit)
    assert fit["rounds"] == 19                   # no decrease: the fit covers every round
    if curve[0] == curve[-1]:
        assert fit["r2"] == 1.0 and fit["rate"] == pytest.approx(1.0)


def test_a_slow_curve_that_does_not_halve_is_not_linear():
    """0.99^t over 40 rounds then flat: a clean geometric fit, but the excess risk does not
    halve (0.99^36 = 0.70 over the fitted rounds)."""
    curve = pd.Series(np.maximum(geometric(0.99, 80), 0.99 ** 40))
    fit = C.linear_phase(curve)
    assert fit["rate"] == pytest.approx(0.99) and fit["r2"] == pytest.approx(1.0)
    assert fit["decrease"] == pytest.approx(0.99 ** -36) and fit["decrease"] < 2
    assert not is_linear(fit)


@pytest.mark.parametrize("field, passing, failing", [
    ("rate", 1 - 1e-9, 1.0), ("r2", 0.9, 0.9 - 1e-9), ("decrease", 2.0, 2 - 1e-9)])
def test_is_linear_thresholds(field, passing, failing):
    fit = {"status": "ok", "rate": 0.5, "r2": 0.99, "decrease": 10.0}
    assert is_linear({**fit, field: passing})
    assert not is_linear({**fit, field: failing})


def test_linear_phase_skips_rounds_without_a_value():
    values = geometric(0.5, 20)
    values[5] = np.nan                          # a round no seed has a value for
    fit = C.linear_phase(pd.Series(values))
    assert fit["status"] == "ok" and fit["rate"] == pytest.approx(0.5, rel=1e-12)
    assert fit["r2"] == pytest.approx(1.0)


@pytest.mark.parametrize("values, status", [
    ([1.0], "insufficient"), ([1.0, 0.5], "insufficient"), ([np.nan, np.nan, np.nan], "insufficient"),
    ([1.0, np.inf], "diverged"), ([1.0, 0.5, 0.25, np.inf], "diverged")])
def test_linear_phase_without_enough_rounds_or_after_divergence(values, status):
    fit = C.linear_phase(pd.Series(values))
    assert fit["status"] == status and not is_linear(fit)
    if status == "diverged":
        assert fit["diverged_at"] == len(values) - 1
    if np.isfinite(values[0]):                   # start and level of what was recorded
        assert fit["start"] == 1.0 and fit["plateau"] == C.plateau(pd.Series(values))
    assert linear_case(fit, pd.Series(dtype=float), 0.9, 2.0)[1] is not None


def test_three_rounds_are_enough_for_a_fit():
    fit = C.linear_phase(pd.Series([1.0, 0.25, 0.0625]))
    assert fit["status"] == "ok" and fit["rate"] == pytest.approx(0.25) and is_linear(fit)
    assert linear_case(fit, pd.Series(dtype=float), 0.9, 2.0)[1] is None


# ---- the median over seeds --------------------------------------------------------------------
def _table(values, diverge_at=None):
    rows = [{"round": t, "excess_risk": v if diverge_at is None or t < diverge_at else np.nan,
             "status": "ok" if diverge_at is None or t < diverge_at else "diverged"}
            for t, v in enumerate(values) if diverge_at is None or t <= diverge_at]
    return pd.DataFrame(rows)


def test_median_curve_without_divergence_is_the_figures_median():
    from rfl.reporting.figures import summarise
    runs = [_table(geometric(r, 10)) for r in (0.3, 0.5, 0.9)]
    got = C.median_curve(runs)
    assert got.equals(summarise(runs, "excess_risk")["median"])
    assert np.allclose(got.values, geometric(0.5, 10))


def test_a_diverged_seed_counts_as_infinite():
    a, b, c = geometric(0.3, 10), geometric(0.5, 10), geometric(0.9, 10)
    one = C.median_curve([_table(a, diverge_at=4), _table(b), _table(c)])
    # rounds 0..3: median of the three; from 4 on: median of (inf, b, c) = c (the larger)
    assert np.allclose(one.values[:4], b[:4]) and np.allclose(one.values[4:], c[4:])
    assert C.diverged_at(one) is None
    two = C.median_curve([_table(a, diverge_at=4), _table(b, diverge_at=6), _table(c)])
    assert np.isinf(two.values[6:]).all() and np.isfinite(two.values[:6]).all()
    assert C.diverged_at(two) == 6
    half = C.median_curve([_table(a, diverge_at=1), _table(b)])
    assert C.diverged_at(half) == 1              # one of two seeds: the median is infinite


# ---- Figure 1 ---------------------------------------------------------------------------------
def test_figure1_a_row_without_a_value_is_refused_naming_the_file(tmp_path):
    """A row of status ok without a value (not one the runner writes) is a damaged table: the
    report refuses it, naming the file and the row, rather than judging from it."""
    f = geometric(0.5, 30, floor=1e-6)
    g = f.copy()
    g[5] = np.nan
    with pytest.raises(io.RunTableError, match=r"rfedags_K1_seed0\.csv: row 5 has status ok but"):
        figure1(tmp_path, {1: [g, g], 2: [f]}, {1: [f / 2], 2: [f / 2]})


def test_figure1_all_claims_reproduced(tmp_path):
    """K = 1: 0.8^t, K = 2: 0.5^t, each with a floor; decaying runs end at half the floor;
    RFedAvg K = 2 is 1.5x RFedAGS (within a factor 2)."""
    T = 60
    f1, f2 = geometric(0.8, T, floor=1e-4), geometric(0.5, T, floor=1e-6)
    rep, _ = figure1(tmp_path, {1: [f1, f1], 2: [f2]}, {1: [f1 - 0.5e-4], 2: [f2 - 0.5e-6]},
                     avg={2: [1.5 * f2]})
    assert verdicts(rep) == {"linear convergence, fixed step": REPRODUCED,
                             "decaying step more accurate": REPRODUCED,
                             "larger K faster": REPRODUCED, "RFedAGS ~ RFedAvg": REPRODUCED}
    text = "\n".join(rep.lines)
    assert "the run diverged" not in text and "seeds diverged" not in text and "insufficient data:" not in text


def test_figure1_crash_a_fixed_run_that_diverges_after_one_round(tmp_path):
    """The fixed-step K = 2 run diverges at round 1 (its table: round 0, then a 'diverged'
    row): the linear-convergence claim fails for that K with the round named, the decaying
    comparison has no fixed level for it. No exception."""
    T = 40
    f1 = geometric(0.5, T, floor=1e-6)
    rep, _ = figure1(tmp_path, {1: [f1], 2: [(f1, 1)]}, {1: [f1 / 2], 2: [f1 / 2]})
    v = verdicts(rep)
    assert v["linear convergence, fixed step"] == PARTLY         # K = 1 holds, K = 2 diverged
    assert v["decaying step more accurate"] == PARTLY            # K = 1 holds, K = 2 no data
    text = "\n".join(rep.lines)
    assert "K = 2: not reproduced: the run diverged at round 1" in text
    assert "K = 2: insufficient data: the fixed-step run diverged at round 1" in text


def test_figure1_every_fixed_run_diverged(tmp_path):
    f = geometric(0.5, 10)
    rep, _ = figure1(tmp_path, {1: [(f, 1)], 2: [(f, 3)]}, {1: [f], 2: [f]})
    v = verdicts(rep)
    assert v["linear convergence, fixed step"] == NOT
    assert v["decaying step more accurate"] == INSUFFICIENT
    assert v["larger K faster"] == INSUFFICIENT                 # no K with a finite level
    assert "the run diverged at round 3" in "\n".join(rep.lines)


def test_figure1_decaying_run_diverged_fails(tmp_path):
    f = geometric(0.5, 20, floor=1e-3)
    rep, _ = figure1(tmp_path, {1: [f], 2: [f]}, {1: [(f, 5)], 2: [f / 4]})
    assert verdicts(rep)["decaying step more accurate"] == PARTLY
    assert "K = 1: fails: the decaying-step run diverged at round 5" in "\n".join(rep.lines)


@pytest.mark.parametrize("T", [0, 1])
def test_figure1_runs_of_one_round_or_none(tmp_path, T):
    f = geometric(0.5, T)
    rep, _ = figure1(tmp_path, {1: [f], 2: [f]}, {1: [f / 2], 2: [f / 2]})
    v = verdicts(rep)
    assert v["linear convergence, fixed step"] == INSUFFICIENT
    assert v["decaying step more accurate"] == REPRODUCED        # last values still compare
    assert "K = 1: insufficient data (fewer than 3 recorded rounds)" in "\n".join(rep.lines)


def test_figure1_only_one_K_cannot_show_larger_K_faster(tmp_path):
    f = geometric(0.5, 30, floor=1e-6)
    rep, _ = figure1(tmp_path, {4: [f]}, {4: [f / 2]})
    assert verdicts(rep)["larger K faster"] == INSUFFICIENT
    assert verdicts(rep)["linear convergence, fixed step"] == REPRODUCED


def test_figure1_without_rfedags_runs_passes_nothing(tmp_path):
    f = geometric(0.5, 30)
    runs = {"p_fixed": [write_run(tmp_path, "p_fixed", f, name="rfedags", K=2, participation=3)],
            "p_dec": [write_run(tmp_path, "p_dec", f, name="rfedags", K=2, participation=3)]}
    rep = Report()
    R.figure1_section(rep, spec_for(tmp_path, runs, table1=[ROW]), ROW)
    assert set(verdicts(rep).values()) == {INSUFFICIENT}


@pytest.mark.parametrize("factor, want", [(0.5, REPRODUCED), (0.999, REPRODUCED), (1.0, NOT),
                                          (1.001, NOT), (3.0, NOT)])
def test_decaying_vs_fixed_by_a_known_factor(tmp_path, factor, want):
    """Decaying curve = factor x fixed at every round: more accurate iff factor < 1."""
    f = geometric(0.6, 30, floor=1e-3)
    rep, _ = figure1(tmp_path, {1: [f], 2: [f]}, {1: [factor * f], 2: [factor * f]})
    assert verdicts(rep)["decaying step more accurate"] == want
    row = [line for line in rep.lines if line.startswith("| 1 |")][1]
    assert row.split("|")[5].strip() == f"{factor:.4g}"           # ratio (dec/fixed)


def test_decaying_vs_fixed_compares_last_rounds_of_different_lengths():
    """The decaying run is longer: its last value counts, and its value at the fixed run's last
    round is reported beside it."""
    fixed, dec = pd.Series(geometric(0.5, 10, floor=0.01)), pd.Series(geometric(0.85, 40))
    assert R.decaying_vs_fixed(fixed, dec) == ("ok", None)           # 0.85^40 = 0.0015 < 0.011
    assert R.decaying_vs_fixed(dec, fixed)[0] == "fail"              # swapped: worse
    assert C.last(dec, 10) == pytest.approx(0.85 ** 10)


@pytest.mark.parametrize("fixed, dec, want", [
    ([1.0, 0.5, np.inf], [1.0, 0.5, 0.2], "insufficient"),
    ([1.0, 0.5, 0.2], [1.0, np.inf], "fail"),
    ([1.0, np.inf], [1.0, np.inf], "fail"),
    ([1.0, np.nan], [np.nan, np.nan], "insufficient")])
def test_decaying_vs_fixed_with_diverged_or_empty_curves(fixed, dec, want):
    outcome, why = R.decaying_vs_fixed(pd.Series(fixed), pd.Series(dec))
    assert outcome == want and why
    if np.isnan(dec[-1]):
        assert why == "no value at the last round"


def _floored(q, floor, T=150):
    return pd.Series(np.maximum(q ** np.arange(T + 1.0), floor))


@pytest.mark.parametrize("qs, want, times", [
    ((0.9, 0.5, 0.2), REPRODUCED, (44, 7, 3)),
    ((0.5, 0.5, 0.2), REPRODUCED, (7, 7, 3)),         # ties count as non-increasing
    ((0.5, 0.9, 0.2), PARTLY, (7, 44, 3)),
    ((0.2, 0.5, 0.9), NOT, (3, 7, 44)),
    ((0.5, 0.2, 0.5), NOT, (7, 3, 7))])
def test_larger_K_faster_rounds_to_a_known_level(qs, want, times):
    """c_K = max(q_K^t, P_K), start 1; the worst level P is 1e-4, so the level is 1e-2, first
    reached at ceil(log 1e-2 / log q): 3 (q = 0.2), 7 (0.5), 44 (0.9)."""
    curves = {K: _floored(q, P) for K, q, P in zip((1, 2, 4), qs, (1e-4, 1e-6, 1e-8))}
    v, level, got = R.larger_k_faster(curves)
    assert level == pytest.approx(1e-2)
    assert v == want and tuple(got.values()) == times


def test_larger_K_faster_a_K_that_never_reaches_the_level():
    """K = 2 diverges at round 1: it never reaches the level and its level is left out."""
    curves = {1: _floored(0.5, 1e-4), 2: pd.Series(np.r_[1.0, np.full(80, np.inf)]), 4: _floored(0.2, 1e-4)}
    v, level, times = R.larger_k_faster(curves)
    assert level == pytest.approx(1e-2)
    assert np.isnan(times[2]) and times[1] == 7 and times[4] == 3 and v == PARTLY


@pytest.mark.parametrize("factor, want", [(1.9, REPRODUCED), (2.1, NOT), (0.45, NOT), (0.55, REPRODUCED)])
def test_rfedags_vs_rfedavg_within_a_factor_two(tmp_path, factor, want):
    f = geometric(0.5, 30, floor=1e-5)
    rep, _ = figure1(tmp_path, {1: [f], 2: [f]}, {1: [f / 2], 2: [f / 2]}, avg={2: [factor * f]})
    assert verdicts(rep)["RFedAGS ~ RFedAvg"] == want


def test_max_log_ratio():
    a = pd.Series([1.0, 2.0, 4.0])
    assert C.max_log_ratio(a, a) == 0.0
    assert C.max_log_ratio(a, a * 2) == pytest.approx(np.log(2))
    assert C.max_log_ratio(a, pd.Series([1.0, 2.0, 4.0 * 3])) == pytest.approx(np.log(3))
    assert C.max_log_ratio(a, pd.Series([1.0, np.inf, np.inf])) == np.inf      # one diverged
    assert C.max_log_ratio(pd.Series([1.0, np.inf]), pd.Series([1.5, np.inf])) == pytest.approx(np.log(1.5))
    assert np.isnan(C.max_log_ratio(pd.Series([np.nan]), pd.Series([1.0])))
    assert C.max_log_ratio(pd.Series([0.0, 1.0]), pd.Series([1e-301, 1.0])) == 0.0   # both clipped


# ---- Figure 2 ---------------------------------------------------------------------------------
@pytest.mark.parametrize("rates, want", [
    ([0.9, 0.8, 0.5], REPRODUCED), ([0.8, 0.8], REPRODUCED), ([0.8, 0.9, 0.5], PARTLY),
    ([0.5, 0.8], NOT), ([0.8, 0.5, 0.9], NOT), ([0.7], INSUFFICIENT), ([], INSUFFICIENT),
    ([np.inf, 0.5], REPRODUCED), ([0.5, np.inf], NOT), ([0.5, 0.8, 0.5], NOT), ([0.5, 0.9, 0.7], NOT)])
def test_faster_in_K(rates, want):
    assert contraction_order(rates) == want


def _figure2(tmp_path, curves: dict):
    runs = []
    for K, item in curves.items():
        curve, div = item if isinstance(item, tuple) else (item, None)
        runs.append(write_run(tmp_path, "mt", curve, K=K, diverge_at=div,
                              extra={"subspace_dist": np.sqrt(curve)}))
    spec = spec_for(tmp_path, {"mt": runs},
                    figures={"fig2": {"experiment": "mt", "metrics": ["excess_risk", "subspace_dist"],
                                      "title": "t"}},
                    datasets={"mt": {"problem": "multitask"}}, experiments={"mt": {"dataset": "mt"}})
    out = tmp_path / "R.md"
    R.write_report(spec, out)
    return summary_of(out), out.read_text()


def test_figure2_verdicts_end_to_end(tmp_path):
    T = 50
    v, text = _figure2(tmp_path, {1: geometric(0.9, T), 3: geometric(0.7, T), 5: geometric(0.5, T)})
    assert v == {("Fig. 2", "linear convergence"): REPRODUCED, ("Fig. 2", "larger K faster"): REPRODUCED}
    assert "| 5 | 0.5 | 1 | 1 |" in text
    v, _ = _figure2(tmp_path / "b", {1: geometric(0.5, T), 3: geometric(0.7, T), 5: geometric(0.9, T)})
    assert v[("Fig. 2", "larger K faster")] == NOT


def test_figure2_a_diverged_K(tmp_path):
    T = 50
    v, text = _figure2(tmp_path, {1: geometric(0.9, T), 3: geometric(0.7, T), 5: (geometric(0.5, T), 2)})
    assert v == {("Fig. 2", "linear convergence"): PARTLY, ("Fig. 2", "larger K faster"): NOT}
    assert "K = 5: not reproduced: the run diverged at round 2" in text


# ---- School: Figure 3 and Table 2 -------------------------------------------------------------
def school_table(cells: dict, paper: dict | None = None):
    """{(r, method): nmse_mean} -> the Table 2 CSV rfl table2 writes (paper: {(r, method): nmse})."""
    rows = []
    for (r, method), m in cells.items():
        p = (paper or {}).get((r, method), np.nan)
        rows.append({"r": r, "method": method, "nmse_mean": m, "nmse_std": 0.01, "round_mean": 50.0,
                     "round_std": 1.0, "n_splits": 2, "paper_nmse": p, "paper_round": 50.0,
                     "difference": m - p})
    return pd.DataFrame(rows)


def school(tmp_path, cells, paper=None):
    """Verdicts of a Table 2 CSV without protocol columns (read as held out, pooled), named
    without the protocol tag."""
    spec = spec_for(tmp_path, {}, table2=school_table(cells, paper))
    rep = Report()
    R.school_section(rep, spec)
    return {k.replace(" [heldout]", ""): v for k, v in verdicts(rep).items()}, "\n".join(rep.lines)


def _gap_cells(r, gap, avg=None):
    """Best centralised 0.4 (RLBFGS; RSD, RCG worse), best RFedAGS 0.4 (1 + gap)."""
    cells = {(r, "RSD"): 0.55, (r, "RCG"): 0.45, (r, "RLBFGS"): 0.4,
             (r, "RFedAGS-K=1"): 0.4 * (1 + gap) + 0.1, (r, "RFedAGS-K=4"): 0.4 * (1 + gap)}
    if avg is not None:
        cells[(r, "RFedAvg")] = cells[(r, "RFedAGS-K=1")] + avg
    return cells


@pytest.mark.parametrize("gap, want", [(0.049, REPRODUCED), (0.051, NOT), (-0.3, REPRODUCED),
                                       (0.2, NOT)])
def test_school_gap_to_centralised(tmp_path, gap, want):
    v, text = school(tmp_path, _gap_cells(3, gap))
    assert v["RFedAGS comparable to centralised"] == want
    assert f"| 3 | {0.4 * (1 + gap):.4g} | 0.4 | {gap:.4g} |" in text


def test_school_gap_is_relative_to_the_best_of_each_side(tmp_path):
    cells = _gap_cells(3, 0.2)
    cells[(3, "RFedAvg")] = 0.4                 # RFedAvg is not RFedAGS: it does not count
    v, _ = school(tmp_path, cells)
    assert v["RFedAGS comparable to centralised"] == NOT
    cells = _gap_cells(3, 0.04)
    cells[(3, "RLBFGS")] = 0.3                  # a better centralised method: the gap grows
    v, text = school(tmp_path, cells)
    assert v["RFedAGS comparable to centralised"] == NOT


def test_school_gap_boundary_counts(monkeypatch):
    assert SCH.school_gap(1.25, 1.0) == 0.25 and SCH.school_gap(0.75, 1.0) == -0.25
    assert np.isnan(SCH.school_gap(np.nan, 1.0)) and np.isnan(SCH.school_gap(1.0, 0.0))
    assert np.isnan(SCH.school_gap(np.inf, 1.0)) and np.isnan(SCH.school_gap(1.0, np.nan))


def test_school_gap_threshold_is_inclusive(tmp_path, monkeypatch):
    monkeypatch.setattr(SCH, "SCHOOL_GAP", 0.25)
    cells = {(3, "RSD"): 1.0, (3, "RFedAGS-K=1"): 1.25}     # exactly 25% worse
    assert school(tmp_path, cells)[0]["RFedAGS comparable to centralised"] == REPRODUCED


def test_school_per_r_partly_and_missing(tmp_path):
    cells = {**_gap_cells(3, 0.01), **_gap_cells(4, 0.2)}
    assert school(tmp_path, cells)[0]["RFedAGS comparable to centralised"] == PARTLY
    cells = {**_gap_cells(3, 0.01), (4, "RFedAGS-K=1"): 0.4}       # no centralised run at r = 4
    assert school(tmp_path / "b", cells)[0]["RFedAGS comparable to centralised"] == PARTLY
    cells = {(4, "RFedAGS-K=1"): 0.4}
    assert school(tmp_path / "c", cells)[0]["RFedAGS comparable to centralised"] == INSUFFICIENT


@pytest.mark.parametrize("diff, want", [(0.004, REPRODUCED), (-0.004, REPRODUCED), (0.006, NOT),
                                        (-0.006, NOT)])
def test_school_rfedavg_close_to_rfedags_k1(tmp_path, diff, want):
    v, _ = school(tmp_path, _gap_cells(3, 0.0, avg=diff))
    assert v["RFedAvg ~ RFedAGS K=1"] == want


def test_school_rfedavg_rule_is_inclusive(tmp_path, monkeypatch):
    monkeypatch.setattr(SCH, "SCHOOL_AVG_TOL", 0.25)
    cells = {(3, "RSD"): 1.0, (3, "RFedAGS-K=1"): 1.0, (3, "RFedAvg"): 1.25}
    assert school(tmp_path, cells)[0]["RFedAvg ~ RFedAGS K=1"] == REPRODUCED


PAPER_CELLS = {(3, "RSD"): 0.465, (3, "RFedAGS-K=1"): 0.509, (4, "RSD"): 0.432, (4, "RFedAGS-K=1"): 0.438}


@pytest.mark.parametrize("diffs, want, largest", [
    ((0.019, -0.018, 0.0, 0.01), REPRODUCED, "0.019 (RSD, r = 3)"),
    ((0.01, -0.03, 0.0, 0.01), PARTLY, "0.030 (RFedAGS-K=1, r = 3)"),
    ((0.03, -0.029, 0.025, -0.021), NOT, "0.030 (RSD, r = 3)"),
    ((0.001, 0.002, 0.003, -0.0226), PARTLY, "0.023 (RFedAGS-K=1, r = 4)")])
def test_table2_cells_against_the_paper(tmp_path, diffs, want, largest):
    """Our NMSE = paper + a chosen difference per cell; the sign must not matter."""
    cells = {k: p + d for (k, p), d in zip(PAPER_CELLS.items(), diffs)}
    v, text = school(tmp_path, cells, PAPER_CELLS)
    assert v["published NMSE values"] == want
    n_within = sum(abs(d) <= 0.02 for d in diffs)
    assert f"{n_within} of 4 cells are within 0.02 of the paper's value; the largest difference is {largest}" in text


def test_table2_without_paper_values_or_measurements(tmp_path):
    v, text = school(tmp_path, {(2, "RSD"): 0.9, (2, "RFedAGS-K=1"): 0.95})
    assert "published NMSE values" not in v and "reports no value" in text
    cells = {(3, "RSD"): np.nan, (3, "RFedAGS-K=1"): np.nan}
    v, text = school(tmp_path / "b", cells, {(3, "RSD"): 0.465, (3, "RFedAGS-K=1"): 0.509})
    assert v["published NMSE values"] == INSUFFICIENT
    assert v["RFedAGS comparable to centralised"] == INSUFFICIENT


def test_school_verdicts_per_protocol_and_normalisation(tmp_path):
    """Held out: every cell 0.2 above the paper and the order over r reversed (r = 4 best);
    refit on the test rows (pooled): within 0.01 and in the paper's order; its task mean 0.03
    below the paper. Each protocol gets its own verdicts; the pooled NMSE is the paper's."""
    paper = {(3, "RSD"): 0.465, (4, "RSD"): 0.432, (5, "RSD"): 0.403,
             (3, "RFedAGS-K=1"): 0.509, (4, "RFedAGS-K=1"): 0.438, (5, "RFedAGS-K=1"): 0.407}
    held = {(3, m): 0.63 for m in ("RSD", "RFedAGS-K=1")}
    held.update({(4, "RSD"): 0.62, (4, "RFedAGS-K=1"): 0.625, (5, "RSD"): 0.64, (5, "RFedAGS-K=1"): 0.645})
    parts = []
    for protocol, norm, cells in (("heldout", "pooled", held),
                                  ("refit_on_test", "pooled", {k: v + 0.01 for k, v in paper.items()}),
                                  ("refit_on_test", "task_mean", {k: v - 0.03 for k, v in paper.items()})):
        t = school_table(cells, paper)
        t["protocol"], t["normalisation"] = protocol, norm
        parts.append(t)
    spec = spec_for(tmp_path, {}, table2=pd.concat(parts, ignore_index=True))
    rep = Report()
    R.school_section(rep, spec)
    v = verdicts(rep)
    assert v["published NMSE values [heldout]"] == NOT
    assert v["published NMSE values [refit_on_test]"] == REPRODUCED
    assert v["published NMSE values [refit_on_test, task_mean]"] == NOT
    assert v["ordering over r [heldout]"] == NOT            # r = 3 -> 4 down, 4 -> 5 up
    assert v["ordering over r [refit_on_test]"] == REPRODUCED
    # r = 3: RFedAGS 0.519 against RSD 0.475 is 9% worse; r = 4, 5: within 5%
    assert v["RFedAGS comparable to centralised [refit_on_test]"] == PARTLY
    assert v["RFedAGS comparable to centralised [heldout]"] == REPRODUCED
    text = "\n".join(rep.lines)
    assert "6 of 6 cells are within 0.02 of the paper's value" in text
    assert "mean signed difference (ours - paper) +0.010" in text
    assert "ConstructRFLLRMCProb_Grass_.m" in text and "demo_sl_school.m" in text


def test_school_sensitivity_and_closest_protocol_lines(tmp_path):
    """The step-size study is reported from table2_sensitivity.csv beside Table 2 (no verdict);
    the protocols are ranked by their mean difference to the paper."""
    cells = {(4, "RSD"): 0.5, (4, "RFedAGS-K=1"): 0.52}
    paper = {(4, "RSD"): 0.43, (4, "RFedAGS-K=1"): 0.44}
    parts = []
    for protocol, shift in (("heldout", 0.2), ("refit_on_test", 0.0)):
        t = school_table({k: v + shift for k, v in cells.items()}, paper)
        t["protocol"], t["normalisation"] = protocol, "pooled"
        parts.append(t)
    spec = spec_for(tmp_path, {}, table2=pd.concat(parts, ignore_index=True))
    spec["config"]["tables"]["table2"]["sensitivity"] = ["x"]
    rows = []
    for alpha, k1, k10 in ((1e-6, 0.70, 0.64), (1.8e-5, 0.63, 0.628)):
        for method, v, rnd in (("RFedAGS-K=1", k1, 100.0), ("RFedAGS-K=10", k10, 60.0)):
            rows.append({"r": 4, "alpha": alpha, "method": method, "protocol": "heldout", "nmse_mean": v,
                         "nmse_std": 0.01, "round_mean": rnd, "round_std": 0.0, "n_splits": 3,
                         "paper_nmse": 0.438 if method.endswith("=1") else 0.437,
                         "K1_minus_K10": k1 - k10, "paper_K1_minus_K10": 0.001})
    io.write_table(tmp_path / "table2_sensitivity.csv", pd.DataFrame(rows))
    rep = Report()
    R.school_section(rep, spec)
    text = "\n".join(rep.lines)
    assert "- r = 4, heldout: K = 1 is +0.060 from K = 10 at alpha = 1e-06, +0.002 at alpha = 1.8e-05 (paper: +0.001)." in text
    assert "best test NMSE comes on average at round 100 (r = 4, heldout)" in text
    closest = text.split("### Which protocol is closest to the paper's numbers")[1]
    assert closest.index("- refit_on_test, pooled: 0 of 2 cells within 0.02, mean difference (ours - paper) +0.075") \
        < closest.index("- heldout, pooled: 0 of 2 cells within 0.02, mean difference (ours - paper) +0.275")
    assert not any("sensitivity" in c or "step" in c for _, c, _ in rep.summary)


# ---- FedLSA / SCAFFLSA ------------------------------------------------------------------------
def lsa_table(cells):
    """cells: (setting, N, H, rel_error, window_ratio, scafflsa_factor[, scafflsa_last])."""
    rows = []
    for c in cells:
        setting, N, H, rel, ratio, factor = c[:6]
        last = c[6] if len(c) > 6 else 1e-6
        pred = 2.0 if H > 1 else 0.0
        plateau = pred * (1 + rel) if np.isfinite(rel) else (np.inf if rel == np.inf else np.nan)
        rows.append({"setting": setting, "N": N, "eta": 0.1, "H": H, "oracle": "exact", "batch_size": 1,
                     "rounds": 100, "initial": 10.0, "predicted_bias_sq": pred, "fedlsa_plateau": plateau,
                     "rel_error": rel if H > 1 else np.nan, "fedlsa_window_ratio": ratio,
                     "scafflsa_last": last, "scafflsa_window_ratio": 1.0, "scafflsa_factor": factor,
                     "fedlsa_seeds": 2, "scafflsa_seeds": 2})
    return pd.DataFrame(rows)


def lsa(tmp_path, cells):
    spec = spec_for(tmp_path, {}, lsa=lsa_table(cells))
    rep = Report()
    R.lsa_section(rep, spec)
    return verdicts(rep), "\n".join(rep.lines)


@pytest.mark.parametrize("rel, ratio, want", [
    (0.009, 1.0, REPRODUCED), (0.01, 1.0, REPRODUCED), (0.011, 1.0, NOT),
    (0.0, 1.009, REPRODUCED), (0.0, 1.011, NOT), (0.0, 0.989, NOT), (0.0, 0.991, REPRODUCED)])
def test_fedlsa_plateau_against_the_prediction(tmp_path, rel, ratio, want):
    cells = [("heterogeneous", 10, 2, rel, ratio, 1e6), ("heterogeneous", 10, 1, np.nan, 5.0, 1e6)]
    v, _ = lsa(tmp_path, cells)                  # the H = 1 cell (bias 0) is not judged
    assert v["FedLSA plateau = predicted bias"] == want


def test_fedlsa_partly_and_missing(tmp_path):
    ok, bad = ("heterogeneous", 10, 4, 0.001, 1.0, 1e6), ("homogeneous", 10, 4, 0.5, 1.0, 1e6)
    assert lsa(tmp_path, [ok, bad])[0]["FedLSA plateau = predicted bias"] == PARTLY
    nopred = ("homogeneous", 10, 8, np.nan, 1.0, 1e6)
    assert lsa(tmp_path / "b", [ok, nopred])[0]["FedLSA plateau = predicted bias"] == PARTLY
    assert lsa(tmp_path / "c", [nopred])[0]["FedLSA plateau = predicted bias"] == INSUFFICIENT
    diverged = ("homogeneous", 10, 8, np.inf, 1.0, 1e6)
    assert lsa(tmp_path / "d", [diverged])[0]["FedLSA plateau = predicted bias"] == NOT


@pytest.mark.parametrize("factors, want", [
    ((100.0, 1e4), REPRODUCED), ((99.9, 1e4), PARTLY), ((99.9, 2.0), NOT), ((0.5, 1e3), PARTLY)])
def test_scafflsa_factor(tmp_path, factors, want):
    cells = [("heterogeneous", 10, H, 0.0, 1.0, f) for H, f in zip((2, 8), factors)]
    cells.append(("heterogeneous", 10, 1, np.nan, 1.0, 1e-3))       # H = 1: not judged
    cells.append(("homogeneous", 10, 4, 0.0, 1.0, 1e-3))           # homogeneous: not judged
    v, text = lsa(tmp_path, cells)
    assert v["SCAFFLSA removes the heterogeneity bias"] == want
    if 0.5 in factors:
        assert "SCAFFLSA's error is 2x FedLSA's" in text


def test_scafflsa_without_a_curve_is_no_pass(tmp_path):
    """A cell without SCAFFLSA runs (last value NaN, factor inf in the table) or with a
    diverged FedLSA (plateau inf) shows nothing about SCAFFLSA."""
    nosc = ("heterogeneous", 10, 4, 0.0, 1.0, np.inf, np.nan)
    assert lsa(tmp_path, [nosc])[0]["SCAFFLSA removes the heterogeneity bias"] == INSUFFICIENT
    fed_div = ("heterogeneous", 10, 4, np.inf, 1.0, np.inf)
    v, text = lsa(tmp_path / "b", [fed_div, ("heterogeneous", 10, 8, 0.0, 1.0, 1e4)])
    assert v["SCAFFLSA removes the heterogeneity bias"] == PARTLY
    assert "lack a finite FedLSA plateau" in text
    sc_div = ("heterogeneous", 10, 4, 0.0, 1.0, 0.0, np.inf)
    assert lsa(tmp_path / "c", [sc_div])[0]["SCAFFLSA removes the heterogeneity bias"] == NOT


# ---- heterogeneity: measurements only ---------------------------------------------------------
# ---- the report through the command line ------------------------------------------------------
def test_rfl_reproduction_end_to_end(tmp_path):
    """Figure 1 with a fixed run that diverges after one round, Figure 2, School and FedLSA,
    written by ``rfl reproduction``: the summary carries every verdict and the report names
    the diverged run."""
    T = 40
    runs = {"p_fixed": [], "p_dec": []}
    f = geometric(0.5, T, floor=1e-6)
    runs["p_fixed"].append(write_run(tmp_path, "p_fixed", f, K=1))
    runs["p_fixed"].append(write_run(tmp_path, "p_fixed", f, K=4, diverge_at=1))
    runs["p_dec"].append(write_run(tmp_path, "p_dec", f / 2, K=1))
    runs["p_dec"].append(write_run(tmp_path, "p_dec", f / 2, K=4))
    runs["p_fixed"].append(write_run(tmp_path, "p_fixed", 1.2 * f, name="rfedavg", K=1))
    runs["mt"] = [write_run(tmp_path, "mt", geometric(q, T), K=K, extra={"subspace_dist": geometric(q, T)})
                  for K, q in ((1, 0.8), (2, 0.6))]
    spec = spec_for(tmp_path, runs, table1=[ROW],
                    figures={"f2": {"experiment": "mt", "metrics": ["subspace_dist"], "title": "x"}},
                    datasets={"mt": {"problem": "multitask"}}, experiments={"mt": {"dataset": "mt"}},
                    table2=school_table({**{k: p + 0.01 for k, p in PAPER_CELLS.items()},
                                         (3, "RFedAvg"): 0.519}, PAPER_CELLS),
                    lsa=lsa_table([("heterogeneous", 10, 4, 0.001, 1.0, 1e3)]))
    path = tmp_path / "reproduction.json"
    path.write_text(json.dumps(spec))
    out = tmp_path / "REPRODUCTION.md"
    assert cli.main(["reproduction", str(path), str(out)]) == 0
    v = summary_of(out)
    assert v == {
        ("Fig. 1 P", "linear convergence, fixed step"): PARTLY,
        ("Fig. 1 P", "decaying step more accurate"): PARTLY,
        ("Fig. 1 P", "larger K faster"): NOT,
        ("Fig. 1 P", "RFedAGS ~ RFedAvg"): REPRODUCED,
        ("Fig. 3 / Table 2", "RFedAvg ~ RFedAGS K=1 [heldout]"): REPRODUCED,
        ("Fig. 2", "linear convergence"): REPRODUCED,
        ("Fig. 2", "larger K faster"): REPRODUCED,
        ("Fig. 3 / Table 2", "RFedAGS comparable to centralised [heldout]"): PARTLY,   # r = 3: 9%, r = 4: 1.4%
        ("Table 2", "ordering over r [heldout]"): REPRODUCED,
        ("Table 2", "published NMSE values [heldout]"): REPRODUCED,
        ("FedLSA / TD(0)", "FedLSA plateau = predicted bias"): REPRODUCED,
        ("SCAFFLSA / TD(0)", "SCAFFLSA removes the heterogeneity bias"): REPRODUCED,
    }
    text = out.read_text()
    assert "- runs: 7 (1 diverged: rfedags_K4_seed0)" in text
    assert "None" not in text and text.count("_Rule: ") == len(v)
    assert "K = 4: not reproduced: the run diverged at round 1" in text


def test_rfl_reproduction_on_a_real_run_that_diverges_after_one_round(tmp_path):
    """The runner's own files: the smoke config's first fixed-step RFedAGS run of a Table 1
    experiment, once with a step that makes it diverge after one round (a fit window past the
    last recorded round would raise IndexError in linear_phase) and once as configured, as the decaying run."""
    import yaml

    from rfl import config as rflconfig
    from rfl import runner

    with open("config/smoke.yaml") as fh:
        spec = rflconfig.expand_runs(rflconfig.validate(yaml.safe_load(fh)))[0]
    assert spec["algorithm"]["name"] == "rfedags"
    data, ref = tmp_path / "data.npz", tmp_path / "ref.npz"
    runner.generate_data(spec["dataset"], data)
    runner.compute_reference(spec["dataset"], data, ref)
    paths = {}
    for exp, step in (("p_fixed", {"rule": "fixed", "alpha": 1e308}), ("p_dec", spec["step"])):
        d = tmp_path / "runs" / exp
        d.mkdir(parents=True)
        table = runner.run(dict(spec, step=step, experiment=exp), data, ref, d / "r.csv", d / "r.meta.json")
        paths[exp] = [str(d / "r.csv")]
    assert table["status"].eq("ok").all()
    assert io.read_table(paths["p_fixed"][0])["status"].tolist() == ["ok", "diverged"]
    path = tmp_path / "reproduction.json"
    path.write_text(json.dumps(spec_for(tmp_path, paths, table1=[ROW])))
    out = tmp_path / "REPRODUCTION.md"
    assert cli.main(["reproduction", str(path), str(out)]) == 0
    K = spec["algorithm"]["K"]
    assert summary_of(out) == {("Fig. 1 P", "linear convergence, fixed step"): NOT,
                               ("Fig. 1 P", "decaying step more accurate"): INSUFFICIENT,
                               ("Fig. 1 P", "larger K faster"): INSUFFICIENT}
    text = out.read_text()
    assert f"- K = {K}: not reproduced: the run diverged at round 1 (median over seeds)." in text
    assert "- runs: 2 (1 diverged: r)" in text


# ---- the report's content for each rule (what a reader checks) ---------------------------------
def test_rounds_to_counts_a_value_at_the_level():
    c = pd.Series([1.0, 0.5, 0.25, 0.125])
    assert C.rounds_to(c, 0.25) == 2 and C.rounds_to(c, 0.3) == 2 and np.isnan(C.rounds_to(c, 0.1))


def test_figure1_tables_and_notes(tmp_path):
    """K = 1: three seeds, one diverging at round 30 of 40 (the median stays finite); K = 2
    healthy; the decaying K = 2 run is longer than the fixed one; K = 4 has no decaying run."""
    T = 40
    f1, f2 = geometric(0.8, T, floor=1e-4), geometric(0.5, T, floor=1e-6)
    d2 = geometric(0.5, 2 * T, floor=1e-7)
    rep, _ = figure1(tmp_path, {1: [f1, f1, (f1, 30)], 2: [f2], 4: [f2]}, {1: [f1 / 2], 2: [d2]})
    text = "\n".join(rep.lines)
    assert "- K = 1: 1 of 3 seeds diverged (first at round 30)" in text
    assert "the run diverged" not in text                     # two of three seeds did not
    # linear table: K = 2 fitted over the first 18 rounds (90% of log(1 + 1e6) ~ 20 halvings)
    fit = C.linear_phase(pd.Series(f2))
    assert f"| 2 | {1 + 1e-6:.4g} | {fit['rate']:.4g} | {fit['r2']:.4g} | {fit['rounds']} |" in text
    # decaying table: only K = 1, 2 (K = 4 has no decaying run); K = 2's value at round 40
    assert not any(line.startswith("| 4 | ") and "decaying" in line for line in rep.lines)
    row = next(line for line in rep.lines if line.startswith("| 2 | ") and f"{d2[T]:.4g}" in line)
    assert row.split("|")[2:4] == [f" {f2[-1]:.4g} ", f" {d2[-1]:.4g} "]
    # larger-K table: rounds to reach the level, and the level reached, per K
    v, level, times = R.larger_k_faster({1: pd.Series(f1), 2: pd.Series(f2), 4: pd.Series(f2)})
    assert f"| 2 | {times[2]:.4g} | {C.plateau(pd.Series(f2)):.4g} |" in text
    assert verdicts(rep)["decaying step more accurate"] == REPRODUCED
    assert "Rule: None" not in text


def test_figure1_rfedavg_notes_and_counts(tmp_path):
    """K = 1: RFedAvg = RFedAGS x 1.5 (alike); K = 2: x 3 (not); K = 3: RFedAvg diverges."""
    f = geometric(0.5, 20, floor=1e-4)
    rep, _ = figure1(tmp_path, {1: [f], 2: [f], 3: [f]}, {1: [f / 2]},
                     avg={1: [1.5 * f], 2: [3 * f], 3: [(f, 3)]})
    assert verdicts(rep)["RFedAGS ~ RFedAvg"] == PARTLY
    text = "\n".join(rep.lines)
    assert "- K = 3: RFedAvg diverged at round 3." in text
    assert f"| 2 | {f[-1]:.4g} | {3 * f[-1]:.4g} | {np.log(3):.4g} |" in text
    rep, _ = figure1(tmp_path / "b", {1: [f], 2: [f]}, {1: [f / 2]}, avg={1: [3 * f], 2: [1.5 * f]})
    assert verdicts(rep)["RFedAGS ~ RFedAvg"] == PARTLY


def test_figure1_rfedavg_exactly_a_factor_two_is_not_alike(tmp_path):
    ones = np.ones(10)
    rep, _ = figure1(tmp_path, {1: [ones]}, {1: [ones / 2]}, avg={1: [2 * ones]})
    assert verdicts(rep)["RFedAGS ~ RFedAvg"] == NOT
    # an RFedAvg curve with no round in common gives no ratio: nothing to judge
    assert np.isnan(C.max_log_ratio(pd.Series(ones), pd.Series(np.full(10, np.nan))))


def test_figure1_without_a_decaying_experiment_writes_nothing(tmp_path):
    f = geometric(0.5, 10)
    runs = {"p_fixed": [write_run(tmp_path, "p_fixed", f)]}
    rep = Report()
    R.figure1_section(rep, spec_for(tmp_path, runs, table1=[ROW]), ROW)
    assert rep.lines == [] and rep.summary == []


def test_figure1_one_K_says_why_larger_K_is_not_judged(tmp_path):
    f = geometric(0.5, 30, floor=1e-6)
    rep, _ = figure1(tmp_path, {4: [f]}, {4: [f / 2]})
    assert "Fewer than two K" in "\n".join(rep.lines)
    rep, _ = figure1(tmp_path / "b", {1: [f], 4: [f]}, {4: [f / 2]})
    assert "Fewer than two K" not in "\n".join(rep.lines)


def test_figure2_counts_and_columns(tmp_path):
    T = 50
    # K = 1 diverged (slowest), K = 3 and K = 5 decrease in rate: larger K faster holds
    v, text = _figure2(tmp_path, {1: (geometric(0.9, T), 4), 3: (geometric(0.7, T), 6), 5: geometric(0.5, T)})
    assert v[("Fig. 2", "larger K faster")] == REPRODUCED   # K = 1, 3 diverged: both slowest
    assert "K = 1: not reproduced: the run diverged at round 4" in text
    assert "K = 3: not reproduced: the run diverged at round 6" in text
    v, text = _figure2(tmp_path / "b", {1: (geometric(0.9, T), 4), 3: geometric(0.7, T), 5: geometric(0.5, T)})
    assert v[("Fig. 2", "larger K faster")] == REPRODUCED
    last = 0.5 ** T
    assert f"| 5 | 0.5 | 1 | 1 | {last:.4g} | {np.sqrt(last):.4g} |" in text
    # K = 1 has one round only (no fit), K = 3 is flat: nothing linear, one K judged for speed
    v, text = _figure2(tmp_path / "c", {1: geometric(0.5, 1), 3: np.ones(T + 1)})
    assert v == {("Fig. 2", "linear convergence"): NOT, ("Fig. 2", "larger K faster"): INSUFFICIENT}
    assert "K = 1: insufficient data" in text
    v, _ = _figure2(tmp_path / "d", {1: geometric(0.5, 1), 3: geometric(0.5, 0)})
    assert v == {("Fig. 2", "linear convergence"): INSUFFICIENT, ("Fig. 2", "larger K faster"): INSUFFICIENT}


def test_school_rfedavg_per_r(tmp_path):
    cells = {**_gap_cells(3, 0.0, avg=0.001), **_gap_cells(4, 0.0, avg=0.1)}
    v, text = school(tmp_path, cells)
    assert v["RFedAvg ~ RFedAGS K=1"] == PARTLY
    assert "| 3 | 0.501 | 0.5 | 0.001 |" in text
    cells = {**_gap_cells(3, 0.0, avg=0.1), **_gap_cells(4, 0.0, avg=0.001)}
    assert school(tmp_path / "b", cells)[0]["RFedAvg ~ RFedAGS K=1"] == PARTLY
    cells = {**_gap_cells(3, 0.0, avg=np.nan), **_gap_cells(4, 0.0, avg=0.001)}
    assert school(tmp_path / "c", cells)[0]["RFedAvg ~ RFedAGS K=1"] == PARTLY
    cells = {**_gap_cells(3, 0.0, avg=np.nan), **_gap_cells(4, 0.0, avg=np.nan)}
    assert school(tmp_path / "d", cells)[0]["RFedAvg ~ RFedAGS K=1"] == INSUFFICIENT


def test_school_gap_without_centralised_runs_at_every_r(tmp_path):
    cells = {(3, "RFedAGS-K=1"): 0.4, (4, "RFedAGS-K=1"): 0.4}
    assert school(tmp_path, cells)[0]["RFedAGS comparable to centralised"] == INSUFFICIENT


def test_table2_threshold_is_inclusive(tmp_path, monkeypatch):
    monkeypatch.setattr(SCH, "TABLE2_TOL", 0.25)
    v, _ = school(tmp_path, {(3, "RSD"): 0.75, (3, "RFedAGS-K=1"): 0.25},
                  {(3, "RSD"): 0.5, (3, "RFedAGS-K=1"): 0.5})       # differences +0.25, -0.25
    assert v["published NMSE values"] == REPRODUCED


def test_school_section_needs_the_table2_config(tmp_path):
    spec = spec_for(tmp_path, {}, table2=school_table({(3, "RSD"): 0.5}))
    del spec["config"]["tables"]["table2"]
    rep = Report()
    R.school_section(rep, spec)
    assert rep.lines == []


def test_lsa_thresholds_are_inclusive(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "LSA_REL_TOL", 0.25)
    v, _ = lsa(tmp_path, [("heterogeneous", 10, 2, 0.25, 1.25, 1e6)])
    assert v["FedLSA plateau = predicted bias"] == REPRODUCED
    v, _ = lsa(tmp_path / "b", [("heterogeneous", 10, 2, 0.25, 0.75, 1e6)])
    assert v["FedLSA plateau = predicted bias"] == REPRODUCED


def test_lsa_report_lines(tmp_path):
    cells = [("heterogeneous", 10, 2, 0.011, 1.0, 1.0, 1e-20), ("heterogeneous", 10, 4, 0.002, 1.0, 2e3),
             ("heterogeneous", 10, 1, np.nan, 1.0, 1.0)]
    table = lsa_table(cells)
    table.loc[1, "scafflsa_window_ratio"] = 1.5
    spec = spec_for(tmp_path, {}, lsa=table)
    rep = Report()
    R.lsa_section(rep, spec)
    text = "\n".join(rep.lines)
    assert "1 of 2 cells with H > 1 agree; the largest relative error is 1.10e-02 (heterogeneous, N = 10, H = 2" in text
    assert "- H = 1 (heterogeneous, N = 10): the bias is 0" in text
    assert "after 100 rounds (round-off level): SCAFFLSA lowers the error by a factor 1." in text
    assert "(still decreasing at the last round: more rounds would lower it): SCAFFLSA lowers the error by a factor 2e+03" in text
    assert verdicts(rep)["SCAFFLSA removes the heterogeneity bias"] == PARTLY


def test_decaying_vs_fixed_from_the_same_starting_point(tmp_path):
    """Both runs start at the same x_1 (as in the workflow); the decaying one ends 10x lower."""
    f = np.maximum(geometric(0.5, 30), 1e-3)
    d = np.maximum(geometric(0.5, 30), 1e-4)
    assert f[0] == d[0]
    rep, _ = figure1(tmp_path, {1: [f], 2: [f]}, {1: [d], 2: [d]})
    assert verdicts(rep)["decaying step more accurate"] == REPRODUCED
    rep, _ = figure1(tmp_path / "b", {1: [d], 2: [d]}, {1: [f], 2: [f]})
    assert verdicts(rep)["decaying step more accurate"] == NOT


def test_larger_K_faster_level_from_the_lowest_start():
    """Starts 1 and 4: the level is sqrt(1 x 1e-4) = 1e-2."""
    curves = {1: _floored(0.9, 1e-4), 2: 4 * _floored(0.5, 1e-4 / 4)}
    v, level, times = R.larger_k_faster(curves)
    assert level == pytest.approx(1e-2) and times == {1: 44, 2: 9} and v == REPRODUCED

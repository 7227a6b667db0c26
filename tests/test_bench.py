"""``rfl bench`` and its leaderboard (rfl/bench/), against arithmetic done by hand or by plain
loops: the Dolan-More profile, the step rule, the budget to reach a level, the median and its
order-statistic interval, the plan's shared draws and capability gaps, and bad input (one
line, exit status 2). The plug-in's acceptance runs are in tests/test_bench_plugin.py.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats as sps

from rfl.bench import leaderboard as L
from rfl.bench import profile as P
from rfl.bench import suite, tuning
from rfl.bench.plan import BenchError, BenchPlan, parse_method

REPO = Path(__file__).resolve().parents[1]
INF = math.inf


# ---- the Dolan-More profile ------------------------------------------------------------------
def test_profile_is_the_share_of_problems_within_tau_of_the_best():
    """rho_m(tau) = |{p: t_pm <= tau min_m' t_pm'}| / |P| by a plain loop over problems, with a
    method that cannot run (inf) and a problem no method solves (counts for none)."""
    t = pd.DataFrame({"a": [1.0, 4.0, INF, 3.0], "b": [2.0, 2.0, INF, INF], "c": [INF, 8.0, INF, 1.0]},
                     index=["p1", "p2", "p3", "p4"])
    taus = [1.0, 1.5, 2.0, 3.0, 4.0, 100.0]
    got = P.rho(P.ratios(t), taus)
    for m in t.columns:
        for tau in taus:
            hits = 0
            for p in t.index:
                best = min(t.loc[p])
                if math.isfinite(best) and t.loc[p, m] <= tau * best:
                    hits += 1
            assert got.loc[tau, m] == hits / 4, (m, tau)
    assert got.loc[1.0].tolist() == [0.25, 0.25, 0.25]          # each wins one problem
    assert got.loc[100.0].tolist() == [0.75, 0.5, 0.5]          # p3: nobody


def test_profile_figure_draws_every_method_and_returns_its_numbers(tmp_path):
    t = pd.DataFrame({"x": [1.0, 2.0], "y": [3.0, 1.0]}, index=["p", "q"])
    out = P.profile_figure({"m": t}, {"x": "Mine", "y": "Theirs"}, tmp_path / "profile.pdf")
    for ext in ("pdf", "png", "svg"):
        assert (tmp_path / f"profile.{ext}").stat().st_size > 0
    svg = (tmp_path / "profile.svg").read_text()
    assert ">Mine</text>" in svg and ">Theirs</text>" in svg
    prof = out["m"]
    assert prof.loc[1.0, "x"] == 0.5 and prof.loc[2.0, "x"] == 1.0 and prof.loc[3.0, "y"] == 1.0


# ---- the step rule -----------------------------------------------------------------------------
def _table(values, status=None):
    n = len(values)
    return pd.DataFrame({"round": np.arange(n), "excess_risk": values,
                         "status": status or ["ok"] * n})


def test_final_loss_is_the_last_excess_risk_or_inf_when_diverged_or_short():
    assert tuning.final_loss(_table([1.0, 0.5, 0.25]), 2) == 0.25
    assert tuning.final_loss(_table([1.0, 0.5]), 2) == INF                          # stopped at t=1
    assert tuning.final_loss(_table([1.0, 0.5, np.nan], ["ok", "ok", "diverged"]), 2) == INF


def test_the_rule_takes_the_smallest_final_loss_ties_to_the_smaller_step():
    assert tuning.choose({0.1: 0.3, 0.3: 0.2, 1.0: INF})["alpha"] == 0.3
    assert tuning.choose({0.1: 0.2, 0.3: 0.2})["alpha"] == 0.1
    c = tuning.choose({1.0: INF, 0.3: INF})
    assert c["alpha"] == 0.3 and c["all_diverged"]
    assert [a for a, _ in c["losses"]] == [0.3, 1.0]


# ---- one run's budget to a level ----------------------------------------------------------------
def test_budget_to_a_level_is_the_first_round_at_or_below_it():
    """excess risk 2^-t, counters linear in t: the first t with 2^-t <= l is ceil(log2(1/l));
    a level the run never reaches is +inf."""
    T = 12
    run = pd.DataFrame({"round": np.arange(T + 1), "excess_risk": 0.5 ** np.arange(T + 1),
                        "grad_evals": 10 * np.arange(T + 1), "floats": 3 * np.arange(T + 1),
                        "wall_time": 0.01 * np.arange(T + 1), "status": "ok", "rounds": T})
    rec = L.seed_record(run)
    for level in L.LEVELS:
        t = math.ceil(math.log2(1 / level))
        assert (rec[f"round@{level}"], rec[f"grad_evals@{level}"], rec[f"floats@{level}"]) == (t, 10 * t, 3 * t)
    assert rec["final"] == 0.5 ** T and rec["initial"] == 1.0 and rec["grad_evals_total"] == 10 * T
    short = L.seed_record(run.iloc[:8].assign(rounds=7))               # 2^-7 > 1e-3
    assert short["round@0.001"] == INF and short["round@0.01"] == 7


# ---- the leaderboard's rows --------------------------------------------------------------------
def _frame(finals: dict[str, list[float]], rounds=4):
    """Reported runs whose excess risk falls linearly from 1 to ``final`` (inf: diverged at
    the last round)."""
    rows = []
    for method, values in finals.items():
        for seed, final in enumerate(values):
            for t in range(rounds + 1):
                last = t == rounds
                er = (np.nan if final == INF else final) if last else 1.0 + (min(final, 1.0) - 1.0) * t / rounds
                rows.append({"problem": "p", "method": method, "label": method.upper(), "origin": "baseline",
                             "phase": "report", "seed": seed, "alpha": 0.5, "step_from": "tuned",
                             "rounds": rounds, "round": t, "excess_risk": er, "grad_evals": 2 * t,
                             "floats": 5 * t, "wall_time": 0.1 * t,
                             "status": "diverged" if (last and final == INF) else "ok"})
    return pd.DataFrame(rows)


def _spec(methods, unavailable=()):
    return {"problems": ["p"], "methods": [{"id": m, "label": m.upper(), "origin": "baseline"} for m in methods],
            "unavailable": [{"problem": "p", "method": m, "reason": "why"} for m in unavailable],
            "grids": {"p": [0.1, 0.5, 1.0]}, "seeds": list(range(6)), "size": "smoke", "tuning_seed": 1000,
            "grid_factors": [0.1, 0.5, 1.0], "budgets": {"p": {"rounds": 4, "K": 1, "batch_size": 1}}}


def test_median_and_its_sign_interval_across_seeds():
    """Six seeds: the 95% order-statistic interval of the median is [x_(k), x_(n+1-k)] with the
    largest k such that P(k <= Bin(6, 1/2) <= 6 - k) >= 0.95 (k = 1: min and max); a diverged
    seed is +inf; the rank follows the median."""
    a = [0.3, 0.1, 0.5, 0.2, 0.6, 0.4]
    b = [0.05, 0.07, INF, 0.06, 0.08, 0.09]
    board = L.rows(_frame({"a": a, "b": b}), _spec(["a", "b", "c"], unavailable=["c"]))
    k = max(k for k in range(1, 4) if 1 - 2 * sps.binom.cdf(k - 1, 6, 0.5) >= 0.95)
    ra, rb, rc = (board[board["method"] == m].iloc[0] for m in "abc")
    assert ra["final_median"] == pytest.approx(np.median(a))
    assert (ra["final_low"], ra["final_high"]) == (sorted(a)[k - 1], sorted(a)[6 - k])
    assert rb["final_median"] == pytest.approx((0.07 + 0.08) / 2) and rb["final_high"] == INF
    assert (rb["rank"], ra["rank"]) == (1, 2)
    assert rc["status"] == "cannot run" and rc["reason"] == "why" and pd.isna(rc["rank"])
    assert ra["step_from"] == "tuned"
    # b (rank 1) against a, a against b: per seed b/a = 0.05/0.3, ...; the diverged seed is +inf
    assert (rb["versus"], ra["versus"]) == ("a", "b") and rb["versus_high"] == INF
    # 1 -> 0.3 linearly over 4 rounds: 1 - 0.7 t/4 <= 0.1 never; 0.1 x 1 is first reached by no seed
    assert ra["rounds_to_1e-1"] == INF
    # b's seeds fall to <= 0.09 at t = 4 except the diverged one: median of five 4's and one inf
    assert rb["rounds_to_1e-1"] == 4 and rb["grad_evals_to_1e-1"] == 8 and rb["floats_to_1e-1"] == 20


def test_the_paired_ratio_is_the_geometric_mean_of_per_seed_ratios_with_a_t_interval():
    """Seed s of one method against seed s of the other (their draws are shared): ratios
    exactly 1/2 per seed give 1/2 whatever the order of the seeds; otherwise exp of the mean
    log ratio +- t_{0.975, n-1} sd / sqrt(n), by scipy.stats directly."""
    mine = pd.Series([0.1, 0.4, 0.2], index=[0, 1, 2])
    other = pd.Series([0.8, 0.4, 0.2], index=[1, 2, 0])            # the same seeds, another order
    iv = L.paired_ratio(mine, other)
    assert iv.shown() == pytest.approx((0.5, 0.5, 0.5)) and L.verdict(iv) == "lower"
    a = pd.Series([1.0, 2.0, 0.5, 3.0], index=range(4))
    b = pd.Series([1.5, 1.0, 1.0, 1.0], index=range(4))
    x = np.log(a / b)
    half = sps.t.ppf(0.975, 3) * x.std(ddof=1) / 2
    iv = L.paired_ratio(a, b)
    assert iv.shown() == pytest.approx((np.exp(x.mean()), np.exp(x.mean() - half), np.exp(x.mean() + half)))
    assert L.verdict(iv) == "no difference shown"
    assert L.verdict(L.paired_ratio(a[:2], b[:2])) == "undecided"          # 2 < MIN_SEEDS seeds
    assert L.verdict(L.paired_ratio(b * 3, b)) == "higher"


def test_a_step_at_the_end_of_the_grid_is_flagged():
    frame = _frame({"a": [0.3] * 3})
    frame["alpha"] = 1.0
    board = L.rows(frame, _spec(["a"]))
    assert board.iloc[0]["step_from"] == "tuned, at the grid's edge"


def test_html_sorts_inline_and_loads_nothing_from_elsewhere():
    board = L.rows(_frame({"a": [0.3] * 3, "b": [0.2] * 3}), _spec(["a", "b", "c"], unavailable=["c"]))
    page = L.html_page(board, _spec(["a", "b", "c"], unavailable=["c"]))
    assert page.count("<table class=\"sortable\"") == 1 and "addEventListener(\"click\"" in page
    assert "http://" not in page and "https://" not in page and "<script src" not in page
    assert page.count("<tr class=") == 3 and "cannot run: why" in page


# ---- the plan -----------------------------------------------------------------------------------
def test_every_method_of_a_problem_shares_its_draws_and_start_and_never_tunes_on_a_reported_seed():
    plan = BenchPlan(["rfedprox:mu=0.5"], ["cpesph", "cfmspd"], "smoke", "out/", ["rfedags", "rfedproj"])
    for p in plan.problems:
        specs = plan.tuning_specs(p) + plan.report_specs(p)
        assert {s["experiment"] for s in specs} == {f"bench_{p}"}        # Draws(seed, experiment)
        assert {s["dataset"]["name"] for s in specs} == {f"bench_{p}"}   # x_1 (seed, "init", dataset)
        assert len({s["run_id"] for s in specs}) == len(specs)
        assert {s["seed"] for s in plan.tuning_specs(p)} == {suite.TUNING_SEED}
        assert suite.TUNING_SEED not in plan.seeds
        inst = suite.instance(p, "smoke")
        assert sorted({a["step"]["alpha"] for a in plan.tuning_specs(p)}) == pytest.approx(
            sorted(inst["alpha"] * f for f in suite.GRID["smoke"]), rel=1e-12)
        assert all(s["algorithm"]["K"] == inst["K"] and s["rounds"] == inst["rounds"] for s in specs)
    assert plan.report_specs("cpesph")[0]["algorithm"]["mu"] == 0.5
    assert [m.id for m in plan.methods] == ["rfedprox_mu0p5", "rfedags", "rfedproj"]


def test_a_method_is_unavailable_exactly_where_the_manifold_or_problem_lacks_what_it_needs():
    from rfl.registry import ALGORITHMS, PROBLEMS
    plan = BenchPlan([], None, "smoke", "out/", list(suite.BASELINES))
    for p, entry in suite.INSTANCES.items():
        cls = PROBLEMS[entry["problem"]]
        for m in plan.methods:
            alg = ALGORITHMS[m.name]
            ok = (all(cls.manifold_class.offers(c, entry["geometry"]["retraction"]) for c in alg.requires)
                  and cls.field in alg.fields and all(cls.offers(o) for o in alg.oracles))
            assert ((p, m.id) not in plan.unavailable) == ok, (p, m.id)
    assert ("cfmspd", "rfedproj") in plan.unavailable           # SPD: no nearest point
    assert ("cfmspd", "rfedags") not in plan.unavailable


def test_a_given_step_is_not_tuned():
    plan = BenchPlan(["rfedavg:alpha=0.02,K=2"], ["cfmspd"], "smoke", "out/", ["rfedags"])
    mine = [s for s in plan.report_specs("cfmspd") if s["algorithm"]["name"] == "rfedavg"]
    assert {s["step"]["alpha"] for s in mine} == {0.02} and {s["algorithm"]["K"] for s in mine} == {2}
    assert not [s for s in plan.tuning_specs("cfmspd") if s["algorithm"]["name"] == "rfedavg"]
    assert {s["bench"]["step_from"] for s in mine} == {"given"}


@pytest.mark.parametrize("args, says", [
    (["nosuch"], "method 'nosuch' is not an installed strategy; allowed: "),
    (["rsd"], "method 'rsd' is centralised; allowed: "),
    (["rfedprox:eta=1"], "'eta=1' is not key=value with a key rfedprox takes; allowed: mu, K, alpha"),
    (["rfedprox:mu=-1"], "option mu=-1"),
    (["rfedags", "--problems", "cpesph", "nosuch"], "problem 'nosuch' is not in the benchmark suite; allowed: cpesph, "),
    (["rfedags", "--size", "huge"], "size 'huge' is unknown; allowed: smoke, default, paper"),
    (["rfedags", "--baselines", "rfedags", "nosuch"], "method 'nosuch' is not an installed strategy"),
    (["rfedags", "--out", "../o/"], "--out '../o/' leaves the working directory"),
])
def test_bad_input_is_one_line_naming_it_and_exit_2(tmp_path, args, says):
    (tmp_path / "w").mkdir()
    env = dict(os.environ, PYTHONPATH=str(REPO), MPLBACKEND="Agg")
    args = args if "--out" in args else [*args, "--out", "o/"]
    r = subprocess.run([sys.executable, "-m", "rfl.cli", "bench", *args], cwd=tmp_path / "w",
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rfl: error: ") and says in lines[0], r.stderr
    assert not (tmp_path / "w" / "o").exists() and not (tmp_path / "o").exists()


def test_parse_method_reads_yaml_scalars():
    m = parse_method("rfedsvrg:correction=participants,K=3")
    assert (m.options, m.K, m.alpha, m.id) == ({"correction": "participants"}, 3, None,
                                                "rfedsvrg_correctionparticipants_K3")
    with pytest.raises(BenchError, match="K=0"):
        parse_method("rfedags:K=0")


# ---- shared draws, end to end ---------------------------------------------------------------------
def test_rfedags_and_rfedavg_coincide_for_k1_with_exp_and_parallel_transport(tmp_path):
    """RFedAGS paper Section 3.3: with K = 1, the exponential map and parallel transport,
    RFedAGS is RFedAvg. On CFMSPD (SPD, Exp, parallel transport) the benchmark's runs of the two
    at K = 1 give the same iterates only if both see the same mini-batches and x_1 per seed."""
    from rfl.bench.execute import run_plan
    (tmp_path / "b").mkdir()                     # an absolute output folder must exist
    plan = BenchPlan(["rfedags:K=1", "rfedavg:K=1"], ["cfmspd"], "smoke", str(tmp_path / "b"), [])
    run_plan(plan, log=lambda line: None)
    for s in plan.seeds + [plan.tuning_seed]:
        a, b = (sorted(Path(plan.path("results/runs/bench_cfmspd")).rglob(f"{m}_K1*_seed{s}.csv"))
                for m in ("rfedags", "rfedavg"))
        assert len(a) == len(b) >= 1
        for fa, fb in zip(a, b):
            ta, tb = pd.read_csv(fa), pd.read_csv(fb)
            np.testing.assert_allclose(ta["excess_risk"], tb["excess_risk"], rtol=1e-9, atol=1e-13)
    board = pd.read_csv(plan.path("leaderboard/leaderboard.csv"))
    assert board["final_median"].iloc[0] == pytest.approx(board["final_median"].iloc[1], rel=1e-9)
    # a second call redoes nothing: every file is current
    before = {f: f.stat().st_mtime_ns for f in Path(plan.path("results/runs")).rglob("*.csv")}
    run_plan(plan, log=lambda line: None)
    assert {f: f.stat().st_mtime_ns for f in Path(plan.path("results/runs")).rglob("*.csv")} == before


# ---- the HTML page in a real browser ---------------------------------------------------------------
def _browser_available() -> bool:
    import importlib.util
    sys.path.insert(0, str(REPO / "scripts"))
    import check_report
    return check_report.find_chromium() is not None and importlib.util.find_spec("websockets") is not None


@pytest.mark.browser
@pytest.mark.skipif(not _browser_available(), reason="needs Chromium on PATH and websockets")
def test_the_leaderboard_columns_sort_in_headless_chromium(tmp_path):
    """Clicking a header orders the rows by that column (ascending, then descending on a second
    click), numbers as numbers (2e-5 before 0.3, '-' = +inf last), text as text; the oracle is
    Python's sort of the board's own values."""
    import check_report

    finals = {"a": [0.3] * 3, "b": [2e-5] * 3, "c": [0.15] * 3, "d": [INF] * 3}   # "2e-05" > "0.3" as text
    spec = _spec(list(finals) + ["e"], unavailable=["e"])
    board = L.rows(_frame(finals), spec)
    (tmp_path / "leaderboard.html").write_text(L.html_page(board, spec))
    browser = check_report.Browser(check_report.find_chromium())
    try:
        browser.navigate((tmp_path / "leaderboard.html").as_uri())
        browser.wait_for("document.readyState === 'complete' && document.querySelector('table.sortable') !== null",
                         "the page")

        def order_after_click(header: str) -> list[str]:
            return browser.eval(f"""(() => {{
                const th = [...document.querySelectorAll('table.sortable th')].find(h => h.textContent === {header!r});
                th.click();
                return [...document.querySelectorAll('table.sortable tbody tr')].map(r => r.dataset.method);
            }})()""")

        value = {m: (np.median(finals[m]) if m in finals else INF) for m in list(finals) + ["e"]}
        ascending = sorted(value, key=value.get)                   # e (cannot run) ties d at +inf
        assert order_after_click("final excess risk (median)") == ascending
        # descending: a stable sort keeps the tie d, e in the order it found it (as Python's does)
        assert order_after_click("final excess risk (median)") == sorted(ascending, key=value.get, reverse=True)
        names = board.set_index("method")["label"].to_dict()
        asc = order_after_click("method")
        assert asc == sorted(names, key=names.get)
        assert order_after_click("method") == asc[::-1]
        assert browser.eval("document.querySelector('th[aria-sort]').textContent") == "method"
    finally:
        browser.close()

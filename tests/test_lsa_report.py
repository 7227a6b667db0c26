"""The FedLSA / SCAFFLSA study's numbers and figure (rfl/reporting/lsa.py) on
constructed inputs, each expected value computed here from the inputs:

* the plateau window (the last ``tail`` fraction of rounds, at least two), its mean, the ratio
  start / last, the per-round factor (last / first)^(1 / (n - 1)) of a geometric curve;
* the seed-mean curve E||theta_t - theta*||^2 (infinite once a seed has diverged or stopped),
  each seed's window mean and their standard error sd / sqrt(S);
* the summary rows of cells with one method only, predictions that differ between runs, the
  transient initial x contraction^(window start);
* the figure: per (oracle, N, eta) panel, the mean over seeds drawn per H, the band, the
  predicted plateau line, read back from the Axes.

The verdicts judged from this table are tested with their claim rules (test_lsa_claims.py).
"""

from __future__ import annotations

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba
from matplotlib.legend import Legend

from rfl import io
from rfl.reporting import lsa
from rfl.testing.run_files import write_run


def _curve(values) -> pd.Series:
    return pd.Series(np.asarray(values, float), index=np.arange(len(values)))


def _table(values, diverged=False) -> pd.DataFrame:
    v = np.asarray(values, float)
    status = ["ok"] * len(v)
    if diverged:
        status[-1] = "diverged"
    return pd.DataFrame({"round": np.arange(len(v)), "excess_risk": v, "status": status})


# ---- the plateau window and the rates --------------------------------------------------------
@pytest.mark.parametrize("n_rounds, tail, n", [(41, 0.1, 4), (41, 0.5, 20), (41, 0.01, 2), (3, 0.9, 2),
                                               (2, 1.0, 2), (1, 0.5, 1), (101, 0.125, 12),
                                               (11, 0.9, 9)])
def test_window_is_the_last_tail_fraction_of_rounds_and_at_least_two(n_rounds, tail, n):
    assert lsa.window_length(_curve(np.ones(n_rounds)), tail) == n


def test_plateau_is_the_window_mean_and_its_start_over_last():
    c = _curve([9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.5, 0.25])   # 11 rounds: window 0.3 -> 3
    level, ratio = lsa.plateau(c, 0.3)
    assert level == pytest.approx((1.0 + 0.5 + 0.25) / 3) and ratio == pytest.approx(1.0 / 0.25)
    level, ratio = lsa.plateau(_curve([3.0, 2.0, 0.0]), 0.5)            # last 0: no ratio
    assert level == 1.0 and np.isnan(ratio)


def test_tail_rate_of_a_geometric_curve_and_when_there_is_none():
    c = _curve(5.0 * 0.8 ** np.arange(21))
    assert lsa.tail_rate(c, 0.5) == pytest.approx(0.8, rel=1e-12)
    c2 = _curve(np.r_[np.ones(10), 2.0 * 0.5 ** np.arange(11)])          # window 0.5 -> 10 rounds
    assert lsa.tail_rate(c2, 0.5) == pytest.approx(0.5, rel=1e-12)
    assert lsa.tail_rate(c2, 0.1) == pytest.approx(0.5, rel=1e-12)
    for bad in ([1.0, 1.0, 0.0], [1.0, 0.0, 1.0], [1.0, np.inf, 1.0], [1.0, 1.0, np.inf], [1.0, -1.0, 1.0],
                [1.0, 1.0, -1.0]):
        assert np.isnan(lsa.tail_rate(_curve(bad), 0.5)), bad
    assert np.isnan(lsa.tail_rate(_curve([1.0]), 0.5))                  # one round: no window of two
    assert lsa.tail_rate(_curve([4.0, 1.0]), 0.5) == 0.25


# ---- seeds -------------------------------------------------------------------------------------
def test_mean_curve_is_infinite_once_a_seed_is_missing_or_diverged():
    a = _table([4.0, 2.0, 1.0, 0.5, 0.25])
    b = _table([2.0, 1.0, 0.5])                        # stopped after round 2
    c = _table([6.0, 3.0, np.nan], diverged=True)
    m = lsa.mean_curve([a, b])
    np.testing.assert_allclose(m.values[:3], [3.0, 1.5, 0.75])
    assert np.isinf(m.values[3:]).all() and list(m.index) == [0, 1, 2, 3, 4]
    m = lsa.mean_curve([a, c])
    np.testing.assert_allclose(m.values[:2], [5.0, 2.5])
    assert np.isinf(m.values[2:]).all()


def test_seed_plateaus_and_their_standard_error():
    t = np.arange(21)
    levels = [1.0, 2.0, 4.0]
    tables = [_table(v + 0.5 ** t) for v in levels]
    rounds = t[-lsa.window_length(_curve(t), 0.2):]        # the last 4 rounds
    want = np.array([v + np.mean(0.5 ** rounds) for v in levels])
    np.testing.assert_allclose(lsa.seed_plateaus(tables, 0.2), want, rtol=1e-12)
    sd = np.sqrt(sum((w - want.mean()) ** 2 for w in want) / 2)
    assert lsa.plateau_se(tables, 0.2) == pytest.approx(sd / np.sqrt(3), rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # quietly: no degrees-of-freedom warning
        assert np.isnan(lsa.plateau_se(tables[:1], 0.2))              # one seed
    short = _table(np.ones(15))                                        # misses the window
    assert np.isnan(lsa.plateau_se(tables + [short], 0.2))
    two = want[:2]
    assert lsa.plateau_se(tables[:2], 0.2) == pytest.approx(abs(two[0] - two[1]) / np.sqrt(2) / np.sqrt(2), rel=1e-12)


# ---- collect and summary -----------------------------------------------------------------------
def _lsa_run(root, method, seed, curve, *, setting="heterogeneous", N=2, eta=0.5, H=4, oracle="exact",
             B=1, predictions=None, **alg_extra):
    path = root / f"{setting}_{oracle}_N{N}_eta{eta}_H{H}" / f"{method}_seed{seed}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    params = {"setting": setting, "n_agents": N} | ({} if oracle is None else {"oracle": oracle})
    spec = {"seed": seed, "dataset": {"problem": "lsa", "params": params},
            "algorithm": {"name": method, "K": H, "batch_size": B, "participation": None, **alg_extra},
            "step": {"rule": "fixed", "alpha": eta}}
    write_run(path, {"excess_risk": np.asarray(curve, float)}, spec,
              predictions=predictions if predictions is not None else {})
    return path


def test_collect_reads_the_predictions_per_oracle_and_skips_other_methods(tmp_path):
    c = np.ones(5)
    other = _lsa_run(tmp_path, "rfedavg", 0, c)                   # first: skipped, not the end
    exact = _lsa_run(tmp_path, "fedavg", 0, c, oracle=None,       # no oracle key: the pool oracle
                     predictions={"fedlsa_bias_sq": 2.0, "fedlsa_plateau_pool": 3.0,
                                  "fedlsa_variance_pool": 1.0, "fedlsa_bias_sq_pool": 2.5,
                                  "fedlsa_second_moment_contraction": 0.7, "fedlsa_round_contraction": 0.2})
    ex = _lsa_run(tmp_path, "scafflsa", 1, c, oracle="exact", B=3,
                  predictions={"fedlsa_bias_sq": 2.0, "fedlsa_plateau_pool": 3.0, "fedlsa_round_contraction": 0.2,
                               "fedlsa_second_moment_contraction": None})
    runs = lsa.collect([other, exact, ex])
    assert [r["method"] for r in runs] == ["fedavg", "scafflsa"]
    p, e = runs
    assert (p["oracle"], p["setting"], p["N"], p["eta"], p["H"], p["seed"], p["batch_size"]) == \
        ("pool", "heterogeneous", 2, 0.5, 4, 0, 1)
    assert (p["predicted"], p["predicted_plateau"], p["predicted_variance"], p["predicted_bias_sq_pool"],
            p["contraction"]) == (2.0, 3.0, 1.0, 2.5, 0.7)
    assert (e["oracle"], e["batch_size"], e["status"]) == ("exact", 3, "ok")
    assert (e["predicted"], e["predicted_plateau"], e["predicted_variance"], e["predicted_bias_sq_pool"],
            e["contraction"]) == (2.0, 2.0, 0.0, 2.0, 0.2)
    assert list(e["table"]["excess_risk"]) == [1.0] * 5
    none = lsa.collect([_lsa_run(tmp_path / "n", "fedavg", 0, c, predictions={})])[0]
    assert all(np.isnan(none[k]) for k in ("predicted", "predicted_plateau", "contraction"))


def test_collect_names_the_file_and_the_keys_it_needs(tmp_path):
    path = _lsa_run(tmp_path, "fedavg", 0, np.ones(3))
    meta = io.read_json(io.run_meta_path(path))
    del meta["spec"]["algorithm"]["batch_size"]
    io.write_json(io.run_meta_path(path), meta)
    with pytest.raises(io.RunTableError, match=r"fedavg_seed0\.meta\.json: the FedLSA study needs .*"
                                               r"batch_size; bad or missing: 'batch_size'"):
        lsa.collect([path])


T = 40


def test_summary_of_cells_with_one_method_and_differing_predictions(tmp_path):
    t = np.arange(T + 1)
    paths = [
        # FedLSA only, two seeds; one run lacks the prediction, the other two differ: the max counts
        _lsa_run(tmp_path, "fedavg", 0, 2.0 + 1.0 * 0.5 ** t, predictions={"fedlsa_bias_sq": 2.5,
                                                                          "fedlsa_round_contraction": 0.5}),
        _lsa_run(tmp_path, "fedavg", 1, 2.0 + 3.0 * 0.5 ** t, predictions={"fedlsa_bias_sq": None}),
        _lsa_run(tmp_path, "fedavg", 2, 2.0 + 2.0 * 0.5 ** t, predictions={"fedlsa_bias_sq": 1.5}),
        # SCAFFLSA only, one seed, in another cell (H = 2)
        _lsa_run(tmp_path, "scafflsa", 0, 8.0 * 0.25 ** t, H=2, predictions={"fedlsa_bias_sq": 0.0}),
    ]
    table = lsa.summary(lsa.collect(paths), tail=0.1)
    assert list(table["H"]) == [2, 4]                                   # sorted by the key
    s, f = table.iloc[0], table.iloc[1]
    n = 4                                                               # round(0.1 * 40)
    window = 0.5 ** t[-n:]
    plateau = 2.0 + 2.0 * window.mean()                                  # mean over seeds of C = 2
    assert f["fedlsa_plateau"] == pytest.approx(plateau, rel=1e-12)
    assert f["predicted_bias_sq"] == 2.5 and f["predicted_plateau"] == 2.5 and f["batch_size"] == 1
    assert f["predicted_variance"] == 0.0 and f["predicted_bias_sq_pool"] == 2.5     # exact oracle: the bias
    assert f["rel_error"] == pytest.approx(abs(plateau - 2.5) / 2.5, rel=1e-12)
    assert f["plateau_ratio"] == pytest.approx(plateau / 2.5, rel=1e-12)
    assert f["fedlsa_seeds"] == 3 and f["scafflsa_seeds"] == 0
    assert np.isnan(f["scafflsa_last"]) and np.isnan(f["scafflsa_plateau"]) and np.isnan(f["scafflsa_rate"])
    assert f["scafflsa_factor"] == np.inf                               # nothing to compare with
    assert f["initial"] == pytest.approx(2.0 + 2.0) and f["rounds"] == T
    # start of the window: round T - n + 1 = 37; initial 4 x 0.5^37
    assert f["transient"] == pytest.approx(4.0 * 0.5 ** (T - n + 1), rel=1e-12, abs=0)
    assert f["contraction"] == 0.5
    seeds = np.array([2.0 + c * window.mean() for c in (1.0, 3.0, 2.0)])
    assert f["fedlsa_plateau_se"] == pytest.approx(seeds.std(ddof=1) / np.sqrt(3), rel=1e-12)
    assert f["z"] == pytest.approx((plateau - 2.5) / f["fedlsa_plateau_se"], rel=1e-12)
    # the SCAFFLSA-only cell: its curve gives the rounds and the start, FedLSA's columns are empty
    assert s["rounds"] == T and s["initial"] == 8.0
    assert s["scafflsa_last"] == pytest.approx(8.0 * 0.25 ** T, rel=1e-12, abs=0)
    assert s["scafflsa_rate"] == pytest.approx(0.25, rel=1e-9)
    assert s["scafflsa_seeds"] == 1 and np.isnan(s["scafflsa_plateau_se"]) and s["fedlsa_seeds"] == 0
    assert np.isnan(s["fedlsa_plateau"]) and np.isnan(s["rel_error"]) and np.isnan(s["plateau_ratio"])
    assert np.isnan(s["z"]) and np.isnan(s["transient"])               # no contraction recorded


def test_relative_error_of_h1_cells_only_with_the_pool_oracle(tmp_path):
    c = np.full(T + 1, 3.0)
    paths = [_lsa_run(tmp_path, "fedavg", 0, c, H=1, oracle="exact", predictions={"fedlsa_bias_sq": 2.0}),
             _lsa_run(tmp_path, "fedavg", 0, c, H=1, oracle="pool",
                      predictions={"fedlsa_bias_sq": 2.0, "fedlsa_plateau_pool": 2.0})]
    table = lsa.summary(lsa.collect(paths), tail=0.1).set_index("oracle")
    assert np.isnan(table.loc["exact", "rel_error"])
    assert table.loc["pool", "rel_error"] == pytest.approx(0.5)
    # H = 2, exact oracle, a prediction below 1; two identical seeds (se = 0: no z); SCAFFLSA ends at 0
    more = [_lsa_run(tmp_path / "h2", "fedavg", s, c, H=2, predictions={"fedlsa_bias_sq": 0.5}) for s in (0, 1)]
    more.append(_lsa_run(tmp_path / "h2", "scafflsa", 0, np.r_[np.ones(T), 0.0], H=2))
    row = lsa.summary(lsa.collect(more), tail=0.1).iloc[0]
    assert row["rel_error"] == pytest.approx(abs(3.0 - 0.5) / 0.5) and row["plateau_ratio"] == pytest.approx(6.0)
    assert row["fedlsa_plateau_se"] == 0.0 and np.isnan(row["z"])
    assert row["scafflsa_last"] == 0.0 and row["scafflsa_factor"] == np.inf
    assert row["fedlsa_window_ratio"] == 1.0 and np.isnan(row["scafflsa_window_ratio"])
    for col in ("batch_size", "fedlsa_window_ratio", "scafflsa_window_ratio", "predicted_bias_sq_pool",
                "predicted_variance", "transient", "scafflsa_plateau"):
        assert col in row.index, col
    empty = lsa.summary([], tail=0.1)
    assert len(empty) == 0 and "fedlsa_plateau" in empty.columns


# ---- the tables for reading --------------------------------------------------------------------
def _row(**kw):
    base = {"oracle": "exact", "setting": "heterogeneous", "N": 2, "eta": 0.05, "H": 4, "batch_size": 3,
                "predicted_bias_sq": 2.0, "predicted_plateau": 2.5, "fedlsa_plateau": 2.4, "rel_error": 0.04,
                "scafflsa_last": 1e-3, "scafflsa_factor": 2400.0, "rounds": 40, "fedlsa_seeds": 5,
                "predicted_bias_sq_pool": 1.5, "predicted_variance": 1.0, "fedlsa_plateau_se": 0.01234,
                "z": -8.1, "scafflsa_plateau": 0.5, "scafflsa_plateau_se": np.nan}
    return base | kw


def test_display_marks_the_h1_cells_and_formats_the_keys():
    t = pd.DataFrame([_row(), _row(H=1, rel_error=np.nan, scafflsa_factor=7.0),
                      _row(oracle="pool", H=1, rel_error=0.3, eta=2.0, setting="homogeneous")])
    d = lsa.display(t)
    assert list(d["eta"]) == ["0.05", "0.05", "2"] and list(d["N"]) == ["2"] * 3
    assert list(d["oracle"]) == ["exact", "exact", "pool"] and d["setting"].iloc[2] == "homogeneous"
    assert lsa.display(pd.DataFrame([_row(eta=1e-5)]))["eta"].tolist() == ["1e-05"]
    assert list(d["H"]) == ["4", "1", "1"] and list(d["rounds"]) == ["40"] * 3 and list(d["seeds"]) == ["5"] * 3
    assert d["rel. error"].tolist() == [0.04, "n/a (H = 1: bias 0)", 0.3]
    assert d["SCAFFLSA factor"].tolist() == [2400.0, "n/a (H = 1)", "n/a (H = 1)"]
    assert d["predicted plateau"].tolist() == [2.5, 2.5, 2.5]
    assert d["FedLSA plateau"].tolist() == [2.4] * 3 and d["SCAFFLSA, last round"].tolist() == [1e-3] * 3
    assert d["predicted norm(bias)^2"].tolist() == [2.0] * 3
    old = lsa.display(pd.DataFrame([_row()]).drop(columns="predicted_plateau"))   # an older table
    assert old["predicted plateau"].tolist() == [2.0]


def test_display_pool_shows_plus_minus_the_standard_error():
    d = lsa.display_pool(pd.DataFrame([_row(oracle="pool")]))
    r = d.iloc[0]
    assert r["FedLSA plateau ± se"] == "2.4 ± 0.012"
    assert r["SCAFFLSA plateau ± se"] == "0.5"                         # no standard error
    assert (r["B"], r["N"], r["H"], r["rounds"], r["seeds"]) == ("3", "2", "4", "40", "5")
    assert r["setting"] == "heterogeneous"
    assert (r["pred. bias^2"], r["pred. variance"], r["pred. plateau"], r["z"]) == (1.5, 1.0, 2.5, -8.1)


# ---- the figure --------------------------------------------------------------------------------
def _draw(runs, setting):
    captured = {}
    mp = pytest.MonkeyPatch()
    mp.setattr(lsa, "save_figure", lambda fig, out: captured.setdefault("fig", fig))
    try:
        lsa.draw(runs, setting, "unused.pdf")
    finally:
        mp.undo()
    plt.close(captured["fig"])
    return captured["fig"]


def test_figure_panels_curves_and_predicted_plateaus(tmp_path):
    n = 61
    t = np.arange(n)
    paths = []
    # exact oracle, (N, eta) = (2, 0.5): H = 1 (no bias) and H = 4; (3, 0.1): H = 4; pool: (2, 0.5) H = 4
    curves = {}
    for (oracle, N, eta, H), P in {("exact", 2, 0.5, 1): 0.0, ("exact", 2, 0.5, 4): 0.3,
                                   ("exact", 3, 0.1, 4): 0.2, ("pool", 2, 0.5, 4): 0.6}.items():
        for method, seeds in (("fedavg", (1.0, 3.0)), ("scafflsa", (2.0,))):
            for s, c in enumerate(seeds):
                v = (P if method == "fedavg" else 0.0) + c * 0.9 ** t
                v[-1] = 0.0 if method == "scafflsa" else v[-1]             # a round-off zero
                curves.setdefault((oracle, N, eta, H, method), []).append(v)
                pred = {"fedlsa_bias_sq": P, "fedlsa_plateau_pool": P}
                paths.append(_lsa_run(tmp_path, method, s, v, oracle=oracle, N=N, eta=eta, H=H, predictions=pred))
    paths.append(_lsa_run(tmp_path, "fedavg", 0, np.ones(n), setting="homogeneous"))
    runs = lsa.collect(paths)
    fig = _draw(runs, "heterogeneous")
    axes = np.array(fig.axes[:4]).reshape(2, 2)
    colors = {1: to_rgba(plt.cm.viridis(0.0)), 4: to_rgba(plt.cm.viridis(0.9))}
    for i, oracle in enumerate(("exact", "pool")):
        for j, (N, eta) in enumerate(((2, 0.5), (3, 0.1))):
            ax = axes[i, j]
            assert ax.get_title() == f"heterogeneous agents, N = {N}, $\\eta$ = {eta:g}, oracle: {oracle}"
            assert ax.get_yscale() == "log" and ax.get_xscale() == "symlog" and ax.get_xlim()[0] == 0
            assert ax.xaxis.get_transform().linthresh == 1          # linear between rounds 0 and 1
            assert ax.get_xlabel() == "round $t$" and ax.get_ylabel() == r"$E\|\theta_t - \theta^*\|^2$"
            curves_here = [ln for ln in ax.get_lines() if ln.get_linestyle() in ("-", "--")]
            preds = [ln for ln in ax.get_lines() if ln.get_linestyle() == ":"]
            want = [(H, m) for H in (1, 4) for m in ("fedavg", "scafflsa") if (oracle, N, eta, H, m) in curves]
            assert len(curves_here) == len(want) == len(ax.collections)
            for line, band, (H, m) in zip(curves_here, ax.collections, want):
                wide = np.maximum(np.array(curves[(oracle, N, eta, H, m)]), 1e-20)
                np.testing.assert_array_equal(line.get_xdata(), t)       # 61 rounds: all drawn
                np.testing.assert_allclose(line.get_ydata(), wide.mean(axis=0), rtol=1e-12)
                assert line.get_linestyle() == ("-" if m == "fedavg" else "--")
                assert to_rgba(line.get_color()) == pytest.approx(colors[H])
                assert to_rgba(band.get_facecolor()[0])[:3] == pytest.approx(colors[H][:3])   # band: same H colour
                verts = band.get_paths()[0].vertices
                for r in (0, 30, n - 1):
                    ys = verts[np.isclose(verts[:, 0], r), 1]
                    assert ys.min() == pytest.approx(wide.min(axis=0)[r], abs=0) and \
                        ys.max() == pytest.approx(wide.max(axis=0)[r], abs=0)
            # the predicted plateau of each H with a bias (none for H = 1, where it is 0)
            levels = sorted(ln.get_ydata()[0] for ln in preds)
            expected = sorted({("exact", 2, 0.5): [0.3], ("exact", 3, 0.1): [0.2],
                               ("pool", 2, 0.5): [0.6], ("pool", 3, 0.1): []}[(oracle, N, eta)])
            assert levels == pytest.approx(expected)
    legends = [a for a in axes[0, 0].get_children() if isinstance(a, Legend)]
    texts = sorted([tx.get_text() for tx in lg.get_texts()] for lg in legends)
    assert texts == [["FedLSA", "SCAFFLSA", "predicted FedLSA plateau"], ["H = 1", "H = 4"]]
    title = fig._suptitle.get_text()
    assert "heterogeneous agents: mean over up to 2 seeds" in title and "oracle: exact, pool" in title
    with pytest.raises(ValueError, match="no FedLSA/SCAFFLSA run in setting 'mixed'"):
        lsa.draw(runs, "mixed", tmp_path / "x.pdf")


def test_no_predicted_line_at_or_below_the_floor(tmp_path):
    paths = [_lsa_run(tmp_path, "fedavg", 0, np.ones(5), H=4, predictions={"fedlsa_bias_sq": lsa.FLOOR}),
             _lsa_run(tmp_path, "fedavg", 0, np.ones(5), H=2, predictions={"fedlsa_bias_sq": 2 * lsa.FLOOR})]
    ax = _draw(lsa.collect(paths), "heterogeneous").axes[0]
    levels = [ln.get_ydata()[0] for ln in ax.get_lines() if ln.get_linestyle() == ":"]
    assert levels == [2 * lsa.FLOOR]


def test_long_curves_are_drawn_at_fewer_rounds():
    assert list(lsa._plotted(1)) == [0] and list(lsa._plotted(30)) == list(range(30))
    n = 3000
    p = lsa._plotted(n)
    assert list(p[:50]) == list(range(50)) and p[-1] == n - 1 and np.all(np.diff(p) > 0)
    assert len(p) < 50 + 400 + 1
    # geometric spacing: consecutive rounds beyond 50 differ by at most a factor (n - 1)^(1/399)
    r = (n - 1) ** (1 / 399)
    late = p[p >= 50]
    assert np.all(late[1:] <= np.ceil(late[:-1] * r) + 1)
    # every geometric point int((n - 1)^(k / 399)) is drawn
    geo = {int(np.floor((n - 1) ** (k / 399) + 1e-9)) for k in range(400)}
    assert geo <= set(p.tolist()) | {g + 1 for g in p.tolist()} | {g - 1 for g in p.tolist()}


def test_lsa_study_checks_the_figures_and_settings_before_writing(tmp_path):
    path = _lsa_run(tmp_path, "fedavg", 0, np.ones(5), predictions={"fedlsa_bias_sq": 1.0})
    out = tmp_path / "out" / "t.csv"
    with pytest.raises(ValueError, match="2 settings but 1 figures"):
        lsa.lsa_study({"settings": ["heterogeneous", "homogeneous"], "tail": 0.1}, out, ["a.pdf"], [path])
    with pytest.raises(io.RunTableError, match="no FedLSA/SCAFFLSA run in setting 'homogeneous' among the 1 "
                                               "run table"):
        lsa.lsa_study({"settings": ["homogeneous"], "tail": 0.1}, out, [tmp_path / "a.pdf"], [path])
    assert not out.exists()
    table = lsa.lsa_study({"settings": ["heterogeneous"], "tail": 0.1}, out, [tmp_path / "f.pdf"], [path])
    assert len(table) == 1 and io.read_table(out)["fedlsa_plateau"].tolist() == [1.0]
    md = out.with_suffix(".md").read_text()
    assert "FedLSA plateau" in md and (tmp_path / "f.pdf").is_file() and (tmp_path / "f.png").is_file()


def test_a_cell_with_replicas_pools_every_replicas_window_mean(tmp_path):
    """Two seeds of 3 replicas: plateau = mean of the 6 window means, se = their sd / sqrt(6),
    the transient and the drift at the replicas' window (round 20 of 40); the one-chain cell of
    the same setting stays a row of its own."""
    t = np.arange(T + 1)
    curves = [1.0 + 0.5 ** t + 0.001 * t, 1.5 + 0.5 ** t + 0.001 * t]
    sq = [[1.0, 2.0, 3.0], [2.0, 3.0, 4.5]]
    pred = {"fedlsa_bias_sq": 0.5, "fedlsa_round_contraction": 0.5}
    paths = []
    for seed in (0, 1):
        path = tmp_path / "rep" / f"fedavg_seed{seed}.csv"
        path.parent.mkdir(exist_ok=True)
        write_run(path, {"excess_risk": curves[seed]},
                  {"seed": seed, "replicas": 3, "dataset": {"problem": "lsa", "params": {
                      "setting": "homogeneous", "n_agents": 2, "oracle": "exact"}},
                   "algorithm": {"name": "fedavg", "K": 4, "batch_size": 1, "participation": None},
                   "step": {"rule": "fixed", "alpha": 0.5}},
                  predictions=pred, replicas={"count": 3, "window_start": 20, "err_mean": None,
                                              "columns": [], "sq_dist_mean": sq[seed]})
        paths.append(path)
    paths.append(_lsa_run(tmp_path, "fedavg", 0, curves[0], setting="homogeneous", predictions=pred))
    table = lsa.summary(lsa.collect(paths), tail=0.1)
    assert list(table["replicas"]) == [0, 3]
    plain, rep = table.iloc[0], table.iloc[1]
    x = np.concatenate(sq)
    assert rep["fedlsa_plateau"] == pytest.approx(x.mean(), rel=1e-12)
    assert rep["fedlsa_plateau_se"] == pytest.approx(x.std(ddof=1) / np.sqrt(6), rel=1e-12)
    assert rep["transient"] == pytest.approx(2.25 * 0.5 ** 20, rel=1e-12)      # initial: mean of 2 and 2.5
    mean = (curves[0] + curves[1]) / 2
    w = mean[20:]                                                               # rounds 20..40: 21 rounds
    assert rep["fedlsa_drift"] == pytest.approx(w[-10:].mean() - w[:10].mean(), rel=1e-12)
    # the one-chain cell: its own tail window (4 rounds from 37), one seed, no se
    assert plain["fedlsa_plateau"] == pytest.approx(curves[0][-4:].mean(), rel=1e-12)
    assert plain["transient"] == pytest.approx(2.0 * 0.5 ** 37, rel=1e-12)
    assert plain["fedlsa_drift"] == pytest.approx(curves[0][-2:].mean() - curves[0][-4:-2].mean(), rel=1e-12)


def test_a_replica_sample_of_the_wrong_length_is_refused_naming_the_key(tmp_path):
    path = tmp_path / "bad.csv"
    write_run(path, {"excess_risk": np.ones(5)},
              {"seed": 0, "replicas": 3, "dataset": {"problem": "lsa", "params": {"setting": "homogeneous", "n_agents": 2}},
               "algorithm": {"name": "fedavg", "K": 4, "batch_size": 1, "participation": None},
               "step": {"rule": "fixed", "alpha": 0.5}},
              replicas={"count": 3, "window_start": 2, "err_mean": None, "columns": [], "sq_dist_mean": [1.0, 2.0]})
    with pytest.raises(io.RunTableError, match="replicas.sq_dist_mean"):
        lsa.collect([path])

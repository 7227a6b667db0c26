"""The sweep's table and figure (rfl/reporting/sweep.py), the bias-against-eta figure
(rfl/reporting/bias_sweep.py) and the curves of a swept experiment (rfl/reporting/figures.py),
read back and compared with numbers known from how the run tables were built here.

Sweep runs: RFedProj-K=2 over server_step x alpha and RFedAGS-K=1 over alpha, three seeds,
written in an order unlike any sort. The final value of setting i, seed s is b_i * M[s] with M
= (1, 8, 2): the median over seeds is the seed-2 value 2 b_i (mean 11/3 b_i, first and last
seed b_i and 2 b_i, min b_i, max 8 b_i: each other statistic gives another number). One seed
of one setting diverges (final +inf): its median is then 8 b_i. Earlier rounds hold other
values, so a read of a row other than the last is seen too."""

from __future__ import annotations

import math
import statistics

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_rgba

from rfl import io
from rfl.reporting import bias_sweep, figures
from rfl.reporting import sweep as sweep_report
from rfl.testing.run_files import write_run

SEEDS = (0, 1, 2)
M = (1.0, 8.0, 2.0)                      # seed multipliers of the final value
ROUNDS = 4
SHAPE = np.array([40.0, 20.0, 9.0, 3.0, 1.0])      # a run's excess risk / its final value, per round
#: (method, K, setting) in the order the runs are written; settings as (name, value) pairs
SETTINGS = ([("rfedproj", 2, (("server_step", ss), ("alpha", a))) for a in (0.03, 0.3)
             for ss in (1.5, 0.5, 1.0)]
            + [("rfedags", 1, (("alpha", a),)) for a in (0.3, 0.03)])
#: b_i of each setting (distinct; the last RFedAGS setting reaches 0 exactly: the log floor)
BASE = {s: b for s, b in zip(SETTINGS, (0.011, 0.023, 0.037, 0.041, 0.053, 0.067, 0.079, 0.0))}
COST = {s: 5.0 + i for i, s in enumerate(SETTINGS)}    # final cost = COST_i * M[s] + 1
DIVERGED = (SETTINGS[4], 0)              # (setting, seed): diverges at its last round


def _final(setting, seed, metric):
    if (setting, seed) == DIVERGED:
        return math.inf
    return BASE[setting] * M[seed] if metric == "excess_risk" else COST[setting] * M[seed] + 1


def _median(setting, metric):
    return statistics.median(_final(setting, s, metric) for s in SEEDS)


LABEL = {"rfedproj": "RFedProj", "rfedags": "RFedAGS"}


def _label(method, K, setting):
    return f"{LABEL[method]}-K={K}" + "".join(f", {k}={v:g}" for k, v in setting)


def _write_sweep(root):
    paths = []
    for setting in SETTINGS:
        name, K, sw = setting
        for seed in SEEDS:
            er = BASE[setting] * M[seed] * SHAPE
            cost = COST[setting] * M[seed] * SHAPE + 1
            status = np.array(["ok"] * (ROUNDS + 1), dtype=object)
            if (setting, seed) == DIVERGED:
                er, cost = er.copy(), cost.copy()
                er[-1] = cost[-1] = np.nan
                status[-1] = "diverged"
            tag = "_".join(f"{k}{v:g}" for k, v in sw)
            path = root / f"{name}_K{K}_{tag}_seed{seed}.csv"
            write_run(path, {"excess_risk": er, "cost": cost, "status": status},
                      {"experiment": "sw", "seed": seed, "run_id": path.stem,
                       "algorithm": {"name": name, "K": K, "participation": None},
                       "sweep": [list(kv) for kv in sw]})
            paths.append(str(path))
    return paths


@pytest.fixture
def captured(monkeypatch):
    """The figures drawn, kept open instead of written (their files are tests/test_sweeps.py's)."""
    figs = []
    for mod in (figures, sweep_report, bias_sweep):
        monkeypatch.setattr(mod, "save_figure", lambda fig, out_pdf: figs.append(fig))
    yield figs
    plt.close("all")


# ---- the sweep table ---------------------------------------------------------------------------------
def test_the_sweep_table_is_the_median_final_value_of_each_setting(tmp_path, captured):
    paths = _write_sweep(tmp_path)
    spec = {"title": "a sweep", "metrics": ["excess_risk", "cost"]}
    table = sweep_report.write_sweep(spec, tmp_path / "f.pdf", tmp_path / "s.csv", paths)
    assert set(table.columns) == {"method", "server_step", "alpha", "excess_risk", "cost", "seeds", "diverged"}
    # legend order: RFedAGS (plot order 0) before RFedProj (3); each method's settings in run order
    order = SETTINGS[6:] + SETTINGS[:6]
    assert len(table) == len(order)
    for row, setting in zip(table.to_dict("records"), order):
        name, K, sw = setting
        assert row["method"] == f"{LABEL[name]}-K={K}"
        values = dict(sw)
        for col in ("server_step", "alpha"):
            if col in values:
                assert row[col] == values[col], (setting, col)
            else:
                assert row[col] is None or (isinstance(row[col], float) and math.isnan(row[col]))
        for metric in ("excess_risk", "cost"):
            assert row[metric] == pytest.approx(_median(setting, metric), rel=1e-12), (setting, metric)
        assert row["seeds"] == 3
        assert row["diverged"] == (1 if setting == DIVERGED[0] else 0)
    # the CSV written is that table
    csv = pd.read_csv(tmp_path / "s.csv")
    assert list(csv.columns) == list(table.columns)
    np.testing.assert_allclose(csv["excess_risk"], table["excess_risk"], rtol=1e-12)
    np.testing.assert_allclose(csv["cost"], table["cost"], rtol=1e-12)
    np.testing.assert_array_equal(csv["alpha"], table["alpha"])


def test_the_sweep_markdown_shows_each_value_under_its_column(tmp_path, captured):
    paths = _write_sweep(tmp_path)
    spec = {"title": "a sweep", "metrics": ["excess_risk", "cost"]}
    table = sweep_report.write_sweep(spec, tmp_path / "f.pdf", tmp_path / "s.csv", paths)
    lines = (tmp_path / "s.md").read_text().splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    assert head == list(table.columns)
    rows = [dict(zip(head, (c.strip() for c in ln.strip("|").split("|")))) for ln in lines[2:]]
    order = SETTINGS[6:] + SETTINGS[:6]
    assert len(rows) == len(order)
    for row, setting in zip(rows, order):
        values = dict(setting[2])
        assert row["server_step"] == (f"{values['server_step']:g}" if "server_step" in values else "-")
        assert row["alpha"] == f"{values['alpha']:g}"
        med = _median(setting, "excess_risk")
        assert row["excess_risk"] == f"{med:.4g}"
        assert row["cost"] == f"{_median(setting, 'cost'):.4g}"
        assert (row["seeds"], row["diverged"]) == ("3", "1" if setting == DIVERGED[0] else "0")


# ---- the sweep figure --------------------------------------------------------------------------------
def _panel_lines(ax):
    return {ln.get_label(): (np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float))
            for ln in ax.get_lines()}


def test_the_sweep_figure_draws_the_medians_against_each_swept_value(tmp_path, captured):
    paths = _write_sweep(tmp_path)
    spec = {"title": "a sweep", "metrics": ["excess_risk", "cost"]}
    sweep_report.sweep_figure(spec, paths, tmp_path / "f.pdf")
    (fig,) = captured
    axes = np.array(fig.axes).reshape(2, 2)     # rows: metrics; columns: the swept parameters
    names = [axes[0][c].get_xlabel() for c in range(2)]
    assert sorted(names) == ["alpha", "server_step"]
    for r, metric in enumerate(("excess_risk", "cost")):
        for c, name in enumerate(names):
            ax = axes[r][c]
            assert ax.get_xlabel() == name
            assert ax.get_ylabel() == f"final {figures.metric_label(metric)}"
            assert ax.get_yscale() == ("log" if metric == "excess_risk" else "linear")
            # alpha spans a factor 10: a log axis; server_step spans a factor 3: linear
            assert ax.get_xscale() == ("log" if name == "alpha" else "linear")
            # expected lines: one per method and values of the other swept parameters
            want = {}
            for setting in SETTINGS:
                sw = dict(setting[2])
                if name not in sw:
                    continue
                others = tuple((k, v) for k, v in setting[2] if k != name)
                want.setdefault(_label(setting[0], setting[1], others), []).append(
                    (sw[name], _median(setting, metric)))
            got = _panel_lines(ax)
            assert set(got) == set(want), (metric, name)
            for label, pts in want.items():
                pts = sorted(pts)
                xs = [x for x, _ in pts]
                ys = [max(y, figures.FLOOR) if metric == "excess_risk" else y for _, y in pts]
                np.testing.assert_allclose(got[label][0], xs, err_msg=label)
                np.testing.assert_allclose(got[label][1], ys, rtol=1e-12, err_msg=label)
            assert [t.get_text() for t in ax.get_legend().get_texts()] == [ln.get_label() for ln in ax.get_lines()]
    assert "median over 3 seeds" in fig._suptitle.get_text() and fig._suptitle.get_text().startswith("a sweep\n")


def test_a_sweep_of_words_is_drawn_in_run_order_with_the_words_as_ticks(tmp_path, captured):
    """Values that are not numbers stand at 0, 1, ... in the order they first appear in the runs,
    each point at the position of its own value."""
    finals = {("b", 1): 0.5, ("a", 1): 0.25, ("c", 1): 0.125, ("c", 2): 4.0, ("a", 2): 2.0}
    paths = []
    for (word, K), v in finals.items():
        path = tmp_path / f"K{K}_{word}.csv"
        write_run(path, {"excess_risk": np.array([9.0, v])},
                  {"seed": 0, "algorithm": {"name": "rfedproj", "K": K}, "sweep": [["variant", word]]})
        paths.append(str(path))
    sweep_report.sweep_figure({"title": "w"}, paths, tmp_path / "w.pdf")
    (fig,) = captured
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["b", "a", "c"]
    np.testing.assert_array_equal(ax.get_xticks(), [0, 1, 2])
    got = _panel_lines(ax)
    np.testing.assert_array_equal(got["RFedProj-K=1"][0], [0, 1, 2])
    np.testing.assert_allclose(got["RFedProj-K=1"][1], [0.5, 0.25, 0.125])
    np.testing.assert_array_equal(got["RFedProj-K=2"][0], [1, 2])       # a, c
    np.testing.assert_allclose(got["RFedProj-K=2"][1], [2.0, 4.0])
    assert ax.get_xscale() == "linear"


# ---- the curves of a swept experiment (figures.py) ---------------------------------------------------
def test_each_curve_of_a_swept_experiment_is_its_own_settings_median(tmp_path, captured):
    """experiment_figure on the sweep: one curve per (method, setting), labelled with the setting,
    in legend order, each the per-round median over that setting's seeds only (the diverged seed
    left out from its diverged row), a colour of its own and its algorithm's line style."""
    paths = _write_sweep(tmp_path)
    figures.experiment_figure({"title": "e", "metrics": ["cost"]}, paths, tmp_path / "e.pdf")
    (fig,) = captured
    ax = fig.axes[0]
    curves = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_") and ln.get_marker() != "x"]
    order = SETTINGS[6:] + SETTINGS[:6]
    assert [ln.get_label() for ln in curves] == [_label(*s) for s in order]
    for ln, setting in zip(curves, order):
        wide = np.array([COST[setting] * M[s] * SHAPE + 1 for s in SEEDS])
        if setting == DIVERGED[0]:
            wide[DIVERGED[1], -1] = np.nan
        np.testing.assert_array_equal(ln.get_xdata(), np.arange(ROUNDS + 1))
        np.testing.assert_allclose(ln.get_ydata(), np.nanmedian(wide, axis=0), rtol=1e-12, err_msg=ln.get_label())
        assert ln.get_linestyle() == {"rfedproj": "-.", "rfedags": "-"}[setting[0]]
    assert len({tuple(ln.get_color()) if not isinstance(ln.get_color(), str) else ln.get_color()
                for ln in curves}) == len(curves)
    # the diverged seed is marked at its last finite row, in its setting's colour
    (mark,) = [ln for ln in ax.get_lines() if ln.get_marker() == "x"]
    i = order.index(DIVERGED[0])
    assert (mark.get_xdata()[0], mark.get_ydata()[0]) == (ROUNDS - 1, COST[DIVERGED[0]] * M[0] * SHAPE[-2] + 1)
    assert mark.get_color() == curves[i].get_color()


# ---- the bias-against-eta figure ---------------------------------------------------------------------
ETAS = (0.2, 0.05, 0.1)                  # written in this order
#: experiment names in an order unlike the etas' (sorting by name is not sorting by eta)
EXPERIMENT = {0.2: "b1", 0.05: "b2", 0.1: "b0"}
BIAS_ROUNDS = 10                         # rows 0..10; the last half: ceil(0.5 * 11) = 6 rows
#: per (method, seeds): stationary mean of (err_1, err_2) at eta = c * eta * (u, v); seed offsets
BIAS = {"fedavg": ((1.0, 0.5), (0.003, -0.001)), "scaffold": ((0.2, -0.1), (0.0005, 0.0015, -0.002))}


def _err(method, eta, seed):
    """(rows, 4) err_1..err_4 of one run: a transient of 50 in the first half (the window must
    leave it out), then mean + offset with a +-w wiggle (drift inside the window)."""
    (u, v), offsets = BIAS[method]
    n = BIAS_ROUNDS + 1
    e = np.zeros((n, 4))
    e[:, 0] = u * eta + offsets[seed]
    e[:, 1] = v * eta - 0.5 * offsets[seed]
    e[:, 2] = 0.01 * eta * (seed + 1)
    e[: n - 6] += 50.0
    e[-6:, 0] += 0.001 * np.array([1, -1, 1, -1, 1, -1]) * (seed + 1)
    if method == "scaffold" and eta == 0.05:
        e[:] = 0.0                              # no bias at all: nothing to draw on a log axis
    return e


def _bias_runs(root):
    paths = []
    for eta in ETAS:
        exp = EXPERIMENT[eta]
        pred = {"heterogeneity": [2 * eta, 0.0], "noise": [0.0, eta], "total": [2 * eta, eta]}
        for method, (_, offsets) in BIAS.items():
            for seed in range(len(offsets)):
                e = _err(method, eta, seed)
                path = root / exp / f"{method}_seed{seed}.csv"
                path.parent.mkdir(parents=True, exist_ok=True)
                write_run(path, {f"err_{k + 1}": e[:, k] for k in range(4)} | {"dist_to_opt": np.linalg.norm(e, axis=1)},
                          {"experiment": exp, "seed": seed, "algorithm": {"name": method, "K": 3},
                           "step": {"rule": "fixed", "alpha": eta}, "dataset": {"problem": "logistic"}},
                          **({"predictions": {"fedavg_bias": pred}} if method == "fedavg" else {}))
                paths.append(str(path))
    return paths


def _oracle(method, eta):
    """(bias, se) by a plain loop: the mean over seeds of each seed's mean of the last 6 rows;
    its norm; per coordinate the standard error over seeds and half the difference of the
    window's halves (mean over seeds), in quadrature, and the norm of that."""
    means, drifts = [], []
    for seed in range(len(BIAS[method][1])):
        tail = _err(method, eta, seed)[-6:]
        means.append(tail.mean(axis=0))
        drifts.append((tail[3:].mean(axis=0) - tail[:3].mean(axis=0)) / 2)
    means = np.array(means)
    se = means.std(axis=0, ddof=1) / math.sqrt(len(means))
    return np.linalg.norm(means.mean(axis=0)), np.linalg.norm(np.hypot(se, np.abs(np.mean(drifts, axis=0))))


def _errorbars(ax):
    out = {}
    for c in ax.containers:
        line, _, (bars,) = c.lines
        half = np.array([(s[1][1] - s[0][1]) / 2 for s in bars.get_segments()])
        mid = np.array([(s[1][1] + s[0][1]) / 2 for s in bars.get_segments()])
        out[c.get_label()] = (np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float), half, mid)
    return out


def test_the_bias_points_are_the_measured_ones(tmp_path, captured):
    paths = _bias_runs(tmp_path)
    spec = {"title": "bias", "experiment": "b0", "sweep": [EXPERIMENT[eta] for eta in ETAS],
            "metrics": ["dist_to_opt"]}
    points = bias_sweep.sweep_figure(spec, paths, tmp_path / "b.pdf")
    (fig,) = captured
    ax = fig.axes[0]
    bars = _errorbars(ax)
    assert set(bars) == {"FedAvg-K=3", "Scaffold-K=3"}
    for method, label in (("fedavg", "FedAvg-K=3"), ("scaffold", "Scaffold-K=3")):
        etas = sorted(e for e in ETAS if not (method == "scaffold" and e == 0.05))   # a zero bias is not drawn
        x, y, half, mid = bars[label]
        want = [_oracle(method, e) for e in etas]
        np.testing.assert_allclose(x, etas, err_msg=label)
        np.testing.assert_allclose(y, [b for b, _ in want], rtol=1e-10, err_msg=label)
        np.testing.assert_allclose(half, [s for _, s in want], rtol=1e-10, err_msg=label)
        np.testing.assert_allclose(mid, y, rtol=1e-10)          # the bar is centred on the point
    # the returned rows: one per (experiment, method), sorted by method then eta, eta from the spec
    assert list(points["method"]) == ["FedAvg-K=3"] * 3 + ["Scaffold-K=3"] * 3
    assert list(points["eta"]) == sorted(ETAS) * 2
    assert list(points["experiment"]) == [EXPERIMENT[e] for e in sorted(ETAS)] * 2
    assert list(points["seeds"]) == [2] * 3 + [3] * 3 and set(points["rounds"]) == {BIAS_ROUNDS}
    for row in points.itertuples():
        method = "fedavg" if row.method.startswith("FedAvg") else "scaffold"
        b, s = _oracle(method, row.eta)
        assert row.bias == pytest.approx(b, rel=1e-10, abs=1e-15) and row.se == pytest.approx(s, rel=1e-10, abs=1e-15)
        # the predictions come from the FedAvg run of the same experiment, for every method's row
        assert (row.heterogeneity, row.noise, row.total) == pytest.approx((2 * row.eta, row.eta, math.hypot(2, 1) * row.eta))
    pred = {ln.get_label(): ln for ln in ax.get_lines() if ln.get_label().startswith("predicted")}
    np.testing.assert_allclose(pred["predicted E1 + E2"].get_xdata(), sorted(ETAS))
    np.testing.assert_allclose(pred["predicted E1 + E2"].get_ydata(), [math.hypot(2, 1) * e for e in sorted(ETAS)])
    np.testing.assert_allclose(pred["predicted heterogeneity part (E1)"].get_ydata(), [2 * e for e in sorted(ETAS)])
    title = fig._suptitle.get_text()
    assert "3 seed(s)" in title and "right: b0," in title
    # each method has one colour in both panels (its error bars, its curve on the right)
    curves = {ln.get_label(): ln.get_color() for ln in fig.axes[1].get_lines() if not ln.get_label().startswith("_")}
    for c in ax.containers:
        assert to_rgba(c.lines[0].get_color()) == to_rgba(curves[c.get_label()]), c.get_label()
    assert to_rgba(curves["FedAvg-K=3"]) != to_rgba(curves["Scaffold-K=3"])


def test_a_bias_figure_without_runs_of_its_sweep_is_refused_naming_it(tmp_path, captured):
    paths = _bias_runs(tmp_path)
    for spec, named in (({"title": "the bias", "experiment": "b0", "sweep": ["nope"]}, "'the bias'"),
                        ({"name": "fig_b", "title": "t", "experiment": "b0", "sweep": ["nope", "gone"]}, "'fig_b'")):
        with pytest.raises(io.RunTableError, match=f"figure {named}: no run of its sweep"):
            bias_sweep.sweep_figure(spec, paths, tmp_path / "x.pdf")
    assert captured == []


def test_the_grouped_runs_carry_their_seed_for_pairing(tmp_path):
    """load_runs groups each setting's runs and tags each table with its run's seed (the claims'
    paired statistics match runs by it)."""
    groups = figures.load_runs(_write_sweep(tmp_path))
    assert len(groups) == len(SETTINGS)
    for key, runs in groups.items():
        assert [t.attrs["seed"] for t in runs] == list(SEEDS), key


def test_methods_are_grouped_in_legend_order(tmp_path):
    """load_runs orders methods by the algorithms' plot order, then K, then every agent before
    a number of agents s before a named scheme, whatever order the runs come in."""
    bern = {"scheme": "bernoulli", "rho": 0.5}
    written = [("rfedavg", 1, None), ("rfedags", 1, bern), ("rfedags", 2, None), ("rfedags", 1, 1),
               ("rfedags", 1, None)]
    paths = []
    for i, (name, K, p) in enumerate(written):
        path = tmp_path / f"r{i}.csv"
        write_run(path, {"excess_risk": np.array([1.0, 0.5])},
                  {"seed": 0, "algorithm": {"name": name, "K": K, "participation": p}})
        paths.append(str(path))
    assert list(figures.load_runs(paths)) == [("rfedags", 1, None), ("rfedags", 1, 1),
                                              ("rfedags", 1, "bernoulli rho=0.5"), ("rfedags", 2, None),
                                              ("rfedavg", 1, None)]


def test_an_experiment_figure_without_metrics_draws_the_excess_risk(tmp_path, captured):
    path = tmp_path / "r.csv"
    write_run(path, {"excess_risk": np.array([1.0, 0.5, 0.25])}, {"seed": 0, "algorithm": {"name": "rfedags", "K": 1}})
    figures.experiment_figure({"title": "d"}, [str(path)], tmp_path / "d.pdf")
    (fig,) = captured
    (ax,) = fig.axes
    assert ax.get_ylabel() == figures.BASE_LABELS["excess_risk"]
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), [1.0, 0.5, 0.25])


def test_a_problem_metric_of_a_sweep_has_the_problem_label(tmp_path, captured):
    from rfl.registry import PROBLEMS

    paths = []
    for v in (0.5, 1.5):
        path = tmp_path / f"r{v}.csv"
        write_run(path, {"excess_risk": np.array([1.0, v]), "subspace_dist": np.array([1.0, v / 2])},
                  {"seed": 0, "algorithm": {"name": "rfedproj", "K": 2}, "sweep": [["server_step", v]],
                   "dataset": {"problem": "multitask"}})
        paths.append(str(path))
    sweep_report.sweep_figure({"title": "m", "metrics": ["subspace_dist"]}, paths, tmp_path / "m.pdf")
    (ax,) = captured[0].axes
    assert ax.get_ylabel() == "final " + PROBLEMS["multitask"].metric_labels["subspace_dist"]
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), [0.25, 0.75])

"""What an experiment's figure shows (rfl/reporting/figures.py), read back from its Axes.

The run tables are made here with known values; the expected curves are computed in the test
with numpy from the same arrays (median / min / max over seeds per round, a seed that
converged early held at its last value, a diverged seed not extended), not by the module.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_rgba

from rfl.registry import ALGORITHMS, PROBLEMS
from rfl.reporting import figures
from rfl.testing.run_files import write_run

T = 5                                   # rounds 0..T
t = np.arange(T + 1, dtype=float)
ER = figures.BASE_LABELS["excess_risk"]


def _run(root, name, seed, K=None, participation=None, *, er, cost, floats, sd, diverge_at=None):
    """One run file; ``diverge_at``: that row is the runner's last "diverged" row (no values)."""
    n = len(er) if diverge_at is None else diverge_at + 1     # a run stops at divergence
    er, cost, floats, sd = (np.asarray(v, float)[:n] for v in (er, cost, floats, sd))
    cols = {"round": np.arange(n), "excess_risk": np.array(er, float), "cost": np.array(cost, float),
            "floats": np.array(floats, float), "subspace_dist": np.array(sd, float),
            "status": np.array(["ok"] * n, dtype=object)}
    if diverge_at is not None:
        for c in ("excess_risk", "cost", "floats", "subspace_dist"):
            cols[c][diverge_at] = np.nan
        cols["status"][diverge_at] = "diverged"
    alg = {"name": name, "participation": participation, **({"K": K} if K is not None else {})}
    tag = f"{name}_K{K}_p{participation if not isinstance(participation, dict) else 'b'}_seed{seed}"
    path = root / f"{tag}.csv"
    write_run(path, cols, {"algorithm": alg, "dataset": {"problem": "multitask"}, "seed": seed})
    return path


def _stats(seeds):
    """(median, min, max) per round over the seeds, numpy only: a seed shorter than the longest
    is held at its last value unless it diverged (then NaN from its diverged row on)."""
    n = max(len(v) for v, _ in seeds)
    wide = np.full((len(seeds), n), np.nan)
    for i, (v, diverged) in enumerate(seeds):
        v = np.asarray(v, float)
        wide[i, :len(v)] = v
        if not diverged:
            wide[i, len(v):] = v[-1]
    return np.nanmedian(wide, axis=0), np.nanmin(wide, axis=0), np.nanmax(wide, axis=0)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """Six methods of one experiment on three metrics against rounds and floats; the figure
    the module draws (captured at save_figure, which still writes the files) and the
    inputs per method, in legend order."""
    root = tmp_path_factory.mktemp("fig")
    data = {}                                         # method key -> [(columns, diverged)]
    paths = []

    full = {"er": "excess_risk", "cost": "cost", "floats": "floats", "sd": "subspace_dist"}

    def add(key, seed, diverge_at=None, **cols):
        name, K, p = key
        paths.append(_run(root, name, seed, K, p, diverge_at=diverge_at, **cols))
        trimmed = {full[c]: np.asarray(v, float)[:diverge_at] for c, v in cols.items()}
        shown = p if p is None or isinstance(p, int) else "bernoulli rho=0.5"
        data.setdefault((name, K, shown), []).append((trimmed, diverge_at is not None))

    bern = {"scheme": "bernoulli", "rho": 0.5}
    # written in an order unlike the legend's, to see the ordering
    # (s = 1 before every agent: the two must not tie in the legend order)
    add(("rfedags", 1, 1), 0, er=0.8 ** t, cost=7 + t, floats=3 * t, sd=0.5 * 0.8 ** t)
    add(("rfedags", 1, 1), 1, er=[1.5, 0.0, 0.7, 9, 9, 9], cost=[6.0, 5.0, 4.5, 9, 9, 9],
        floats=[0, 4, 8, 9, 9, 9], sd=[1, 1, 1, 1, 1, 1], diverge_at=3)
    add(("rsd", None, None), 0, er=3.0 * 0.7 ** t, cost=5 - t, floats=0 * t, sd=0.3 + 0 * t)
    add(("rsd", None, None), 1, er=[2.0, 1.0, 0.5], cost=[4.0, 3.0, 2.5], floats=[0, 0, 0],
        sd=[0.2, 0.1, 0.05])                          # converged after round 2: held there
    add(("rfedags", 4, None), 0, er=0.2 ** t, cost=1 + 0.2 ** t, floats=40 * t, sd=0.1 * 0.2 ** t)
    for s, (c, f) in enumerate(((1.0, 10), (2.0, 11), (4.0, 15))):
        er = c * 0.5 ** t
        er[-1] = 0.0                                  # round-off zero: drawn at the log floor
        add(("rfedags", 1, None), s, er=er, cost=c + t, floats=f * t, sd=c * 0.3 ** t)
    add(("rfedags", 1, bern), 0, er=0.9 ** t, cost=2 + 0 * t, floats=5 * t, sd=0.9 ** t)
    add(("rfedags", 2, None), 0, er=0.4 ** t, cost=3 - 0.1 * t, floats=20 * t, sd=0.4 ** t)
    spec = {"title": "Test experiment", "metrics": ["excess_risk", "cost", "subspace_dist"],
            "x": ["round", "floats"]}
    captured = {}
    save = figures.save_figure

    def capture(fig, out):
        captured["fig"] = fig
        save(fig, out)
    mp = pytest.MonkeyPatch()
    mp.setattr(figures, "save_figure", capture)
    try:
        figures.experiment_figure(spec, paths, root / "out.pdf")
    finally:
        mp.undo()
    order = [("rfedags", 1, None), ("rfedags", 1, 1), ("rfedags", 1, "bernoulli rho=0.5"),
             ("rfedags", 2, None), ("rfedags", 4, None), ("rsd", None, None)]
    return {"fig": captured["fig"], "root": root, "paths": paths, "order": order,
            "data": {k: data[k] for k in order}}


LABELS = ["RFedAGS-K=1", "RFedAGS-K=1, s=1", "RFedAGS-K=1, bernoulli rho=0.5", "RFedAGS-K=2",
          "RFedAGS-K=4", "RSD"]


def _curves(ax):
    return [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]


def test_the_figure_files_are_written_and_the_figure_closed(drawn):
    pdf = drawn["root"] / "out.pdf"
    assert pdf.read_bytes()[:4] == b"%PDF"
    assert pdf.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert drawn["fig"].number not in plt.get_fignums()


def test_one_panel_per_metric_and_axis_with_their_labels_and_scales(drawn):
    axes = drawn["fig"].axes
    assert len(axes) == 6
    panels = [(m, x) for m in ("excess_risk", "cost", "subspace_dist") for x in ("round", "floats")]
    for ax, (metric, x) in zip(axes, panels):
        assert ax.get_xlabel() == figures.XLABELS[x]
        want = figures.BASE_LABELS.get(metric) or PROBLEMS["multitask"].metric_labels[metric]
        assert ax.get_ylabel() == want
        assert ax.get_yscale() == ("linear" if metric == "cost" else "log")
        if x == "floats":
            assert ax.get_xscale() == "symlog"
            assert ax.xaxis.get_transform().linthresh == 1e3     # linear below 1000 floats
            assert ax.get_xlim()[0] == 0
        else:
            assert ax.get_xscale() == "linear"
        assert all(g.get_visible() for g in ax.yaxis.get_gridlines())      # a grid on the major ticks
    # subspace_dist's label comes from its problem (multitask), not the base labels
    assert axes[4].get_ylabel() == r"dist$(\mathcal{U}_t, \mathcal{U}^*)$"


def test_legend_lists_the_methods_in_plot_order_on_the_first_panel_only(drawn):
    axes = drawn["fig"].axes
    assert [tx.get_text() for tx in axes[0].get_legend().get_texts()] == LABELS
    assert all(ax.get_legend() is None for ax in axes[1:])
    assert [ln.get_label() for ln in _curves(axes[0])] == LABELS
    # against floats, the centralised RSD (no communication) is left out
    assert [ln.get_label() for ln in _curves(axes[1])] == LABELS[:-1]
    title = drawn["fig"]._suptitle.get_text()
    assert title.startswith("Test experiment\n") and "median over 3 seeds" in title


@pytest.mark.parametrize("panel, metric", [(0, "excess_risk"), (2, "cost"), (4, "subspace_dist")])
def test_each_curve_is_the_median_over_seeds_against_rounds(drawn, panel, metric):
    ax = drawn["fig"].axes[panel]
    log = metric != "cost"
    for line, band, (key, seeds) in zip(_curves(ax), ax.collections, drawn["data"].items()):
        med, low, high = _stats([(cols[metric], div) for cols, div in seeds])
        if log:
            med, low, high = (np.maximum(a, 1e-16) for a in (med, low, high))
        n = len(med)
        np.testing.assert_array_equal(line.get_xdata(), np.arange(n))
        np.testing.assert_allclose(line.get_ydata(), med, rtol=1e-12, err_msg=str(key))
        verts = band.get_paths()[0].vertices
        for r in range(n):
            ys = verts[np.isclose(verts[:, 0], r), 1]
            assert ys.min() == pytest.approx(low[r], abs=0) and ys.max() == pytest.approx(high[r], abs=0), (key, r)
    # spot checks by hand: RFedAGS K=1 is 2 * 0.5^t (middle seed), its last round a zero at the floor
    if metric == "excess_risk":
        first = _curves(ax)[0].get_ydata()
        np.testing.assert_allclose(first[:-1], 2 * 0.5 ** t[:-1])
        assert first[-1] == 1e-16
    if metric == "cost":               # RSD: seed 0 at 5 - t, seed 1 held at 2.5 after round 2
        np.testing.assert_allclose(_curves(ax)[-1].get_ydata()[3:], [(2 + 2.5) / 2, (1 + 2.5) / 2, (0 + 2.5) / 2])


def test_curves_against_floats_use_the_seeds_median_floats(drawn):
    ax = drawn["fig"].axes[1]
    for line, (key, seeds) in zip(_curves(ax), drawn["data"].items()):
        xmed = _stats([(cols["floats"], div) for cols, div in seeds])[0]
        med = np.maximum(_stats([(cols["excess_risk"], div) for cols, div in seeds])[0], 1e-16)
        np.testing.assert_allclose(line.get_xdata(), xmed, err_msg=str(key))
        np.testing.assert_allclose(line.get_ydata(), med, err_msg=str(key))
    # RFedAGS K=1: seeds' floats 10t, 11t, 15t -> 11t (their mean would be 12t)
    np.testing.assert_allclose(_curves(ax)[0].get_xdata(), 11 * t)


def test_a_diverged_seed_is_marked_at_its_last_finite_row(drawn):
    axes = drawn["fig"].axes
    marks = {i: [ln for ln in ax.get_lines() if ln.get_marker() == "x"] for i, ax in enumerate(axes)}
    assert all(len(m) == 1 for m in marks.values())          # one diverged seed, every panel
    # its last ok row: round 2, excess risk 0.7, cost 4.5, floats 8
    for i, (x, y) in {0: (2, 0.7), 1: (8, 0.7), 2: (2, 4.5), 3: (8, 4.5), 4: (2, 1), 5: (8, 1)}.items():
        m = marks[i][0]
        assert (m.get_xdata()[0], m.get_ydata()[0]) == (x, y)
    s2 = to_rgba(plt.cm.tab10(1))                            # the colour of its method (s=1)
    assert to_rgba(marks[0][0].get_color()) == s2
    # the diverged seed is not extended: from round 3 the band is the other seed alone
    line = _curves(axes[2])[1]
    np.testing.assert_allclose(line.get_ydata()[3:], 7 + t[3:])


def test_a_diverged_mark_at_zero_is_drawn_at_the_log_floor(tmp_path):
    er = np.array([1.0, 0.5, 0.0, np.nan])
    path = _run(tmp_path, "rfedags", 0, 1, er=er, cost=[1, 1, 1, 1], floats=[0, 1, 2, 3], sd=[1, 1, 1, 1],
                diverge_at=3)
    captured = {}
    mp = pytest.MonkeyPatch()
    mp.setattr(figures, "save_figure", lambda fig, out: captured.setdefault("fig", fig))
    try:
        figures.experiment_figure({"title": "d"}, [path], tmp_path / "d.pdf")
    finally:
        mp.undo()
    ax, = captured["fig"].axes                # default: excess risk against rounds
    plt.close(captured["fig"])
    assert ax.get_ylabel() == ER and ax.get_xlabel() == figures.XLABELS["round"]
    mark, = [ln for ln in ax.get_lines() if ln.get_marker() == "x"]
    assert (mark.get_xdata()[0], mark.get_ydata()[0]) == (2, 1e-16)
    assert "median over 1 seeds" in captured["fig"]._suptitle.get_text()


def test_colours_and_line_styles(drawn):
    ax = drawn["fig"].axes[0]
    lines = dict(zip(LABELS, _curves(ax)))
    viridis = plt.cm.viridis
    # coloured by K over the three K of RFedAGS: 0, 0.45, 0.9 of viridis
    for label, c in (("RFedAGS-K=1", 0.0), ("RFedAGS-K=2", 0.45), ("RFedAGS-K=4", 0.9)):
        assert to_rgba(lines[label].get_color()) == pytest.approx(to_rgba(viridis(c)))
        assert lines[label].get_linestyle() == ALGORITHMS["rfedags"].style["ls"]
    # methods sharing algorithm and K: one colour and dash pattern per participation
    assert to_rgba(lines["RFedAGS-K=1, s=1"].get_color()) == to_rgba(plt.cm.tab10(1))
    assert lines["RFedAGS-K=1, s=1"].get_linestyle() == "--"
    assert to_rgba(lines["RFedAGS-K=1, bernoulli rho=0.5"].get_color()) == to_rgba(plt.cm.tab10(2))
    assert lines["RFedAGS-K=1, bernoulli rho=0.5"].get_linestyle() == "-."
    assert to_rgba(lines["RSD"].get_color()) == to_rgba("tab:red")
    assert lines["RSD"].get_linestyle() == ":"
    for line, band in zip(_curves(ax), ax.collections):
        assert to_rgba(band.get_facecolor()[0])[:3] == pytest.approx(to_rgba(line.get_color())[:3])


def test_styles_without_shared_methods_and_without_K():
    by_K = ("rfedags", None, None)                 # a method coloured by K that has no K
    styles = figures._styles([("rfedags", 1, 2), ("rfedags", 3, None), by_K, ("rsd", None, None)])
    assert to_rgba(styles[("rfedags", 1, 2)]["color"]) == to_rgba(plt.cm.viridis(0.0))
    assert styles[("rfedags", 1, 2)]["ls"] == "-"   # no sibling: keeps its algorithm's style
    assert to_rgba(styles[("rfedags", 3, None)]["color"]) == pytest.approx(to_rgba(plt.cm.viridis(0.9)))
    assert styles[by_K]["color"] == figures.K_FALLBACK_COLOR
    one = figures._styles([("rfedavg", 5, None)])   # one K: the start of the colour map
    assert to_rgba(one[("rfedavg", 5, None)]["color"]) == to_rgba(plt.cm.viridis(0.0))
    assert one[("rfedavg", 5, None)]["ls"] == "--"
    # five participations of one method: colours cycle from tab10(1), dashes every four
    keys = [("rfedags", 1, None)] + [("rfedags", 1, s) for s in range(1, 6)]
    st = figures._styles(keys)
    assert [st[k]["ls"] for k in keys[1:]] == ["--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), "--"]
    assert [to_rgba(st[k]["color"]) for k in keys[1:]] == [to_rgba(plt.cm.tab10(1 + i)) for i in range(5)]


def test_labels_of_metrics_and_methods():
    assert figures.metric_label("cost") == figures.BASE_LABELS["cost"]
    assert figures.metric_label("dist_true", ["multitask", "hsp"]) == PROBLEMS["hsp"].metric_labels["dist_true"]
    assert figures.metric_label("nope", ["multitask"]) == "nope"
    assert figures.method_label(("rsd", None, None)) == "RSD"
    assert figures.method_label(("rfedavg", 3, 4)) == "RFedAvg-K=3, s=4"
    assert figures.method_label(("rfedavg", None, "bernoulli rho=0.5")) == "RFedAvg, bernoulli rho=0.5"
    assert figures.method_key({"name": "rfedavg", "K": 2, "participation": {"scheme": "bernoulli", "rho": 0.25}}) \
        == ("rfedavg", 2, "bernoulli rho=0.25")
    assert figures.method_key({"name": "rfedavg"}) == ("rfedavg", None, None)
    assert figures.method_key({"name": "rfedavg", "K": 1, "participation": 3}) == ("rfedavg", 1, 3)
    assert figures.algorithm_label("scafflsa") == "SCAFFLSA"


def test_summarise_counts_the_seeds_with_a_value(drawn):
    from rfl import io
    tables = [io.read_run_table(p)[0] for p in drawn["paths"] if "rfedags_K1_p1_" in p.name]
    s = figures.summarise(tables, "cost")
    assert list(s["n"]) == [2, 2, 2, 1, 1, 1]
    np.testing.assert_allclose(s["median"][:3], [(7 + 6) / 2, (8 + 5) / 2, (9 + 4.5) / 2])
    np.testing.assert_allclose(s["low"][:3], [6, 5, 4.5])
    np.testing.assert_allclose(s["high"], 7 + t)

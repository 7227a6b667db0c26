"""Figures of one experiment: metrics against rounds, median over seeds with a min-max band.

Reads only result files: each run's table ``X.csv`` and its metadata ``X.meta.json``
(which says algorithm, K, participation). One panel per metric. A diverged run is drawn
up to the round it diverged, marked with an x.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from rfl import io  # noqa: E402
from rfl.registry import ALGORITHMS, PROBLEMS  # noqa: E402

#: axis labels of the metrics every run table has; a problem adds its own (``metric_labels``)
BASE_LABELS = {"excess_risk": "excess risk $F(x_t) - F(x^*)$", "grad_norm": r"$\|\mathrm{grad}\,F(x_t)\|$",
               "dist_to_opt": r"dist$(x_t, x^*)$", "cost": "cost $F(x_t)$",
               "excess_risk_weighted": r"excess risk $\tilde F(x_t) - \tilde F(\tilde x^*)$ (reweighted)",
               "consensus_error": r"consensus error $(\frac{1}{S}\sum_i d(x_i, \bar x)^2)^{1/2}$",
               "sigma2": r"$\sigma_2(W)$", "sigma2_t": r"$\sigma_2(W)^t$"}
FLOOR = 1e-16   # values below this (round-off) are drawn at the floor of a log axis
LOG_METRICS = {"consensus_error", "excess_risk", "excess_risk_weighted", "grad_norm", "dist_to_opt", "subspace_dist", "rel_error", "test_rmse",
               "test_rmse_refit"}
K_FALLBACK_COLOR = "tab:blue"   # a method coloured by K that has no K


def _algorithm(name: str):
    """The declarations of algorithm ``name``: ``label``, ``style`` ({"color": colour or None
    (= by K), "ls": ...}), ``plot_order`` (legend order), ``federated``."""
    return ALGORITHMS[name]


def _metric_labels(problem: str) -> dict:
    """Axis labels of the metrics problem ``problem`` adds (its ``metric_labels``, and the
    per-agent columns of decentralised runs, ``agent_metric_labels``)."""
    cls = PROBLEMS[problem]
    return {**cls.metric_labels, **getattr(cls, "agent_metric_labels", {})}


def algorithm_label(name: str, problems=()) -> str:
    """Figure and table label of algorithm ``name`` (e.g. "RFedAGS"); on runs of ``problems``,
    the label the algorithm declares for the first of them that it names (``problem_labels``:
    "FedLSA (FedAvg)" on the LSA problem, "FedAvg" elsewhere)."""
    cls = _algorithm(name)
    own = getattr(cls, "problem_labels", {}) or {}
    return next((own[p] for p in problems if p in own), cls.label)


def algorithm_style(name: str) -> dict:
    """Matplotlib style of algorithm ``name``: {"color": colour, or None to colour by K, "ls": ...}."""
    return _algorithm(name).style


def metric_label(metric: str, problems=()) -> str:
    """Axis label of ``metric``: a base metric's, else that of one of ``problems``, else its name."""
    if metric in BASE_LABELS:
        return BASE_LABELS[metric]
    for problem in problems:
        if metric in _metric_labels(problem):
            return _metric_labels(problem)[metric]
    return metric


def save_figure(fig, out_pdf) -> None:
    """Write ``fig`` to ``out_pdf`` and the PNG beside it (each atomically), then close it."""
    out_pdf = Path(out_pdf)
    for path in (out_pdf, out_pdf.with_suffix(".png")):
        with io.atomic_path(path) as tmp:
            fig.savefig(tmp, format=path.suffix[1:], dpi=150)
    plt.close(fig)


def method_key(algorithm: dict, sweep: list | None = None) -> tuple:
    """(algorithm, K, participation): participation None (every agent), s, or the legend text
    of another scheme (``rfl.participation.base.label``); a run of a sweep (its spec's
    ``sweep``, [[name, value], ...]) adds its setting, ((name, value), ...): (algorithm, K,
    participation, setting)."""
    from rfl.participation.base import label
    p = algorithm.get("participation")
    key = (algorithm["name"], algorithm.get("K"), p if p is None or isinstance(p, int) else label(p))
    return key + (tuple((k, v) for k, v in sweep),) if sweep else key


def setting_of(key: tuple) -> tuple:
    """The setting of a method key (``method_key``): () for a run without a sweep."""
    return key[3] if len(key) > 3 else ()


def method_label(key: tuple, problems=()) -> str:
    """Legend label of method ``key`` (``method_key``) on runs of ``problems``: "RFedAGS-K=5, s=3",
    and a sweep's setting after it: "RFedProj-K=5, server_step=0.5, alpha=3e-3"."""
    from rfl.sweeps import setting_label
    alg, K, s = key[:3]
    part = "" if s is None else (f", s={s}" if isinstance(s, int) else f", {s}")
    setting = setting_of(key)
    return (algorithm_label(alg, problems) + ("" if K is None else f"-K={K}") + part
            + (f", {setting_label(setting)}" if setting else ""))


def load_runs(tables) -> dict[tuple, list[pd.DataFrame]]:
    """Group run tables by method: (algorithm, K, participation[, setting]) -> [table per seed],
    in legend order (the algorithms' ``plot_order``, then K, then participation, then the
    settings of a sweep in run order)."""
    return _load_runs(tables)[0]


def _load_runs(tables) -> tuple[dict[tuple, list[pd.DataFrame]], list[str]]:
    """(load_runs(tables), the problems of the runs in order of appearance)."""
    groups, problems = defaultdict(list), []
    io.check_sampler_versions(tables)
    for path in tables:
        table, meta = io.read_run_table(path)
        spec = meta["spec"]
        table.attrs["seed"] = spec.get("seed")       # runs are paired by seed (rfl.claims.stats)
        groups[method_key(spec["algorithm"], spec.get("sweep"))].append(table)
        problems.append(spec["dataset"]["problem"])
    settings = list(dict.fromkeys(setting_of(k) for k in groups))
    order = sorted(groups.items(), key=lambda kv: (_algorithm(kv[0][0]).plot_order, kv[0][1] or 0,
                                                  isinstance(kv[0][2], str), kv[0][2] or 0,
                                                  settings.index(setting_of(kv[0]))))
    return dict(order), list(dict.fromkeys(problems))


def _column(t: pd.DataFrame, metric: str, index) -> pd.Series:
    """One run's ``metric`` on the common round index. A run that stopped early because it
    converged (a centralised solver at its tolerance) keeps its last value: its iterate no
    longer moves. A diverged run is not extended past its last finite row."""
    col = t.set_index("round")[metric].reindex(index)
    if not (t["status"] == "diverged").any():
        col = col.ffill()
    return col


def summarise(tables: list[pd.DataFrame], metric: str) -> pd.DataFrame:
    """Per round: median, min and max of ``metric`` over the seeds (converged runs held at their
    last value, diverged runs only up to divergence)."""
    index = sorted(set().union(*(t["round"] for t in tables)))
    wide = pd.concat([_column(t, metric, index).rename(i) for i, t in enumerate(tables)], axis=1)
    return pd.DataFrame({"median": wide.median(axis=1), "low": wide.min(axis=1),
                         "high": wide.max(axis=1), "n": wide.notna().sum(axis=1)})


def _styles(keys) -> dict[tuple, dict]:
    """Colour and line style per method: the algorithm's ``style``; a method without its own
    colour takes one by K (viridis over the K of all such methods). In a sweep, each method
    and setting takes a colour of its own (tab10, tab20 beyond ten) and its algorithm's line
    style."""
    by_K = [k for k in keys if algorithm_style(k[0])["color"] is None]
    Ks = sorted({k[1] for k in by_K if k[1] is not None})
    cmap = {K: plt.cm.viridis(i / max(1, len(Ks) - 1) * 0.9) for i, K in enumerate(Ks)}
    # methods that differ only in participation: one colour and dash pattern per participation
    # (every agent keeps the colour of its K)
    parts = [p for p in dict.fromkeys(k[2] for k in keys) if p is not None]
    shared = len({(k[0], k[1]) for k in keys}) < len(keys)
    dashes = ["--", "-.", ":", (0, (5, 1, 1, 1, 1, 1))]
    settings = [s for s in dict.fromkeys(setting_of(k) for k in keys) if s]
    styles = {}
    for key in keys:
        if settings:   # a sweep: one colour per (K, participation, setting), the algorithm's line style
            combos = list(dict.fromkeys(k[1:] for k in keys))
            i = combos.index(key[1:])
            cmap = plt.cm.tab10 if len(combos) <= 10 else plt.cm.tab20
            styles[key] = {"color": cmap(i % cmap.N), "ls": algorithm_style(key[0])["ls"]}
            continue
        style = algorithm_style(key[0])
        color = style["color"] if style["color"] is not None else cmap.get(key[1], K_FALLBACK_COLOR)
        ls = style["ls"]
        if shared and key[2] is not None:
            i = parts.index(key[2])
            color, ls = plt.cm.tab10(1 + i % 9), dashes[i % len(dashes)]
        styles[key] = {"color": color, "ls": ls}
    return styles


XLABELS = {"round": "round $t$ (outer iteration; iteration for centralised methods)",
           "floats": "floats communicated (cumulative)", "grad_evals": "sample gradients evaluated",
           "time": "simulated time (cumulative; the experiment's time model)"}


def summarise_against(tables: list[pd.DataFrame], metric: str, x: str) -> pd.DataFrame:
    """As ``summarise``, indexed by the seeds' median of column ``x`` at each round."""
    stats = summarise(tables, metric)
    xs = pd.concat([_column(t, x, stats.index).rename(i) for i, t in enumerate(tables)], axis=1)
    stats.index = xs.median(axis=1).reindex(stats.index).values
    return stats


def experiment_figure(spec: dict, tables, out_pdf) -> None:
    """Draw each of ``spec['metrics']`` against each of ``spec['x']`` (default: rounds) for every
    method of the experiment, one panel per (metric, x); PDF + PNG. Against communicated floats,
    centralised methods (which communicate nothing) are left out. (A spec with a ``sweep``:
    ``rfl.reporting.bias_sweep.sweep_figure``.)"""
    panels = [(m, x) for m in spec.get("metrics", ["excess_risk"]) for x in spec.get("x", ["round"])]
    # (the lines marked "no mutate" here and in draw_curves set layout only: figure size, line
    # width, marker size, band opacity, font sizes, grid opacity, where the legend stands and in
    # how many columns; no number or label a reader reads depends on them)
    fig, axes = plt.subplots(1, len(panels),
                             figsize=(5.2 * len(panels), 3.9),  # pragma: no mutate
                             squeeze=False)
    n_seeds = draw_curves(list(axes[0]), spec, tables)
    title = f"{spec['title']}\n(median over {n_seeds} seeds, band: min-max)"
    fig.suptitle(title, fontsize=9)  # pragma: no mutate
    fig.tight_layout()
    save_figure(fig, out_pdf)


def draw_curves(axes, spec: dict, tables) -> int:
    """The (metric, x) panels of ``spec`` drawn from ``tables`` on ``axes`` (one per panel), the
    legend on the first; returns the largest number of seeds of a method."""
    panels = [(m, x) for m in spec.get("metrics", ["excess_risk"]) for x in spec.get("x", ["round"])]
    groups, problems = _load_runs(tables)
    styles = _styles(groups)
    for ax, (metric, x) in zip(axes, panels):
        log = metric in LOG_METRICS
        for key, runs in groups.items():
            if x == "floats" and not _algorithm(key[0]).federated:
                continue
            stats = summarise(runs, metric) if x == "round" else summarise_against(runs, metric, x)
            if log:
                stats = stats.clip(lower=FLOOR)
            st = styles[key]
            ax.plot(stats.index, stats["median"], st["ls"],
                    lw=1.4,  # pragma: no mutate
                    color=st["color"], label=method_label(key, problems))
            ax.fill_between(stats.index, stats["low"], stats["high"],
                            alpha=0.13, lw=0,  # pragma: no mutate
                            color=st["color"])
            for t in runs:
                if (t["status"] == "diverged").any():
                    ok = t[t["status"] == "ok"]
                    if len(ok):
                        ax.plot(ok[x].iloc[-1], max(ok[metric].iloc[-1], FLOOR) if log
                                else ok[metric].iloc[-1], "x",
                            ms=8,  # pragma: no mutate
                            color=st["color"])
        if log:
            ax.set_yscale("log")
        ax.set_xlabel(XLABELS[x])
        if x not in ("round", "time"):
            ax.set_xscale("symlog", linthresh=1e3)
        if x != "round":
            ax.set_xlim(left=0)
        ax.set_ylabel(metric_label(metric, problems))
        ax.grid(True, which="major", alpha=0.3)  # pragma: no mutate
    if any(setting_of(k) for k in groups):   # a sweep's labels are long: one column, beside the last panel
        last = axes[-1]
        last.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))  # pragma: no mutate
        axes[0].figure.set_size_inches(5.2 * len(panels) + 3.2, 3.9)  # pragma: no mutate
    else:                                    # on the first panel; long labels: one column
        first = axes[0]
        longest = max((len(method_label(k, problems)) for k in groups), default=0)  # pragma: no mutate
        first.legend(fontsize=7, ncol=2 if longest <= 28 else 1)  # pragma: no mutate
    return max(len(r) for r in groups.values())

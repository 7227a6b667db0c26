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

LABELS = {"excess_risk": "excess risk $F(x_t) - F(x^*)$", "grad_norm": r"$\|\mathrm{grad}\,F(x_t)\|$",
          "dist_to_opt": r"dist$(x_t, x^*)$", "cost": "cost $F(x_t)$", "test_nmse": "test NMSE",
          "subspace_dist": r"dist$(\mathcal{U}_t, \mathcal{U}^*)$"}
NAMES = {"rfedags": "RFedAGS", "rfedavg": "RFedAvg", "fedavg": "FedLSA (FedAvg)", "rsd": "RSD",
         "rfedsvrg": "RFedSVRG", "rfedproj": "RFedProj", "scafflsa": "SCAFFLSA",
         "rcg": "RCG", "rlbfgs": "RLBFGS"}
CENTRALIZED_COLORS = {"rsd": "tab:red", "rcg": "tab:orange", "rlbfgs": "tab:brown"}
ORDER = ["rfedags", "rfedavg", "rfedsvrg", "rfedproj", "fedavg", "scafflsa", "rsd", "rcg", "rlbfgs"]
OTHER_COLORS = {"rfedsvrg": "tab:purple", "rfedproj": "tab:cyan", "scafflsa": "tab:green"}
FLOOR = 1e-16   # values below this (round-off) are drawn at the floor of a log axis
LOG_METRICS = {"excess_risk", "grad_norm", "dist_to_opt", "subspace_dist"}


def save_figure(fig, out_pdf) -> None:
    """Write ``fig`` to ``out_pdf`` and the PNG beside it (each atomically), then close it."""
    out_pdf = Path(out_pdf)
    for path in (out_pdf, out_pdf.with_suffix(".png")):
        with io.atomic_path(path) as tmp:
            fig.savefig(tmp, format=path.suffix[1:], dpi=150)
    plt.close(fig)


def meta_path(table_path) -> Path:
    p = Path(table_path)
    return p.with_name(p.name[: -len(".csv")] + ".meta.json")


def method_key(algorithm: dict) -> tuple:
    return (algorithm["name"], algorithm.get("K"), algorithm.get("participation"))


def method_label(key: tuple) -> str:
    alg, K, s = key
    return NAMES.get(alg, alg) + ("" if K is None else f"-K={K}") + ("" if s is None else f", s={s}")


def load_runs(tables) -> dict[tuple, list[pd.DataFrame]]:
    """Group run tables by method: (algorithm, K, participation) -> [table per seed]."""
    groups = defaultdict(list)
    for path in tables:
        groups[method_key(io.read_json(meta_path(path))["spec"]["algorithm"])].append(io.read_table(path))
    return dict(sorted(groups.items(), key=lambda kv: (ORDER.index(kv[0][0]), kv[0][1] or 0,
                                                       kv[0][2] or 0)))


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
    Ks = sorted({k[1] for k in keys if k[0] in ("rfedags", "fedavg") and k[1] is not None})
    cmap = {K: plt.cm.viridis(i / max(1, len(Ks) - 1) * 0.9) for i, K in enumerate(Ks)}
    styles = {}
    for key in keys:
        alg, K, _ = key
        if alg in CENTRALIZED_COLORS:
            styles[key] = {"color": CENTRALIZED_COLORS[alg], "ls": ":"}
        elif alg in OTHER_COLORS:
            styles[key] = {"color": OTHER_COLORS[alg], "ls": "-."}
        elif alg == "rfedavg":
            styles[key] = {"color": cmap.get(K, "tab:gray"), "ls": "--"}
        else:
            styles[key] = {"color": cmap.get(K, "tab:blue"), "ls": "-"}
    return styles


XLABELS = {"round": "round $t$ (outer iteration; iteration for centralised methods)",
           "floats": "floats communicated (cumulative)", "grad_evals": "sample gradients evaluated"}


def summarise_against(tables: list[pd.DataFrame], metric: str, x: str) -> pd.DataFrame:
    """As ``summarise``, indexed by the seeds' median of column ``x`` at each round."""
    stats = summarise(tables, metric)
    xs = pd.concat([_column(t, x, stats.index).rename(i) for i, t in enumerate(tables)], axis=1)
    stats.index = xs.median(axis=1).reindex(stats.index).values
    return stats


def experiment_figure(spec: dict, tables, out_pdf) -> None:
    """Draw each of ``spec['metrics']`` against each of ``spec['x']`` (default: rounds) for every
    method of the experiment, one panel per (metric, x); PDF + PNG. Against communicated floats,
    centralised methods (which communicate nothing) are left out."""
    panels = [(m, x) for m in spec.get("metrics", ["excess_risk"]) for x in spec.get("x", ["round"])]
    groups = load_runs(tables)
    styles = _styles(groups)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.9), squeeze=False)
    for ax, (metric, x) in zip(axes[0], panels):
        log = metric in LOG_METRICS
        for key, runs in groups.items():
            if x == "floats" and key[0] in CENTRALIZED_COLORS:
                continue
            stats = summarise(runs, metric) if x == "round" else summarise_against(runs, metric, x)
            if log:
                stats = stats.clip(lower=FLOOR)
            st = styles[key]
            ax.plot(stats.index, stats["median"], st["ls"], color=st["color"], lw=1.4,
                    label=method_label(key))
            ax.fill_between(stats.index, stats["low"], stats["high"], color=st["color"], alpha=0.13, lw=0)
            for t in runs:
                if (t["status"] == "diverged").any():
                    ok = t[t["status"] == "ok"]
                    if len(ok):
                        ax.plot(ok[x].iloc[-1], max(ok[metric].iloc[-1], FLOOR) if log
                                else ok[metric].iloc[-1], "x", color=st["color"], ms=8)
        if log:
            ax.set_yscale("log")
        ax.set_xlabel(XLABELS[x])
        if x != "round":
            ax.set_xscale("symlog", linthresh=1e3)
            ax.set_xlim(left=0)
        ax.set_ylabel(LABELS.get(metric, metric))
        ax.grid(True, which="major", alpha=0.3)
    n_seeds = max(len(r) for r in groups.values())
    fig.suptitle(f"{spec['title']}  (median over {n_seeds} seeds, band: min-max)", fontsize=9)
    axes[0][0].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    save_figure(fig, out_pdf)

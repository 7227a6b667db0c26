"""Figures of one experiment: a metric against rounds, median over seeds with a min-max band.

Reads only result files: each run's table ``X.csv`` and its metadata
``X.meta.json`` (which says algorithm, K, participation). A diverged run is
drawn up to the round it diverged, marked with an x.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from rfl import io  # noqa: E402

LABELS = {"excess_risk": "excess risk $F(x_t) - F(x^*)$", "grad_norm": r"$\|\mathrm{grad}\,F(x_t)\|$",
          "dist_to_opt": r"dist$(x_t, x^*)$", "cost": "$F(x_t)$"}
NAMES = {"rfedags": "RFedAGS", "rfedavg": "RFedAvg", "fedavg": "FedAvg"}
FLOOR = 1e-16   # values below this (round-off) are drawn at the floor of the log axis


def meta_path(table_path) -> Path:
    p = Path(table_path)
    return p.with_name(p.name[: -len(".csv")] + ".meta.json")


def load_runs(tables) -> dict[tuple, list[pd.DataFrame]]:
    """Group run tables by method: (algorithm, K, participation) -> [table per seed]."""
    groups = defaultdict(list)
    for path in tables:
        a = io.read_json(meta_path(path))["spec"]["algorithm"]
        groups[(a["name"], a["K"], a.get("participation"))].append(io.read_table(path))
    return dict(sorted(groups.items(), key=lambda kv: (kv[0][0] != "rfedags", kv[0][0], kv[0][1])))


def summarise(tables: list[pd.DataFrame], metric: str) -> pd.DataFrame:
    """Per round: median, min and max of ``metric`` over the seeds that reached it."""
    wide = pd.concat([t.set_index("round")[metric].rename(i) for i, t in enumerate(tables)], axis=1)
    return pd.DataFrame({"median": wide.median(axis=1), "low": wide.min(axis=1),
                         "high": wide.max(axis=1), "n": wide.notna().sum(axis=1)})


def label(key: tuple) -> str:
    alg, K, s = key
    return f"{NAMES.get(alg, alg)}-K={K}" + ("" if s is None else f", s={s}")


def experiment_figure(spec: dict, tables, out_pdf) -> None:
    """Draw ``spec['metric']`` vs rounds for every method of the experiment; PDF + PNG."""
    metric = spec.get("metric", "excess_risk")
    groups = load_runs(tables)
    Ks = sorted({k[1] for k in groups})
    colors = {K: plt.cm.viridis(i / max(1, len(Ks) - 1) * 0.9) for i, K in enumerate(Ks)}
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    for key, runs in groups.items():
        stats = summarise(runs, metric).clip(lower=FLOOR)
        style = "-" if key[0] == "rfedags" else "--"
        ax.plot(stats.index, stats["median"], style, color=colors[key[1]], lw=1.4, label=label(key))
        ax.fill_between(stats.index, stats["low"], stats["high"], color=colors[key[1]], alpha=0.15, lw=0)
        for t in runs:
            if (t["status"] == "diverged").any():
                last = t[t["status"] == "ok"].iloc[-1]
                ax.plot(last["round"], max(last[metric], FLOOR), "x", color=colors[key[1]])
    n_seeds = max(len(r) for r in groups.values())
    ax.set_yscale("log")
    ax.set_xlabel("round $t$ (outer iteration)")
    ax.set_ylabel(LABELS.get(metric, metric))
    ax.set_title(f"{spec['title']}\n(median over {n_seeds} seeds, band: min-max)", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    out_pdf = Path(out_pdf)
    out_pdf.parent.mkdir(parents=True, exist_ok=True)
    for path in (out_pdf, out_pdf.with_suffix(".png")):
        with io.atomic_path(path) as tmp:
            fig.savefig(tmp, format=path.suffix[1:], dpi=150)
    plt.close(fig)

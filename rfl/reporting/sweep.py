"""A sweep's table and figure: the final metric of each setting against each swept parameter.

For every method key of a swept experiment (``rfl.sweeps``; its runs grouped by
``figures.load_runs``) the table gives the setting's swept values and, per metric, the
median over seeds of the run's last value (a run that diverged counts as +inf, and is counted
in ``diverged``). The figure has one panel per (metric, swept parameter): the final metric
against the parameter's values, one line per method and setting of the other swept values.
Reads result files only.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from rfl import io  # noqa: E402
from rfl.sweeps import label_text, setting_label, token  # noqa: E402

from .figures import (FLOOR, LOG_METRICS, _load_runs, method_label, metric_label,  # noqa: E402
                      save_figure, setting_of)
from .tables import write_markdown  # noqa: E402


def final_value(table: pd.DataFrame, metric: str) -> float:
    """``metric`` at a run's last round; +inf for a run that diverged."""
    if (table["status"] != "ok").any():
        return math.inf
    return float(table[metric].iloc[-1])


def sweep_table(tables, metrics) -> pd.DataFrame:
    """One row per method and setting, in legend order: ``method`` (its label without the
    setting), one column per swept parameter, per metric the median over seeds of the final
    value, ``seeds`` and ``diverged`` (how many)."""
    groups, _ = _load_runs(tables)
    names = list(dict.fromkeys(k for key in groups for k, _ in setting_of(key)))
    rows = []
    for key, runs in groups.items():
        setting = dict(setting_of(key))
        row = {"method": method_label(key[:3])}
        row.update({token(n): setting.get(n) for n in names})
        for metric in metrics:
            row[metric] = float(np.median([final_value(t, metric) for t in runs]))
        row["seeds"] = len(runs)
        row["diverged"] = sum(bool((t["status"] != "ok").any()) for t in runs)
        rows.append(row)
    return pd.DataFrame(rows)


def _numeric(values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def sweep_figure(spec: dict, tables, out_pdf) -> None:
    """One panel per (metric, swept parameter): the final metric (median over seeds) against the
    parameter's values, one line per method and setting of the other swept parameters."""
    groups, problems = _load_runs(tables)
    names = list(dict.fromkeys(k for key in groups for k, _ in setting_of(key)))
    metrics = spec.get("metrics", ["excess_risk"])
    # (the lines marked "no mutate" set layout only: figure size, line width, marker size, font
    # sizes, grid opacity; no number or label a reader reads depends on them)
    fig, axes = plt.subplots(len(metrics), max(1, len(names)),
                             figsize=(5.2 * max(1, len(names)), 3.9 * len(metrics)),  # pragma: no mutate
                             squeeze=False)
    for r, metric in enumerate(metrics):
        finals = {key: float(np.median([final_value(t, metric) for t in runs]))
                  for key, runs in groups.items()}
        for c, name in enumerate(names):
            ax = axes[r][c]
            lines = defaultdict(list)            # (method, other values) -> [(value, final)]
            for key, y in finals.items():
                setting = dict(setting_of(key))
                if name not in setting:
                    continue
                others = tuple((k, v) for k, v in setting_of(key) if k != name)
                lines[(key[:3], others)].append((setting[name], y))
            values = list(dict.fromkeys(v for pts in lines.values() for v, _ in pts))
            numeric = _numeric(values)
            order = sorted(values) if numeric else values
            for (base, others), pts in lines.items():
                pts = sorted(pts, key=lambda p: order.index(p[0]))
                xs = [p[0] if numeric else order.index(p[0]) for p in pts]
                ys = [max(p[1], FLOOR) if metric in LOG_METRICS else p[1] for p in pts]
                label = method_label(base) + (f", {setting_label(others)}" if others else "")
                ax.plot(xs, ys, "o-",
                        lw=1.4, ms=4,  # pragma: no mutate
                        label=label)
            if numeric and values and min(values) > 0 and max(values) >= 10 * min(values):
                ax.set_xscale("log")
            if not numeric:
                ax.set_xticks(range(len(order)), [label_text(v) for v in order])
            if metric in LOG_METRICS:
                ax.set_yscale("log")
            ax.set_xlabel(token(name))
            ax.set_ylabel(f"final {metric_label(metric, problems)}")
            ax.grid(True, which="major", alpha=0.3)  # pragma: no mutate
            ax.legend(fontsize=7)  # pragma: no mutate
    n_seeds = max((len(r) for r in groups.values()), default=0)
    title = f"{spec['title']}\n(final value, median over {n_seeds} seeds; diverged runs count as +inf)"
    fig.suptitle(title, fontsize=9)  # pragma: no mutate
    fig.tight_layout()
    save_figure(fig, out_pdf)


def write_sweep(spec: dict, out_pdf, out_csv, tables) -> pd.DataFrame:
    """The sweep's figure (``out_pdf``, PNG beside) and table (``out_csv``, Markdown beside)."""
    io.check_sampler_versions(tables)
    metrics = spec.get("metrics", ["excess_risk"])
    table = sweep_table(tables, metrics)
    io.write_table(out_csv, table)
    shown = table.copy()                 # swept values exactly as in the run ids' labels
    for col in shown.columns:
        if col not in ("method", "seeds", "diverged", *metrics):
            shown[col] = [None if v is None or v != v else label_text(v) for v in shown[col]]
    write_markdown(Path(out_csv).with_suffix(".md"), shown)
    sweep_figure(spec, tables, out_pdf)
    return table

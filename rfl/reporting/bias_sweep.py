"""The FedAvg-bias figure: each method's stationary bias against the step size eta, with FedAvg's
predicted first-order parts (Mangold et al., arXiv 2412.01389; SCAFFLSA slides "In the General
Case"), beside the error against rounds of one experiment.

A figure spec with ``sweep`` (fixed-step experiments, one eta each) is drawn here: first panel,
log-log, per method (FedAvg, Scaffold, FedRR, ...) ||bias|| = ||mean of theta_t - theta*|| over
the last half of the rounds and the seeds with one standard error as error bar
(``rfl.claims.bias.estimate``, the estimate the claims judge); the predicted lines are the
norms of the heterogeneity part (E1), the noise part (E2) and their sum (E1 + E2), read from
FedAvg's runs' metadata (``predictions.fedavg_bias``, ``rfl.problems.fedavg_bias``), dashed,
dotted and solid grey. A part that is 0 in every experiment (the noise part with full batches,
the heterogeneity part on homogeneous clients) is not drawn. Then the spec's (metric, x)
panels of its ``experiment`` (``rfl.reporting.figures.draw_curves``).

``sweep_points`` returns the plotted numbers, one row per (experiment, method), so that a test
can check the drawn lines against the problem's predictions.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.ticker import NullFormatter
import numpy as np
import pandas as pd

from rfl import io
from rfl.claims.bias import estimate

from .figures import _styles, draw_curves, method_key, method_label, save_figure

#: the bias is averaged over the last WINDOW of the rounds (as the claims' default)
WINDOW = 0.5
#: predicted parts: (key of predictions.fedavg_bias, legend text, line style)
PARTS = (("heterogeneity", "predicted heterogeneity part (E1)", "--"),
         ("noise", "predicted noise part (E2)", ":"),
         ("total", "predicted E1 + E2", "-"))


def _norm(v) -> float:
    return float(np.linalg.norm(np.asarray(v, dtype=float))) if v is not None else np.nan


def sweep_points(spec: dict, tables) -> pd.DataFrame:
    """One row per (sweep experiment, method): experiment, eta, method (legend label), key,
    bias, se, seeds, rounds, and FedAvg's predicted norms heterogeneity, noise, total (NaN
    where the experiment has no FedAvg run recording them); sorted by method, then eta."""
    runs: dict[tuple, list] = {}
    problems, preds, etas = [], {}, {}
    for path in tables:
        table, meta = io.read_run_table(path)
        s = meta["spec"]
        if s["experiment"] not in spec["sweep"]:
            continue
        runs.setdefault((s["experiment"], method_key(s["algorithm"])), []).append(table)
        problems.append(s["dataset"]["problem"])
        etas[s["experiment"]] = float(s["step"]["alpha"])
        fb = (meta.get("predictions") or {}).get("fedavg_bias")
        if s["algorithm"]["name"] == "fedavg" and fb:
            preds[s["experiment"]] = {part: _norm(fb.get(part)) for part, *_ in PARTS}
    problems = list(dict.fromkeys(problems))
    rows = []
    for (e, key), tabs in runs.items():
        b = estimate(tabs, WINDOW)
        rows.append({"experiment": e, "eta": etas[e], "method": method_label(key, problems), "key": key,
                     "bias": b.value, "se": b.uncertainty, "seeds": b.seeds, "rounds": b.rounds,
                     **{part: preds.get(e, {}).get(part, np.nan) for part, *_ in PARTS}})
    out = pd.DataFrame(rows)
    if len(out):
        out = out.sort_values(["method", "eta"], kind="stable").reset_index(drop=True)
    return out


def draw_sweep(ax, points: pd.DataFrame) -> None:
    """The bias-against-eta panel of ``points`` (``sweep_points``) on ``ax``."""
    keys = list(dict.fromkeys(points["key"]))
    styles = _styles(keys)
    for key in keys:
        m = points[points["key"] == key]
        ok = m[np.isfinite(m["bias"]) & (m["bias"] > 0)]
        ax.errorbar(ok["eta"], ok["bias"], yerr=ok["se"], fmt="o", ls=styles[key]["ls"],
                    ms=4, lw=1.2, capsize=3,  # pragma: no mutate
                    color=styles[key]["color"], label=m["method"].iloc[0])
    pred = (points.dropna(subset=["total"]).drop_duplicates("experiment").sort_values("eta"))
    for part, text, ls in PARTS:
        if len(pred) and (pred[part] > 0).any():
            ax.plot(pred["eta"], pred[part], ls,
                    lw=1.3,  # pragma: no mutate
                    color="0.35", label=text)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(r"step size $\eta$")
    ax.set_ylabel(r"$\|$bias$\|$ = $\|$mean of $\theta_t - \theta^*\|$ ($\pm$ 1 s.e.)")
    ax.grid(True, which="major", alpha=0.3)  # pragma: no mutate
    ax.legend(fontsize=7)  # pragma: no mutate


def sweep_figure(spec: dict, tables, out_pdf) -> pd.DataFrame:
    """The bias-against-eta panel of ``spec['sweep']``, then ``spec``'s (metric, x) panels of its
    ``experiment``; PDF + PNG. Returns the plotted numbers (``sweep_points``)."""
    points = sweep_points(spec, tables)
    if not len(points):
        raise io.RunTableError(f"figure {spec.get('name', spec['title'])!r}: no run of its sweep "
                               f"({', '.join(spec['sweep'])}) among the run tables given")
    panels = [(m, x) for m in spec.get("metrics", ["excess_risk"]) for x in spec.get("x", ["round"])]
    # (the lines marked "no mutate" here and in draw_sweep set layout only: figure size, line
    # width, marker and cap size, font sizes, grid opacity; no number or label a reader reads
    # depends on them)
    fig, axes = plt.subplots(1, 1 + len(panels),
                             figsize=(5.2 * (1 + len(panels)), 3.9),  # pragma: no mutate
                             squeeze=False)
    draw_sweep(axes[0][0], points)
    mine = [t for t in tables if io.read_run_table(t)[1]["spec"]["experiment"] == spec["experiment"]]
    n_seeds = draw_curves(list(axes[0][1:]), spec, mine)
    title = (f"{spec['title']}\n(left: bias per step size over the last half of the rounds and "
             f"{int(points['seeds'].max())} seed(s); right: {spec['experiment']}, median over "
             f"{n_seeds} seeds, band: min-max)")
    fig.suptitle(title, fontsize=9)  # pragma: no mutate
    fig.tight_layout()
    save_figure(fig, out_pdf)
    return points

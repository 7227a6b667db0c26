"""RFedAGS beyond i.i.d. full participation: the stationary excess risk (client drift).

For each run, the stationary excess risk is the mean of F(x_t) - F(x*) over the last
``tail`` fraction of its rounds; the table gives its mean and standard deviation over
seeds, per problem, method, K and participation fraction s/S, and the figure draws it
against K. Reads result files only.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from rfl import io  # noqa: E402

from .figures import algorithm_label, save_figure  # noqa: E402
from .tables import write_markdown  # noqa: E402

SUBJECT = "rfedags"   # the method the study is about (solid lines); those compared with it: dashed


def stationary(table: pd.DataFrame, tail: float) -> float:
    """Mean excess risk over the last ``tail`` fraction of the rounds after round 0 (at least
    the last round); NaN for a run that diverged (a run table's rows are ok or diverged)."""
    if (table["status"] != "ok").any():
        return np.nan
    n = max(1, int(round(tail * (len(table) - 1))))
    return float(table["excess_risk"].iloc[-n:].mean())


def collect(spec: dict, tables) -> pd.DataFrame:
    rows = []
    io.check_sampler_versions(tables)
    for path in tables:
        table, meta = io.read_run_table(path)
        sp = meta["spec"]
        label = spec["experiments_by_name"].get(sp["experiment"])
        if label is None:
            continue
        try:
            a = sp["algorithm"]
            S = int(sp["dataset"]["params"]["S"])
            s = int(a.get("participation") or S)
            K, seed = int(a["K"]), sp["seed"]
        except (KeyError, TypeError, ValueError) as exc:
            raise io.RunTableError(f"{io.run_meta_path(path)}: the heterogeneity study needs the spec's "
                                   f"dataset.params.S, algorithm.K and seed; bad or missing: "
                                   f"{exc}") from None
        rows.append({"problem": label, "method": algorithm_label(a["name"]), "algorithm": a["name"], "K": K,
                     "participation": s / S, "seed": seed,
                     "stationary_excess_risk": stationary(table, spec["tail"]),
                     "status": meta["status"]})
    return pd.DataFrame(rows)


def heterogeneity(spec: dict, out_pdf, out_csv, tables) -> pd.DataFrame:
    runs = collect(spec, tables)
    if runs.empty:       # refused before any output is written
        raise io.RunTableError(f"none of the {len(tables)} run table(s) given belongs to the "
                               f"study's experiments ({', '.join(spec['experiments_by_name']) or 'none'})")
    agg = (runs.groupby(["problem", "method", "participation", "K"])
           .agg(mean=("stationary_excess_risk", "mean"), std=("stationary_excess_risk", "std"),
                seeds=("seed", "count"), diverged=("status", lambda s: int((s != "ok").sum())))
           .reset_index())
    io.write_table(out_csv, agg)
    show = agg.copy()
    show["s/S"] = show.pop("participation").map(lambda v: f"{v:g}")
    show = show[["problem", "method", "s/S", "K", "mean", "std", "seeds", "diverged"]]
    write_markdown(Path(out_csv).with_suffix(".md"), show)

    line_style = {algorithm_label(a): "-" if a == SUBJECT else "--" for a in runs["algorithm"].unique()}
    problems = list(dict.fromkeys(spec["experiments_by_name"].values()))
    # (the sizes below are layout only: figure size, marker and cap size, font sizes, grid
    # opacity; no number a reader reads depends on them)
    # (a pragma ending a statement marks its first line only: the layout arguments stand on a
    # line of their own inside the brackets)
    fig, axes = plt.subplots(1, len(problems),
                             figsize=(5.2 * len(problems), 3.9),  # pragma: no mutate
                             squeeze=False)
    for ax, problem in zip(axes[0], problems):
        sub = agg[agg["problem"] == problem]
        for (method, part), g in sub.groupby(["method", "participation"]):
            g = g.sort_values("K")
            ax.errorbar(g["K"], g["mean"], yerr=g["std"].fillna(0), fmt="o" + line_style[method],
                        ms=4, capsize=2,  # pragma: no mutate
                        label=f"{method}, s/S={part:g}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("local steps K")
        ax.set_ylabel(f"stationary excess risk (mean of last {spec['tail']:.0%} of rounds)")
        title = f"{problem}, heterogeneous agents"
        ax.set_title(title, fontsize=9)  # pragma: no mutate
        ax.grid(True, alpha=0.3)  # pragma: no mutate
        ax.legend(fontsize=7)  # pragma: no mutate
    fig.tight_layout()
    save_figure(fig, out_pdf)
    return agg

"""The paper's tables, from the config (Table 1) and from result files (Table 2).

Each table is written three ways: a tidy CSV, a Markdown table and a LaTeX tabular.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rfl import io

from .figures import load_runs, method_key, method_label


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def write_markdown(path, df: pd.DataFrame) -> None:
    head = "| " + " | ".join(df.columns) + " |\n|" + "---|" * len(df.columns) + "\n"
    body = "".join("| " + " | ".join(_fmt(v) for v in row) + " |\n" for row in df.itertuples(index=False))
    with io.atomic_path(path) as tmp:
        tmp.write_text(head + body)


def _tex(s: str) -> str:
    return s.replace("_", r"\_").replace("%", r"\%").replace("±", r"$\pm$")


def write_latex(path, df: pd.DataFrame, caption: str) -> None:
    lines = [r"\begin{table}[t]", r"\centering", rf"\caption{{{_tex(caption)}}}",
             r"\begin{tabular}{" + "l" * len(df.columns) + "}", r"\hline",
             " & ".join(_tex(c) for c in df.columns) + r" \\", r"\hline"]
    lines += [" & ".join(_tex(_fmt(v)) for v in row) + r" \\" for row in df.itertuples(index=False)]
    lines += [r"\hline", r"\end{tabular}", r"\end{table}", ""]
    with io.atomic_path(path) as tmp:
        tmp.write_text("\n".join(lines))


def write_all(out_csv, tidy: pd.DataFrame, display: pd.DataFrame, caption: str) -> None:
    out_csv = Path(out_csv)
    io.write_table(out_csv, tidy)
    write_markdown(out_csv.with_suffix(".md"), display)
    write_latex(out_csv.with_suffix(".tex"), display, caption)


# ---- Table 1 -------------------------------------------------------------------------------
def table1(spec: dict, out_csv) -> pd.DataFrame:
    """Problem- and algorithm-related parameters of each synthetic problem (paper Table 1)."""
    rows = []
    for row in spec["rows"]:
        p, fixed, dec = row["dataset"]["params"], row["fixed"], row["decaying"]
        rows.append({
            "problem": row["label"], "d": p.get("d"), "p": p.get("p"), "nu": p.get("nu"),
            "D_W": p.get("D_W"), "S": p.get("S"), "N": p.get("N"),
            "alpha": fixed["step"].get("alpha"), "alpha0": dec["step"].get("alpha0"),
            "beta": dec["step"].get("beta"), "dec": dec["step"].get("dec"), "B": fixed.get("batch_size"),
            "rounds_fixed": fixed["rounds"], "rounds_decaying": dec["rounds"],
        })
    df = pd.DataFrame(rows)
    write_all(out_csv, df, df, "Parameters of the synthetic problems and of RFedAGS (from the config).")
    return df


# ---- Table 2 -------------------------------------------------------------------------------
PAPER_NAMES = {("rfedags", K): f"RFedAGS-K={K}" for K in (1, 4, 8, 10)}
PAPER_NAMES.update({("rfedavg", 1): "RFedAvg", ("rsd", None): "RSD", ("rcg", None): "RCG",
                    ("rlbfgs", None): "RLBFGS"})


#: the evaluation protocols and normalisations of the School test NMSE (the run-table column
#: of each: ``rfl.problems.multitask.NMSE_COLUMNS``); the paper's NMSE is the pooled one
PROTOCOLS = ("heldout", "refit_on_test")
NORMALISATIONS = ("pooled", "task_mean")


def nmse_column(protocol: str, normalisation: str = "pooled") -> str:
    from rfl.problems.multitask import nmse_column as column

    return column(protocol, normalisation)


def best_nmse(tables, column: str = "test_nmse") -> pd.DataFrame:
    """Per run: the lowest value of ``column`` (a test NMSE) over rounds and the first round
    where it is reached (NaN for a run without a row of status ok that has a value)."""
    rows = []
    for t in tables:
        if column not in t:
            raise ValueError(f"a School run table has no column {column!r}: it was written before "
                             f"that protocol was recorded; rerun its experiment")
        ok = t[(t["status"] == "ok") & t[column].notna()]
        if ok.empty:
            rows.append((np.nan, np.nan))
            continue
        i = ok[column].idxmin()
        rows.append((ok.loc[i, column], int(ok.loc[i, "round"])))
    return pd.DataFrame(rows, columns=["nmse", "round"])


def _stats(best: pd.DataFrame) -> dict:
    """mean and std (ddof 1: NaN for one split) over splits of the best NMSE and its round; a
    split without a measurement makes the mean NaN rather than being left out."""
    return {"nmse_mean": best["nmse"].mean(skipna=False), "nmse_std": best["nmse"].std(ddof=1),
            "round_mean": best["round"].mean(skipna=False), "round_std": best["round"].std(ddof=1),
            "n_splits": len(best)}


def _pm(m, s, digits=3) -> str:
    if not np.isfinite(m):
        return "-"
    return f"{m:.{digits}f} ± {s:.{digits}f}" if np.isfinite(s) else f"{m:.{digits}f}"


def table2(spec: dict, out_csv, tables) -> pd.DataFrame:
    """Best test NMSE (mean +- std over splits) per method, r, evaluation protocol and
    normalisation, beside the paper's Table 2 (spec: ``experiments`` {r: experiment},
    ``paper``, optional ``protocols`` and ``normalisations``, default all). Every
    (protocol, normalisation) is a column of the same runs. With ``sensitivity`` (a list of
    experiments) the step-size study is written beside it (``table2_sensitivity``)."""
    by_experiment = {}
    for path in tables:
        by_experiment.setdefault(Path(path).parent.name, []).append(path)
    paper = spec["paper"]
    protocols = spec.get("protocols", list(PROTOCOLS))
    normalisations = spec.get("normalisations", list(NORMALISATIONS))
    rows = []
    for r, experiment in spec["experiments"].items():
        groups = load_runs(by_experiment.get(experiment, []))
        for protocol in protocols:
            for norm in normalisations:
                column = nmse_column(protocol, norm)
                for key, runs in groups.items():
                    name = PAPER_NAMES.get((key[0], key[1]), method_label(key))
                    st = _stats(best_nmse(runs, column))
                    p_nmse = p_round = np.nan
                    if str(r) in paper and name in paper["methods"]:
                        j = paper["methods"].index(name)
                        p_nmse, p_round = paper[str(r)]["nmse"][j], paper[str(r)]["round"][j]
                    rows.append({"r": int(r), "method": name, "protocol": protocol,
                                 "normalisation": norm, "column": column, **st,
                                 "paper_nmse": p_nmse, "paper_round": p_round,
                                 "difference": st["nmse_mean"] - p_nmse})
    tidy = pd.DataFrame(rows, columns=["r", "method", "protocol", "normalisation", "column",
                                       "nmse_mean", "nmse_std", "round_mean", "round_std",
                                       "n_splits", "paper_nmse", "paper_round", "difference"])
    write_all(out_csv, tidy, _table2_display(tidy),
              "Best test NMSE on the School data (mean ± std over random 80/20 splits) and the "
              "round where it is reached, per evaluation protocol (heldout: w fitted on the "
              "training rows; refit_on_test: w solved on the test rows, as in the authors' code) "
              "and normalisation (pooled: the paper's NMSE; task mean: mean of per-task MSEs over "
              "the pooled variance), beside the paper's Table 2.")
    if spec.get("sensitivity"):
        sensitivity(spec, Path(out_csv).with_name("table2_sensitivity.csv"),
                    [t for e in spec["sensitivity"] for t in by_experiment.get(e, [])])
    return tidy


def _table2_display(tidy: pd.DataFrame) -> pd.DataFrame:
    """One row per (r, method, protocol); per normalisation: best NMSE, its round, and the
    difference to the paper's value."""
    out = []
    for (r, method, protocol), sub in tidy.groupby(["r", "method", "protocol"], sort=False):
        row = {"r": r, "method": method, "protocol": protocol}
        for _, x in sub.iterrows():
            tag = "pooled" if x["normalisation"] == "pooled" else "task mean"
            row[f"NMSE, {tag}"] = _pm(x["nmse_mean"], x["nmse_std"])
            row[f"round, {tag}"] = _pm(x["round_mean"], x["round_std"], 0)
            row[f"- paper, {tag}"] = f"{x['difference']:+.3f}" if np.isfinite(x["difference"]) else "-"
        first = sub.iloc[0]
        row["paper"] = _fmt(first["paper_nmse"])
        row["paper round"] = _fmt(first["paper_round"])
        row["splits"] = first["n_splits"]
        out.append(row)
    return pd.DataFrame(out)


def sensitivity(spec: dict, out_csv, tables) -> pd.DataFrame:
    """Best test NMSE of each (r, step alpha, method) of the step-size study, per protocol
    (pooled normalisation), from the runs' metadata (r: dataset params; alpha: fixed step;
    runs without a fixed step, the centralised solvers, are left out);
    ``K1_minus_K10``: the gap between RFedAGS K = 1 and K = 10 at the same r, alpha and
    protocol, and the paper's gap beside it."""
    paper = spec["paper"]
    protocols = spec.get("protocols", list(PROTOCOLS))
    groups: dict[tuple, list] = {}
    for path in tables:
        table, meta = io.read_run_table(path)
        run = meta["spec"]
        if (run.get("step") or {}).get("rule") != "fixed":
            continue                     # centralised solvers of the same experiments: no step
        key = (int(run["dataset"]["params"]["r"]), float(run["step"]["alpha"]),
               PAPER_NAMES.get((run["algorithm"]["name"], run["algorithm"].get("K")),
                               method_label(method_key(run["algorithm"]))))
        groups.setdefault(key, []).append(table)
    rows = []
    for (r, alpha, name), runs in sorted(groups.items()):
        for protocol in protocols:
            st = _stats(best_nmse(runs, nmse_column(protocol)))
            p = np.nan
            if str(r) in paper and name in paper["methods"]:
                p = paper[str(r)]["nmse"][paper["methods"].index(name)]
            rows.append({"r": r, "alpha": alpha, "method": name, "protocol": protocol, **st,
                         "paper_nmse": p})
    tidy = pd.DataFrame(rows, columns=["r", "alpha", "method", "protocol", "nmse_mean", "nmse_std",
                                       "round_mean", "round_std", "n_splits", "paper_nmse"])
    gaps = []
    for (r, alpha, protocol), sub in tidy.groupby(["r", "alpha", "protocol"]):
        by = sub.set_index("method")
        if {"RFedAGS-K=1", "RFedAGS-K=10"} <= set(by.index):
            gaps.append({"r": r, "alpha": alpha, "protocol": protocol,
                         "K1_minus_K10": by.loc["RFedAGS-K=1", "nmse_mean"] - by.loc["RFedAGS-K=10", "nmse_mean"],
                         "paper_K1_minus_K10": by.loc["RFedAGS-K=1", "paper_nmse"] - by.loc["RFedAGS-K=10", "paper_nmse"]})
    gaps = pd.DataFrame(gaps, columns=["r", "alpha", "protocol", "K1_minus_K10", "paper_K1_minus_K10"])
    tidy = tidy.merge(gaps, how="left")          # on the columns both share: r, alpha, protocol
    display = pd.DataFrame({
        "r": tidy["r"], "alpha": [f"{a:.2g}" for a in tidy["alpha"]], "method": tidy["method"],
        "protocol": tidy["protocol"],
        "best NMSE": [_pm(m, s) for m, s in zip(tidy["nmse_mean"], tidy["nmse_std"])],
        "round": [_pm(m, s, 0) for m, s in zip(tidy["round_mean"], tidy["round_std"])],
        "K=1 - K=10": [f"{v:+.3f}" if np.isfinite(v) else "-" for v in tidy["K1_minus_K10"]],
        "paper": [_fmt(v) for v in tidy["paper_nmse"]],
        "paper K=1 - K=10": [f"{v:+.3f}" if np.isfinite(v) else "-" for v in tidy["paper_K1_minus_K10"]],
        "splits": tidy["n_splits"]})
    io.write_table(out_csv, tidy)
    write_markdown(Path(out_csv).with_suffix(".md"), display)
    return tidy

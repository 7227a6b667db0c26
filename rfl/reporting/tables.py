"""The paper's tables, from the config (Table 1) and from result files (Table 2).

Each table is written three ways: a tidy CSV, a Markdown table and a LaTeX tabular.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rfl import io

from .figures import load_runs, method_label


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


def best_nmse(tables) -> pd.DataFrame:
    """Per run: the lowest test NMSE over rounds and the first round where it is reached (NaN
    for a run without a row of status ok that has a test NMSE)."""
    rows = []
    for t in tables:
        ok = t[(t["status"] == "ok") & t["test_nmse"].notna()]
        if ok.empty:
            rows.append({"nmse": np.nan, "round": np.nan})
            continue
        i = ok["test_nmse"].idxmin()
        rows.append({"nmse": ok.loc[i, "test_nmse"], "round": int(ok.loc[i, "round"])})
    return pd.DataFrame(rows, columns=["nmse", "round"])


def table2(spec: dict, out_csv, tables) -> pd.DataFrame:
    """Best test NMSE (mean +- std over splits) per method and r, beside the paper's Table 2."""
    by_experiment = {}
    for path in tables:
        by_experiment.setdefault(Path(path).parent.name, []).append(path)
    paper = spec["paper"]
    rows = []
    for r, experiment in spec["experiments"].items():
        groups = load_runs(by_experiment.get(experiment, []))
        for key, runs in groups.items():
            name = PAPER_NAMES.get((key[0], key[1]), method_label(key))
            best = best_nmse(runs)
            p_nmse = p_round = np.nan
            if str(r) in paper and name in paper["methods"]:
                j = paper["methods"].index(name)
                p_nmse, p_round = paper[str(r)]["nmse"][j], paper[str(r)]["round"][j]
            # a split without a measurement makes the mean NaN rather than being left out
            rows.append({"r": int(r), "method": name, "nmse_mean": best["nmse"].mean(skipna=False),
                         "nmse_std": best["nmse"].std(ddof=1) if len(best) > 1 else np.nan,
                         "round_mean": best["round"].mean(skipna=False),
                         "round_std": best["round"].std(ddof=1) if len(best) > 1 else np.nan,
                         "n_splits": len(best), "paper_nmse": p_nmse, "paper_round": p_round,
                         "difference": best["nmse"].mean(skipna=False) - p_nmse})
    tidy = pd.DataFrame(rows)
    display = pd.DataFrame({
        "r": tidy["r"], "method": tidy["method"],
        "best test NMSE (ours)": [f"{m:.3f} ± {s:.3f}" for m, s in zip(tidy["nmse_mean"], tidy["nmse_std"])],
        "round (ours)": [f"{m:.0f} ± {s:.0f}" for m, s in zip(tidy["round_mean"], tidy["round_std"])],
        "paper": [_fmt(v) for v in tidy["paper_nmse"]],
        "paper round": [_fmt(v) for v in tidy["paper_round"]],
        "ours - paper": [f"{v:+.3f}" for v in tidy["difference"]],
        "splits": tidy["n_splits"],
    })
    write_all(out_csv, tidy, display, "Best test NMSE on the School data (mean ± std over random "
              "80/20 splits) and the round where it is reached, beside the paper's Table 2.")
    return tidy

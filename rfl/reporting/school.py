"""REPRODUCTION.md, School data (Figure 3 / Table 2): verdicts per evaluation protocol, and the
step-size sensitivity of Table 2's K = 1 cells.

Reads ``paper_tables/table2_school_nmse.csv`` (``rfl.reporting.tables.table2``: one row per r,
method, protocol and normalisation) and, for the sensitivity study, its
``table2_sensitivity.csv`` beside it. The paper's NMSE (Section 5.2) pools the squared errors
of all test rows; it is the normalisation the verdicts use, the mean of per-task MSEs is
reported beside it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rfl import io

SCHOOL_GAP = 0.05       # "comparable": best RFedAGS NMSE within 5% (relative) of the best centralised
SCHOOL_AVG_TOL = 0.005  # "very close": RFedAvg and RFedAGS K = 1 mean NMSEs within 0.005
TABLE2_TOL = 0.02       # a Table 2 cell agrees with the paper within 0.02 (absolute NMSE)

#: the rules printed beside the verdicts, their thresholds filled in from the constants above
RULE_COMPARABLE = ("the best RFedAGS NMSE is within {gap:.0%} (relative) of the best centralised NMSE, "
                   "for every r (an r without a finite NMSE on both sides has insufficient data)")
RULE_AVG = "the mean best NMSEs differ by at most {tol:g}, for every r"
RULE_ORDERING = ("per method, the mean best NMSE moves in the same direction as the paper's between "
                 "each pair of consecutive r; reproduced if for every method with a paper value at every r")
RULE_NUMBERS = "every cell within {tol:g} (absolute NMSE) of the paper's value"

#: what each protocol is, for the report (the run metadata holds the exact definitions)
PROTOCOL_TEXT = {
    "heldout": "w_ij fitted on each task's training rows, scored on its test rows (a held-out "
               "test error)",
    "refit_on_test": "w_ij solved (same ridge lambda) on each task's test rows and scored on "
                     "those same rows: only the subspace U comes from training",
}

EVIDENCE = (
    "Why two protocols. The authors' code of the newer version of the paper (repository "
    "zhenwei-huang/RFedAGS, `ConstructRFLLRMCProb_Grass_.m`) scores a subspace U on test data "
    "with `RMSE(U, D_test)`, which calls `completion(U, D_test)`: it solves each column's "
    "coefficients w on the test entries themselves and then measures the error on those "
    "entries. The School demo of the same research line (hujiangpku/RNGD, `demo_sl_school.m`, "
    "`sl_mystatsfun`) does the same: w = (U^T X_te^T X_te U + lambda I)^-1 U^T X_te^T y_te per "
    "test task, then the residual on the test rows (averaged per task, each over its own "
    "label variance). The School script of the RFedAGS paper itself is not public, so which "
    "protocol its Table 2 used is inferred, not known; both are measured here on the same runs "
    "(one run-table column each).")


def school_gap(fed: float, cent: float) -> float:
    """(fed - cent) / cent: how much worse (> 0) the best federated NMSE is, relative to the best
    centralised one; NaN if either is missing or the centralised one is not positive."""
    if not (np.isfinite(fed) and np.isfinite(cent)) or cent <= 0:
        return np.nan
    return (fed - cent) / cent


def _with_protocol(table: pd.DataFrame) -> pd.DataFrame:
    """A table written before protocols were recorded holds the held-out, pooled NMSE only."""
    table = table.copy()
    if "protocol" not in table:
        table["protocol"] = "heldout"
    if "normalisation" not in table:
        table["normalisation"] = "pooled"
    return table


def school_section(rep, spec: dict) -> None:
    """Figure 3 / Table 2: per protocol, RFedAGS against the centralised solvers, RFedAvg against
    RFedAGS K = 1, the ordering over r, and the published numbers; then the sensitivity study."""
    from .reproduction import _rows_table, _verdict

    t2 = spec["config"].get("tables", {}).get("table2")
    path = Path(spec["tables"]["table2"])
    if not t2 or not path.exists():
        return
    table = _with_protocol(io.read_table(path))
    protocols = list(dict.fromkeys(table["protocol"]))
    rep.add("## Figure 3 and Table 2, School data", "",
            "Best test NMSE over the rounds (mean over random 80/20 splits), beside the paper's, "
            "under each evaluation protocol:", "")
    for p in protocols:
        rep.add(f"- `{p}`: {PROTOCOL_TEXT.get(p, p)}.")
    rep.add("", EVIDENCE, "",
            "The NMSE of the verdicts is the paper's (Section 5.2): squared errors pooled over all "
            "test rows, over the variance of all test labels (`pooled`); `task_mean` (the mean of "
            "the per-task MSEs over the same variance) is shown beside it.", "")
    show = table[["r", "method", "protocol", "normalisation", "nmse_mean", "nmse_std", "round_mean",
                  "paper_nmse", "paper_round", "difference"]].copy()
    show["r"] = show["r"].astype(str)
    rep.table(show)
    for p in protocols:
        sub = table[(table["protocol"] == p) & (table["normalisation"] == "pooled")]
        if sub.empty:
            continue
        _protocol_claims(rep, sub, p, _rows_table, _verdict)
        other = table[(table["protocol"] == p) & (table["normalisation"] != "pooled")]
        for norm, part in other.groupby("normalisation"):
            _numbers_claim(rep, part, f"{p}, {norm}", _verdict)
    _closest(rep, table)
    sensitivity_section(rep, spec)


def _closest(rep, table: pd.DataFrame) -> None:
    """One line per (protocol, normalisation): cells within TABLE2_TOL and the mean signed
    difference to the paper, closest first."""
    known = table.dropna(subset=["paper_nmse"])
    if known.empty or known["protocol"].nunique() * known["normalisation"].nunique() < 2:
        return
    rows = []
    for (p, n), sub in known.groupby(["protocol", "normalisation"]):
        d = sub["difference"]
        rows.append((abs(d.mean()), f"- {p}, {n}: {int((d.abs() <= TABLE2_TOL).sum())} of {len(sub)} "
                                    f"cells within {TABLE2_TOL}, mean difference (ours - paper) "
                                    f"{d.mean():+.3f}, largest |difference| {d.abs().max():.3f}."))
    rep.add("### Which protocol is closest to the paper's numbers", "",
            *[line for _, line in sorted(rows, key=lambda x: (np.nan_to_num(x[0], nan=np.inf), x[1]))], "")


def _protocol_claims(rep, table: pd.DataFrame, protocol: str, _rows_table, _verdict) -> None:
    tag = f" [{protocol}]"
    ok, n, missing, rows = 0, 0, 0, []
    for r, sub in table.groupby("r"):
        cent = sub[sub["method"].isin(["RSD", "RCG", "RLBFGS"])]["nmse_mean"].min()
        fed = sub[sub["method"].str.startswith("RFedAGS")]["nmse_mean"].min()
        rel = school_gap(fed, cent)
        n += 1
        ok += rel <= SCHOOL_GAP
        missing += bool(np.isnan(rel))
        rows.append({"r": str(r), "best RFedAGS": fed, "best centralised": cent, "relative gap": rel})
    rep.add(f"### Claim: RFedAGS is comparable to the centralised RSD, RCG and RLBFGS ({protocol})", "")
    _rows_table(rep, rows)
    rep.verdict("Fig. 3 / Table 2", "RFedAGS comparable to centralised" + tag, _verdict(ok, n, missing),
                RULE_COMPARABLE.format(gap=SCHOOL_GAP))
    ok, n, missing, rows = 0, 0, 0, []
    for r, sub in table.groupby("r"):
        a = sub[sub["method"] == "RFedAvg"]["nmse_mean"]
        g = sub[sub["method"] == "RFedAGS-K=1"]["nmse_mean"]
        if len(a) and len(g):
            n += 1
            d = abs(float(a.iloc[0]) - float(g.iloc[0]))
            ok += d <= SCHOOL_AVG_TOL
            missing += bool(np.isnan(d))
            rows.append({"r": str(r), "RFedAvg": float(a.iloc[0]), "RFedAGS-K=1": float(g.iloc[0]), "abs(difference)": d})
    if n:
        rep.add(f"### Claim: RFedAvg performs very close to RFedAGS with K = 1 ({protocol})", "")
        rep.table(pd.DataFrame(rows))
        rep.verdict("Fig. 3 / Table 2", "RFedAvg ~ RFedAGS K=1" + tag, _verdict(ok, n, missing),
                    RULE_AVG.format(tol=SCHOOL_AVG_TOL))
    _ordering_claim(rep, table, protocol, _verdict)
    _numbers_claim(rep, table, protocol, _verdict)


def _ordering_claim(rep, table: pd.DataFrame, protocol: str, _verdict) -> None:
    """The paper's Table 2 is lower at larger r for every method: compare each method's order."""
    rs = sorted(set(table["r"]))
    known = table.dropna(subset=["paper_nmse"])
    if len(rs) < 2 or known.empty:
        return
    rows, ok, n, missing = [], 0, 0, 0
    for method, sub in table.groupby("method", sort=False):
        by = sub.set_index("r")
        if not set(rs) <= set(by.index) or by["paper_nmse"].isna().any():
            continue
        ours, paper = by.loc[rs, "nmse_mean"], by.loc[rs, "paper_nmse"]
        n += 1
        if ours.isna().any():
            missing += 1
            continue
        same = bool((np.sign(np.diff(ours.values)) == np.sign(np.diff(paper.values))).all())
        ok += same
        rows.append({"method": method, "best r (ours)": str(int(ours.idxmin())),
                     "best r (paper)": str(int(paper.idxmin())),
                     **{f"r = {r}": float(ours.loc[r]) for r in rs}})
    if not n:
        return
    rep.add(f"### Claim: the NMSE changes with r as in the paper's Table 2 ({protocol})", "")
    rep.table(pd.DataFrame(rows))
    rep.verdict("Table 2", f"ordering over r [{protocol}]", _verdict(ok, n, missing),
                RULE_ORDERING)


def _numbers_claim(rep, table: pd.DataFrame, label: str, _verdict) -> None:
    known = table.dropna(subset=["paper_nmse"])
    rep.add(f"### Claim: the numbers of Table 2 ({label})", "")
    if known.empty:
        rep.add("The paper reports no value for the subspace dimensions run here; no comparison.", "")
        return
    diff = known["difference"].abs()
    within = (diff <= TABLE2_TOL).sum()
    if diff.notna().any():
        worst = diff.idxmax()
        rep.add(f"{within} of {len(known)} cells are within {TABLE2_TOL} of the paper's value; the "
                f"largest difference is {diff.max():.3f} ({known.loc[worst, 'method']}, "
                f"r = {known.loc[worst, 'r']}); mean signed difference (ours - paper) "
                f"{known['difference'].mean():+.3f}.", "")
    if diff.isna().any():
        rep.add(f"{int(diff.isna().sum())} of {len(known)} cells have no measured NMSE "
                "(insufficient data for them).", "")
    rep.verdict("Table 2", f"published NMSE values [{label}]",
                _verdict(int(within), len(known), int(diff.isna().sum())),
                RULE_NUMBERS.format(tol=TABLE2_TOL))


def sensitivity_section(rep, spec: dict) -> None:
    """The K = 1 cells of Table 2 against the step size (``table2.sensitivity``): measurements,
    no verdict (the default step is the paper's and is not tuned)."""
    t2 = spec["config"].get("tables", {}).get("table2", {})
    path = Path(spec["tables"]["table2"]).with_name("table2_sensitivity.csv")
    if not t2.get("sensitivity") or not path.exists():
        return
    t = io.read_table(path)
    if t.empty:
        return
    k1 = t[(t["method"] == "RFedAGS-K=1") & (t["alpha"] == t["alpha"].min())]
    where = "; ".join(f"round {m:.0f} (r = {r}, {p})"
                      for r, p, m in zip(k1["r"], k1["protocol"], k1["round_mean"]))
    rep.add("### Measurement: Table 2's K = 1 cells against the step size", "",
            "In the paper's Table 2, RFedAGS with K = 1 is within 0.002 of K = 10 at r = 4 and 5. "
            f"With the smallest step here (alpha = {t['alpha'].min():.2g}, the paper's), K = 1 "
            "takes 1/10 of K = 10's local steps per round, and its best test NMSE comes on average "
            f"at {where} (mean over splits). Best "
            "NMSE (mean over the splits run) for each K at larger steps, same rounds; the default "
            "config keeps the paper's step (`paper_tables/table2_sensitivity.md` has every cell):", "")
    rows = []
    for (r, alpha, protocol), sub in t.groupby(["r", "alpha", "protocol"]):
        by = sub.set_index("method")
        row = {"r": str(r), "alpha": f"{alpha:.2g}", "protocol": protocol}
        for K in (1, 4, 10):
            name = f"RFedAGS-K={K}"
            row[f"K={K}"] = float(by.loc[name, "nmse_mean"]) if name in by.index else np.nan
            if K == 1 and name in by.index:
                row["K=1 best round"] = float(by.loc[name, "round_mean"])
        row["K=1 - K=10"] = float(sub["K1_minus_K10"].iloc[0])
        row["paper K=1 - K=10"] = float(sub["paper_K1_minus_K10"].iloc[0])
        rows.append(row)
    rep.table(pd.DataFrame(rows))
    closes = [x for x in rows if np.isfinite(x["K=1 - K=10"])]
    if closes:
        for r in sorted({x["r"] for x in closes}):
            for protocol in sorted({x["protocol"] for x in closes}):
                cells = [x for x in closes if x["r"] == r and x["protocol"] == protocol]
                if len(cells) < 2:
                    continue
                first, best = cells[0], min(cells, key=lambda x: abs(x["K=1 - K=10"]))
                rep.add(f"- r = {r}, {protocol}: K = 1 is {first['K=1 - K=10']:+.3f} from K = 10 at "
                        f"alpha = {first['alpha']}, {best['K=1 - K=10']:+.3f} at alpha = "
                        f"{best['alpha']} (paper: {first['paper K=1 - K=10']:+.3f}).")
        rep.add("")

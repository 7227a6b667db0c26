"""REPRODUCTION.md: for each figure and table, the paper's claim, the measured evidence and a verdict.

Everything here is computed from result files (run tables and their metadata, and the
tables the workflow wrote); the rules that turn evidence into a verdict are stated in the
report next to each verdict, so a reader can check them. A disagreement with the paper is
reported as such.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import numpy as np
import pandas as pd

from rfl import io

from . import partial

REPRODUCED, PARTLY, NOT = "reproduced", "partly reproduced", "not reproduced"
INSUFFICIENT = "insufficient data"


def _verdict(n_ok: int, n: int, n_missing: int) -> str:
    """Reproduced if every one of the ``n`` cases holds, not reproduced if none does, partly
    otherwise; insufficient data if there is no case or none could be judged (``n_missing``
    cases without data count as failures otherwise, so a gap never passes silently)."""
    if n == 0 or n_missing >= n:
        return INSUFFICIENT
    return REPRODUCED if n_ok == n else (NOT if n_ok == 0 else PARTLY)


class Report:
    def __init__(self):
        self.lines: list[str] = []
        self.summary: list[tuple[str, str, str]] = []

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def table(self, df: pd.DataFrame) -> None:
        self.add("| " + " | ".join(map(str, df.columns)) + " |", "|" + "---|" * len(df.columns))
        for row in df.itertuples(index=False):
            self.add("| " + " | ".join(v if isinstance(v, str) else f"{v:.4g}" for v in row) + " |")
        self.add("")

    def verdict(self, where: str, claim: str, verdict: str, rule: str) -> None:
        self.add(f"**Verdict: {verdict}.** _Rule: {rule}_", "")
        self.summary.append((where, claim, verdict))


def _rows_table(rep: Report, rows: list[dict]) -> None:
    if rows:
        rep.table(pd.DataFrame(rows))
    else:
        rep.add("No RFedAGS run with every agent participating in these experiments.", "")


def school_section(rep: Report, spec: dict) -> None:
    """Figure 3 / Table 2, per evaluation protocol (``rfl.reporting.school``)."""
    from . import school

    school.school_section(rep, spec)


LSA_REL_TOL = 0.01       # FedLSA plateau vs predicted bias (relative), and levelled off to 1%
LSA_FACTOR = 100.0       # SCAFFLSA "removes" the bias: its error at least 100x below FedLSA's
LSA_ROUNDOFF = 1e-18     # an error below 1e-18 x the initial one is round-off (relative 1e-9)


def lsa_section(rep: Report, spec: dict) -> None:
    """Federated TD(0): FedLSA's plateau vs the predicted bias, SCAFFLSA's improvement factor,
    from paper_tables/fedlsa_bias.csv (written by ``rfl lsa`` from the run files)."""
    from .lsa import display

    path = spec["tables"].get("lsa")
    if "lsa" not in spec["config"] or not path or not Path(path).exists():
        return                                   # (a table left by an earlier config is not read)
    t = io.read_table(path)
    if t.empty:
        return
    tail = spec["config"].get("lsa", {}).get("tail", 0.1)
    rep.add("## Beyond the paper: federated TD(0) / LSA, FedLSA vs SCAFFLSA (Mangold et al.)", "",
            "Linear TD(0) on Garnet MDPs (`lsa.experiments`). E||theta_t - theta*||^2 is the mean "
            "over seeds of each run's squared error (F* = 0, theta* exact). The prediction is "
            "||theta_inf^bias||^2 = ||[mean_c (I - Gamma_c)]^-1 mean_c (I - Gamma_c)(theta*_c - "
            "theta*)||^2 with Gamma_c = (I - eta A_bar_c)^H, computed by each run from the exact "
            "A_bar_c (its metadata, `predictions`); the plateau is the mean of the seed-mean curve "
            f"over the last {tail:.0%} of rounds; the SCAFFLSA factor is FedLSA's plateau over "
            "SCAFFLSA's error at the last round. Figures: `figures/fig_fedlsa_scafflsa_<setting>.pdf`.",
            "")
    from .lsa_pool import pool_section

    pool = t[t["oracle"] == "pool"]
    t = t[t["oracle"] == "exact"]
    if len(t):
        rep.add("Oracle **exact** (A(Z) = A_bar_c, b(Z) = b_bar_c): the local updates carry no "
                "mini-batch noise, so FedLSA's iterate is its expected iterate and its plateau "
                "is the bias alone (the pool oracle's mini-batch noise adds a variance term: "
                "its own section below).", "")
        rep.table(display(t))
    else:
        pool_section(rep, pool, _verdict)
        return

    rep.add("### Claim: FedLSA converges to theta* + theta_inf^bias, the predicted bias", "")
    biased = t[t["H"] > 1]
    ok = ((biased["rel_error"] <= LSA_REL_TOL)
          & ((biased["fedlsa_window_ratio"] - 1).abs() <= LSA_REL_TOL))
    no_data = biased["rel_error"].isna() | biased["fedlsa_window_ratio"].isna()
    errors = biased["rel_error"].dropna()
    worst = biased.loc[errors.idxmax()] if len(errors) else None
    if worst is not None:
        rep.add(f"{int(ok.sum())} of {len(biased)} cells with H > 1 agree; the largest relative "
                f"error is {worst['rel_error']:.2e} ({worst['setting']}, N = {worst['N']}, "
                f"H = {worst['H']}: predicted {worst['predicted_bias_sq']:.4g}, measured "
                f"{worst['fedlsa_plateau']:.4g}).", "")
    for _, r in t[t["H"] == 1].iterrows():
        rep.add(f"- H = 1 ({r['setting']}, N = {r['N']}): the bias is 0 (FedLSA with one local "
                f"step is unbiased); its error at the last round is {r['fedlsa_plateau']:.2e}.")
    rep.add("")
    if no_data.any():
        rep.add(f"{int(no_data.sum())} of {len(biased)} cells with H > 1 have no prediction or no "
                "FedLSA curve (insufficient data for them).", "")
    rep.verdict("FedLSA / TD(0)", "FedLSA plateau = predicted bias",
                _verdict(int(ok.sum()), len(biased), int(no_data.sum())),
                f"for every (setting, N, eta, H > 1), FedLSA's plateau is within {LSA_REL_TOL:.0%} "
                f"(relative) of the predicted ||bias||^2 and its curve has levelled off (start of "
                f"the plateau window / last round within 1 +- {LSA_REL_TOL:g})")

    het = t[(t["setting"] == "heterogeneous") & (t["H"] > 1)]
    if len(het):
        rep.add("### Claim: SCAFFLSA removes FedLSA's bias (heterogeneous agents)", "")
        for _, r in het.iterrows():
            if r["scafflsa_last"] <= LSA_ROUNDOFF * r["initial"]:
                still = " (round-off level)"
            elif r["scafflsa_window_ratio"] > 1 + LSA_REL_TOL:
                still = " (still decreasing at the last round: more rounds would lower it)"
            else:
                still = ""
            effect = (f"SCAFFLSA lowers the error by a factor {r['scafflsa_factor']:.3g}"
                      if r["scafflsa_factor"] >= 1 else
                      "no factor (a curve is missing or diverged)" if not r["scafflsa_factor"] > 0 else
                      f"SCAFFLSA's error is {1 / r['scafflsa_factor']:.3g}x FedLSA's (factor "
                      f"{r['scafflsa_factor']:.3g}): no improvement yet")
            rep.add(f"- N = {r['N']}, eta = {r['eta']:g}, H = {r['H']}: FedLSA {r['fedlsa_plateau']:.3g}, "
                    f"SCAFFLSA {r['scafflsa_last']:.3g} after {r['rounds']} rounds{still}: {effect}.")
            rep.add(*[x for x in (partial.scafflsa_shortfall(r, LSA_FACTOR),) if x])
        rep.add("")
        # a factor needs both curves: FedLSA's plateau finite, SCAFFLSA's last value a number
        judged = np.isfinite(het["fedlsa_plateau"]) & het["scafflsa_last"].notna()
        if not judged.all():
            rep.add(f"{int((~judged).sum())} of {len(het)} cells lack a finite FedLSA plateau or a "
                    "SCAFFLSA curve (insufficient data for them).", "")
        n_ok = int(((het["scafflsa_factor"] >= LSA_FACTOR) & judged).sum())
        rep.verdict("SCAFFLSA / TD(0)", "SCAFFLSA removes the heterogeneity bias",
                    _verdict(n_ok, len(het), int((~judged).sum())),
                    f"heterogeneous setting, every (N, eta, H > 1): SCAFFLSA's error at the last "
                    f"round is at least {LSA_FACTOR:g}x below FedLSA's plateau; partly if for some")
    pool_section(rep, pool, _verdict)


def provenance(spec: dict) -> list[str]:
    metas = [io.read_json(io.run_meta_path(p)) for paths in spec["runs"].values() for p in paths[:1]]
    commits = sorted({m["commit"] for m in metas})
    versions = metas[0]["versions"] if metas else {}
    n_runs = sum(len(v) for v in spec["runs"].values())
    diverged = [p for paths in spec["runs"].values() for p in paths
                if io.read_json(io.run_meta_path(p))["status"] != "ok"]
    out = [f"- runs: {n_runs} ({len(diverged)} diverged"
           + (": " + ", ".join(Path(p).stem for p in diverged[:10]) if diverged else "") + ")",
           f"- code: commit(s) {', '.join(commits)}",
           "- versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
           f"- written: {_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds')}"]
    return out


def write_report(spec: dict, out_md) -> None:
    """REPRODUCTION.md from the claims the config declares (``rfl.claims``), and
    ``claims.json`` beside it: one record per judged claim (the HTML report reads it)."""
    from rfl.claims.judge import judge_all, sections, summary

    io.check_sampler_versions([p for paths in spec["runs"].values() for p in paths])
    results = judge_all(spec)
    rep = Report()
    school_section(rep, spec)
    lsa_section(rep, spec)
    head = ["# Reproduction report", "",
            "Written by `rfl reproduction` from the result files of this workflow run; do not edit. "
            "Each claim of the RFedAGS paper is set against what was measured here, with the rule "
            "that decides the verdict and the size it was judged at.", "", *provenance(spec), "",
            "## Summary", ""]
    head += summary(results)[:-1]
    head += [f"| {w} | {c} | {v} | |" for w, c, v in rep.summary] + [""]
    with io.atomic_path(out_md) as tmp:
        tmp.write_text("\n".join(head + sections(results) + rep.lines) + "\n")
    with io.atomic_path(Path(out_md).with_name("claims.json")) as tmp:
        tmp.write_text(json.dumps(results, indent=1, default=_json_default) + "\n")


def _json_default(v):
    """numpy scalars as Python numbers (NaN and inf as JSON's extension values)."""
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(f"{type(v).__name__} is not JSON serialisable")

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

from .figures import _column, load_runs, method_label, summarise

REPRODUCED, PARTLY, NOT = "reproduced", "partly reproduced", "not reproduced"
INSUFFICIENT = "insufficient data"
MIN_FIT_ROUNDS = 2      # a log-linear fit needs the rounds 0..2 at least (three points)


def _verdict(n_ok: int, n: int, n_missing: int) -> str:
    """Reproduced if every one of the ``n`` cases holds, not reproduced if none does, partly
    otherwise; insufficient data if there is no case or none could be judged (``n_missing``
    cases without data count as failures otherwise, so a gap never passes silently)."""
    if n == 0 or n_missing >= n:
        return INSUFFICIENT
    return REPRODUCED if n_ok == n else (NOT if n_ok == 0 else PARTLY)


from rfl.claims.curves import (MIN_FIT_ROUNDS, diverged_at, linear_phase, max_log_ratio,  # noqa: E402,F401
                               median_curve, plateau, rounds_to, seed_note)
from rfl.claims.curves import last as _last  # noqa: E402,F401
from rfl.claims.rules.contraction_in_k import order as faster_in_k  # noqa: E402,F401


LINEAR_RULE = ("per K, a log-linear fit over the rounds in which the median curve makes 90% of its "
               "total log-decrease has contraction < 1 and R^2 >= 0.9, and the excess risk at least "
               "halves over those rounds; reproduced if this holds for every K. A K whose median "
               "curve diverges (a diverged seed counts as +inf from then on) fails; one with fewer "
               "than 3 recorded rounds (t = 0, 1, 2) has insufficient data")


def is_linear(fit: dict) -> bool:
    return fit["status"] == "ok" and fit["rate"] < 1 and fit["r2"] >= 0.9 and fit["decrease"] >= 2


def fit_note(K, fit: dict) -> str | None:
    """The line that says why a K has no fit, or None."""
    if fit["status"] == "diverged":
        return f"- K = {K}: not reproduced: the run diverged at round {fit['diverged_at']} (median over seeds)."
    if fit["status"] == "insufficient":
        return f"- K = {K}: insufficient data (fewer than {MIN_FIT_ROUNDS + 1} recorded rounds)."
    return None


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


def _groups(spec, experiment):
    return load_runs(spec["runs"].get(experiment, []))


def _rfedags(groups):
    return {k[1]: v for k, v in groups.items() if k[0] == "rfedags" and k[2] is None}


def _rows_table(rep: Report, rows: list[dict]) -> None:
    if rows:
        rep.table(pd.DataFrame(rows))
    else:
        rep.add("No RFedAGS run with every agent participating in these experiments.", "")


def _notes(rep: Report, notes: list[str]) -> None:
    if notes:
        rep.add(*notes, "")


def kpca_section(rep: Report, spec: dict) -> None:
    """Federated kPCA on digits: final excess risk and communication per method, per split."""
    exps = [(f, fig) for f, fig in spec["config"].get("figures", {}).items()
            if spec["config"]["datasets"][spec["config"]["experiments"][fig["experiment"]]["dataset"]]["problem"] == "kpca"]
    if not exps:
        return
    rep.add("## Beyond the paper: federated kPCA on digits (St(64, r))", "",
            "Median over seeds of the excess risk after the last round, and the floats communicated "
            "until then (centralised methods communicate nothing).", "")
    for name, fig in exps:
        groups = _groups(spec, fig["experiment"])
        rows = []
        for key, runs in groups.items():
            curve = median_curve(runs)
            floats = float(np.median([t["floats"].iloc[-1] for t in runs]))
            rows.append({"method": method_label(key), "excess risk, last": float(curve.iloc[-1]),
                         "rounds": str(int(curve.index[-1])), "floats communicated": floats})
        rep.add(f"### {fig['title']} (`{fig['experiment']}`)", "")
        rep.table(pd.DataFrame(rows))
        fed = {r["method"]: r["excess risk, last"] for r in rows}
        ags = [v for k, v in fed.items() if k.startswith("RFedAGS") and not k.endswith("K=1")]
        corr = [v for k, v in fed.items() if k.startswith(("RFedSVRG", "RFedProj"))]
        if ags and corr:
            rep.add(f"Drift-corrected methods (RFedSVRG, RFedProj) end at {max(corr):.2e} at worst; "
                    f"RFedAGS with K > 1 at {min(ags):.2e} at best.", "")


def heterogeneity_section(rep: Report, spec: dict) -> None:
    path = spec["tables"].get("heterogeneity")
    if not path or not Path(path).exists():
        return
    t = io.read_table(path)
    rep.add("## Beyond the paper: RFedAGS with heterogeneous agents and partial participation", "",
            "Stationary excess risk (mean over the last rounds, mean over seeds; see "
            "`paper_tables/heterogeneity.md` for every cell). The paper analyses i.i.d. agents with "
            "full participation and names these settings as open directions; there is no claim to "
            "verify, only measurements:", "")
    rows = []
    for problem, sub in t.groupby("problem"):
        full = sub[(sub["method"] == "RFedAGS") & (sub["participation"] == 1)].sort_values("K")
        for method in ("RFedSVRG", "RFedProj"):
            other = sub[sub["method"] == method].sort_values("K")
            if len(full) and len(other):
                kmax = int(full["K"].max())
                rows.append({"problem": problem, "largest K": str(kmax),
                             "RFedAGS (s/S=1)": float(full[full["K"] == kmax]["mean"].iloc[0]),
                             "RFedAGS K=1": float(full[full["K"] == full["K"].min()]["mean"].iloc[0]),
                             f"{method}": float(other[other["K"] == kmax]["mean"].iloc[0]) if kmax in set(other["K"]) else np.nan,
                             "compare": method})
    for r in rows:
        rep.add(f"- {r['problem']}, K = {r['largest K']}: RFedAGS {r['RFedAGS (s/S=1)']:.3g} "
                f"(K = 1: {r['RFedAGS K=1']:.3g}), {r['compare']} {r[r['compare']]:.3g}.")
    for problem, sub in t[t["method"] == "RFedAGS"].groupby("problem"):
        piv = sub.pivot_table(index="K", columns="participation", values="mean")
        rep.add(f"- {problem}, RFedAGS by participation s/S (columns) and K (rows): "
                + "; ".join(f"K={K}: " + ", ".join(f"{c:g}: {v:.3g}" for c, v in row.items())
                            for K, row in piv.iterrows()) + ".")
    rep.add("")


def provenance(spec: dict) -> list[str]:
    metas = [io.read_json(io.run_meta_path(p)) for paths in spec["runs"].values() for p in paths[:1]]
    commits = sorted({m["commit"] for m in metas})
    versions = metas[0]["versions"] if metas else {}
    n_runs = sum(len(v) for v in spec["runs"].values())
    diverged = [p for paths in spec["runs"].values() for p in paths
                if io.read_json(io.run_meta_path(p))["status"] != "ok"]
    files = spec.get("configfiles") or ["config/config.yaml"]
    out = []
    if spec["config"].get("toy_size"):
        out += [f"**Toy size.** `{', '.join(files)}` runs every experiment at toy size to exercise the "
                "workflow: its sizes decide nothing, so every claim below is undecided, with what "
                "its rule gave at toy size. The evidence about the paper is the default config's "
                "report (`config/config.yaml`) or the paper-size one (`config/paper.yaml`).", ""]
    out += [f"- config: {', '.join(f'`{f}`' for f in files)}"
            + (f" (outputs under `{spec['config']['output_dir']}`)" if spec["config"].get("output_dir") else ""),
            f"- runs: {n_runs} ({len(diverged)} diverged"
           + (": " + ", ".join(Path(p).stem for p in diverged[:10]) if diverged else "") + ")",
           f"- code: commit(s) {', '.join(commits)}",
           "- versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())),
           f"- written: {_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds')}"]
    return out


def write_report(spec: dict, out_md) -> None:
    """REPRODUCTION.md from the claims the config declares (``rfl.claims``), and
    ``claims.json`` beside it: one record per judged claim (the HTML report reads it)."""
    from rfl.claims.judge import judge_all, sections, summary

    from .newer_synthetic import newer_synthetic_section
    from .newer_version import newer_version_section
    from .participation import participation_section

    io.check_sampler_versions([p for paths in spec["runs"].values() for p in paths])
    results = judge_all(spec)
    rep = Report()
    kpca_section(rep, spec)
    heterogeneity_section(rep, spec)
    newer_version_section(rep, spec)
    participation_section(rep, spec)
    newer_synthetic_section(rep, spec)
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

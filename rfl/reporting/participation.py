"""REPRODUCTION.md section: RFedAGS under the participation schemes of the authors' newer code.

The authors' RFedAGS with partial participation (``RFedAGSP.m``) has four modes: every agent
(1), Bernoulli joins with estimated-probability weights (2), s agents uniformly without
replacement (3), Bernoulli joins with the true probabilities (4); their MNIST PCA scripts
(``PCAST_MNIST_partial_scheme_fixed.m``, p_i = 0.5 for all 60 agents, s = N/2) plot the
excess risk of modes 1, 3 and 2 against the rounds and the CPU time. The section reads every
experiment of the config whose methods use a participation scheme given as a mapping
(``participation: {scheme: ...}``) and judges, from the run tables only:

* the ordering the figures show: every agent in every round reaches the lowest excess-risk
  level (median over the last 10% of rounds of the median over seeds, ``plateau``): at or
  below every partial scheme's;
* (a measurement, no claim of the authors) whether each partial scheme's level decreases as
  its expected share of agents per round (rho, or s/S) grows, across the experiments.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd

from .figures import method_key, method_label
from .reproduction import PARTLY, REPRODUCED, Report, _verdict, median_curve, plateau

#: the authors' names of the schemes in their legends
AUTHORS_NAMES = {"full": "full", "uniform": "sampling", "bernoulli_estimated": "estimating",
                 "bernoulli": "true probabilities"}


def scheme_experiments(config: dict) -> list[str]:
    """Experiments with at least one method whose participation is a scheme mapping."""
    return [e for e, x in config.get("experiments", {}).items()
            if any(isinstance(m.get("participation"), dict) for m in x.get("methods", []))]


def _scheme_of(algorithm: dict, n_agents: int) -> tuple[str | None, float]:
    """(scheme name or None for every agent, expected share of agents per round)."""
    p = algorithm.get("participation")
    if p is None:
        return None, 1.0
    if isinstance(p, int):
        return "uniform", p / n_agents
    if p.get("probabilities") is not None:
        return p["scheme"], float(np.mean(p["probabilities"]))
    return p["scheme"], float(p["rho"])


def levels(spec: dict, experiment: str) -> pd.DataFrame:
    """One row per method (algorithm, K, scheme) of ``experiment``: its legend label, scheme
    (None: every agent), expected share of agents per round, level (``plateau`` of the median
    curve over seeds) and number of seeds."""
    from rfl import io
    from rfl.participation import tag
    groups, specs = defaultdict(list), {}
    for path in spec["runs"].get(experiment, []):
        table, meta = io.read_run_table(path)
        a = meta["spec"]["algorithm"]
        key = (a["name"], a.get("K"), tag(a.get("participation")))
        groups[key].append(table)
        specs[key] = meta["spec"]
    rows = []
    for key, runs in groups.items():
        s = specs[key]
        params = s["dataset"].get("params", {})
        S = params.get("S") or params.get("n_agents") or 1
        scheme, share = _scheme_of(s["algorithm"], S)
        rows.append({"method": method_label(method_key(s["algorithm"])), "algorithm": key[0], "K": key[1],
                     "scheme": scheme, "share": share, "plateau": plateau(median_curve(runs)),
                     "seeds": len(runs)})
    return pd.DataFrame(rows)


def participation_section(rep: Report, spec: dict) -> None:
    exps = scheme_experiments(spec["config"])
    if not exps:
        return
    rep.add("## Beyond the first version: RFedAGS under the participation schemes of the authors' newer code", "",
            "The schemes of `RFedAGSP.m`: every agent (`full`), s agents uniformly (`uniform`, their "
            "'sampling'), Bernoulli joins weighted by the estimated probability (`bernoulli_estimated`, "
            "'estimating') or by the true one (`bernoulli`, unbiased). Level: median over the last 10% "
            "of rounds of the median excess risk over seeds.", "")
    ordered, n_missing = 0, 0
    by_scheme = defaultdict(list)                  # scheme -> [(share, level)]
    for e in exps:
        t = levels(spec, e)
        if t.empty:
            rep.add(f"- `{e}`: no runs.", "")
            n_missing += 1
            continue
        name = [s if isinstance(s, str) else "full" for s in t["scheme"]]
        show = t.assign(scheme=name, authors=[AUTHORS_NAMES.get(s, "") for s in name],
                        order=[list(AUTHORS_NAMES).index(s) if s in AUTHORS_NAMES else 9 for s in name])
        show = show.sort_values(["order", "share"])
        rep.add(f"### `{e}`", "")
        rep.table(show[["method", "scheme", "authors", "share", "plateau"]].rename(
            columns={"share": "expected share of agents", "plateau": "excess risk, level"}))
        full = t[t["scheme"].isna()]
        partial = t[t["scheme"].notna()]
        for _, r in partial.iterrows():
            by_scheme[r["scheme"]].append((r["share"], r["plateau"]))
        if full.empty or partial.empty:
            n_missing += 1
            continue
        best_full = float(full["plateau"].min())
        ok = bool(np.all(best_full <= partial["plateau"].values))
        ordered += ok
        rep.add(f"Every agent: {best_full:.3g}; partial schemes from {partial['plateau'].min():.3g} "
                f"to {partial['plateau'].max():.3g} ({'full lowest' if ok else 'a partial scheme below full'}).", "")
    rep.add("### Claim: every agent in every round reaches the lowest excess risk (the ordering of the "
            "authors' participation figures)", "")
    rep.verdict("Participation schemes", "full participation lowest, partial schemes above",
                _verdict(ordered, len(exps), n_missing),
                "in each scheme experiment, the level with every agent is at or below the level of "
                "every partial scheme")
    lines = []
    for scheme, pts in sorted(by_scheme.items()):
        pts = sorted(pts)
        if len({s for s, _ in pts}) < 2:
            continue
        mono = all(b[1] < a[1] for a, b in zip(pts, pts[1:]))
        lines.append(f"- {scheme}: " + ", ".join(f"share {s:g}: {v:.3g}" for s, v in pts)
                     + (" (decreasing in the share)" if mono else " (not monotone in the share)"))
    if lines:
        rep.add("Measured (no claim of the authors): the level of each partial scheme against its "
                "expected share of agents per round:", "", *lines, "")

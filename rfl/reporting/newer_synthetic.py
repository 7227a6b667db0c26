"""REPRODUCTION.md section for the authors' newer synthetic experiments: low-rank matrix
completion on the Grassmann manifold (their ``LRMCGrass_Syn``) and PCA on the Stiefel manifold
(their ``PCAStief_Syn`` studies). Reads result files only (run tables and their metadata).

Which experiments belong where is read off the config: LRMC experiments are those whose
dataset's problem is ``lrmc``; the PCA studies are the experiments on ``pca_stiefel`` datasets,
grouped by name prefix (``STUDIES``): ``pca_stiefel_agents_*`` (the number of agents S grows),
``pca_stiefel_datasize_*`` (the local size N), ``pca_stiefel_dim_*`` (the dimension (d, r)) and
``pca_stiefel_ags_vs_tm*`` (RFedAGS against RFedAvg, the tangent-mean aggregation).

The scripts come without the paper's text, so the claims are those their figures are drawn
to show: a linear rate to a plateau with a fixed step (every curve), a lower plateau with more
agents and with more local data (their legends order the curves by S and by N), convergence
whatever the dimension, and RFedAGS against the tangent mean (final level and speed).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .figures import load_runs, method_label
from .reproduction import (
    INSUFFICIENT,
    LINEAR_RULE,
    NOT,
    PARTLY,
    REPRODUCED,
    Report,
    _last,
    _notes,
    _rfedags,
    _verdict,
    faster_in_k,
    fit_note,
    is_linear,
    linear_phase,
    median_curve,
    plateau,
    seed_note,
)

#: name prefix -> (study, the dataset parameter(s) that grow)
STUDIES = {"pca_stiefel_agents": ("agents", ("S",)), "pca_stiefel_datasize": ("datasize", ("N",)),
           "pca_stiefel_dim": ("dim", ("d", "r")), "pca_stiefel_ags_vs_tm": ("ags_vs_tm", ())}
#: a curve has levelled off when the median of its last 10% of rounds is within this factor of
#: the median of the 10% before (otherwise its last level only bounds its plateau from above)
LEVEL_FACTOR = 1.2
#: "at least as low": RFedAGS's final level at most this factor times RFedAvg's
AS_LOW = 1.1
#: the relative error of the completion at the last round is "non-increasing in K" up to this factor
REL_TOL = 1.05


def _experiments(spec: dict, problem: str) -> list[str]:
    cfg = spec["config"]
    return [e for e, ex in cfg.get("experiments", {}).items()
            if cfg.get("datasets", {}).get(ex.get("dataset"), {}).get("problem") == problem]


def levelled(curve: pd.Series) -> bool:
    """Whether ``curve`` has levelled off: median of its last 10% of rounds (at least 3) within
    LEVEL_FACTOR of the median of the 10% before them; False with fewer than 6 values."""
    c = curve.dropna()
    n = max(3, len(c) // 10)
    if len(c) < 2 * n:
        return False
    last, before = float(c.iloc[-n:].median()), float(c.iloc[-2 * n:-n].median())
    return bool(np.isfinite(last) and np.isfinite(before) and before <= LEVEL_FACTOR * last)


def ordering(levels: list[float]) -> str:
    """Levels in increasing order of the growing parameter: reproduced if non-increasing, partly
    if only the last is below the first, not reproduced otherwise; insufficient data with fewer
    than two levels or a level that is not finite."""
    if len(levels) < 2 or not all(np.isfinite(levels)):
        return INSUFFICIENT
    if all(a >= b for a, b in zip(levels, levels[1:])):
        return REPRODUCED
    return PARTLY if levels[-1] < levels[0] else NOT


def ordering_with_bounds(levels: list[float], exact: list[bool]) -> str:
    """As ``ordering`` when every level is ``exact`` (a levelled-off plateau). A level that is
    not exact is the last level of a curve still decreasing: an upper bound of its plateau.
    Then the claim (non-increasing levels) is certainly broken if an exact level lies above a
    level (exact or bound) before it: not reproduced (partly if the last level, exact or a
    bound, lies below an exact first level); otherwise it cannot be decided: insufficient data."""
    if len(levels) < 2 or not all(np.isfinite(levels)):
        return INSUFFICIENT
    if all(exact):
        return ordering(levels)
    broken = any(exact[j] and levels[j] > levels[i] for j in range(len(levels)) for i in range(j))
    if not broken:
        return INSUFFICIENT
    return PARTLY if exact[0] and levels[-1] < levels[0] else NOT


def _first_below(curve: pd.Series, level: float) -> float:
    """The first round at which ``curve`` is strictly below ``level`` (NaN if never): a curve
    that never leaves its start does not reach a level equal to it."""
    hit = np.nonzero(curve.values < level)[0]
    return float(curve.index[hit[0]]) if len(hit) else np.nan


def ags_vs_tm(ags: pd.Series, tm: pd.Series) -> tuple[str, str, dict]:
    """(final-level verdict, speed verdict, numbers) of RFedAGS (``ags``) against the tangent
    mean (``tm``), median excess-risk curves. Final level: reproduced if RFedAGS's plateau is at
    most AS_LOW times RFedAvg's. Speed: the level is the geometric mean of the common start and
    the higher plateau; reproduced if RFedAGS gets below it in fewer rounds, partly in as many, not
    reproduced in more or never. Insufficient data without a finite value on either side."""
    pa, pt = plateau(ags.dropna()) if ags.notna().any() else np.nan, \
        plateau(tm.dropna()) if tm.notna().any() else np.nan
    start = min(_last(ags.iloc[:1]), _last(tm.iloc[:1]))
    numbers = {"RFedAGS plateau": pa, "RFedAvg plateau": pt}
    if not (np.isfinite(pa) and np.isfinite(pt) and np.isfinite(start)):
        return INSUFFICIENT, INSUFFICIENT, {**numbers, "level": np.nan,
                                            "RFedAGS rounds": np.nan, "RFedAvg rounds": np.nan}
    final = REPRODUCED if pa <= AS_LOW * pt else NOT
    level = float(np.sqrt(start * max(pa, pt)))
    ta, tt = _first_below(ags, level), _first_below(tm, level)
    if not np.isfinite(ta):
        speed = NOT
    elif not np.isfinite(tt) or ta < tt:
        speed = REPRODUCED
    else:
        speed = PARTLY if ta == tt else NOT
    return final, speed, {**numbers, "level": level, "RFedAGS rounds": ta, "RFedAvg rounds": tt}


# ---- LRMC ---------------------------------------------------------------------------------------
def lrmc_section(rep: Report, spec: dict) -> None:
    for experiment in _experiments(spec, "lrmc"):
        groups = load_runs(spec["runs"].get(experiment, []))
        if not groups:
            continue
        rep.add(f"## Newer experiments: low-rank matrix completion on Gr(r, m), synthetic (`{experiment}`)", "",
                "The authors' `LRMCGrass_Syn`. Median over seeds, every method of the experiment; "
                "test RMSE held out (w fitted on a column's training entries, scored on its test "
                "entries) and refitted (the authors' `RMSE`: w refitted on the test entries).", "")
        rows = []
        for key, runs in groups.items():
            curve = median_curve(runs)
            fit = linear_phase(curve)
            row = {"method": method_label(key), "contraction/round": fit["rate"], "R^2": fit["r2"],
                   "excess risk, last": _last(curve)}
            # (an lrmc run table always has these columns: ``rfl.io.read_run_table`` checks them)
            for col in ("rel_error", "test_rmse", "test_rmse_refit"):
                row[f"{col}, last"] = _last(median_curve(runs, col))
            rows.append(row)
        rep.table(pd.DataFrame(rows))
        full = _rfedags(groups)
        ok = missing = 0
        notes, rates, rel = [], [], []
        for K, runs in sorted(full.items()):
            curve = median_curve(runs)
            fit = linear_phase(curve)
            ok += is_linear(fit)
            missing += fit["status"] == "insufficient"
            notes += [n for n in (seed_note(K, runs), fit_note(K, fit)) if n]
            if fit["status"] != "insufficient":
                rates.append(np.inf if fit["status"] == "diverged" else fit["rate"])
            rel.append(_last(median_curve(runs, "rel_error")))
        _notes(rep, notes)
        where = "LRMCGrass_Syn"
        rep.verdict(where, "linear convergence (every agent)", _verdict(ok, len(full), missing), LINEAR_RULE)
        rep.verdict(where, "larger K faster", faster_in_k(rates),
                    "the fitted contraction factor is non-increasing in K (partly: only the largest "
                    "K beats the smallest; insufficient data with fewer than two K)")
        rep.verdict(where, "larger K, smaller relative error", rel_error_in_k(rel),
                    f"the median relative error ||U W^T - M|| / ||M|| (Frobenius norms) at the last round is "
                    f"non-increasing in K up to a factor {REL_TOL:g} (partly: only the largest K "
                    f"below the smallest)")


def rel_error_in_k(values: list[float]) -> str:
    """Final relative errors in increasing K: reproduced if each is at most REL_TOL times the one
    before, partly if only the last is below the first; insufficient data with fewer than two
    finite values."""
    if len(values) < 2 or not all(np.isfinite(values)):
        return INSUFFICIENT
    if all(b <= REL_TOL * a for a, b in zip(values, values[1:])):
        return REPRODUCED
    return PARTLY if values[-1] < values[0] else NOT


# ---- PCA on the Stiefel manifold -----------------------------------------------------------------
def _study_experiments(spec: dict) -> dict[str, list[tuple[tuple, str]]]:
    """study -> [(value of the growing parameter(s), experiment)] sorted by that value."""
    cfg = spec["config"]
    out: dict[str, list] = {}
    for e in _experiments(spec, "pca_stiefel"):
        for prefix, (study, keys) in STUDIES.items():       # (no name starts with two prefixes)
            if e.startswith(prefix):
                params = cfg["datasets"][cfg["experiments"][e]["dataset"]]["params"]
                out.setdefault(study, []).append((tuple(params[k] for k in keys), e))
    return {s: sorted(v) for s, v in out.items()}


def _growth_study(rep: Report, spec: dict, study: str, items: list, label: str, claim: str | None) -> None:
    rows, levels, exact, ok, n, missing, notes = [], [], [], 0, 0, 0, []
    for value, experiment in items:
        runs = _rfedags(load_runs(spec["runs"].get(experiment, [])))
        if not runs:
            continue
        K = min(runs)
        curve = median_curve(runs[K])
        fit = linear_phase(curve)
        flat = levelled(curve)
        n += 1
        ok += is_linear(fit)
        missing += fit["status"] == "insufficient"
        notes += [x for x in (seed_note(K, runs[K]), fit_note(K, fit)) if x]
        if not flat:
            notes.append(f"- {label} = {', '.join(map(str, value))}: still decreasing at the last round "
                         f"(its last level bounds its plateau from above).")
        levels.append(fit["plateau"])
        exact.append(flat)
        t0 = runs[K][0].iloc[0]
        f_star = float(t0["cost"] - t0["excess_risk"])          # every run of a dataset shares F*
        rows.append({label: ", ".join(map(str, value)), "experiment": experiment, "K": str(K),
                     "contraction/round": fit["rate"], "R^2": fit["r2"], "excess risk, first": fit["start"],
                     "plateau": fit["plateau"], "plateau / abs(F*)": fit["plateau"] / abs(f_star) if f_star else np.nan,
                     "levelled off": "yes" if flat else "no"})
    if not rows:
        return
    rep.table(pd.DataFrame(rows))
    _notes(rep, notes)
    where = f"PCAStief_Syn ({study})"
    rep.verdict(where, "linear rate with a fixed step", _verdict(ok, n, missing), LINEAR_RULE)
    if claim:
        rep.verdict(where, claim, ordering_with_bounds(levels, exact),
                    f"the plateau (median excess risk over the last 10% of rounds) is non-increasing "
                    f"as {label} grows (partly: only the largest {label} below the smallest). A curve "
                    f"not levelled off (its last 10% of rounds more than {LEVEL_FACTOR:g}x below the "
                    f"10% before) gives only an upper bound of its plateau: not reproduced if a "
                    f"levelled-off plateau lies above the level of a smaller {label} all the same, "
                    f"insufficient data if the bounds leave the order open")


def pca_section(rep: Report, spec: dict) -> None:
    studies = _study_experiments(spec)
    if not studies:
        return
    rep.add("## Newer experiments: PCA on St(d, r), synthetic (the authors' `PCAStief_Syn`)", "",
            "Excess risk F(x_t) - F(x*) of RFedAGS (x* in closed form; our cost is half the authors', "
            "so is the gap). Agent rows have growing scales (blocks of rows scaled by b / n_blocks), "
            "so a study's datasets differ in more than the parameter that grows: more agents or more "
            "local rows also add rows of larger scale, as in the authors' scripts.", "")
    for study, label, claim in (("agents", "S", "more agents, lower plateau"),
                                ("datasize", "N", "more local data, lower plateau"),
                                ("dim", "(d, r)", None)):
        if study in studies:
            rep.add(f"### Study: {label} grows (`pca_stiefel_{study}_*`)", "")
            _growth_study(rep, spec, study, studies[study], label, claim)
    for _, experiment in studies.get("ags_vs_tm", []):
        groups = load_runs(spec["runs"].get(experiment, []))
        ags = [v for k, v in groups.items() if k[0] == "rfedags"]
        tm = [v for k, v in groups.items() if k[0] == "rfedavg"]
        if not (ags and tm):
            continue
        rep.add(f"### RFedAGS against the tangent mean (`{experiment}`)", "",
                "RFedAvg aggregates the agents' last local points by their tangent mean "
                "R_x(mean_j R_x^{-1}(x_j)) (inverse polar retraction); RFedAGS averages the "
                "transported gradient streams.", "")
        final, speed, numbers = ags_vs_tm(median_curve(ags[0]), median_curve(tm[0]))
        rep.table(pd.DataFrame([numbers]))
        where = "PCAStief_Syn (AGS vs TM)"
        rep.verdict(where, "RFedAGS ends at least as low as the tangent mean", final,
                    f"RFedAGS's plateau (median excess risk over the last 10% of rounds) is at most "
                    f"{AS_LOW:g}x RFedAvg's")
        rep.verdict(where, "RFedAGS faster than the tangent mean", speed,
                    "rounds to reach the geometric mean of the start and the higher plateau: fewer "
                    "for RFedAGS (partly: as many)")


def newer_synthetic_section(rep: Report, spec: dict) -> None:
    """Both parts, LRMC first (``write_report`` calls this once)."""
    lrmc_section(rep, spec)
    pca_section(rep, spec)

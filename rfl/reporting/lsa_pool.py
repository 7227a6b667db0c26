"""Verdicts of the federated TD(0) study with the stochastic pool oracle (REPRODUCTION.md).

FedLSA's plateau. Each pool-oracle run records FedLSA's exact stationary E||theta - theta*||^2
for its pool, B, eta and H (``FederatedLSA.fedlsa_stationary_pool``: bias^2 + variance of the
mini-batch noise). The measured plateau is the mean over the plateau window of the seed-mean
curve, an average over S independent seeds, so it is judged by its Monte Carlo standard error
se = sd(seeds' window means) / sqrt(S) (``rfl.reporting.lsa.plateau_se``): a cell agrees when
|measured - predicted| <= t_S se, t_S the two-sided 99% quantile of Student's t with S - 1
degrees of freedom (se is itself estimated from S values), and the start is forgotten by the
window (``transient``: initial error x contraction^round <= se).

SCAFFLSA. Where the predicted bias^2 is at least the predicted variance (removing the bias at
least halves FedLSA's error), SCAFFLSA improves on FedLSA when its plateau (same window) lies
below FedLSA's by more than t se_diff, se_diff = sqrt(se_FedLSA^2 + se_SCAFFLSA^2), t with the
smaller seed count. Where the variance dominates, no improvement is claimed (SCAFFLSA's control
variates remove the bias, not the noise).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

LEVEL = 0.99          # two-sided level of the t-tolerance


def t_quantile(seeds: float) -> float:
    """Two-sided ``LEVEL`` quantile of Student's t with seeds - 1 degrees of freedom (NaN < 2)."""
    return float(stats.t.ppf(0.5 + LEVEL / 2, seeds - 1))     # NaN for seeds - 1 <= 0


def plateau_checks(t: pd.DataFrame) -> pd.DataFrame:
    """Per pool-oracle row: tolerance ``tol`` = t_S se, ``agrees``, ``judged`` (a prediction, a
    finite plateau and a standard error)."""
    tol = np.array([t_quantile(s) for s in t["fedlsa_seeds"]]) * t["fedlsa_plateau_se"].to_numpy()
    err = (t["fedlsa_plateau"] - t["predicted_plateau"]).abs().to_numpy()
    judged = np.isfinite(tol) & np.isfinite(err)
    agrees = judged & (err <= tol) & (t["transient"].to_numpy() <= t["fedlsa_plateau_se"].to_numpy())
    return pd.DataFrame({"tol": tol, "agrees": agrees, "judged": judged}, index=t.index)


def scafflsa_checks(t: pd.DataFrame) -> pd.DataFrame:
    """Per pool-oracle row: ``bias_dominates`` (pred. bias^2 >= pred. variance), the margin
    t se_diff, ``improves`` (SCAFFLSA's plateau below FedLSA's by more than it), ``judged``."""
    seeds = np.minimum(t["fedlsa_seeds"], t["scafflsa_seeds"])
    se = np.hypot(t["fedlsa_plateau_se"], t["scafflsa_plateau_se"]).to_numpy()
    margin = np.array([t_quantile(s) for s in seeds]) * se
    gap = (t["fedlsa_plateau"] - t["scafflsa_plateau"]).to_numpy()
    judged = np.isfinite(margin) & np.isfinite(gap)
    return pd.DataFrame({"bias_dominates": (t["predicted_bias_sq_pool"] >= t["predicted_variance"]).to_numpy(),
                         "margin": margin, "improves": judged & (gap > margin), "judged": judged},
                        index=t.index)


def still(r) -> str:
    """A note when SCAFFLSA's curve still falls over the window (start / last > 1 + 3 se / last)."""
    last = r["scafflsa_last"]
    if last > 0 and r["scafflsa_window_ratio"] - 1 > 3 * r["scafflsa_plateau_se"] / last:
        return " (still decreasing: more rounds would lower it)"
    return ""


def pool_section(rep, t: pd.DataFrame, verdict) -> None:
    """The pool-oracle rows of the LSA table ``t``: the table, FedLSA's plateau verdict and the
    SCAFFLSA verdict (``verdict(n_ok, n, n_missing)``, ``rep`` a reproduction Report)."""
    from .lsa import display_pool

    t = t[t["oracle"] == "pool"]
    if t.empty:
        return
    Bs = ", ".join(str(b) for b in sorted(set(t["batch_size"])))
    rep.add("### Stochastic pool oracle: FedLSA's plateau = its exact stationary error", "",
            f"Every local step draws B = {Bs} distinct transitions of the agent's pool. The "
            "prediction is FedLSA's exact stationary E||theta - theta*||^2 for that pool, B, eta "
            "and H (bias^2 + variance; the pool's finite-population moments propagated through H "
            "local steps and the averaging, `FederatedLSA.fedlsa_stationary_pool`). The measured "
            "plateau is the mean over the plateau window of the seed-mean curve; se is the "
            "standard deviation of the seeds' window means / sqrt(seeds); z = (measured - "
            "predicted) / se.", "")
    rep.table(display_pool(t))
    rep.add("")
    pc = plateau_checks(t)
    for i, r in t.iterrows():
        c = pc.loc[i]
        if not c["judged"]:
            rep.add(f"- {r['setting']}, N = {r['N']}, H = {r['H']}: no prediction, plateau or "
                    "standard error (insufficient data).")
        elif not c["agrees"]:
            why = (f"|measured - predicted| = {abs(r['fedlsa_plateau'] - r['predicted_plateau']):.3g} > "
                   f"{c['tol']:.3g}" if abs(r["fedlsa_plateau"] - r["predicted_plateau"]) > c["tol"]
                   else f"the start is not forgotten (transient {r['transient']:.3g} > se)")
            rep.add(f"- {r['setting']}, N = {r['N']}, H = {r['H']}: disagrees, {why}.")
    n_ok, n_missing = int(pc["agrees"].sum()), int((~pc["judged"]).sum())
    rep.add(f"{n_ok} of {len(t)} cells agree (largest |z| = {np.nanmax(np.abs(t['z'])):.2f}).", "")
    rep.verdict("FedLSA / TD(0), pool oracle", "FedLSA plateau = exact stationary error",
                verdict(n_ok, len(t), n_missing),
                f"every (setting, N, eta, H): |measured - predicted| <= t se with t the two-sided "
                f"{LEVEL:.0%} Student quantile for (seeds - 1) degrees of freedom, and the "
                f"predicted transient at the window's start <= se")

    sc = scafflsa_checks(t)
    dom = t[sc["bias_dominates"]]
    rep.add("### Stochastic pool oracle: SCAFFLSA improves on FedLSA where the bias dominates", "")
    if dom.empty:
        rep.add("No cell has a predicted bias^2 at least its predicted variance.", "")
    for i, r in dom.iterrows():
        c = sc.loc[i]
        factor = r["fedlsa_plateau"] / r["scafflsa_plateau"] if r["scafflsa_plateau"] > 0 else np.inf
        rep.add(f"- {r['setting']}, N = {r['N']}, H = {r['H']}: bias^2 {r['predicted_bias_sq_pool']:.3g} vs "
                f"variance {r['predicted_variance']:.3g}; FedLSA {r['fedlsa_plateau']:.4g}, SCAFFLSA "
                f"{r['scafflsa_plateau']:.4g} over the same window{still(r)} (factor {factor:.3g}, "
                f"margin {c['margin']:.2g}): "
                + ("improves" if c["improves"] else "no significant improvement" if c["judged"]
                   else "insufficient data") + ".")
    rep.add("")
    d = sc.loc[dom.index]
    rep.verdict("SCAFFLSA / TD(0), pool oracle", "SCAFFLSA improves on FedLSA where the bias dominates",
                verdict(int(d["improves"].sum()), len(dom), int((~d["judged"]).sum())),
                "cells with predicted bias^2 >= predicted variance: SCAFFLSA's plateau is below "
                "FedLSA's by more than t sqrt(se_FedLSA^2 + se_SCAFFLSA^2) (t as above)")

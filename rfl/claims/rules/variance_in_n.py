"""``variance_in_n``: linear speed-up, the variance term of FedLSA's and SCAFFLSA's stationary
error E||theta - theta*||^2 falls as 1/N with the number of agents N (Mangold et al., SCAFFLSA,
NeurIPS 2024; slides "Analysis of FedLSA" and "SCAFFLSA": the variance term is O(eta sigma^2 / N)).

Read from the LSA study's table (stochastic pool oracle, ``rfl.claims.lsa_cells``): per
algorithm, setting, eta and H, the cells at the two numbers of agents N_small < N_large. Measured
variance: FedLSA's plateau minus its predicted bias^2 (``predicted_bias_sq_pool``, exact for the
agents' pools); SCAFFLSA's plateau (SCAFFLSA is unbiased). Each with its seed standard error se.
Ratio r = v(N_small) / v(N_large), expected N_large / N_small, with the uncertainty
u = r sqrt((se_s / v_s)^2 + (se_l / v_l)^2). A case holds when [r - z u, r + z u] lies within
[expected / factor, expected x factor], fails when it lies outside, is undecided otherwise, with
the seeds that would bring u below the margin / z (u falls as 1/sqrt(seeds)).

A cell with replicas (``replicas`` in the study's table, ``rfl.reporting.lsa``) is compared with
the cell of the same replicas at the other N; its se is across its replicas x seeds (independent
chains), so it resolves the ratio at a cost per chain, not per seed.

A cell counts only once its start is forgotten: FedLSA's ``transient`` (initial x contraction
at the window's start) at most se; SCAFFLSA, which records no contraction: the further fall its
late per-round rate ``scafflsa_rate`` predicts over another run of the same length,
plateau (1 - rate^rounds), at most z se. Otherwise the case is undecided (more rounds). A cell
with replicas, whose se is far below one round's noise (so a rate read from two rounds of the
curve says nothing), counts when, besides FedLSA's transient, the drift of its window (mean of
the curve's second half minus its first half, ``rfl.reporting.lsa``) is at most z 2 se (each
half's mean has about sqrt(2) se: their difference about 2 se).
"""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..lsa_cells import cells, no_table
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, UNDECIDED, combine

ALGORITHMS = ("FedLSA", "SCAFFLSA")


def variance(r, algorithm: str) -> tuple[float, float]:
    """(measured variance, its standard error) of one cell."""
    if algorithm == "FedLSA":
        return float(r["fedlsa_plateau"] - r["predicted_bias_sq_pool"]), float(r["fedlsa_plateau_se"])
    return float(r["scafflsa_plateau"]), float(r["scafflsa_plateau_se"])


def stationary(r, algorithm: str, z: float) -> bool:
    """Whether the cell's curve has forgotten its start (module docstring)."""
    v, se = variance(r, algorithm)
    if r.get("replicas", 0):
        drift = float(r[("fedlsa" if algorithm == "FedLSA" else "scafflsa") + "_drift"])
        flat = bool(np.isfinite(drift) and abs(drift) <= z * 2 * se)
        if algorithm == "FedLSA":
            return flat and bool(np.isfinite(r["transient"]) and r["transient"] <= se)
        return flat
    if algorithm == "FedLSA":
        return bool(np.isfinite(r["transient"]) and r["transient"] <= se)
    rate = float(r["scafflsa_rate"])
    if not np.isfinite(rate):
        return False
    fall = float(r["scafflsa_plateau"]) * (1 - min(rate, 1.0) ** float(r["rounds"]))
    return bool(fall <= z * se)


def ratio(small: tuple, large: tuple) -> tuple[float, float]:
    """(r, u_r) of two (variance, se)."""
    (vs, ss), (vl, sl) = small, large
    r = vs / vl
    return r, abs(r) * float(np.hypot(ss / vs, sl / vl))


def outcome(r: float, u: float, expected: float, factor: float, z: float) -> str:
    lo, hi = r - z * u, r + z * u
    if expected / factor <= lo and hi <= expected * factor:
        return OK
    return FAIL if hi < expected / factor or lo > expected * factor else OPEN


class VarianceInN(Rule):
    name = "variance_in_n"
    summary = "FedLSA's and SCAFFLSA's variance term falls as 1/N (linear speed-up)"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "factor": {"type": "number", "exclusiveMinimum": 1, "default": 1.5,
                   "description": "the ratio v(N_small)/v(N_large) within [N_l/N_s / factor, N_l/N_s x factor]"},
        "z": {"type": "number", "minimum": 0, "default": 2.0}}}

    def describe(self, p: dict) -> str:
        return (f"per algorithm (FedLSA: plateau - predicted bias^2; SCAFFLSA: plateau), setting, eta "
                f"and H: the variance at the smaller N over that at the larger N lies within a factor "
                f"{p['factor']:g} of N_large / N_small, {p['z']:g} uncertainties included; a cell whose "
                f"start is not forgotten, or an interval straddling a bound, is undecided")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        t = cells(ev)
        if t is None or t.empty:
            return no_table(UNDECIDED)
        t = t[t["oracle"] == "pool"]
        rows, notes, cases, decide, margins = [], [], [], [], []
        keys = ["setting", "eta", "H"] + (["replicas"] if "replicas" in t else [])
        for key, g in t.groupby(keys, sort=False):
            setting, eta, H = key[:3]
            reps = int(key[3]) if len(key) > 3 else 0
            Ns = sorted(g["N"].unique())
            if len(Ns) < 2:
                continue
            small, large = (g[g["N"] == Ns[0]].iloc[0], g[g["N"] == Ns[-1]].iloc[0])
            expected = Ns[-1] / Ns[0]
            claim = S.Claim("ratio", low=expected / p["factor"], high=expected * p["factor"])
            for alg in ALGORITHMS:
                where = f"{alg}, {setting}, eta = {eta:g}, H = {int(H)}" + (
                    f", {reps} replicas per seed" if reps else "")
                vs, vl = variance(small, alg), variance(large, alg)
                row = {"algorithm": alg, "setting": setting, "eta": float(eta), "H": int(H),
                       f"variance N={int(Ns[0])}": vs[0], "se small": vs[1],
                       f"variance N={int(Ns[-1])}": vl[0], "se large": vl[1],
                       "ratio": np.nan, "uncertainty": np.nan, "expected": expected}
                rows.append(row)
                late = [n for n, c in ((Ns[0], small), (Ns[-1], large)) if not stationary(c, alg, p["z"])]
                positive = vs[0] > 0 and vl[0] > 0 and np.isfinite(vs[1]) and np.isfinite(vl[1])
                if positive:
                    r, u = ratio(vs, vl)
                    margins.append(S.value_margin("ratio", r, claim, u, p["z"], label=where)
                                   + (f" (start not forgotten at N = {', '.join(str(int(n)) for n in late)})"
                                      if late else ""))
                else:
                    margins.append("; ".join(
                        S.value_margin(f"variance N={int(n)}", v[0], S.Claim("", low=0, strict=True),
                                       v[1], p["z"], label=where) for n, v in ((Ns[0], vs), (Ns[-1], vl))))
                if late:
                    cases.append(OPEN)
                    notes.append(f"- {where}: start not forgotten at N = {', '.join(str(int(n)) for n in late)}.")
                    decide.append(f"{where}: more rounds at N = {', '.join(str(int(n)) for n in late)}")
                    continue
                if not positive:
                    cases.append(OPEN)
                    notes.append(f"- {where}: a variance not positive or without standard error "
                                 f"({vs[0]:.3g}, {vl[0]:.3g}).")
                    decide.append(f"{where}: more seeds (variance {vs[0]:.3g} +- {vs[1]:.2g} at "
                                  f"N = {int(Ns[0])}, {vl[0]:.3g} +- {vl[1]:.2g} at N = {int(Ns[-1])})")
                    continue
                row.update(ratio=r, uncertainty=u)
                case = outcome(r, u, expected, p["factor"], p["z"])
                cases.append(case)
                notes.append(f"- {where}: ratio {r:.3g} +- {u:.2g} (expected {expected:g}).")
                if case == OPEN:
                    margin = min(abs(r - expected / p["factor"]), abs(r - expected * p["factor"]))
                    need = (u * p["z"] / margin) ** 2 if margin > 0 else np.inf
                    seeds = int(max(small["fedlsa_seeds"], 1))
                    what = (f"the replicas x seeds ({reps} x {seeds} now)" if reps
                            else f"the seeds ({seeds} now)")
                    decide.append(f"{where}: about {need:.1f}x {what} to bring the "
                                  f"ratio's uncertainty below {margin / p['z']:.2g}")
        if not cases:
            most = max((g["N"].nunique() for _, g in t.groupby(keys)), default=0)
            return Judgement(UNDECIDED, rows, ["No cell at two numbers of agents."],
                             "cells of one setting, eta and H at two numbers of agents N",
                             S.value_margin("numbers of agents N per (setting, eta, H)", most,
                                            S.Claim("", low=2)))
        verdict = combine(cases)
        return Judgement(verdict, rows, notes, "; ".join(decide) if OPEN in cases else None,
                         S.margin_line(margins))

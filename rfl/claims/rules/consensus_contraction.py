"""``consensus_contraction``: the agents' disagreement contracts per round by sigma_2(W)^t
(Chen, Garcia, Hong, Shahrampour, ICML 2021: the consensus analysis on St(d, r) is stated in
sigma_2(W), the multi-step consensus W^t contracting as sigma_2^t; near consensus the
Riemannian consensus step linearises to the Euclidean mixing x <- W^t x, whose disagreement
falls by exactly the second largest singular value per step for a symmetric W).

Per experiment (one graph and weight rule each) and seed, the consensus error's log-linear
phase is fitted (``rfl.claims.curves.seed_rate``: from its escape from the initial transient
to before its rounding floor) and its log-contraction per round divided by log(sigma_2(W)^t),
the run table's ``sigma2_t`` (the strategy records it): 1 when the measured contraction is
sigma_2^t, above 1 when faster, below when slower. Across seeds, a Student-t interval of that
ratio (``rfl.claims.stats``): holds when it lies within [1 - tolerance, 1 + tolerance], fails
when wholly outside. A graph with sigma_2(W) = 0 (the complete graph with Metropolis weights)
reaches consensus in finitely many steps: nothing to fit, left out with a note. So one claim
over several graphs checks the contraction against sigma_2(W) across them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import stats as S
from ..curves import seed_rate
from ..rule import Evidence, Judgement, Rule
from ._shared import judgement


def seed_ratio(table: pd.DataFrame, metric: str = "consensus_error") -> tuple[float, str]:
    """(log-contraction per round of the fitted linear phase / log(sigma2_t), status) of one
    run table; NaN with the fit's status when there is no linear phase, or with "sigma2 = 0"
    when the predicted contraction is 0 (or the table lacks ``sigma2_t``)."""
    if "sigma2_t" not in table or not table["sigma2_t"].notna().any():
        return np.nan, "no sigma2_t column"
    predicted = float(table["sigma2_t"].dropna().iloc[-1])
    if not 0 < predicted < 1:
        return np.nan, f"sigma2^t = {predicted:g}"
    fit = seed_rate(S.curve_of(table, metric))
    if fit["status"] != "ok":
        return np.nan, fit["status"]
    return fit["slope"] / math.log(predicted), "ok"


class ConsensusContraction(Rule):
    name = "consensus_contraction"
    across_seeds = True
    summary = ("per experiment (graph), each seed's fitted log-contraction of the consensus error "
               "per round over log(sigma_2(W)^t) lies within a tolerance of 1, across seeds")
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": {"type": "string", "default": "drsgd"},
        "metric": {"type": "string", "default": "consensus_error"},
        "tolerance": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.1,
                      "description": "the ratio's allowed distance from 1 (0.1: the contraction "
                                     "per round within sigma_2^{t(1 +- 0.1)})"}}}

    def describe(self, p: dict) -> str:
        return (f"per experiment ({p['algorithm']}, one graph each) and seed, the log-contraction per "
                f"round of the {p['metric']}'s linear phase (from its escape to before its floor) "
                f"over log(sigma_2(W)^t) (the run's sigma2_t); the 95% Student-t interval of the "
                f"ratio across seeds (at least {S.MIN_SEEDS}) within [{1 - p['tolerance']:g}, "
                f"{1 + p['tolerance']:g}]: holds; wholly outside: fails. A graph with sigma_2 = 0 "
                f"(consensus in finitely many steps) is left out")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, tests, missing, notes = [], [], [], []
        claim = S.Claim("log contraction / log sigma2^t", low=1 - p["tolerance"], high=1 + p["tolerance"])
        multi = len(ev.names()) > 1
        for e in ev.names():
            runs = [t for key, ts in ev.runs(e).items() if key[0] == p["algorithm"] for t in ts]
            if not runs:
                missing.append(f"`{e}`: runs of {p['algorithm']}")
                continue
            ratios = {S.seed_of(t, i): seed_ratio(t, p["metric"]) for i, t in enumerate(runs)}
            sample = pd.Series({s: r for s, (r, why) in ratios.items() if why == "ok"}, dtype=float)
            sigma2 = float(runs[0]["sigma2"].dropna().iloc[-1]) if "sigma2" in runs[0] else np.nan
            sigma2_t = float(runs[0]["sigma2_t"].dropna().iloc[-1]) if "sigma2_t" in runs[0] else np.nan
            row = {**({"experiment": e} if multi else {}), "sigma2(W)": sigma2, "sigma2^t": sigma2_t,
                   "seeds fitted": f"{len(sample)} of {len(runs)}"}
            if not 0 < sigma2_t < 1:
                notes.append(f"- `{e}`: sigma_2(W)^t = {sigma2_t:g}: the disagreement vanishes in finitely "
                             f"many steps, no rate to compare; left out.")
                rows.append({**row, "outcome": "left out"})
                continue
            t = S.judged(sample, claim, label=f"`{e}`" if multi else "")
            rows.append({**row, "measured contraction (mean)": float(np.exp(np.mean(sample) * math.log(sigma2_t)))
                         if len(sample) else np.nan, "ratio [interval]": t.interval.text(), "outcome": t.outcome})
            tests.append(t)
        j = judgement(rows, tests, missing)
        j.notes = notes + j.notes
        return j

"""``communication_complexity``: FedLSA's and SCAFFLSA's rounds T to reach E||theta_T -
theta*||^2 <= eps^2 as eps shrinks (Mangold et al., SCAFFLSA slides "Problem: heterogeneity
requires lots of communications" and "Communication Complexity").

The source's statement. With the step the variance term needs, eta = N a eps^2 / sigma^2:
FedLSA needs H = sigma^2 / (N eps Delta_het) local steps (its bias below eps^2) and
T = Delta_het / (a^2 eps) log(||theta_0 - theta*|| / eps) rounds; SCAFFLSA may take
H = sigma^2 / (N eps^2 max_c ||A_c||^2) and needs T = (2 max_c ||A_c||^2 / a^2) log(psi_0 / eps):
"H proportional to 1 / N eps^2 rather than 1 / N eps, and T independent on eps". The constants
are those of upper bounds; the orders are the claim. The experiments run, per level eps^2 (the
claim's ``eps_sq``), eta proportional to eps^2, FedLSA (fedavg) at its H (proportional to
1/eps) and SCAFFLSA at its own (proportional to 1/eps^2), and at the smallest eps FedLSA also at
SCAFFLSA's H.

Statistics, per seed (the runs of a seed share their draws; a run's curve is the mean over its
replicas), each with its interval across seeds (``stats``):

- T: the first round whose excess risk (||theta - theta*||^2 on the LSA problem) is at most
  eps^2; per e-fold of the error, kappa = T / log(e_0 / eps^2), e_0 the run's round-0 error
  (the logarithm both T's of the source carry);
- the exponent of kappa in 1/eps between the largest and smallest eps, log(kappa(eps_min) /
  kappa(eps_max)) / log(eps_max / eps_min): SCAFFLSA's at most ``threshold`` (T independent of
  eps beyond the logarithm: predicted 0), FedLSA's at least ``threshold`` (T like 1/eps:
  predicted 1); ``threshold`` 0.5 is the midpoint, fixed before the runs;
- at the smallest eps, FedLSA at SCAFFLSA's H: its level (median over the last 10% of rounds)
  over eps^2 above 1 (with H proportional to 1/eps^2 FedLSA's bias keeps it above eps^2: the
  "rather than 1 / N eps").

A seed whose run never reaches eps^2 has no T: the case is undecided (more rounds).
"""

from __future__ import annotations

import math

import numpy as np

from .. import stats as S
from ..rule import Evidence, Judgement, Rule
from ._shared import judgement

FEDLSA, SCAFFLSA = "fedavg", "scafflsa"


def rounds_to(eps_sq: float):
    """A run's first round with excess risk <= eps_sq (NaN if none)."""
    def f(t) -> float:
        c = S.curve_of(t).dropna()
        hit = c.index[(c.values <= eps_sq)]
        return float(hit[0]) if len(hit) else math.nan
    return f


def per_efold(eps_sq: float):
    """kappa = T / log(e_0 / eps_sq) of a run (NaN without T or with e_0 <= eps_sq)."""
    T = rounds_to(eps_sq)

    def f(t) -> float:
        e0 = float(S.curve_of(t).dropna().iloc[0])
        return T(t) / math.log(e0 / eps_sq) if e0 > eps_sq else math.nan
    return f


def exponent(small: float, large: float):
    """The paired statistic log(kappa(eps_small) / kappa(eps_large)) / log(eps_large / eps_small)
    of two runs of one seed (eps given by their eps^2: ``small`` < ``large``)."""
    ks, kl = per_efold(small), per_efold(large)
    span = 0.5 * math.log(large / small)

    def f(a, b) -> float:
        x, y = ks(a), kl(b)
        return math.log(x / y) / span if x > 0 and y > 0 else math.nan
    return f


class CommunicationComplexity(Rule):
    name = "communication_complexity"
    across_seeds = True
    summary = "rounds to reach eps^2 against eps: SCAFFLSA's independent of eps (beyond the log), FedLSA's like 1/eps"
    params_schema = {"type": "object", "additionalProperties": False, "required": ["eps_sq"], "properties": {
        "eps_sq": {"type": "object", "additionalProperties": {"type": "number", "exclusiveMinimum": 0},
                   "description": "experiment -> its level eps^2"},
        "threshold": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.5}}}

    def describe(self, p: dict) -> str:
        return (f"per seed, T(eps) = first round with excess risk <= eps^2 and kappa = T / log(e_0 / "
                f"eps^2); the exponent of kappa in 1/eps from the largest to the smallest eps is at most "
                f"{p['threshold']:g} for SCAFFLSA and at least {p['threshold']:g} for FedLSA, and at the "
                f"smallest eps FedLSA at SCAFFLSA's H levels off above eps^2; each by its interval "
                f"across seeds (fewer than {S.MIN_SEEDS}: undecided)")

    def _levels(self, ev: Evidence, p: dict) -> dict[float, dict]:
        """eps^2 -> {"fedlsa": (K, runs), "scafflsa": (K, runs), "fedlsa_at_hs": runs or None}."""
        out: dict[float, dict] = {}
        for e in ev.names():
            if e not in p["eps_sq"]:
                continue
            lv = out.setdefault(float(p["eps_sq"][e]), {"fed": {}, "scaf": {}})
            lv["fed"].update(ev.by_k(e, FEDLSA))
            lv["scaf"].update(ev.by_k(e, SCAFFLSA))
        levels = {}
        for eps_sq, lv in out.items():
            ks = sorted(lv["scaf"])
            own = sorted(k for k in lv["fed"] if k not in ks)
            levels[eps_sq] = {"fedlsa": (own[0], lv["fed"][own[0]]) if own else None,
                              "scafflsa": (ks[0], lv["scaf"][ks[0]]) if ks else None,
                              "fedlsa_at_hs": lv["fed"].get(ks[0]) if ks else None}
        return dict(sorted(levels.items(), reverse=True))

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        levels = self._levels(ev, p)
        rows, tests, missing = [], [], []
        for eps_sq, lv in levels.items():
            row = {"eps^2": eps_sq}
            for name, label in (("fedlsa", "FedLSA"), ("scafflsa", "SCAFFLSA")):
                if lv[name] is None:
                    missing.append(f"eps^2 = {eps_sq:g}: runs of {label}")
                    continue
                K, runs = lv[name]
                T = S.per_seed(runs, rounds_to(eps_sq))
                row[f"{label} H"] = K
                row[f"{label} T"] = S.interval(T).text() if T.notna().any() else "not reached"
                row[f"{label} T / log(e0 / eps^2)"] = S.interval(S.per_seed(runs, per_efold(eps_sq))).text()
                if T.isna().any():
                    missing.append(f"eps^2 = {eps_sq:g}: {label} (H = {K}) does not reach eps^2 in "
                                   f"{int(T.isna().sum())} seed(s): more rounds")
            rows.append(row)
        if len(levels) < 2:
            missing.append("runs at two levels eps^2 at least")
            return judgement(rows, tests, missing)
        large, small = max(levels), min(levels)
        for name, label, claim in (
                ("scafflsa", "SCAFFLSA", S.Claim("SCAFFLSA exponent of T / log in 1/eps", high=p["threshold"])),
                ("fedlsa", "FedLSA", S.Claim("FedLSA exponent of T / log in 1/eps", low=p["threshold"]))):
            if levels[small][name] is None or levels[large][name] is None:
                continue
            sample = S.paired(levels[small][name][1], levels[large][name][1], exponent(small, large))
            tests.append(S.judged(sample, claim, label=f"eps^2 {large:g} -> {small:g}"))
        at_hs = levels[small]["fedlsa_at_hs"]
        if at_hs:
            level = S.per_seed(at_hs, lambda t: math.log(S.tail_level(t) / small))
            K = levels[small]["scafflsa"][0]
            tests.append(S.judged(level, S.Claim(f"FedLSA level at H = {K} / eps^2", low=1.0, strict=True),
                                  label=f"eps^2 {small:g}", log=True))
            last = next(r for r in rows if r["eps^2"] == small)
            last.update({"FedLSA level at SCAFFLSA's H / eps^2": S.interval(level, log=True).text()})
        else:
            missing.append(f"eps^2 = {small:g}: FedLSA at SCAFFLSA's H")
        return judgement(rows, tests, missing)

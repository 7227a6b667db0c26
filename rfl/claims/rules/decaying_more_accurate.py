"""``decaying_more_accurate``: decaying step sizes find a more accurate solution than a fixed
step (RFedAGS paper, Theorem 4.4 and Figure 1(d-f)): per K, the decaying run ends below the
fixed one."""

from __future__ import annotations

import numpy as np

from ..curves import diverged_at, last, levelled, median_curve, plateau
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine

ROLES = {"type": "object", "additionalProperties": False, "required": ["fixed", "decaying"],
         "properties": {"fixed": {"type": "string"}, "decaying": {"type": "string"}}}


def compare(fixed, dec, statistic: str) -> tuple[str, str | None, str | None]:
    """(outcome, why, what would decide it): the decaying curve's ``statistic`` (``last``: the last round; ``plateau``:
    median of the last 10% of rounds) is below the fixed curve's. A decaying run that diverged
    fails; a fixed run that diverged, or a curve without a value, leaves it undecided; a
    decaying run above the fixed one but still decreasing at its last round is undecided."""
    t_dec, t_fix = diverged_at(dec), diverged_at(fixed)
    if t_dec is not None:
        return FAIL, f"the decaying-step run diverged at round {t_dec}", None
    if t_fix is not None:
        return (OPEN, f"the fixed-step run diverged at round {t_fix}: no level to compare with",
                "a fixed-step run that does not diverge")
    stat = last if statistic == "last" else (lambda c: plateau(c.dropna()))
    f_end, d_end = stat(fixed), stat(dec)
    if not (np.isfinite(f_end) and np.isfinite(d_end)):
        return OPEN, "no value at the last round", "runs with a value"
    if d_end < f_end:
        return OK, None, None
    if not levelled(dec):
        return (OPEN, "the decaying run ends above the fixed one but is still decreasing at its last round",
                "more rounds of the decaying run")
    return FAIL, None, None


class DecayingMoreAccurate(Rule):
    name = "decaying_more_accurate"
    summary = "per K, the decaying-step run ends below the fixed-step run"
    experiments_schema = ROLES
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": {"type": "string", "default": "rfedags"},
        "statistic": {"enum": ["last", "plateau"], "default": "last"}}}

    def describe(self, p: dict) -> str:
        what = ("the median excess risk at the last round" if p["statistic"] == "last" else
                "the median excess risk over the last 10% of rounds")
        return (f"per K ({p['algorithm']}, every agent), {what} of the decaying run is below that "
                f"of the fixed run; reproduced if for every K (a decaying run that diverged fails; "
                f"a fixed run that diverged, or a decaying run above the fixed one that is still "
                f"decreasing, is undecided)")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        fixed = ev.by_k(ev.experiments["fixed"], p["algorithm"])
        dec = ev.by_k(ev.experiments["decaying"], p["algorithm"])
        rows, cases, notes, decide = [], [], [], []
        for K in sorted(set(fixed) & set(dec)):
            fc, dc = median_curve(fixed[K]), median_curve(dec[K])
            outcome, why, needs = compare(fc, dc, p["statistic"])
            cases.append(outcome)
            if why:
                notes.append(f"- K = {K}: {'fails' if outcome == FAIL else 'undecided'}: {why}.")
            if needs:
                decide.append(f"K = {K}: {needs}")
            f_end, d_end = last(fc), last(dc)
            rows.append({"K": str(K), "fixed, last round": f_end, "decaying, last round": d_end,
                         "decaying, at the fixed run's last round": last(dc, min(dc.index[-1], fc.index[-1])),
                         "fixed, plateau": plateau(fc.dropna()), "decaying, plateau": plateau(dc.dropna()),
                         "ratio (dec/fixed)": d_end / f_end})
        verdict = combine(cases)
        return Judgement(verdict, rows, notes,
                         "; ".join(decide) if decide and verdict in (UNDECIDED, PARTLY) else None)

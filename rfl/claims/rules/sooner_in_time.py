"""``sooner_in_time``: one participation scheme reaches an excess-risk level in less simulated
time than another (the authors' Figures 7 and 8, ``*_lazy*`` scripts: three straggler agents
whose local work counts 10x, ``RFedAGSP_.m``'s round time = the sum of the participants' local
times; scheme II joins the stragglers with p = 0.05, scheme I samples s agents uniformly and
so takes them as often as anyone).

Each level is a factor (``level_factors``, one case each) x the higher of the two schemes'
plateaus, so both curves reach it; the time to reach it is the seeds' median of the ``time`` column (``rfl.simtime``) at the
first round at which the median excess risk over seeds is at or below it.
"""

from __future__ import annotations

import numpy as np

from rfl.reporting.figures import method_label, summarise

from .. import stats as S
from ..curves import median_curve, plateau, rounds_to
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, PARTLY, UNDECIDED, combine
from .level_vs_share import participations, scheme_of


def pick(ev: Evidence, experiment: str, scheme: str, algorithm: str):
    """(key, runs) of the first method of ``algorithm`` running ``scheme`` (``full``,
    ``uniform`` or a scheme's name), or None."""
    parts = participations(ev, experiment)
    for key, runs in ev.runs(experiment).items():
        if key[0] == algorithm and key in parts and scheme_of(parts[key], 1)[0] == scheme:
            return key, runs
    return None


def time_to(runs, level: float) -> tuple[float, float]:
    """(round, median simulated time over seeds at that round) of the first round at which the
    median excess risk is at or below ``level``; NaNs if never."""
    t = rounds_to(median_curve(runs), level)
    if not np.isfinite(t):
        return np.nan, np.nan
    return t, float(summarise(runs, "time")["median"].loc[t])


def seed_time(level: float):
    """Per run table, the simulated time at its first round at or below ``level`` (NaN if
    never): the per-seed statistic behind the time ratio's interval."""
    return lambda table: time_to([table], level)[1]


class SoonerInTime(Rule):
    name = "sooner_in_time"
    summary = "one scheme reaches a level (a factor above both plateaus) in less simulated time than another"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": {"type": "string", "default": "rfedags"},
        "first": {"type": "string", "default": "bernoulli"},
        "second": {"type": "string", "default": "uniform"},
        "level_factors": {"type": "array", "minItems": 1,
                          "items": {"type": "number", "exclusiveMinimum": 1}, "default": [2.0]}}}

    def describe(self, p: dict) -> str:
        factors = ", ".join(f"{f:g}" for f in p["level_factors"])
        return (f"in each experiment and for each factor c in {factors}, {p['algorithm']} with scheme "
                f"`{p['first']}` reaches the level c x max(plateau of either scheme) (median excess risk over "
                f"seeds; plateau: median over the last 10% of rounds) in less simulated time (the "
                f"`time` column, median over seeds) than with `{p['second']}`; undecided without "
                f"both schemes or a time column")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, cases, notes, decide, margins = [], [], [], [], []
        claim = S.Claim("time ratio", high=1.0, strict=True)
        for e in ev.names():
            a, b = (pick(ev, e, p[k], p["algorithm"]) for k in ("first", "second"))
            if a is None or b is None or "time" not in a[1][0] or "time" not in b[1][0]:
                cases.append(OPEN)
                notes.append(f"- `{e}`: needs runs of `{p['first']}` and `{p['second']}` with a time model.")
                decide.append(f"`{e}`: both schemes, experiments.{e}.time declared")
                margins.append(f"`{e}`: no time ratio, {claim.text()}")
                continue
            top = max(plateau(median_curve(r).dropna()) for _, r in (a, b))
            for factor in p["level_factors"]:
                level = factor * top
                (ra, ta), (rb, tb) = time_to(a[1], level), time_to(b[1], level)
                if not (np.isfinite(ta) and np.isfinite(tb)):
                    outcome = OPEN
                    decide.append(f"`{e}`: a finite level both curves reach")
                else:
                    outcome = OK if ta < tb else FAIL
                cases.append(outcome)
                iv = S.interval(S.paired(a[1], b[1], S.log_ratio_of(seed_time(level))), log=True)
                margins.append(S.value_margin("time ratio (medians)", ta / tb if tb else np.nan, claim,
                                              label=f"`{e}`, c = {factor:g}", iv=iv if iv.n > 1 else None))
                rows.append(self.row(e, factor, level, a[0], ra, ta, b[0], rb, tb, outcome))
        verdict = combine(cases)
        return Judgement(verdict, rows, notes,
                         "; ".join(decide) if decide and verdict in (UNDECIDED, PARTLY) else None,
                         S.margin_line(margins))

    @staticmethod
    def row(e, factor, level, ka, ra, ta, kb, rb, tb, outcome) -> dict:
        return {"experiment": e, "factor": f"{factor:g}", "level": level,
                "first": method_label(ka), "first: round": ra, "first: time": ta,
                "second": method_label(kb), "second: round": rb, "second: time": tb,
                "time ratio": ta / tb if tb else np.nan,
                "sooner": {OK: "yes", FAIL: "no", OPEN: "open"}[outcome]}

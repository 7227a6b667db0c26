"""``plateau_order``: the level a method reaches falls as a dataset parameter grows (the authors'
``PCAStief_Syn`` scripts: more agents S, or more local data N, give a lower plateau; their
legends order the curves by S and by N).

Consecutive values of the parameter are compared as ``ends_as_low`` compares two methods
(``ends_as_low.level_test``): per seed, the plateau (median excess risk over the last 10% of
rounds), paired by seed, the log ratio with a Student-t interval across seeds. The authors'
scripts plot the optimality gap f - f* of each dataset (its own f*); datasets whose F* differ
are compared scale-free with ``scale: initial`` (relative to F(x_0) - F*) or ``fstar``
(relative to |F*|). A plateau is exact only for a curve that has levelled off; a curve still
decreasing gives an upper bound of it, and more rounds of it decide what it leaves open.
"""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..curves import levelled_off, median_curve, more_rounds, seed_rate  # noqa: F401  (more_rounds: read from here by rules)
from ..rule import Evidence, Judgement, Rule
from ..verdicts import OPEN, UNDECIDED
from .ends_as_low import SCALE, SCALE_TEXT, level_test, seed_level
from .ordered_levels import order_verdict


class PlateauOrder(Rule):
    name = "plateau_order"
    across_seeds = True
    summary = ("the plateau is non-increasing as a dataset parameter grows (consecutive values "
               "paired by seed, interval across seeds)")
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "by": {"type": "array", "minItems": 1, "items": {"type": "string"}, "default": ["S"]},
        "algorithm": {"type": "string", "default": "rfedags"},
        "participation": {"enum": ["every", "any"], "default": "every"},
        "factor": {"type": "number", "minimum": 1, "default": 1.0,
                   "description": "the next value's plateau at most this times the previous one's"},
        "level_factor": {"type": "number", "exclusiveMinimum": 1, "default": 1.2}, **SCALE}}

    def describe(self, p: dict) -> str:
        who = "every agent" if p["participation"] == "every" else "under the experiment's participation"
        by = ", ".join(p["by"])
        return (f"{SCALE_TEXT[p['scale']]} (per seed, median excess risk over the last 10% of rounds; "
                f"{p['algorithm']} at its smallest K, {who}) is non-increasing as ({by}) grows: for "
                f"each consecutive pair of values, the next one's over the previous one's, paired by "
                f"seed, has a 95% Student-t interval across seeds (geometric mean, at least "
                f"{S.MIN_SEEDS} seeds) at most {p['factor']:g} (partly: a pair out of order, the "
                f"largest value still below the smallest). A curve not levelled off (the 10% of "
                f"rounds before its last 10% more than {p['level_factor']:g}x above them, or its "
                f"last 20% of rounds contracting at least half as fast, in log, as its linear phase) "
                f"gives only an upper bound of its plateau: undecided if that leaves a pair open")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        items = []
        for e in ev.names():
            params = ev.dataset(e).get("params", {})
            runs = ev.by_k(e, p["algorithm"], p["participation"])
            if runs:
                items.append((tuple(params.get(k) for k in p["by"]), e, runs))
        items.sort(key=lambda x: x[0])
        label = ", ".join(p["by"])
        rows, notes, decide, tests, outcome = [], [], [], [], []
        for value, e, runs in items:
            K = min(runs)
            rate = S.per_seed(runs[K], lambda t: seed_rate(S.curve_of(t))["slope"])
            t0 = runs[K][0].iloc[0]
            f_star = float(t0["cost"] - t0["excess_risk"])          # every run of a dataset shares F*
            level = np.exp(np.mean(np.log(S.per_seed(runs[K], lambda t: seed_level(t, p["scale"])))))
            rows.append({label: ", ".join(map(str, value)), "experiment": e, "K": str(K), "seeds": str(len(runs[K])),
                         "contraction/round": float(np.exp(rate.mean())) if rate.notna().any() else np.nan,
                         "excess risk, first": float(t0["excess_risk"]),
                         "plateau": float(np.exp(np.mean(np.log(S.per_seed(runs[K], S.tail_level))))),
                         "plateau / abs(F*)": (float(np.exp(np.mean(np.log(S.per_seed(runs[K], S.tail_level)))))
                                               / abs(f_star) if f_star else np.nan),
                         **({f"judged ({p['scale']})": float(level)} if p["scale"] != "none" else {}),
                         "levelled off": "yes" if levelled_off(median_curve(runs[K]), p["level_factor"]) else "no"})
        for (v0, e0, r0), (v1, e1, r1) in zip(items, items[1:]):
            w0, w1 = ", ".join(map(str, v0)), ", ".join(map(str, v1))
            test, numbers, n, d = level_test(r1[min(r1)], r0[min(r0)], p["factor"], f"{label} = {w1} vs {w0}", p,
                                             (f"{label} = {w1}", f"{label} = {w0}"), p["scale"])
            outcome.append(test.outcome)
            tests.append(test)
            notes += n
            decide += d
        if len(items) >= 2:
            (_, _, r0), (_, _, r1) = items[0], items[-1]
            ends = level_test(r1[min(r1)], r0[min(r0)], p["factor"], "ends", p, scale=p["scale"])[0].outcome
        else:
            ends = OPEN
        verdict = order_verdict(outcome, ends)
        if verdict == UNDECIDED and not decide:
            decide.append(f"runs of at least two values of ({label}) with a finite plateau")
        return Judgement(verdict, rows, list(dict.fromkeys(notes)),
                         "; ".join(dict.fromkeys(decide)) if verdict == UNDECIDED else None,
                         S.margin_line(tests))

"""``db_gap``: the gap in dB between two methods' steady-state levels matches a prediction
within a tolerance (the diffusion paper, Section 5: the centralised solution's MSD is S times
below the non-cooperative one's at the same step, a gap of -10 log10 S dB).

Per seed (paired: the methods of an experiment share their draws), the gap is
10 log10(level(second) / level(first)), each level the mean of ``metric`` over the last
``window`` share of rounds (``level_order.level``). The prediction is
``-10 log10(S)``, S the dataset's number of agents (``target: minus_10log10_S``), or a number
(``target_db``). Holds when the 95% Student-t interval across seeds lies within the
prediction +- ``tolerance_db``, fails when wholly outside.
"""

from __future__ import annotations

import math

from .. import stats as S
from ..rule import Evidence, Judgement, Rule
from ._shared import judgement
from .level_order import WINDOW, db, level


class DbGap(Rule):
    name = "db_gap"
    across_seeds = True
    summary = "second minus first steady-state level in dB within a tolerance of -10 log10 S (or a given value)"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "first": {"type": "string", "default": "noncooperative"},
        "second": {"type": "string", "default": "fusion_centre"},
        "metric": {"type": "string", "default": "msd"}, "window": WINDOW,
        "target_db": {"type": ["number", "null"], "default": None,
                      "description": "the predicted gap in dB; null: -10 log10 S"},
        "tolerance_db": {"type": "number", "exclusiveMinimum": 0, "default": 1.5}}}

    def describe(self, p: dict) -> str:
        target = "-10 log10 S (S the dataset's agents)" if p["target_db"] is None else f"{p['target_db']:g} dB"
        return (f"per seed, 10 log10 of {p['second']}'s mean {p['metric']} over the last "
                f"{p['window']:.0%} of rounds over {p['first']}'s (paired by seed); its 95% Student-t "
                f"interval across seeds (at least {S.MIN_SEEDS}) within {target} +- "
                f"{p['tolerance_db']:g} dB: holds; wholly outside: fails")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, tests, missing = [], [], []
        for e in ev.names():
            runs = ev.runs(e)
            a = [t for k, ts in runs.items() if k[0] == p["first"] for t in ts]
            b = [t for k, ts in runs.items() if k[0] == p["second"] for t in ts]
            if not (a and b):
                missing.append(f"`{e}`: runs of {p['first']} and {p['second']}")
                continue
            target = p["target_db"]
            if target is None:
                target = -10.0 * math.log10(int(ev.dataset(e)["params"]["S"]))
            claim = S.Claim("gap (dB)", low=target - p["tolerance_db"], high=target + p["tolerance_db"])
            gap = S.paired(a, b, lambda x, y: db(level(y, p["metric"], "tail", p["window"]))
                           - db(level(x, p["metric"], "tail", p["window"])))
            t = S.judged(gap, claim, label=f"`{e}`" if len(ev.names()) > 1 else "")
            tests.append(t)
            rows.append({"experiment": e, "predicted gap (dB)": target, "gap (dB) [interval]": t.interval.text(),
                         "seeds": str(len(gap)), "outcome": t.outcome})
        return judgement(rows, tests, missing)

"""``level_order``: a level falls along the claim's list, each next one at least ``margin_db``
below (the diffusion paper's Figure 2: steady-state MSD non-cooperative > DRSGD > diffusion >
centralised; the DPRGD notebook: dynamic regret grows with the rate of change, T0 = 5 above
T0 = 20).

The items are the listed ``methods`` of each experiment (two or more methods), or one method
along the claim's experiments in their listed order (``methods`` of one name). A run's level
(``statistic``): ``tail``, the mean of ``metric`` over the last ``window`` share of rounds
(the steady state of a streaming run: a mean, not a median, since MSD is a mean square), or
``final``, its last value (a cumulative regret). Levels are compared in dB, 10 log10 of their
ratio, paired by seed (the methods of an experiment share their draws per seed; experiments
of one dataset seed share their data); a consecutive pair is in order when the 95% Student-t
interval of (previous - next) across seeds lies at or above ``margin_db``, out of order when
it lies wholly below, undecided otherwise (``rfl.claims.stats.decide``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import stats as S
from ..rule import Evidence, Judgement, Rule
from ._shared import judgement

STATISTIC = {"enum": ["tail", "final"], "default": "tail",
             "description": "tail: mean of the metric over the last `window` share of rounds; "
                            "final: its last value"}
WINDOW = {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.2,
          "description": "the share of the last rounds averaged by `tail`"}


def level(table: pd.DataFrame, metric: str, statistic: str = "tail", window: float = 0.2) -> float:
    """A run's level of ``metric``: the mean over its last ``window`` share of rounds (at least
    one; the rounds after the first row) or its final value; +inf for a diverged run."""
    if (table["status"] == "diverged").any():
        return math.inf
    c = S.curve_of(table, metric).dropna()
    c = c[c.index > 0] if (c.index > 0).any() else c
    if not len(c):
        return np.nan
    if statistic == "final":
        return float(c.iloc[-1])
    n = max(1, int(round(len(c) * window)))
    return float(c.iloc[-n:].mean())


def db(x: float) -> float:
    """10 log10 x (NaN for x <= 0)."""
    return 10.0 * math.log10(x) if x > 0 else (math.inf if x == math.inf else np.nan)


def items_of(ev: Evidence, methods: list[str], missing: list[str]):
    """[(label, runs)] in the claim's order: each experiment's ``methods`` (several), or one
    method along the experiments."""
    out = []
    for e in ev.names():
        runs = ev.runs(e)
        for m in (methods if len(methods) > 1 else methods[:1]):
            found = [t for key, ts in runs.items() if key[0] == m for t in ts]
            label = f"{m}" if len(methods) > 1 else f"`{e}`"
            if len(ev.names()) > 1 and len(methods) > 1:
                label = f"`{e}` {m}"
            if not found:
                missing.append(f"`{e}`: runs of {m}")
            out.append((label, found, e))
    return out


class LevelOrder(Rule):
    name = "level_order"
    across_seeds = True
    summary = ("a level (steady-state mean, or final value, of a column) falls along the listed "
               "methods or experiments, each next at least margin_db below, paired by seed")
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "methods": {"type": "array", "minItems": 1, "items": {"type": "string"},
                    "default": ["noncooperative", "drsgd", "diffusion", "fusion_centre"]},
        "metric": {"type": "string", "default": "msd"},
        "statistic": STATISTIC, "window": WINDOW,
        "margin_db": {"type": "number", "default": 0.0,
                      "description": "each next level at least this many dB below the previous"}}}

    def describe(self, p: dict) -> str:
        what = ("the mean of " if p["statistic"] == "tail" else "the final value of ") + p["metric"]
        tail = f" over the last {p['window']:.0%} of rounds" if p["statistic"] == "tail" else ""
        along = (f"the methods {' > '.join(p['methods'])} in each experiment" if len(p["methods"]) > 1
                 else f"{p['methods'][0]} along the experiments in their listed order")
        return (f"{what}{tail}, per seed, in dB; for each consecutive pair of {along}, the previous "
                f"minus the next (paired by seed) has a 95% Student-t interval across seeds (at least "
                f"{S.MIN_SEEDS}) at or above {p['margin_db']:g} dB: in order; wholly below: out of order")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        missing: list[str] = []
        items = items_of(ev, p["methods"], missing)
        rows, tests = [], []
        claim = S.Claim("level drop (dB)", low=p["margin_db"])

        def lv(t):
            return db(level(t, p["metric"], p["statistic"], p["window"]))

        for label, runs, e in items:
            sample = S.per_seed(runs, lv) if runs else pd.Series(dtype=float)
            rows.append({"item": label, "seeds": str(len(runs)),
                         "level (dB, mean over seeds)": float(sample.mean()) if len(sample) else np.nan})
        pairs = list(zip(items, items[1:]))
        if len(p["methods"]) > 1:          # within each experiment only
            pairs = [(a, b) for a, b in pairs if a[2] == b[2]]
        for (la, ra, _), (lb, rb, _) in pairs:
            if not (ra and rb):
                continue
            diff = S.paired(ra, rb, lambda a, b: lv(a) - lv(b))
            t = S.judged(diff, claim, label=f"{la} - {lb}")
            tests.append(t)
            rows.append({"item": f"{la} - {lb}", "seeds": str(len(diff)),
                         "drop (dB) [interval]": t.interval.text(), "in order": t.outcome})
        return judgement(rows, tests, missing)

"""``ordered_levels``: the level a method reaches rises along the claim's experiments, listed
from the lowest expected level to the highest (the authors' ``PCASphere_MNIST`` Figure 9,
``PCA2_fixed.m``: RFedAGS on the i.i.d., slightly and heavily non-i.i.d. splits, its legend in
that order; the more heterogeneous the agents, the higher the curve ends).

Each consecutive pair of experiments is compared as ``ends_as_low`` compares two methods
(``ends_as_low.level_test``): per seed, the plateau (median excess risk over the last 10% of
rounds; ``scale``: relative to F(x_0) - F* or |F*|), paired by seed, log ratio with a
Student-t interval across seeds; experiment i is in order before experiment j when the
interval of its plateau over j's lies at or under ``factor`` (and j's curve has levelled
off), out of order when it lies wholly above (and i's has)."""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, NOT, OK, OPEN, PARTLY, REPRODUCED, UNDECIDED
from .ends_as_low import SCALE, SCALE_TEXT, level_test


def order_verdict(consecutive: list[str], ends: str) -> str:
    """Reproduced if every consecutive pair is in order; with one out of order, partly if the
    first level is still in order with the last, not reproduced if not; undecided while a pair
    is open and none is out of order, or the first and last pair is open."""
    if consecutive and all(c == OK for c in consecutive):
        return REPRODUCED
    if FAIL in consecutive:
        return {OK: PARTLY, FAIL: NOT}.get(ends, UNDECIDED)
    return UNDECIDED


class OrderedLevels(Rule):
    name = "ordered_levels"
    across_seeds = True
    summary = "the plateau rises along the claim's experiments (each at most a factor times the next, paired by seed)"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "algorithm": {"type": "string", "default": "rfedags"},
        "participation": {"enum": ["every", "any"], "default": "every"},
        "factor": {"type": "number", "minimum": 1, "default": 1.1},
        "level_factor": {"type": "number", "exclusiveMinimum": 1, "default": 1.2}, **SCALE}}

    def describe(self, p: dict) -> str:
        who = "every agent" if p["participation"] == "every" else "under the experiment's participation"
        return (f"{SCALE_TEXT[p['scale']]} (per seed, median excess risk over the last 10% of rounds; "
                f"{p['algorithm']} at its smallest K, {who}) of each experiment over the next one's, "
                f"paired by seed, has a 95% Student-t interval across seeds (geometric mean, at least "
                f"{S.MIN_SEEDS} seeds) at most {p['factor']:g}, in the order the experiments are "
                f"listed (partly: a pair out of order, the first still at most {p['factor']:g}x the "
                f"last). A curve not levelled off (the 10% of rounds before its last 10% more than "
                f"{p['level_factor']:g}x above them, or still contracting as fast as in its linear "
                f"phase) bounds its plateau from above: undecided if that leaves the order open")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        items = []
        for e in ev.names():
            runs = ev.by_k(e, p["algorithm"], p["participation"])
            if runs:
                K = min(runs)
                items.append((e, K, runs[K]))
        if len(items) < 2:
            return Judgement(UNDECIDED, [], ["Fewer than two experiments with runs: nothing to order."],
                             f"runs of {p['algorithm']} in at least two of the experiments")
        f = p["factor"]
        notes, decide, tests, outcome, pairs = [], [], [], [], []
        for (e, K, a), (e2, _, b) in zip(items, items[1:]):
            test, numbers, n, d = level_test(a, b, f, f"`{e}` vs `{e2}`", p, (f"`{e}`", f"`{e2}`"), p["scale"])
            outcome.append(test.outcome)
            tests.append(test)
            pairs.append(numbers)
            notes += n
            decide += d
        rows = []
        for i, (e, K, runs) in enumerate(items):
            own = pairs[i] if i < len(pairs) else pairs[-1]
            nxt = pairs[i] if i < len(pairs) else {}
            rows.append({"experiment": e, "K": str(K), "seeds": str(len(runs)),
                         "plateau": own[f"`{e}` plateau"],
                         "levelled off": "yes" if own[f"`{e}` levelled off"] else "no",
                         "plateau / next": nxt.get("ratio", np.nan), "interval": nxt.get("interval", ""),
                         "in order with the next": ({OK: "yes", FAIL: "no", OPEN: "undecided"}[outcome[i]]
                                                    if i < len(outcome) else "")})
        ends, *_ = level_test(items[0][2], items[-1][2], f, f"`{items[0][0]}` vs `{items[-1][0]}`", p,
                              scale=p["scale"])
        verdict = order_verdict(outcome, ends.outcome)
        if verdict == UNDECIDED and not decide:
            decide.append("levels that are finite in every experiment")
        return Judgement(verdict, rows, list(dict.fromkeys(notes)),
                         "; ".join(dict.fromkeys(decide)) if verdict == UNDECIDED else None,
                         S.margin_line(tests))

"""``cheaper_same_value``: a method ends at the same value as another at a fraction of its cost
(the DPRGD notebook: iDPRGD's dynamic regret equals DPRGD's at a fraction of the time; here the
cost is a machine-independent count, the Log maps of the consensus steps, where the notebook
times the loops).

Per seed (paired: the methods of an experiment share their data and graph), two ratios of the
final values: ``metric`` of ``cheap`` over ``reference`` (its Student-t interval across seeds,
on the log scale, within [1 / (1 + tolerance), 1 + tolerance]: the same value) and ``cost`` of
``cheap`` over ``reference`` (at most ``fraction``). Each holds when its interval lies inside
its region and fails when wholly outside (``rfl.claims.stats.decide``).
"""

from __future__ import annotations

from .. import stats as S
from ..rule import Evidence, Judgement, Rule
from ._shared import judgement
from .level_order import level


class CheaperSameValue(Rule):
    name = "cheaper_same_value"
    across_seeds = True
    summary = ("a method's final value within a tolerance of another's, at most a fraction of its "
               "cost, paired by seed")
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "cheap": {"type": "string", "default": "idprgd"},
        "reference": {"type": "string", "default": "dprgd"},
        "metric": {"type": "string", "default": "dynamic_regret"},
        "cost": {"type": "string", "default": "log_maps"},
        "tolerance": {"type": "number", "exclusiveMinimum": 0, "default": 0.05},
        "fraction": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.5}}}

    def describe(self, p: dict) -> str:
        return (f"per seed, the final {p['metric']} of {p['cheap']} over {p['reference']}'s has a 95% "
                f"Student-t interval across seeds (log scale, at least {S.MIN_SEEDS} seeds) within "
                f"[1/{1 + p['tolerance']:g}, {1 + p['tolerance']:g}], and the final {p['cost']} ratio at "
                f"most {p['fraction']:g}")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, tests, missing = [], [], []
        for e in ev.names():
            runs = ev.runs(e)
            a = [t for k, ts in runs.items() if k[0] == p["cheap"] for t in ts]
            b = [t for k, ts in runs.items() if k[0] == p["reference"] for t in ts]
            if not (a and b):
                missing.append(f"`{e}`: runs of {p['cheap']} and {p['reference']}")
                continue
            label = f"`{e}` " if len(ev.names()) > 1 else ""

            def ratio(col):
                return S.paired(a, b, S.log_ratio_of(lambda t: level(t, col, "final")))

            same = S.judged(ratio(p["metric"]), S.Claim(f"{p['metric']} ratio", low=1 / (1 + p["tolerance"]),
                                    high=1 + p["tolerance"]),
                            label=f"{label}{p['metric']}", log=True)
            cheaper = S.judged(ratio(p["cost"]), S.Claim(f"{p['cost']} ratio", high=p["fraction"]),
                               label=f"{label}{p['cost']}", log=True)
            tests += [same, cheaper]
            rows.append({"experiment": e, f"{p['metric']} ratio [interval]": same.interval.text(),
                         f"{p['cost']} ratio [interval]": cheaper.interval.text(),
                         "seeds": str(min(len(a), len(b))), "outcome": f"{same.outcome} / {cheaper.outcome}"})
        return judgement(rows, tests, missing) if tests or missing else judgement(rows, tests, ["runs"])

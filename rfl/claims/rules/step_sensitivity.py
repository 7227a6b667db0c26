"""``step_sensitivity``: a measurement, no verdict: the best value of RFedAGS for each number of
local steps K against the fixed step size alpha, and the gap of the smallest K to the largest
(RFedAGS paper, Table 2: K = 1 is within 0.002 of K = 10 at r = 4 and 5, at the paper's step).
Reads the step-size study beside Table 2 (``table2_sensitivity``: one row per r, alpha,
method and protocol, with the gap ``K1_minus_K10`` and the paper's gap)."""

from __future__ import annotations

import numpy as np

from ..cells import cells
from ..rule import Evidence, Judgement, Rule


#: the two K whose gap the table holds (``K1_minus_K10``, ``paper_K1_minus_K10``)
GAP = (1, 10)


class StepSensitivity(Rule):
    name = "step_sensitivity"
    summary = "a measurement: the best value per K against the step size, and the smallest K's gap to the largest"
    judges = False
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "table": {"type": "string", "default": "table2_sensitivity"},
        "ks": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 1},
               "default": [1, 4, 10]},
        "value": {"type": "string", "default": "nmse_mean"}}}

    def describe(self, p: dict) -> str:
        return (f"per r, step alpha and protocol of `{p['table']}`: RFedAGS's best {p['value']} (mean over "
                f"splits) for K = {', '.join(map(str, p['ks']))}, and K = {GAP[0]} minus K = {GAP[1]} "
                f"beside the paper's")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        t = cells(ev, p["table"], {})
        if t is None or t.empty:
            return Judgement(None, notes=[f"Table `{p['table']}` is {'absent' if t is None else 'empty'}."])
        k_lo, k_hi = GAP
        lo = f"RFedAGS-K={k_lo}"
        first = t[(t["method"] == lo) & (t["alpha"] == t["alpha"].min())]
        where = "; ".join(f"round {m:.0f} (r = {r}, {q})"
                          for r, q, m in zip(first["r"], first["protocol"], first["round_mean"]))
        notes = [f"With the smallest step here (alpha = {t['alpha'].min():.2g}), K = {k_lo} takes "
                 f"{k_lo}/{k_hi} of K = {k_hi}'s local steps per round, and its best value comes on "
                 f"average at {where} (mean over splits)." if where else
                 f"No K = {k_lo} run at the smallest step (alpha = {t['alpha'].min():.2g})."]
        rows = []
        for (r, alpha, protocol), sub in t.groupby(["r", "alpha", "protocol"]):
            by = sub.set_index("method")
            row = {"r": str(r), "alpha": f"{alpha:.2g}", "protocol": protocol}
            for K in sorted(set(p["ks"]) | {k_lo}):
                name = f"RFedAGS-K={K}"
                row[f"K={K}"] = float(by.loc[name, p["value"]]) if name in by.index else np.nan
                if K == k_lo:
                    row[f"K={K} best round"] = float(by.loc[name, "round_mean"]) if name in by.index else np.nan
            row[f"K={k_lo} - K={k_hi}"] = float(sub["K1_minus_K10"].iloc[0])
            row[f"paper K={k_lo} - K={k_hi}"] = float(sub["paper_K1_minus_K10"].iloc[0])
            rows.append(row)
        gap, paper = f"K={k_lo} - K={k_hi}", f"paper K={k_lo} - K={k_hi}"
        closes = [x for x in rows if np.isfinite(x[gap])]
        for r in sorted({x["r"] for x in closes}):
            for protocol in sorted({x["protocol"] for x in closes}):
                steps = [x for x in closes if x["r"] == r and x["protocol"] == protocol]
                if len(steps) < 2:
                    continue
                a, best = steps[0], min(steps, key=lambda x: abs(x[gap]))
                notes.append(f"- r = {r}, {protocol}: K = {k_lo} is {a[gap]:+.3f} from K = {k_hi} at "
                             f"alpha = {a['alpha']}, {best[gap]:+.3f} at alpha = {best['alpha']} "
                             f"(paper: {a[paper]:+.3f}).")
        return Judgement(None, rows, notes)

"""``identical_runs``: two methods are one algorithm (RFedAGS paper, Section 3.3: with the
exponential map and parallel transport, RFedAGS's aggregation R_{x_t}(sum_j w_j zeta^j)
coincides with RFedAvg's tangent mean Exp_{x_t}(sum_j w_j Log_{x_t}(x^j_{t,K})) when K = 1, and
on R^d for every K).

At K = 1, zeta^j = Gamma_{x_t -> x_t}(-alpha g_j) = -alpha g_j and x^j_{t,1} = Exp_{x_t}(-alpha
g_j), so RFedAvg's step is Exp_{x_t}(sum_j w_j Log_{x_t}(Exp_{x_t}(-alpha g_j))) =
Exp_{x_t}(-alpha sum_j w_j g_j), RFedAGS's, as long as each -alpha g_j lies within the
injectivity radius at x_t (where Log inverts Exp). On R^d both are x_t + sum_j w_j (x^j_{t,K} -
x_t) for every K. Both methods of an experiment draw the same participants and mini-batches
(common random numbers, ``rfl.algorithms.sampling``), so their runs of one seed must agree
round by round up to rounding.

The statistic, per metric: over the seeds both methods ran and the rounds both recorded,
max |a_t - b_t| / scale, scale = the largest |value| of the metric over the two runs of that
seed. A case (an experiment, a K, a metric) holds when it is at most ``tolerance``; runs that
stop at different rounds, or a value in one run where the other has none, fail.
"""

from __future__ import annotations

import numpy as np

from ..rule import Evidence, Judgement, Rule
from ..verdicts import FAIL, OK, OPEN, UNDECIDED, combine

#: the first sampler version whose methods share their draws (``rfl.algorithms.sampling``)
SHARED_DRAWS = 3


def relative_difference(a, b) -> tuple[float, int, float]:
    """(max_t |a_t - b_t| / scale, the round of the max, scale) of two runs' values of one
    metric (``pd.Series`` indexed by round), scale = max |value| over both; +inf when they stop
    at different rounds or one has a value where the other has none (round: the first such);
    0 when both are 0 throughout."""
    if list(a.index) != list(b.index):
        first = next((t for t, u in zip(a.index, b.index) if t != u), min(len(a), len(b)))
        return np.inf, int(first), np.nan
    x, y = a.to_numpy(float), b.to_numpy(float)
    one = np.isnan(x) != np.isnan(y)
    if one.any():
        return np.inf, int(a.index[np.argmax(one)]), np.nan
    both = ~np.isnan(x)
    if not both.any():
        return np.nan, -1, np.nan
    scale = float(max(np.abs(x[both]).max(), np.abs(y[both]).max()))
    d = np.abs(x[both] - y[both])
    i = int(np.argmax(d))
    rel = float(d[i] / scale) if scale > 0 else 0.0
    return rel, int(a.index[both][i]), scale


class IdenticalRuns(Rule):
    name = "identical_runs"
    summary = "two methods' runs equal seed by seed to a relative tolerance, per K and metric"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "first": {"type": "string", "default": "rfedags"},
        "second": {"type": "string", "default": "rfedavg"},
        "K": {"type": "array", "minItems": 1, "uniqueItems": True,
              "items": {"type": "integer", "minimum": 1}, "default": [1],
              "description": "the local-step counts at which the two methods coincide"},
        "metrics": {"type": "array", "minItems": 1, "items": {"type": "string"},
                    "default": ["excess_risk", "dist_to_opt"]},
        "tolerance": {"type": "number", "exclusiveMinimum": 0, "default": 1e-10,
                      "description": "largest relative difference allowed (rounding only)"}}}

    def describe(self, p: dict) -> str:
        ks = ", ".join(map(str, p["K"]))
        return (f"at K = {ks}, with every agent taking part, seed by seed on shared draws, the "
                f"largest |{p['first']} - {p['second']}| over the rounds of "
                f"{', '.join(p['metrics'])}, relative to the metric's largest absolute value in "
                f"that seed, is at most {p['tolerance']:g}")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows, cases, notes, missing = [], [], [], []
        worst, where = -1.0, None
        names = ev.names()
        for e in names:
            runs = ev.seeded_runs(e)
            for K in p["K"]:
                a_runs = runs.get((p["first"], K, None), {})
                b_runs = runs.get((p["second"], K, None), {})
                seeds = sorted(set(a_runs) & set(b_runs))
                lone = sorted(set(a_runs) ^ set(b_runs))
                if lone:
                    notes.append(f"- `{e}`, K = {K}: seed(s) {', '.join(map(str, lone))} ran one "
                                 f"method only; not compared.")
                old = sorted({r.attrs.get("sampler", 1) for r in (*a_runs.values(), *b_runs.values())
                              if r.attrs.get("sampler", 1) < SHARED_DRAWS})
                if old:                    # each method its own draws: no identity to expect
                    cases.append(OPEN)
                    missing.append(f"`{e}` at K = {K} (its runs drew with sampler "
                                   f"{', '.join(map(str, old))}, each method its own draws)")
                    continue
                if not seeds:
                    cases.append(OPEN)
                    missing.append(f"`{e}` at K = {K}")
                    notes.append(f"- `{e}`, K = {K}: no seed with runs of both {p['first']} and "
                                 f"{p['second']} with every agent.")
                    continue
                for metric in p["metrics"]:
                    per_seed = []
                    for s in seeds:
                        a, b = (r.set_index("round")[metric] for r in (a_runs[s], b_runs[s]))
                        per_seed.append((*relative_difference(a, b), s))
                    decided = [x for x in per_seed if not np.isnan(x[0])]
                    if not decided:
                        cases.append(OPEN)
                        continue
                    rel, t, scale, seed = max(decided, key=lambda x: x[0])
                    cases.append(OK if rel <= p["tolerance"] else FAIL)
                    if rel > worst:
                        worst, where = rel, (e, K, metric, seed, t)
                    rows.append({**({"experiment": e} if len(names) > 1 else {}), "K": str(K),
                                 "metric": metric, "seeds": str(len(seeds)),
                                 "largest relative difference": rel,
                                 "at seed, round": f"{seed}, {t}", "scale": scale})
                    if np.isinf(rel):
                        notes.append(f"- `{e}`, K = {K}, {metric}: the runs of seed {seed} differ "
                                     f"in which rounds have a value (from round {t}).")
        verdict = combine(cases)
        margin = None
        if where is not None:
            e, K, metric, seed, t = where
            margin = (f"largest relative difference {worst:.2g} ({metric}, "
                      + (f"`{e}`, " if len(names) > 1 else "")
                      + f"K = {K}, seed {seed}, round {t}), claim <= {p['tolerance']:g}")
        decide = (f"runs of both {p['first']} and {p['second']} with every agent on shared draws "
                  f"(sampler {SHARED_DRAWS} or later), one seed at least, for {', '.join(missing)}"
                  ) if missing and verdict == UNDECIDED else None
        return Judgement(verdict, rows, notes, decide, margin)

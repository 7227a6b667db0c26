"""``fedavg_bias_expansion``: FedAvg's stationary bias E[theta_inf] - theta* against its
prediction, one experiment per step size eta (Mangold et al., arXiv 2412.01389; SCAFFLSA
slides "For Quadratics", "In the General Case"; the formulas: ``rfl.problems.fedavg_bias``).

Measured bias of one experiment: the coordinates of theta_t - theta* (run columns err_1..err_4)
averaged over the rounds after ``burn_in`` x rounds, per seed, then over the seeds; its
standard error: std over seeds / sqrt(seeds) (one seed: half the gap between the means of the
two halves of the window, a deterministic run's distance from its limit). The prediction is the
run's recorded ``predictions.fedavg_bias[part]`` (``part``: heterogeneity, noise or total).
A cell is resolved when its standard error is at most ``resolve`` x ||prediction||. It is
compared as a vector (a sign error would pass a ratio of norms): rel. error
||measured - predicted|| / ||predicted||.

``order: exact`` (the quadratic case, claim "FedAvg's bias is FedLSA's"): every cell within
``rel_tol``. ``order: first`` (a first-order expansion): reproduced when the smallest resolved
eta's rel. error is within ``rel_tol`` and the remainder ||measured - predicted|| is of
higher order (log-log slope over the resolved cells >= ``min_slope``, default 1.5: the paper's
remainder is O(eta^{3/2} H + eta^2 H^2)); partly when it is but the smallest eta is still beyond
``rel_tol``; not when it is not (a wrong constant or sign leaves a remainder of order eta). The
order is read only from remainders beyond ``Z_REMAINDER`` standard errors of 0; when none
stands out and, at the smallest resolved eta, the remainder's upper bound (remainder +
Z_REMAINDER se) is within ``rel_tol`` x the prediction, the first-order term holds to
``rel_tol`` and the remainder is bounded instead of measured: reproduced; otherwise
undecided. Fewer
than two resolved cells (one for ``exact``): undecided, with the seeds x rounds that would
resolve the smallest eta (the standard error falls as 1 / sqrt(seeds x rounds)).
"""

from __future__ import annotations

import numpy as np

from rfl import io

from .. import stats as S
from ..bias import replica_estimate
from ..rule import Evidence, Judgement, Rule
from ..verdicts import NOT, PARTLY, REPRODUCED, UNDECIDED

COORDINATES = ("err_1", "err_2", "err_3", "err_4")
#: a remainder ||measured - predicted|| counts for its order only beyond this many standard errors
Z_REMAINDER = 2.0


def measure(tables: list, burn_in: float) -> tuple[np.ndarray, float, int, int]:
    """(mean error vector, its standard error, seeds, rounds in the window) of FedAvg's runs;
    runs with replicas: the replicas' sample (``rfl.claims.bias.replica_estimate``; the
    window is then the last half of the rows)."""
    rep = replica_estimate(tables, 1 - burn_in)
    if rep is not None:
        mean, se, n = rep
        return mean, float(np.linalg.norm(se)), n, int(tables[0].attrs["replicas"]["window_rounds"])
    means, halves = [], []
    rounds = 0
    for t in tables:
        last = int(t["round"].iloc[-1])
        window = t[t["round"] > burn_in * last][list(COORDINATES)].to_numpy(float)
        rounds = window.shape[0]
        means.append(window.mean(axis=0))
        h = window.shape[0] // 2
        halves.append(window[:h].mean(axis=0) - window[h:].mean(axis=0))
    means = np.array(means)
    if len(means) >= 2:
        se = float(np.linalg.norm(means.std(axis=0, ddof=1)) / np.sqrt(len(means)))
    else:
        se = float(np.linalg.norm(halves[0]) / 2)
    return means.mean(axis=0), se, len(means), rounds


def cells(ev: Evidence, part: str, burn_in: float) -> list[dict]:
    """One record per experiment with FedAvg runs: eta, H, B, measured, predicted, se."""
    out = []
    for name in ev.names():
        paths = [p for p in ev.spec["runs"].get(name, [])]
        tables, pred, spec = [], None, None
        for path in paths:
            table, meta = io.read_run_table(path)
            if meta["spec"]["algorithm"]["name"] != "fedavg":
                continue
            tables.append(table)
            spec = meta["spec"]
            pred = ((meta.get("predictions") or {}).get("fedavg_bias") or {}).get(part, pred)
        if not tables:
            continue
        m, se, seeds, rounds = measure(tables, burn_in)
        p = np.zeros(4) if pred is None else np.pad(np.asarray(pred, float), (0, 4 - len(pred)))
        norm = float(np.linalg.norm(p))
        out.append({"experiment": name, "eta": float(spec["step"]["alpha"]),
                    "H": int(spec["algorithm"]["K"]), "B": spec["algorithm"].get("batch_size"),
                    "measured": m, "predicted": p, "has_prediction": pred is not None and norm > 0,
                    "se": se, "seeds": seeds, "rounds": rounds,
                    "norm_measured": float(np.linalg.norm(m)), "norm_predicted": norm,
                    "remainder": float(np.linalg.norm(m - p)),
                    "rel_error": float(np.linalg.norm(m - p) / norm) if norm > 0 else np.nan})
    return sorted(out, key=lambda r: -r["eta"])


def remainder_slope(rows: list[dict]) -> float:
    """Least-squares slope of log ||measured - predicted|| against log eta (NaN with < 2 rows)."""
    rows = [r for r in rows if r["remainder"] > 0]
    if len(rows) < 2:
        return np.nan
    return float(np.polyfit(np.log([r["eta"] for r in rows]), np.log([r["remainder"] for r in rows]), 1)[0])


class FedAvgBiasExpansion(Rule):
    name = "fedavg_bias_expansion"
    summary = "FedAvg's measured bias against its prediction, per step size (exact, or first order in eta)"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "part": {"enum": ["heterogeneity", "noise", "total"], "default": "total"},
        "order": {"enum": ["first", "exact"], "default": "first"},
        "rel_tol": {"type": "number", "exclusiveMinimum": 0, "default": 0.1},
        "resolve": {"type": "number", "exclusiveMinimum": 0, "default": 0.2},
        "burn_in": {"type": "number", "minimum": 0, "exclusiveMaximum": 1, "default": 0.5},
        "min_slope": {"type": "number", "default": 1.5}}}

    def describe(self, p: dict) -> str:
        head = (f"FedAvg's bias (mean of theta_t - theta* after {p['burn_in']:.0%} of the rounds, over "
                f"seeds) against the predicted {p['part']} part, as vectors; a step size counts when "
                f"its standard error is at most {p['resolve']:g} x the prediction's norm; ")
        if p["order"] == "exact":
            return head + f"every step size within a relative error of {p['rel_tol']:g}"
        return head + (f"reproduced when the smallest such step size is within {p['rel_tol']:.0%} and "
                       f"the remainder falls like eta^{p['min_slope']:g} or faster (log-log slope); partly "
                       f"when only "
                       f"the latter; not otherwise; undecided with fewer than two such step sizes")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        rows = cells(ev, p["part"], p["burn_in"])
        table = [{"experiment": r["experiment"], "eta": f"{r['eta']:g}", "H": str(r["H"]),
                  "B": str(r["B"]), "seeds x rounds": f"{r['seeds']} x {r['rounds']}",
                  "norm measured": r["norm_measured"], "se": r["se"],
                  "norm predicted": r["norm_predicted"],
                  "measured/predicted": (r["norm_measured"] / r["norm_predicted"]
                                         if r["norm_predicted"] > 0 else np.nan),
                  "rel. error": r["rel_error"]} for r in rows]
        if not rows:
            return Judgement(UNDECIDED, [], ["No FedAvg run in the claim's experiments."],
                             "FedAvg runs with a fixed step",
                             S.value_margin("step sizes with FedAvg runs", 0, S.Claim("", low=1)))
        if not any(r["has_prediction"] for r in rows):
            return Judgement(UNDECIDED, table, [f"No run records a nonzero {p['part']} prediction."],
                             "runs whose problem predicts FedAvg's bias (quadratic, logistic)",
                             S.value_margin(f"step sizes with a nonzero {p['part']} prediction", 0,
                                            S.Claim("", low=1)))
        resolved = [r for r in rows if r["has_prediction"] and r["se"] <= p["resolve"] * r["norm_predicted"]]
        slope = remainder_slope(resolved)
        notes = [f"{len(resolved)} of {len(rows)} step sizes resolved; remainder "
                 f"||measured - predicted|| against eta: log-log slope {slope:.3g}."]
        need = 1 if p["order"] == "exact" else 2
        if len(resolved) < need:
            worst = min((r for r in rows if r["has_prediction"]), key=lambda r: r["eta"])
            factor = (worst["se"] / (p["resolve"] * worst["norm_predicted"])) ** 2
            margin = (S.value_margin("se / norm(prediction)", worst["se"] / worst["norm_predicted"],
                                     S.Claim("", high=p["resolve"]), label=f"eta = {worst['eta']:g}")
                      + f" ({len(resolved)} step size(s) resolved, {need} needed)")
            return Judgement(UNDECIDED, table, notes,
                             f"eta = {worst['eta']:g}: about {factor:.3g} x the seeds x rounds run "
                             f"({worst['seeds']} x {worst['rounds']}) to bring its standard error "
                             f"below {p['resolve']:g} x the prediction", margin)
        if p["order"] == "exact":
            bad = [r for r in resolved if not r["rel_error"] <= p["rel_tol"]]
            notes.append(f"largest relative error {max(r['rel_error'] for r in resolved):.3g}.")
            w = max(resolved, key=lambda r: r["rel_error"] if np.isfinite(r["rel_error"]) else np.inf)
            margin = (S.value_margin("largest relative error", w["rel_error"], S.Claim("", high=p["rel_tol"]),
                                     w["se"] / w["norm_predicted"], label=f"eta = {w['eta']:g}")
                      + f" ({len(resolved)} of {len(rows)} step sizes resolved)")
            return Judgement(NOT if bad else REPRODUCED, table, notes, None, margin)
        # the remainder's order is read only from remainders that stand out of their noise
        # (> Z_REMAINDER standard errors): a slope through remainders within noise of 0 measures
        # the noise, not the expansion's next order
        standing = [r for r in resolved if r["remainder"] > Z_REMAINDER * r["se"]]
        w = resolved[-1]                        # the smallest resolved eta
        bound = (w["remainder"] + Z_REMAINDER * w["se"]) / w["norm_predicted"]
        if not standing and bound <= p["rel_tol"]:
            # no remainder stands out of its noise, and at the smallest resolved eta even its
            # upper bound is within rel_tol: the first-order term holds to rel_tol there (as the
            # branch below asks of the point estimate); the remainder is too small to measure its
            # order, which bounds it instead
            notes.append(f"no resolved remainder lies beyond {Z_REMAINDER:g} standard errors of 0; at the "
                         f"smallest resolved eta = {w['eta']:g} the remainder is at most {bound:.3g} x the "
                         f"prediction: the prediction holds to first order within rel_tol; the remainder's "
                         f"order is bounded, not measured.")
            margin = (f"eta = {w['eta']:g}: relative error {w['rel_error']:.3g} + {Z_REMAINDER:g} x "
                      f"{w['se'] / w['norm_predicted']:.2g} = {bound:.3g}, claim <= {p['rel_tol']:g}, no "
                      f"remainder beyond {Z_REMAINDER:g} standard errors ({len(resolved)} of {len(rows)} "
                      f"step sizes resolved)")
            return Judgement(REPRODUCED, table, notes, None, margin)
        if len(standing) < 2:
            smallest = resolved[-1]
            factor = (Z_REMAINDER * smallest["se"] / (p["rel_tol"] * smallest["norm_predicted"])) ** 2
            notes.append(f"{len(standing)} of the resolved step sizes have a remainder beyond "
                         f"{Z_REMAINDER:g} standard errors of 0; the remainder's order is not measured "
                         f"(smallest resolved eta = {smallest['eta']:g}: relative error "
                         f"{smallest['rel_error']:.3g}, standard error {smallest['se'] / smallest['norm_predicted']:.3g} "
                         f"of the prediction).")
            margin = (f"eta = {smallest['eta']:g}: relative error {smallest['rel_error']:.3g} +- "
                      f"{smallest['se'] / smallest['norm_predicted']:.2g}, claim <= {p['rel_tol']:g} with a "
                      f"remainder of order >= {p['min_slope']:g}")
            return Judgement(UNDECIDED, table, notes,
                             f"eta = {smallest['eta']:g}: about {factor:.3g} x the sample run "
                             f"({smallest['seeds']} x {smallest['rounds']}) to resolve a remainder of "
                             f"{p['rel_tol']:g} x the prediction", margin)
        slope = remainder_slope(standing)
        notes.append(f"remainder slope over the {len(standing)} step sizes whose remainder stands out "
                     f"of the noise: {slope:.3g}.")
        smallest = resolved[-1]
        faster = bool(slope >= p["min_slope"])
        notes.append(f"smallest resolved eta = {smallest['eta']:g}: relative error {smallest['rel_error']:.3g}.")
        if faster and smallest["rel_error"] <= p["rel_tol"]:
            verdict = REPRODUCED
        elif faster:
            verdict = PARTLY
        else:
            verdict = NOT
        decide = (f"smaller step sizes resolved (relative error {smallest['rel_error']:.3g} at eta = "
                  f"{smallest['eta']:g}, the remainder falling with slope {slope:.3g})"
                  if verdict == PARTLY else None)
        margin = (f"remainder slope {slope:.3g}, claim >= {p['min_slope']:g}; eta = {smallest['eta']:g}: "
                  f"relative error {smallest['rel_error']:.3g}, claim <= {p['rel_tol']:g}")
        return Judgement(verdict, table, notes, decide, margin)

"""``bias_order``: the order in eta of a fixed-step method's stationary bias: the local slope
of log ||bias|| against log eta at the smallest steps is the expected one (Mangold et al.
2024, arXiv 2412.01389: FedAvg's bias is O(eta), slope 1; Federated Richardson-Romberg's,
2 theta_bar_eta - theta_bar_2eta, is O(eta^2), slope 2). An order is a statement as eta -> 0:
the slope is read on the ``local`` smallest resolved step sizes only, not over steps that
leave the first-order regime.

Biases from ``rfl.claims.bias.estimate``, each with its standard error. A step size whose bias
is not resolved (below ``z`` uncertainties) is left out; with fewer than ``min_steps``
resolved step sizes the method is undecided, with the seeds x rounds that would resolve the
weakest bias. The slope is a weighted least-squares fit (weights 1 / se(log bias)^2, se(log
bias) = uncertainty / bias by the delta method) with its normal 95% interval; it holds when
the interval lies within ``tolerance`` of the order, fails when it lies wholly outside
(``rfl.claims.stats.decide``; fewer than ``min_seeds`` seeds decide nothing)."""

from __future__ import annotations

import numpy as np

from rfl.reporting.figures import method_label

from scipy import stats as sps

from .. import stats as S
from ..bias import estimate, more_for, step_of
from ..rule import Evidence, Judgement, Rule
from ..verdicts import OPEN, combine


def slope(etas, biases) -> float:
    """Least-squares slope of log(bias) against log(eta)."""
    return float(np.polyfit(np.log(etas), np.log(biases), 1)[0])


def local_slope(etas, biases, uncertainties, seeds: int, level: float = S.LEVEL,
                method: str = "normal, delta method") -> S.Interval:
    """The weighted least-squares slope of log(bias) against log(eta) (weights 1 / (u / b)^2; equal
    weights when an uncertainty is 0) with its normal interval at ``level``: slope +- z se, se^2
    = 1 / sum w (x - xbar_w)^2 (known standard errors; the delta method for log b). ``seeds``
    is the sample size the biases were averaged over (``Interval.n``)."""
    x, y = np.log(np.asarray(etas, float)), np.log(np.asarray(biases, float))
    se = np.asarray(uncertainties, float) / np.asarray(biases, float)
    if not np.all(se > 0):
        b = slope(etas, biases)
        return S.Interval(b, b, b, seeds, "exact (no uncertainty)", level, 0.0)
    w = 1 / se ** 2
    xbar = np.sum(w * x) / np.sum(w)
    sxx = np.sum(w * (x - xbar) ** 2)
    b = float(np.sum(w * (x - xbar) * y) / sxx)
    half = float(sps.norm.ppf((1 + level) / 2)) / np.sqrt(sxx)
    return S.Interval(b, b - half, b + half, seeds, method, level, float(np.sqrt(1 / sxx)))


def more_to_decide(iv: S.Interval, want: float, tol: float, near) -> str:
    """What would shrink the slope's interval to clear the nearer bound of [want - tol, want +
    tol]: its half-width falls as 1 / sqrt(seeds x rounds), so (half-width / distance)^2 times
    them; none at all when the slope sits on a bound."""
    half = (iv.high - iv.low) / 2
    d = min(abs(iv.estimate - (want - tol)), abs(iv.estimate - (want + tol)))
    seeds, rounds = min(b.seeds for _, b in near), min(b.rounds for _, b in near)
    if d == 0:
        return "the slope sits on the bound: more seeds x rounds do not decide it"
    return (f"about {(half / d) ** 2:.1f}x the seeds x rounds at the {len(near)} smallest steps "
            f"({seeds} seeds, {rounds} rounds now)")


class BiasOrder(Rule):
    name = "bias_order"
    across_seeds = True
    summary = "the slope of log ||bias|| against log eta, per method, is the expected order"
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "orders": {"type": "object", "minProperties": 1,
                   "additionalProperties": {"type": "number", "exclusiveMinimum": 0},
                   "default": {"fedavg": 1, "fedrr": 2},
                   "description": "algorithm -> expected slope"},
        "tolerance": {"type": "number", "exclusiveMinimum": 0, "default": 0.3},
        "min_steps": {"type": "integer", "minimum": 2, "default": 5},
        "local": {"type": "integer", "minimum": 2, "default": 3,
                  "description": "the slope is read on this many smallest resolved step sizes"},
        "min_seeds": {"type": "integer", "minimum": 1, "default": S.MIN_SEEDS,
                      "description": "fewest seeds that decide (1 for deterministic runs: full "
                                     "batches, every agent)"},
        "z": {"type": "number", "minimum": 0, "default": 3.0},
        "window": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "default": 0.5}}}

    def describe(self, p: dict) -> str:
        want = ", ".join(f"{a}: {o:g}" for a, o in p["orders"].items())
        return (f"local slope of log ||bias|| (mean of theta - theta* over the last {p['window']:g} of "
                f"the rounds and the seeds) against log eta at the {p['local']} smallest of at least "
                f"{p['min_steps']} resolved step sizes (weighted least squares, normal 95% interval "
                f"from the biases' standard errors) within {p['tolerance']:g} of the order ({want}): "
                f"holds; wholly outside: fails; a bias within {p['z']:g} uncertainties of 0 is left "
                f"out; fewer than {p['min_seeds']} seeds decide nothing")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        points: dict[tuple, list] = {}
        for e in ev.names():
            eta = step_of(ev, e)
            for key, runs in ev.runs(e).items():
                if key[0] in p["orders"] and np.isfinite(eta):
                    points.setdefault(key, []).append((eta, estimate(runs, p["window"]), e))
        rows, notes, cases, decide, tests = [], [], [], [], []
        for alg in p["orders"]:
            if not any(k[0] == alg for k in points):
                cases.append(OPEN)
                notes.append(f"- {alg}: no runs with a fixed step.")
                decide.append(f"runs of {alg}")
        for key, pts in points.items():
            pts.sort(key=lambda x: x[0])
            label, want = method_label(key), p["orders"][key[0]]
            for eta, b, e in pts:
                rows.append({"method": label, "eta": eta, "bias": b.value, "uncertainty": b.uncertainty,
                             "seeds": b.seeds, "replicas": b.replicas or "-", "rounds": b.rounds,
                             "experiment": e})
            good = [(eta, b) for eta, b, _ in pts if b.resolved(p["z"])]
            if len(good) < p["min_steps"]:
                cases.append(OPEN)
                weak = [b for _, b, _ in pts if not b.resolved(p["z"])]
                why = (f"{len(good)} of {len(pts)} step sizes resolved, {p['min_steps']} needed")
                notes.append(f"- {label}: undecided: {why}.")
                if weak:
                    worst = max(weak, key=lambda b: b.uncertainty / max(b.value, 1e-300))
                    decide.append(f"{label}: {more_for(worst, worst.value / (2 * p['z']))}")
                else:
                    decide.append(f"{label}: {p['min_steps'] - len(pts)} more step sizes")
                continue
            near = good[:p["local"]]
            # the independent samples behind each bias: its replicas (x seeds) where the runs have
            # them (``rfl.claims.bias``: the standard error is across replicas), else its seeds
            iv = local_slope([g[0] for g in near], [g[1].value for g in near], [g[1].uncertainty for g in near],
                             min(g[1].replicas or g[1].seeds for g in near),
                             method=("normal, delta method; n = replicas x seeds"
                                     if all(g[1].replicas for g in near) else "normal, delta method"))
            test = S.decide(iv, S.Claim("slope", want - p["tolerance"], want + p["tolerance"]), label,
                            min_seeds=p["min_seeds"])
            if test.outcome == OPEN and iv.n >= p["min_seeds"]:
                test = S.with_outcome(test, OPEN, f"{label}: {more_to_decide(iv, want, p['tolerance'], near)}")
            cases.append(test.outcome)
            tests.append(test)
            if test.outcome == OPEN and test.why:
                decide.append(test.why)
            s_all = slope([g[0] for g in good], [g[1].value for g in good])
            notes.append(f"- {label}: local slope {iv.estimate:.2f} [{iv.low:.2f}, {iv.high:.2f}] over "
                         f"eta = {near[0][0]:g}..{near[-1][0]:g} ({len(near)} smallest resolved step sizes; "
                         f"expected {want:g}); over all {len(good)} resolved: {s_all:.2f}.")
        verdict = combine(cases)
        return Judgement(verdict, rows, notes, "; ".join(decide) if decide and OPEN in cases else None,
                         S.margin_line(tests))

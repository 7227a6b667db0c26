"""The stationary bias of a fixed-step run, from its run tables: the norm of the mean of
theta_t - theta* over the last rounds and the seeds, with an uncertainty (the rules
``bias_order`` and ``bias_ratio``).

A run of a problem that records the coordinates of theta_t - theta* (``err_1``, ...,
``rfl.problems._error_coordinates``) gives them per round; their mean over the last ``window``
share of the rounds is the run's Polyak-Ruppert estimate of E[theta_inf] - theta* (for a run
that records its own running average, FedRR or ``average_after``, a mean of averages, as
consistent). Over seeds: the mean of the runs' estimates. Uncertainty, per coordinate, from
two sources added in quadrature: the standard error over seeds (two seeds or more), and the
drift inside the window (half the difference of its two halves' means: a run that has not
yet reached its stationary mean, e.g. a deterministic run still converging, is uncertain
by as much). Runs with replicas (``rfl.algorithms.replicas``: the metadata's per-replica means of
the coordinates over the last half of the rows) are their own sample: the mean and the standard
error across all replicas of all seeds (independent chains), the drift of the replicas' mean
added in quadrature as above; the rule's window must be the replicas' (``replica_sample``).
Without coordinate columns the norm ``dist_to_opt`` of the last round is used
(exact for a deterministic run that has converged; a stochastic one's norm also holds its
variance).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rfl.problems._error_coordinates import COORDINATES


@dataclass(frozen=True)
class Bias:
    """``value``: ||mean of theta - theta*||; ``uncertainty``: one standard error of it (0 when
    nothing is known to scatter); ``seeds``, ``rounds``: what it was computed from; ``source``:
    "coordinates" or "dist_to_opt"."""

    value: float
    uncertainty: float
    seeds: int
    rounds: int
    source: str
    replicas: int = 0

    def resolved(self, z: float) -> bool:
        """Whether the bias is at least z uncertainties away from 0."""
        return bool(np.isfinite(self.value) and self.value > z * self.uncertainty)


def replica_sample(runs, window: float):
    """The replicas' window means of err_*: ``(n, len(COORDINATES))`` over every replica of every
    run (n = replicas x seeds), or None when a run has no replicas or its window is not the
    last ``window`` share of the rows (``rfl.algorithms.replicas.window_start``)."""
    from rfl.algorithms.replicas import window_start

    out = []
    for t in runs:
        rep = t.attrs.get("replicas")
        if not rep or rep.get("err_mean") is None:
            return None
        if rep["window_start"] != window_start(int(t["round"].iloc[-1]), window):
            return None
        got = dict(zip(rep["columns"], np.asarray(rep["err_mean"], dtype=float).T))
        out.append(np.stack([got[c] for c in COORDINATES], axis=1))
    return np.vstack(out) if out else None


def drift(table, cols, window: float) -> np.ndarray:
    """Half the difference of the means of the window's two halves, per column."""
    e = table[cols].to_numpy(dtype=float)
    tail = e[-max(2, int(np.ceil(window * len(e)))):]
    half = len(tail) // 2
    return (tail[half:].mean(axis=0) - tail[:half].mean(axis=0)) / 2


def replica_estimate(runs, window: float):
    """(mean error vector, its standard error per coordinate, replicas) from the replicas
    (module docstring), or None without them."""
    sample = replica_sample(runs, window)
    if sample is None or sample.shape[0] < 2:
        return None
    cols = list(COORDINATES)
    d = np.abs(np.mean([drift(t, cols, window) for t in runs], axis=0))
    se = sample.std(axis=0, ddof=1) / np.sqrt(sample.shape[0])
    return sample.mean(axis=0), np.hypot(se, d), sample.shape[0]


def estimate(runs, window: float) -> Bias:
    """The bias of one method's runs (one table per seed; ``window``: the share of the last
    rounds averaged, in (0, 1])."""
    runs = [t for t in runs if not (t["status"] == "diverged").any()]
    if not runs:
        return Bias(np.nan, np.nan, 0, 0, "none")
    cols = [c for c in COORDINATES if c in runs[0].columns]
    rounds = int(min(t["round"].max() for t in runs))
    rep = replica_estimate(runs, window) if len(cols) == len(COORDINATES) else None
    if rep is not None:
        mean, se, n = rep
        return Bias(float(np.linalg.norm(mean)), float(np.linalg.norm(se)), len(runs), rounds,
                    "replicas", n)
    if not cols:
        values = [float(t["dist_to_opt"].iloc[-1]) for t in runs]
        se = np.std(values, ddof=1) / np.sqrt(len(values)) if len(values) > 1 else 0.0
        return Bias(float(np.mean(values)), float(se), len(runs), rounds, "dist_to_opt")
    means, drifts = [], []
    for t in runs:
        e = t[cols].to_numpy(dtype=float)
        tail = e[-max(2, int(np.ceil(window * len(e)))):]
        half = len(tail) // 2
        means.append(tail.mean(axis=0))
        drifts.append((tail[half:].mean(axis=0) - tail[:half].mean(axis=0)) / 2)
    means, drift = np.array(means), np.abs(np.mean(drifts, axis=0))
    se = means.std(axis=0, ddof=1) / np.sqrt(len(means)) if len(means) > 1 else np.zeros(len(cols))
    return Bias(float(np.linalg.norm(means.mean(axis=0))), float(np.linalg.norm(np.hypot(se, drift))),
                len(runs), rounds, "coordinates")


def step_of(evidence, experiment: str) -> float:
    """The fixed step eta of an experiment (its ``step.alpha``), NaN for another rule."""
    step = evidence.experiment(experiment).get("step") or {}
    return float(step["alpha"]) if step.get("rule") == "fixed" else np.nan


def more_for(bias: Bias, target: float) -> str:
    """What would shrink ``bias``'s uncertainty to ``target``: it falls as 1/sqrt(seeds x
    rounds), so about (uncertainty / target)^2 times the seeds or the rounds."""
    factor = (bias.uncertainty / target) ** 2 if target > 0 else np.inf
    if bias.replicas and np.isfinite(factor):
        return f"about {factor:.1f}x the replicas ({bias.replicas} now, over {bias.seeds} seeds)"
    return (f"about {factor:.1f}x the seeds x rounds ({bias.seeds} seeds, {bias.rounds} rounds now)"
            if np.isfinite(factor) else "a resolved bias")

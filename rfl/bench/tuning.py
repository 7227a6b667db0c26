"""The step rule of the benchmark, the same for every method on every problem.

On the tuning seed (``suite.TUNING_SEED``, never reported) each method runs every step of the
grid alpha_0 x ``suite.GRID[size]``; its *final loss* at a step is the excess risk
F(x_T) - F* at the last round T, +inf for a run that diverged (or stopped before T). The
chosen step is the one with the smallest final loss; a tie goes to the smaller step. When
every step of the grid diverged the smallest is used, and the choice says so.
"""

from __future__ import annotations

import math

import numpy as np


def final_loss(table, rounds: int) -> float:
    """F(x_T) - F* of a run table (rows t = 0..T), +inf unless it reached round ``rounds``
    with status ok."""
    last = table.iloc[-1]
    if int(last["round"]) != int(rounds) or last["status"] != "ok":
        return math.inf
    value = float(last["excess_risk"])
    return value if np.isfinite(value) else math.inf


def choose(losses: dict[float, float]) -> dict:
    """The step of ``losses`` (step -> final loss on the tuning seed) with the smallest loss,
    ties and all-diverged to the smaller step: {"alpha", "losses" (step, loss) ascending in
    step, "all_diverged"}."""
    if not losses:
        raise ValueError("no tuning run to choose a step from")
    steps = sorted(losses)
    best = min(steps, key=lambda a: (losses[a], a))
    return {"alpha": best, "losses": [[a, losses[a]] for a in steps],
            "all_diverged": all(math.isinf(losses[a]) for a in steps)}

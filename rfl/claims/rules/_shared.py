"""What the seed-paired rules of the sources' claims share (outperforms, removes_drift,
optimal_k_above_one, k_not_too_large, cost_falls_with_k, comparable_value, rounds_fraction):
their common parameters, the floored level, and the judgement of their ``stats`` tests."""

from __future__ import annotations

from .. import stats as S
from ..rule import Judgement
from ..verdicts import OPEN, REPRODUCED, UNDECIDED, combine

FLOOR = {"type": "number", "exclusiveMinimum": 0, "default": 1e-14,
         "description": "round-off of the metric: a level below it counts as this"}
PARTICIPATION = {"enum": ["every", "any"], "default": "every",
                 "description": "the runs: with every agent taking part, or under whichever "
                                "participation the experiment runs (every agent first)"}
ALGORITHM = {"type": "string", "default": "rfedags"}
METRIC = {"type": "string", "default": "excess_risk"}


def floored_level(metric: str, floor: float):
    """A run's level (``stats.tail_level``) with values below the round-off ``floor`` as floor."""
    return lambda t: max(S.tail_level(t, metric), floor)


def judgement(rows: list[dict], tests: list, missing: list[str]) -> Judgement:
    """The verdict of a rule's ``stats`` tests (``combine``; each ``missing`` piece of evidence
    an undecided case), what would decide it when it is not reproduced, and the margins."""
    if not tests:
        return Judgement(UNDECIDED, rows, [], "; ".join(missing) or "runs")
    verdict = combine([t.outcome for t in tests] + [OPEN] * len(missing))
    why = [t.why for t in tests if t.outcome == OPEN and t.why] + missing
    return Judgement(verdict, rows, [], "; ".join(why) if why and verdict != REPRODUCED else None,
                     S.margin_line(tests))

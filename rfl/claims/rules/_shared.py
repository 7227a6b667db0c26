"""What the seed-paired rules of the sources' claims share (outperforms, removes_drift,
optimal_k_above_one, k_not_too_large, cost_falls_with_k, comparable_value, rounds_fraction):
their common parameters, the floored level, the walk over the runs of two methods at a common
K, the levels per K with the paired comparison of two K, and the judgement of their ``stats``
tests."""

from __future__ import annotations

import numpy as np

from .. import stats as S
from ..rule import Evidence, Judgement
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


# ---- two methods at a common K ----------------------------------------------------------
def at_common_k(ev: Evidence, first: str, others: list[str], participation: str, missing: list[str]):
    """(experiment, other, K, first's runs, other's runs, prefix) for each experiment, each
    method of ``others`` and each K both it and ``first`` ran (``Evidence.by_k``), in that
    order; ``prefix`` is "`experiment`, " when the evidence holds several experiments, else "".
    An experiment where the two share no K adds its line to ``missing``."""
    prefix = len(ev.names()) > 1
    for e in ev.names():
        a = ev.by_k(e, first, participation)
        for other in others:
            b = ev.by_k(e, other, participation)
            common = sorted(set(a) & set(b))
            if not common:
                missing.append(f"`{e}`: runs of {first} and {other} at a common K")
            for K in common:
                yield e, other, K, a[K], b[K], (f"`{e}`, " if prefix else "")


# ---- one method's levels across K --------------------------------------------------------
def k_levels(runs_by_k: dict, level) -> dict:
    """K -> per-seed levels (``stats.per_seed``) of one algorithm's runs."""
    return {K: S.per_seed(runs, level) for K, runs in runs_by_k.items()}


def best_k(levels: dict, among) -> int:
    """The K among ``among`` with the lowest mean log level across seeds."""
    return min(among, key=lambda K: float(np.mean(np.log(levels[K].clip(lower=1e-300)))))


def level_rows(e, levels: dict, multi: bool) -> list[dict]:
    """One row per K: the geometric mean of its seeds' levels and its seeds."""
    return [{**({"experiment": e} if multi else {}), "K": str(K),
             "level (geometric mean over seeds)": float(np.exp(np.mean(np.log(v.clip(lower=1e-300))))),
             "seeds": len(v)} for K, v in levels.items()]


def k_pair(ev: Evidence, p: dict, choose, direction: str, label: str, needs: str) -> Judgement:
    """The judgement of a claim comparing one algorithm's level at two K, per experiment:
    the rows of its levels per K (``level_rows``); ``choose(runs_by_k, levels)`` the pair
    (K, K_ref) the claim compares, None when the runs lack it (then ``needs`` says what is
    missing); the statistic per seed level(K) / level(K_ref), paired by seed, on the log
    scale, holding ``"below"`` 1 or ``"above"`` 1 (``direction``). ``label`` names the case
    when the evidence holds one experiment."""
    rows, tests, missing = [], [], []
    level = floored_level(p["metric"], p["floor"])
    bound = {"below": {"high": 1.0}, "above": {"low": 1.0}}[direction]
    multi = len(ev.names()) > 1
    for e in ev.names():
        runs = ev.by_k(e, p["algorithm"], p["participation"])
        levels = k_levels(runs, level)
        rows += level_rows(e, levels, multi)
        pair = choose(runs, levels)
        if pair is None:
            missing.append(f"`{e}`: {needs}")
            continue
        K, ref = pair
        tests.append(S.judged(S.paired(runs[K], runs[ref], S.log_ratio_of(level)),
                              S.Claim(f"level ratio K = {K} / K = {ref}", **bound),
                              label=(f"`{e}`" if multi else label), log=True))
    return judgement(rows, tests, missing)

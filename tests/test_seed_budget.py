"""No comparative verdict rests on too few seeds. Every experiment that a claim of a rule deciding
across seeds (``Rule.across_seeds``: an interval across seeds, ``rfl.claims.stats.decide``) reads
runs at least ``stats.MIN_SEEDS`` seeds (replicas count as seeds; a claim's ``min_seeds`` where
its rule has that parameter, e.g. deterministic runs), or declares why not in its size block
(``paper_size.budget.seeds``), prints that reason on the size line of its claims, and runs
enough seeds in config/paper.yaml."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from rfl import config as rflconfig
from rfl.claims import stats as S
from rfl.claims.judge import claim_params
from rfl.claims.rule import Evidence
from rfl.registry import RULES
from rfl.size import describe_size

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def default():
    return rflconfig.load(REPO / "config" / "config.yaml")


@pytest.fixture(scope="module")
def paper():
    return rflconfig.load(REPO / "config" / "paper.yaml")


def _short(config: dict) -> dict[str, list[str]]:
    """experiment -> the claims deciding across seeds that it leaves short of seeds."""
    out: dict[str, list[str]] = {}
    for cid, claim in config["claims"].items():
        if not RULES[claim["rule"]].across_seeds:
            continue
        need = claim_params(claim).get("min_seeds", S.MIN_SEEDS)
        for e in Evidence({"config": config}, claim["experiments"]).names():
            exp = config["experiments"][e]
            if exp.get("paper_only"):           # not run here: config/paper.yaml runs it
                continue
            if len(exp["seeds"]) * exp.get("replicas", 1) < need:
                out.setdefault(e, []).append(cid)
    return out


def _budget(config: dict, experiment: str) -> str | None:
    return ((config["experiments"][experiment].get("paper_size") or {}).get("budget") or {}).get("seeds")


def test_every_comparative_claim_reads_enough_seeds_or_a_declared_budget(default):
    short = _short(default)
    undeclared = {e: claims for e, claims in short.items() if not _budget(default, e)}
    assert not undeclared, (f"experiments with fewer than {S.MIN_SEEDS} seeds read by comparative "
                            f"or rate claims, without paper_size.budget.seeds: {undeclared}")


def test_a_budget_reason_only_where_the_seeds_fall_short(default):
    """A budget reason on an experiment with enough seeds (or read by no comparison) is stale."""
    declared = {e for e in default["experiments"] if _budget(default, e)}
    assert declared <= set(_short(default)), declared - set(_short(default))


def test_the_paper_config_runs_enough_seeds_where_the_default_keeps_a_budget(default, paper):
    declared = [e for e in default["experiments"] if _budget(default, e)]
    assert declared                                  # the mechanism is in use
    for e in declared:
        assert len(paper["experiments"][e]["seeds"]) >= S.MIN_SEEDS, e
        assert not _short(paper).get(e), e


def test_the_size_line_says_why_an_experiment_runs_too_few_seeds(default, paper):
    for e in (e for e in default["experiments"] if _budget(default, e)):
        n = len(default["experiments"][e]["seeds"])
        note = (f"{n} seed{'s' if n != 1 else ''} by the budget ({S.MIN_SEEDS} decide a comparison): "
                f"{_budget(default, e)}")
        assert describe_size(default, [e]).endswith(f"; {note}"), e
        assert note not in describe_size(paper, [e])     # enough seeds there: no such note


def test_a_rule_deciding_through_the_seed_interval_declares_it():
    """A rule whose module decides through ``stats.decide`` (``S.judged``, ``S.decide``) or the
    helpers built on it (``ends_as_low.level_test``, ``faster_than.race``, ``_shared.k_pair``) says so
    (``across_seeds``), so that the checks above cover its claims; no other rule does."""
    calls = ("S.judged(", "S.decide(", "level_test(", "race(", "k_pair(")
    for name, cls in RULES.items():
        if not cls.__module__.startswith("rfl.claims.rules."):
            continue
        source = inspect.getsource(inspect.getmodule(cls))
        assert cls.across_seeds == any(c in source for c in calls), name

"""An experiment's size against its ``paper_size`` (``rfl.size``) on hand-written configs: each
difference found (and only those), and the report's words for one or several experiments."""

from __future__ import annotations

import copy

import pytest

from rfl import config as rflconfig
from rfl.size import describe_size, size_differences

SRC = "PCAStief_Syn_numagentincreas.m"


def _config() -> dict:
    ds = {"problem": "pca_stiefel", "seed": 1, "params": {"d": 20, "r": 3, "S": 6, "N": 100, "block": 50, "n_blocks": 40}}
    exp = {"dataset": "a6", "rounds": 300, "batch_size": 50, "seeds": [0],
           "step": {"rule": "fixed", "alpha": 0.3},
           "methods": [{"algorithm": "rfedags", "K": [5]}],
           "paper_size": {"source": SRC, "S": 60, "N": 1000, "d": 20, "rounds": 2500, "seeds": 4, "K": 5}}
    cfg = {"datasets": {"a6": ds}, "experiments": {"agents_s6": exp}, "figures": {}}
    for S, paper_S in ((10, 80), (20, 100)):
        cfg["datasets"][f"a{S}"] = copy.deepcopy(ds)
        cfg["datasets"][f"a{S}"]["params"]["S"] = S
        cfg["experiments"][f"agents_s{S}"] = copy.deepcopy(exp)
        cfg["experiments"][f"agents_s{S}"].update(dataset=f"a{S}")
        cfg["experiments"][f"agents_s{S}"]["paper_size"]["S"] = paper_S
    return cfg


def test_the_hand_written_config_is_valid_and_keeps_its_paper_sizes():
    cfg = _config()
    valid = rflconfig.validate(cfg)                    # (raises ConfigError if it is not)
    assert {e: x["paper_size"] for e, x in valid["experiments"].items()} == \
        {e: x["paper_size"] for e, x in cfg["experiments"].items()}


def test_differences_list_only_the_declared_keys_that_differ_dataset_parameters_first():
    cfg = _config()
    assert size_differences(cfg, "agents_s6") == [("S", 6, 60), ("N", 100, 1000),
                                                  ("rounds", 300, 2500), ("seeds", 1, 4)]
    assert describe_size(cfg, ["agents_s6"]) == \
        f"S = 6 of 60, N = 100 of 1000, rounds 300 of 2500, seeds 1 of 4 ({SRC})"


def test_at_the_papers_size_and_without_a_declaration():
    cfg = _config()
    exp = cfg["experiments"]["agents_s6"]
    exp["paper_size"] = {"source": "paper Table 1", "S": 6, "rounds": 300, "seeds": 1,
                         "batch_size": 50, "K": [5], "alpha": 0.3}
    assert size_differences(cfg, "agents_s6") == []
    assert describe_size(cfg, ["agents_s6"]) == "at the paper's size (paper Table 1)"
    del exp["paper_size"]
    assert size_differences(cfg, "agents_s6") == []
    assert describe_size(cfg, ["agents_s6"]) == "no paper size declared"


def test_K_compares_the_sorted_set_of_every_methods_values_and_alpha_alpha0():
    cfg = _config()
    exp = cfg["experiments"]["agents_s6"]
    exp["methods"] = [{"algorithm": "rfedags", "K": [10, 1]}, {"algorithm": "rfedavg", "K": [1, 4]}]
    exp["step"] = {"rule": "decaying", "alpha0": 0.02, "beta": 0.1, "dec": 50}
    exp["batch_size"] = 25
    exp["paper_size"] = {"source": "s", "K": [1, 4, 8, 10], "alpha": 0.02, "batch_size": 500}
    assert size_differences(cfg, "agents_s6") == [("batch_size", 25, 500), ("K", [1, 4, 10], [1, 4, 8, 10])]
    assert describe_size(cfg, ["agents_s6"]) == "B = 25 of 500, K = [1, 4, 10] of [1, 4, 8, 10] (s)"
    exp["paper_size"]["K"] = [10, 4, 1]                     # order does not matter
    exp["paper_size"]["alpha"] = 0.04
    assert size_differences(cfg, "agents_s6")[1:] == [("alpha", 0.02, 0.04)]


def test_experiments_differing_the_same_way_are_merged_their_varying_values_listed():
    cfg = _config()
    three = ["agents_s6", "agents_s10", "agents_s20"]
    assert describe_size(cfg, three) == \
        f"S = 6, 10, 20 of 60, 80, 100, N = 100 of 1000, rounds 300 of 2500, seeds 1 of 4 ({SRC})"
    cfg["experiments"]["agents_s20"]["seeds"] = [0, 1, 2, 3]     # differs in fewer keys
    assert describe_size(cfg, three) == (
        f"agents_s6, agents_s10: S = 6, 10 of 60, 80, N = 100 of 1000, rounds 300 of 2500, "
        f"seeds 1 of 4 ({SRC}); agents_s20: S = 20 of 100, N = 100 of 1000, rounds 300 of 2500 ({SRC})")
    cfg["experiments"]["agents_s10"]["paper_size"] = {"source": "x", "S": 10}
    del cfg["experiments"]["agents_s20"]["paper_size"]
    assert describe_size(cfg, three) == (
        f"agents_s6: S = 6 of 60, N = 100 of 1000, rounds 300 of 2500, seeds 1 of 4 ({SRC}); "
        f"agents_s10: at the paper's size (x); agents_s20: no paper size declared")


@pytest.mark.parametrize("key", ["participation", "n_agents", "T"])
def test_a_key_neither_a_size_nor_a_dataset_parameter_is_refused(key):
    cfg = _config()
    cfg["experiments"]["agents_s6"]["paper_size"][key] = 3
    with pytest.raises(rflconfig.ConfigError) as ei:
        rflconfig.validate(cfg)
    msg = str(ei.value)
    assert f"experiments.agents_s6.paper_size.{key}" in msg
    assert "allowed: source, rounds, seeds, batch_size, K, alpha, budget, d, r, S, N, block" in msg


def test_experiments_all_at_the_papers_size_are_one_phrase_naming_each_source_once():
    cfg = _config()
    a = cfg["experiments"]["agents_s6"]
    a["paper_size"] = {"source": "Figure 1(a)", "S": 6, "rounds": 300}
    b = cfg["experiments"]["agents_s10"] = {**a, "dataset": "agents_s10",
                                             "paper_size": {"source": "Figure 1(d)", "rounds": 300}}
    assert describe_size(cfg, ["agents_s6", "agents_s10"]) == "at the paper's size (Figure 1(a); Figure 1(d))"
    b["paper_size"] = {"source": "Figure 1(a)", "rounds": 300}
    assert describe_size(cfg, ["agents_s6", "agents_s10"]) == "at the paper's size (Figure 1(a))"
    b["paper_size"] = {"source": "Figure 1(d)", "rounds": 500}
    assert describe_size(cfg, ["agents_s6", "agents_s10"]) == (
        "agents_s6: at the paper's size (Figure 1(a)); agents_s10: rounds 300 of 500 (Figure 1(d))")


def test_a_replica_budget_is_printed_and_a_budget_alone_declares_no_size():
    """``paper_size.budget.replicas`` gives "R replicas by the budget: <why>"; a paper_size with
    a source and a budget but no size of the source's is no paper size (never "at the paper's
    size"); seeds enough with a seeds reason print nothing of the seeds."""
    cfg = _config()
    exp = cfg["experiments"]["agents_s6"]
    exp["replicas"] = 64
    exp["paper_size"] = {"source": "slides", "budget": {"replicas": "costly"}}
    assert describe_size(cfg, ["agents_s6"]) == "no paper size declared; 64 replicas by the budget: costly"
    exp["seeds"] = [0, 1, 2]
    exp["paper_size"]["budget"]["seeds"] = "stale"
    assert describe_size(cfg, ["agents_s6"]) == "no paper size declared; 64 replicas by the budget: costly"
    exp["seeds"] = [0]
    assert describe_size(cfg, ["agents_s6"]) == ("no paper size declared; 1 seed by the budget (3 decide a "
                                                 "comparison): stale; 64 replicas by the budget: costly")
    exp["paper_size"] = {"source": "slides", "rounds": 300, "budget": {"replicas": "costly"}}
    assert describe_size(cfg, ["agents_s6"]) == "at the paper's size (slides); 64 replicas by the budget: costly"


def test_a_rounds_budget_is_printed_while_the_rounds_are_below_the_sources():
    """``paper_size.budget.rounds`` gives "R rounds by the budget: <why>" beside the size
    difference while the experiment runs fewer rounds than its source; nothing at the source's
    rounds (the reason is stale there, not a deviation)."""
    cfg = _config()
    exp = cfg["experiments"]["agents_s6"]
    exp["rounds"] = 300
    exp["paper_size"] = {"source": "script.m", "rounds": 1000, "budget": {"rounds": "the claim reads round 300"}}
    assert describe_size(cfg, ["agents_s6"]) == (
        "rounds 300 of 1000 (script.m); 300 rounds by the budget: the claim reads round 300")
    exp["rounds"] = 1000
    assert describe_size(cfg, ["agents_s6"]) == "at the paper's size (script.m)"
    exp["rounds"] = 1
    exp["paper_size"] = {"source": "slides", "n_agents": 10, "budget": {"rounds": "one is enough"}}
    assert describe_size(cfg, ["agents_s6"]).endswith("; 1 round by the budget: one is enough")


def test_budget_notes_count_in_the_singular_and_the_plural():
    """"2 seeds" and "1 seed", "1 replica" (an experiment without ``replicas`` runs one) and
    "2 replicas": each count with its own noun form."""
    cfg = _config()
    exp = cfg["experiments"]["agents_s6"]
    exp["paper_size"] = {"source": "slides", "budget": {"seeds": "costly", "replicas": "slow"}}
    exp["seeds"] = [0, 1]
    exp.pop("replicas", None)
    assert describe_size(cfg, ["agents_s6"]) == ("no paper size declared; 2 seeds by the budget (3 decide a "
                                                 "comparison): costly; 1 replica by the budget: slow")
    exp["replicas"] = 2
    exp["seeds"] = [0]
    assert describe_size(cfg, ["agents_s6"]) == ("no paper size declared; 1 seed by the budget (3 decide a "
                                                 "comparison): costly; 2 replicas by the budget: slow")

"""rfl.size against its documented rules, on hand-written configs: what an experiment runs for
each paper_size key (a dataset parameter it does not set is none; K the sorted set over its
methods, a method without K adds none; alpha the fixed step or alpha0), numbers equal up to
rounding, lists equal only item by item and of the same length, the differences ordered
dataset parameters first (declaration order) then rounds, seeds, batch_size, K, alpha, and the
report's words ("B = 25 of 500", "rounds 300 of 2500", floats as %g, a missing value "none")."""

from __future__ import annotations

import pytest

from rfl.size import actual_size, describe_size, size_differences


def _config(**exp_changes) -> dict:
    ds = {"problem": "pca_stiefel", "seed": 1, "params": {"d": 20, "r": 3, "S": 6, "N": 100}}
    exp = {"dataset": "a", "rounds": 300, "batch_size": 50, "seeds": [0, 1],
           "step": {"rule": "fixed", "alpha": 0.3},
           "methods": [{"algorithm": "rfedags", "K": [5]}],
           "paper_size": {"source": "src"}}
    exp.update(exp_changes)
    return {"datasets": {"a": ds}, "experiments": {"e": exp}, "figures": {}}


def test_what_an_experiment_runs_for_each_key():
    cfg = _config(methods=[{"algorithm": "rfedags", "K": [10, 1]}, {"algorithm": "rsgd"},
                           {"algorithm": "rfedavg", "K": [4, 10]}])
    assert actual_size(cfg, "e", "rounds") == 300
    assert actual_size(cfg, "e", "seeds") == 2
    assert actual_size(cfg, "e", "batch_size") == 50
    assert actual_size(cfg, "e", "K") == [1, 4, 10]
    assert actual_size(cfg, "e", "alpha") == 0.3
    assert actual_size(cfg, "e", "S") == 6 and actual_size(cfg, "e", "d") == 20
    assert actual_size(cfg, "e", "block") is None                 # the dataset does not set it
    del cfg["experiments"]["e"]["batch_size"]
    assert actual_size(cfg, "e", "batch_size") is None
    cfg["experiments"]["e"]["step"] = {"rule": "decaying", "alpha0": 0.02, "beta": 0.1, "dec": 50}
    assert actual_size(cfg, "e", "alpha") == 0.02
    del cfg["experiments"]["e"]["step"]
    assert actual_size(cfg, "e", "alpha") is None


def test_a_list_differs_when_it_is_a_prefix_or_longer():
    for paper in ([1, 4, 8], [1], [4, 1, 2]):
        cfg = _config(methods=[{"algorithm": "rfedags", "K": [4, 1]}],
                      paper_size={"source": "s", "K": paper})
        assert size_differences(cfg, "e") == [("K", [1, 4], sorted(paper))]
    cfg = _config(methods=[{"algorithm": "rfedags", "K": [4, 1]}], paper_size={"source": "s", "K": [4, 1]})
    assert size_differences(cfg, "e") == []
    cfg = _config(paper_size={"source": "s", "K": 5})            # a scalar is a one-item list
    assert size_differences(cfg, "e") == []
    cfg = _config(paper_size={"source": "s", "K": 6})
    assert size_differences(cfg, "e") == [("K", [5], [6])]


def test_numbers_equal_up_to_rounding_and_not_beyond():
    cfg = _config(step={"rule": "fixed", "alpha": 0.1 + 0.2}, paper_size={"source": "s", "alpha": 0.3})
    assert size_differences(cfg, "e") == []                     # 0.30000000000000004 is 0.3
    for rel in (1e-9, 1e-10):                                   # far beyond rounding (2^-52)
        cfg = _config(step={"rule": "fixed", "alpha": 0.3 * (1 + rel)}, paper_size={"source": "s", "alpha": 0.3})
        assert [d[0] for d in size_differences(cfg, "e")] == ["alpha"]
    cfg = _config(paper_size={"source": "s", "N": 100.0, "rounds": 300.0})
    assert size_differences(cfg, "e") == []
    cfg = _config(paper_size={"source": "s", "block": 50})          # none against a number
    assert size_differences(cfg, "e") == [("block", None, 50)]


def test_differences_are_ordered_dataset_parameters_then_run_keys():
    cfg = _config(batch_size=25, methods=[{"algorithm": "rfedags", "K": [2]}],
                  paper_size={"source": "s", "alpha": 0.5, "rounds": 900, "N": 1000, "K": [3], "seeds": 4,
                              "batch_size": 500, "S": 60})
    assert [d[0] for d in size_differences(cfg, "e")] == ["N", "S", "rounds", "seeds", "batch_size", "K", "alpha"]
    assert describe_size(cfg, ["e"]) == ("N = 100 of 1000, S = 6 of 60, rounds 300 of 900, seeds 2 of 4, "
                                         "B = 25 of 500, K = [2] of [3], alpha = 0.3 of 0.5 (s)")


def test_words_of_floats_and_missing_values():
    cfg = _config(step={"rule": "fixed", "alpha": 2.0}, paper_size={"source": "s", "alpha": 1e-05, "block": 50})
    del cfg["experiments"]["e"]["batch_size"]
    cfg["experiments"]["e"]["paper_size"]["batch_size"] = 500
    assert describe_size(cfg, ["e"]) == "block = none of 50, B = none of 500, alpha = 2 of 1e-05 (s)"


def test_groups_keep_their_order_and_varying_values_are_listed_in_it():
    cfg = _config()
    for name, S, src in (("f", 10, "src"), ("g", 20, "other")):
        cfg["datasets"][name] = {**cfg["datasets"]["a"], "params": {**cfg["datasets"]["a"]["params"], "S": S}}
        cfg["experiments"][name] = {**cfg["experiments"]["e"], "dataset": name,
                                    "paper_size": {"source": src, "S": 60}}
    cfg["experiments"]["e"]["paper_size"] = {"source": "src", "S": 60}
    assert describe_size(cfg, ["f", "e"]) == "S = 10, 6 of 60 (src)"          # the paper value once
    assert describe_size(cfg, ["e", "g", "f"]) == "e, f: S = 6, 10 of 60 (src); g: S = 20 of 60 (other)"
    cfg["experiments"]["f"]["paper_size"] = None
    assert describe_size(cfg, ["f", "e"]) == "f: no paper size declared; e: S = 6 of 60 (src)"
    assert describe_size(cfg, ["f"]) == "no paper size declared"


@pytest.mark.parametrize("declared", [{"source": "only"}, {"source": "only", "S": 6, "K": [5]}])
def test_a_declaration_that_names_no_difference_is_at_the_papers_size(declared):
    cfg = _config(paper_size=declared)
    assert size_differences(cfg, "e") == []
    assert describe_size(cfg, ["e"]) == "at the paper's size (only)"

"""Every registered federated strategy against the strategy contract (rfl.testing.strategy):
vectorised == per-agent reference loop, round results adding up to iterate's counters,
determinism, iterates on the manifold, on each small built-in problem it applies to."""

from rfl.testing.strategy import StrategyContract


class TestStrategyContract(StrategyContract):
    pass


def test_a_strategy_no_contract_problem_serves_is_skipped_with_the_reason():
    from rfl.algorithms import RFedAGS
    from rfl.registry import ALGORITHMS

    class Unserved(RFedAGS):
        name = "unserved_for_test"
        requires = frozenset({"nearest_point"})
        fields = frozenset({"linear_field"})

    try:
        contract = StrategyContract()
        contract.strategies = ["unserved_for_test", "rfedproj"]
        cases = contract.cases()
        unserved = [c for c in cases if c.name == "unserved_for_test"]
        assert len(unserved) == 1 and unserved[0].problem is None
        assert "unserved_for_test: none of the contract problems" in unserved[0].skip
        assert "nearest_point" in unserved[0].skip and "linear_field" in unserved[0].skip
        assert {c.problem.name for c in cases if c.name == "rfedproj"} == {"cpesph", "mbcfsti"}
    finally:
        ALGORITHMS.remove("unserved_for_test")

"""rfl.simtime against its documented rule (module docstring): straggler indices are agents
0..S-1, so index S is the first that does not exist; c_i = default (1 when absent) times the
factor for the listed stragglers; a round costs max or sum of its participants' c_i, and the
clock is the running sum from 0."""

from __future__ import annotations

import numpy as np
import pytest

from rfl import simtime


def _spec(agents, factor=10.0, round_="max", default=None):
    cost = {"stragglers": {"agents": agents, "factor": factor}}
    if default is not None:
        cost["default"] = default
    return {"cost": cost, "round": round_}


@pytest.mark.parametrize("S", [1, 4, 7])
def test_the_last_agent_is_a_straggler_and_index_S_is_refused(S):
    assert simtime.check(_spec([S - 1]), S) == []
    assert simtime.check(_spec([0, S - 1]), S) == []
    problems = simtime.check(_spec([0, S, S + 3]), S)
    assert len(problems) == 1
    path, message = problems[0]
    assert path == ["cost", "stragglers", "agents"]
    # the first bad index is named, with the range that exists
    assert message == f"agent {S} does not exist; allowed: indices 0..{S - 1} (S = {S})"


def test_check_without_stragglers_or_cost_finds_nothing():
    assert simtime.check({"round": "sum"}, 3) == []
    assert simtime.check({"round": "sum", "cost": None}, 3) == []
    assert simtime.check({"round": "sum", "cost": {"default": 2.0}}, 3) == []
    assert simtime.check({"round": "sum", "cost": {"stragglers": None}}, 3) == []


def test_costs_default_to_one_and_stragglers_multiply_the_default():
    np.testing.assert_array_equal(simtime.agent_costs({"round": "max"}, 4), np.ones(4))
    np.testing.assert_array_equal(simtime.agent_costs({"round": "max", "cost": None}, 2), np.ones(2))
    np.testing.assert_array_equal(simtime.agent_costs({"cost": {"stragglers": None}}, 3), np.ones(3))
    c = simtime.agent_costs(_spec([1, 3], factor=4.0, default=0.5), 5)
    np.testing.assert_array_equal(c, [0.5, 2.0, 0.5, 2.0, 0.5])
    assert c.dtype == np.float64 and c.shape == (5,)
    # an int default and factor still give float costs (a factor 2.5 is not truncated)
    np.testing.assert_array_equal(simtime.agent_costs(_spec([0], factor=2.5, default=3), 2), [7.5, 3.0])


@pytest.mark.parametrize("bad", [None, "min", "MAX", "mean"])
def test_an_unknown_round_mode_is_refused_naming_the_allowed_ones(bad):
    spec = {"cost": {}} if bad is None else {"round": bad}
    with pytest.raises(ValueError) as err:
        simtime.Clock(spec, 3)
    assert str(err.value) == f"time.round = {bad!r}; allowed: max, sum"


def test_the_clock_starts_at_zero_and_adds_max_or_sum_of_participants():
    costs = [1.0, 10.0, 1.0, 3.0]
    schedule = ([0], [1, 2], [2, 3], [0, 1, 2, 3], [3])
    for mode, combine in (("max", max), ("sum", sum)):
        clock = simtime.Clock(_spec([1], factor=10.0, round_=mode), 4)
        clock.costs = np.asarray(costs)
        assert clock.now == 0.0
        now, seen = 0.0, []
        for s in schedule:
            now += combine(costs[i] for i in s)
            seen.append(clock.tick(s))
            assert isinstance(seen[-1], float)
        assert seen == pytest.approx(np.cumsum([combine(costs[i] for i in s) for s in schedule]).tolist())
        assert clock.now == seen[-1] == now

"""rfl.participation against its documented rules: ``label`` is "<scheme> <option>=<value>, ..."
(floats as %g, None and lists left out, a probability list told by its mean); ``tag`` writes
ints as they are and floats as %g with "p" for the point; ``summary`` lists each option with
its default and whether the weights sum to 1; a probability list of the wrong length is a
ValueError naming it; a scheme without ``draw`` says so; ``size_weighted_pi`` meets its
documented relative tolerance 1e-13 against the expectation summed over every join pattern."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rfl.participation import base, tag
from rfl.participation.base import ParticipationScheme
from rfl.participation.bernoulli_mean import size_weighted_pi
from rfl.registry import PARTICIPATION

NAME = "zz_two_options"


@pytest.fixture
def two_options():
    class TwoOptions(ParticipationScheme):
        name = NAME
        options = {"a": {"type": "number", "default": 0.25}, "b": {"type": "integer", "default": 1234567},
                   "c": {"type": ["array", "null"], "default": None}}

        def draw(self):
            return np.arange(self.n_agents)
    try:
        yield TwoOptions
    finally:
        PARTICIPATION.remove(NAME)


def test_label_lists_every_scalar_option_and_leaves_the_rest_out(two_options):
    assert base.label({"scheme": NAME}) == f"{NAME} a=0.25, b=1234567"
    assert base.label({"scheme": NAME, "c": [1, 2]}) == f"{NAME} a=0.25, b=1234567"
    assert base.label({"scheme": "bernoulli", "rho": 0.3}) == "bernoulli rho=0.3"
    assert base.label({"scheme": "biased", "rho": 1.0}) == "biased rho=1"
    assert base.label({"scheme": "bernoulli", "probabilities": [0.2, 0.4]}) == "bernoulli p_i given, mean 0.3"
    assert base.label({"scheme": "uniform", "s": 3}) == "s=3"
    assert base.label(None) is None and base.label({"scheme": "full"}) is None


def test_tag_writes_ints_whole_and_floats_with_p(two_options):
    assert tag({"scheme": NAME}) == f"_{NAME}_a0p25_b1234567"
    assert tag({"scheme": NAME, "b": 2, "a": 1e-05}) == f"_{NAME}_a1e-05_b2"


def test_summary_lists_options_with_defaults_and_the_weights_sum(two_options):
    assert PARTICIPATION["bernoulli"].summary() == "options: rho=0.5, probabilities=null; weights sum to 1: no"
    assert PARTICIPATION["biased"].summary() == "options: rho=0.5, probabilities=null; weights sum to 1: yes"
    assert PARTICIPATION["uniform"].summary() == "options: s; weights sum to 1: yes"
    assert PARTICIPATION["full"].summary() == "options: none; weights sum to 1: yes"
    assert two_options.summary() == "options: a=0.25, b=1234567, c=null; weights sum to 1: yes"


@pytest.mark.parametrize("name", ["bernoulli", "biased", "bernoulli_mean", "bernoulli_estimated"])
def test_a_probability_list_of_the_wrong_length_is_a_value_error_naming_it(name):
    with pytest.raises(ValueError) as err:
        PARTICIPATION[name](4, np.random.default_rng(0), probabilities=[0.5, 0.5, 0.5])
    assert str(err.value) == ("participation probabilities: 3 probabilities for S=4 agents; "
                              "allowed: a list of 4 numbers in (0, 1]")


def test_uniform_without_s_says_what_is_allowed():
    assert PARTICIPATION["uniform"].check_options({}, 4) == [("s", "missing; allowed: an integer 1..S")]
    assert PARTICIPATION["uniform"].check_options({"s": 5}, 4) == [
        ("s", "5 is larger than the number of agents S=4; allowed: 1..4")]
    assert PARTICIPATION["uniform"].check_options({"s": 4}, 4) == []


def test_a_scheme_without_draw_says_so():
    class NoDraw(ParticipationScheme):           # no ``name``: not declared
        pass

    assert NoDraw.contract_errors() == ["does not implement draw"]


def _by_enumeration(p, n):
    """E[N_i 1{i in J} / sum_{j in J} N_j], summed over the 2^S join patterns J (0 when empty)."""
    out = np.zeros(len(p))
    for mask in itertools.product([False, True], repeat=len(p)):
        m = np.array(mask)
        if m.any():
            out += np.prod(np.where(m, p, 1 - p)) * np.where(m, n / n[m].sum(), 0.0)
    return out


@pytest.mark.parametrize("p,n", [([0.3, 0.9, 0.5, 0.7], [10.0, 200.0, 35.0, 1.0]),
                                 ([0.05, 0.1, 0.99, 0.2, 0.6], [1000.0, 1.0, 3.0, 50.0, 7.0])])
def test_size_weighted_pi_meets_its_relative_tolerance(p, n):
    p, n = np.array(p), np.array(n)
    np.testing.assert_allclose(size_weighted_pi(p, n), _by_enumeration(p, n), rtol=1e-13, atol=0)


@pytest.mark.parametrize("bad", [True, False, "3", 2.5, [1, 2]])
def test_a_participation_neither_null_int_nor_mapping_is_refused(bad):
    problems = base.check(bad, 4)
    assert len(problems) == 1 and problems[0][0] == []
    assert problems[0][1].startswith(f"{bad!r}; allowed: null, an integer s or {{scheme: <")


def test_every_bad_option_is_reported_not_only_the_first():
    problems = base.check({"scheme": "bernoulli", "zz": 1, "rho": 2}, 4)
    assert [path for path, _ in problems] == [["zz"], ["rho"]]
    assert problems[0][1] == "scheme bernoulli takes no option 'zz'; allowed: rho, probabilities"
    assert problems[1][1].startswith("2: 2 is greater than the maximum of 1")

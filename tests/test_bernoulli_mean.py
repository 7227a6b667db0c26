"""The participation scheme ``bernoulli_mean`` (the authors' option 2 in RFedAvg_.m,
RFedSVRG_.m, RFedProj_.m, ZORFedProj_.m): Bernoulli joins, the participants averaged plainly."""

import numpy as np

from rfl.participation import make_scheme


def test_joins_are_bernoullis_draw_for_draw_and_weights_the_plain_mean():
    p = [0.9, 0.1, 0.5, 0.7, 0.3]
    mean = make_scheme({"scheme": "bernoulli_mean", "probabilities": p}, 5, np.random.default_rng(4))
    ref = make_scheme({"scheme": "bernoulli", "probabilities": p}, 5, np.random.default_rng(4))
    sizes = np.full(5, 20)
    for _ in range(50):
        a, b = mean.participants(), ref.participants()
        if ref._empty:                                   # nobody joined: both draw one agent
            assert a.shape == (1,)
            continue
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(mean.weights(sizes, a), np.full(a.size, 1 / a.size), rtol=1e-15)


def test_join_frequencies_follow_the_probabilities():
    """2000 rounds: each agent's join frequency within 4 binomial standard errors of p_i."""
    p = np.array([0.9, 0.1, 0.5, 0.7, 0.3])
    scheme = make_scheme({"scheme": "bernoulli_mean", "probabilities": p.tolist()}, 5, np.random.default_rng(0))
    counts = np.zeros(5)
    for _ in range(2000):
        counts[scheme.participants()] += 1
    freq = counts / 2000
    assert np.all(np.abs(freq - p) < 4 * np.sqrt(p * (1 - p) / 2000) + 1e-3)


def test_a_round_nobody_joins_has_one_agent_with_weight_one():
    scheme = make_scheme({"scheme": "bernoulli_mean", "rho": 1e-12}, 4, np.random.default_rng(1))
    agents = scheme.participants()
    assert agents.shape == (1,) and 0 <= agents[0] < 4
    np.testing.assert_array_equal(scheme.weights(np.full(4, 3), agents), [1.0])


def test_objective_weights_are_the_join_frequency_over_the_round_size_by_enumeration():
    """E[1{i takes part} / |taking part|] by enumerating the 2^S join patterns (the empty
    pattern: one agent uniformly), for S = 4: the scheme's objective weights."""
    import itertools
    p = np.array([0.9, 0.2, 0.5, 0.05])
    expect = np.zeros(4)
    for joins in itertools.product([0, 1], repeat=4):
        j = np.array(joins, bool)
        prob = np.prod(np.where(j, p, 1 - p))
        expect += prob * (j / j.sum() if j.any() else np.full(4, 1 / 4))
    scheme = make_scheme({"scheme": "bernoulli_mean", "probabilities": p.tolist()}, 4, np.random.default_rng(0))
    np.testing.assert_allclose(scheme.objective_weights(np.full(4, 10)), expect, rtol=1e-12)
    assert abs(expect.sum() - 1) < 1e-12


def _enumerated_weights(p, sizes):
    """E[weight of agent i in the round's mean] by enumerating the 2^S join patterns: the
    participants weighted N_j / sum over them; the empty pattern: one agent uniformly, weight 1."""
    import itertools
    S = len(p)
    expect = np.zeros(S)
    for joins in itertools.product([0, 1], repeat=S):
        j = np.array(joins, bool)
        prob = np.prod(np.where(j, p, 1 - p))
        expect += prob * (j * sizes / (j * sizes).sum() if j.any() else np.full(S, 1 / S))
    return expect


def test_objective_weights_with_unequal_local_sizes_are_the_size_weighted_join_share():
    """Unequal N_j: the rounds weight participants by N_j / sum over them, so the objective's
    weights are E[N_i 1{i in J} / sum_J N_j] (+ the empty round), not pi~ (which ignores N)."""
    p = np.array([0.9, 0.2, 0.5, 0.05, 0.6, 0.3])
    sizes = np.array([10, 200, 35, 7, 64, 1])
    expect = _enumerated_weights(p, sizes)
    scheme = make_scheme({"scheme": "bernoulli_mean", "probabilities": p.tolist()}, 6, np.random.default_rng(0))
    got = scheme.objective_weights(sizes)
    np.testing.assert_allclose(got, expect, rtol=1e-11)
    equal = _enumerated_weights(p, np.full(6, 10))
    assert np.max(np.abs(equal - expect)) > 1e-2          # the sizes matter here


def test_size_weighted_share_reduces_to_pi_tilde_with_equal_sizes():
    from rfl.participation.bernoulli_mean import size_weighted_pi
    from rfl.participation.biased import pi_tilde
    p = np.array([0.9, 0.2, 0.5, 0.05, 0.6, 0.3, 0.99, 0.01])
    np.testing.assert_allclose(size_weighted_pi(p, np.full(8, 37.0)), pi_tilde(p), rtol=1e-11)
    assert abs(size_weighted_pi(p, np.arange(1, 9)).sum() - (1 - np.prod(1 - p))) < 1e-12


def test_size_weighted_share_refuses_nonpositive_sizes():
    import pytest
    from rfl.participation.bernoulli_mean import size_weighted_pi
    with pytest.raises(ValueError, match="positive"):
        size_weighted_pi([0.5, 0.5], [3, 0])

"""The counter-based mini-batch sampler (``rfl.algorithms.sampling.batch_indices``,
``AgentSampler.batches``): Philox4x64-10 bit for bit against numpy's, per-agent draws that do
not depend on the other participants, and uniformity (each sample with probability B/N, each
B-subset with probability 1/C(N, B)), tested with chi-square bounds; the draws of sampler
version 3 (``Draws``, ``draw_number``): keyed by (seed, experiment), local step k of round t at
draw number t 2^32 + k, participants keyed by the scheme."""

from itertools import combinations

import numpy as np
import pytest
from scipy import stats

from rfl.algorithms import AgentSampler
from rfl.algorithms.sampling import SAMPLER_VERSION, Draws, batch_indices, draw_number
from rfl.random import stream
from rfl.problems import _kernels

U64 = np.uint64


@pytest.mark.parametrize("key", [(0, 0), (1, 2), (2 ** 64 - 1, 12345), (0x0123456789ABCDEF, 2 ** 63)])
@pytest.mark.parametrize("counter", [(0, 0, 0, 0), (5, 7, 9, 11), (2 ** 64 - 2, 3, 2 ** 64 - 1, 5),
                                     (123456789, 0, 42, 0)])
def test_philox_is_numpys_philox4x64_10(key, counter):
    """numpy.random.Philox increments its 256-bit counter before each block: its first four
    raw words are Philox4x64-10 at counter + 1, the next four at counter + 2."""
    ref = np.random.Philox(key=np.array(key, dtype=U64), counter=np.array(counter, dtype=U64)).random_raw(8)
    out = np.empty(4, dtype=U64)
    value = sum(w << (64 * i) for i, w in enumerate(counter))          # word 0 least significant
    for block in range(2):
        c = (value + 1 + block) % 2 ** 256
        words = [U64((c >> (64 * i)) & (2 ** 64 - 1)) for i in range(4)]
        _kernels.philox4x64(*words, U64(key[0]), U64(key[1]), out)
        np.testing.assert_array_equal(out, ref[4 * block:4 * block + 4])


def test_lemire_draw_is_the_multiply_shift_of_philox_words():
    """B = 1: Floyd's single step draws t uniform in [0, N - 1] from the agent's block 0 at
    counter (0, j, draw, 0): (x N) >> 32 for the first 32-bit word x (low half of Philox's
    first word, then its high half, ...) that Lemire's test accepts."""
    key, draw, j, N = 987654321, 17, 3, 1000
    out = np.empty(4, dtype=U64)
    _kernels.philox4x64(U64(0), U64(j), U64(draw), U64(0), U64(key), U64(0), out)
    words = [int(w) for w in out]
    x = [w & 0xFFFFFFFF if h == 0 else w >> 32 for w in words for h in (0, 1)]
    threshold = (2 ** 32) % N
    first = next(v for v in x if (v * N) % 2 ** 32 >= threshold)
    sizes = np.full(5, N)
    assert batch_indices(key, draw, np.array([j]), sizes, 1)[0, 0] == (first * N) >> 32


def test_batches_are_deterministic_and_counter_based():
    sizes = np.array([7, 30, 12, 500, 9])
    a = batch_indices(11, 4, np.arange(5), sizes, 6)
    np.testing.assert_array_equal(a, batch_indices(11, 4, np.arange(5), sizes, 6))
    assert a.dtype == np.int64 and a.shape == (5, 6)
    assert not np.array_equal(a, batch_indices(11, 5, np.arange(5), sizes, 6))     # another draw
    assert not np.array_equal(a, batch_indices(12, 4, np.arange(5), sizes, 6))     # another key


def test_an_agents_batch_does_not_depend_on_the_other_participants():
    """Agent j's row is the same whether drawn alone, with all agents, in any order, or with
    other agents' sizes changed: it depends on (key, draw, j, N_j, B) only."""
    rng = np.random.default_rng(0)
    S, B = 40, 5
    sizes = rng.integers(B, 60, size=S)
    for draw in range(5):
        every = batch_indices(99, draw, np.arange(S), sizes, B)
        perm = rng.permutation(S)[:13]
        some = batch_indices(99, draw, perm, sizes, B)
        other_sizes = sizes.copy()
        other_sizes[np.arange(S) % 2 == 0] += 7
        odd = np.arange(1, S, 2)
        for j in range(S):
            np.testing.assert_array_equal(batch_indices(99, draw, np.array([j]), sizes, B)[0], every[j])
        np.testing.assert_array_equal(some, every[perm])
        np.testing.assert_array_equal(batch_indices(99, draw, odd, other_sizes, B), every[odd])


@pytest.mark.parametrize("sizes,B", [([9, 9, 9, 9], 4), ([5, 9, 7], 3), ([6, 6], 1), ([4, 4, 4], 4),
                                     ([100, 3, 1000], 3), ([2 ** 20, 50], 50), ([10, 11], 10)])
def test_each_row_holds_B_distinct_ascending_indices_below_N_j(sizes, B):
    sizes = np.array(sizes)
    for draw in range(30):
        idx = batch_indices(3, draw, np.arange(len(sizes)), sizes, B)
        assert idx.shape == (len(sizes), B)
        for row, n in zip(idx, sizes):
            assert np.all(np.diff(row) > 0) and row[0] >= 0 and row[-1] < n


def test_full_rows_are_every_sample():
    np.testing.assert_array_equal(batch_indices(1, 0, np.array([0, 1]), np.array([4, 9]), 4)[0],
                                  np.arange(4))


@pytest.mark.parametrize("N,B", [(20, 3), (20, 17), (200, 10)])
def test_each_sample_is_included_with_probability_B_over_N(N, B):
    """Inclusion counts over n draws (all draws of agent 2 at sizes N): chi-square of the N
    counts against n B / N each. The counts sum to n B, and each is Binomial(n, B/N), so
    sum (c - n B/N)^2 / (n B/N) * N/(N - B) ~ chi2(N - 1); test at level 1e-4."""
    n = 4000
    sizes = np.full(3, N)
    counts = np.zeros(N)
    for draw in range(n):
        counts[batch_indices(2024, draw, np.array([2]), sizes, B)[0]] += 1
    expect = n * B / N
    chi2 = float(((counts - expect) ** 2).sum() / expect) * N / (N - B)
    assert chi2 < stats.chi2.ppf(1 - 1e-4, N - 1), chi2


def test_every_B_subset_is_equally_likely():
    """N = 5, B = 2: the 10 subsets over 20000 draws, chi-square against 2000 each (9 degrees of
    freedom, level 1e-4); over the 40 agents of one draw as well (another part of the stream)."""
    N, B = 5, 2
    subsets = {c: i for i, c in enumerate(combinations(range(N), B))}
    counts = np.zeros(len(subsets))
    for draw in range(500):
        for row in batch_indices(7, draw, np.arange(40), np.full(40, N), B):
            counts[subsets[tuple(row)]] += 1
    expect = counts.sum() / len(subsets)
    chi2 = float(((counts - expect) ** 2).sum() / expect)
    assert chi2 < stats.chi2.ppf(1 - 1e-4, len(subsets) - 1), (chi2, counts)


def test_sampler_draws_local_step_k_of_round_t_at_t_2_32_plus_k():
    """Round t's k-th ``batches`` call (the count a strategy that draws once per step follows)
    and the explicit ``batches(agents, t, k)`` are ``batch_indices`` at draw t 2^32 + k."""
    sizes = np.array([12, 15, 9, 20])
    sampler = AgentSampler(np.random.default_rng(5), sizes, 4, 2)
    assert (sampler.t, sampler.k) == (0, 0) and 0 <= sampler.key < 2 ** 63
    assert sampler.key == AgentSampler(np.random.default_rng(5), sizes, 4, 2).key
    for t in range(4):
        agents = sampler.participants()
        for k in range(3):
            b = sampler.batches(agents)
            assert (sampler.t, sampler.k) == (t, k + 1)
            want = batch_indices(sampler.key, t * 2 ** 32 + k, agents, sizes, 4)
            np.testing.assert_array_equal(np.asarray(b), want)
            np.testing.assert_array_equal(np.asarray(sampler.batches(agents, t, k)), want)
            np.testing.assert_array_equal(b.mask.sum(axis=1), [4, 4])
    # the explicit (t, k) wins over the count: round 1, step 0 again after round 3
    np.testing.assert_array_equal(np.asarray(sampler.batches(np.array([0, 3]), 1, 0)),
                                  batch_indices(sampler.key, 2 ** 32, np.array([0, 3]), sizes, 4))


def test_draw_number_is_t_2_32_plus_k_and_refuses_out_of_range():
    assert [draw_number(0, 0), draw_number(0, 7), draw_number(1, 0), draw_number(3, 5)] == \
        [0, 7, 2 ** 32, 3 * 2 ** 32 + 5]
    assert draw_number(2 ** 32 - 1, 2 ** 32 - 1) == 2 ** 64 - 1            # the last draw number
    for t, k, match in [(-1, 0, r"round t=-1"), (2 ** 32, 0, r"round t=4294967296"),
                        (0, -1, r"local step k=-1"), (0, 2 ** 32, r"local step k=4294967296")]:
        with pytest.raises(ValueError, match=match):
            draw_number(t, k)


def test_full_batches_keep_the_shortcut():
    sampler = AgentSampler(np.random.default_rng(0), np.full(3, 6), 6)
    b = sampler.batches(np.arange(3))
    np.testing.assert_array_equal(np.asarray(b), np.broadcast_to(np.arange(6), (3, 6)))
    assert sampler.batches(np.arange(3)) is b and sampler.k == 2


def test_participants_do_not_depend_on_the_batch_size():
    """The run's Generator feeds only the key and the participants: the same agents whatever B."""
    a = AgentSampler(np.random.default_rng(4), np.full(10, 8), 2, 3)
    b = AgentSampler(np.random.default_rng(4), np.full(10, 8), 8, 3)
    for _ in range(5):
        agents = a.participants()
        np.testing.assert_array_equal(agents, b.participants())
        a.batches(agents)
        b.batches(agents)


@pytest.mark.parametrize("args,match", [
    (dict(B=0), "B=0 must be in"), (dict(B=8), "B=8 must be in"),
    (dict(agents=np.array([0, 4])), "agents must lie in"), (dict(key=-1), "key=-1"),
    (dict(draw=-2), "draw=-2"), (dict(agents=np.array([[0]])), "1-D integer")])
def test_bad_arguments_are_refused(args, match):
    kw = dict(key=1, draw=0, agents=np.array([0, 1]), local_sizes=np.array([7, 9, 8, 10]), B=3)
    kw.update(args)
    with pytest.raises(ValueError, match=match):
        batch_indices(**kw)


def test_sampler_version_is_three():
    assert SAMPLER_VERSION == 3


@pytest.mark.parametrize("args,match", [
    (dict(agents=np.array([0.0, 1.0])), r"agents must be a 1-D integer array, got shape \(2,\) float64"),
    (dict(local_sizes=np.array([[7, 9]])), r"local_sizes must have shape \(S,\), got \(1, 2\)"),
    (dict(agents=np.array([-1, 2])), r"agents must lie in \[0, S=4\), got -1\.\.2"),
    (dict(agents=np.array([1, 4])), r"agents must lie in \[0, S=4\), got 1\.\.4"),
    (dict(key=2 ** 64), r"key=18446744073709551616 must be in \[0, 2\^64\)"),
    (dict(draw=2 ** 64), r"draw=18446744073709551616 must be in \[0, 2\^64\)"),
    (dict(B=10), r"B=10 must be in \[1, min N_j=7\] over the agents"),
    (dict(agents=np.array([0]), local_sizes=np.array([2 ** 32 + 1]), B=1),
     r"local sizes up to 2\^32 are supported, got N_j=4294967297")])
def test_bad_arguments_are_named_with_what_is_allowed(args, match):
    """Each refusal names the bad argument, its value and the allowed range."""
    kw = dict(key=1, draw=0, agents=np.array([0, 1]), local_sizes=np.array([7, 9, 8, 10]), B=3)
    kw.update(args)
    with pytest.raises(ValueError, match=match):
        batch_indices(**kw)


def test_the_bounds_of_key_draw_agents_and_sizes_are_accepted():
    """The ends of the documented ranges are valid: key and draw 0 and 2^64 - 1, agent S - 1,
    B = min N_j."""
    sizes = np.array([7, 9, 8, 10])
    for key, draw in [(0, 0), (2 ** 64 - 1, 2 ** 64 - 1)]:
        b = batch_indices(key, draw, np.array([0, 3]), sizes, 7)
        np.testing.assert_array_equal(b, [np.arange(7), np.sort(b[1])])     # B = N_0: every sample
        assert len(set(b[1])) == 7 and b[1].max() < 10


def test_batches_of_a_float_size_array_are_those_of_the_integer_sizes():
    """local_sizes given as floats (e.g. read from a table) are the same sizes."""
    a = AgentSampler(np.random.default_rng(2), np.array([12.0, 15.0, 9.0]), 4)
    b = AgentSampler(np.random.default_rng(2), np.array([12, 15, 9]), 4)
    assert a.local_sizes.dtype.kind == "i"
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(a.batches(np.arange(3))), np.asarray(b.batches(np.arange(3))))


@pytest.mark.parametrize("batch_size,participation,match", [
    (0, None, r"batch_size=0 must be in \[1, min N_j=9\]"),
    (10, None, r"batch_size=10 must be in \[1, min N_j=9\]"),
    (3, 0, r"participation=0 must be in \[1, S=4\]"),
    (3, 5, r"participation=5 must be in \[1, S=4\]")])
def test_sampler_refuses_a_bad_batch_size_or_participation(batch_size, participation, match):
    with pytest.raises(ValueError, match=match):
        AgentSampler(np.random.default_rng(0), np.array([12, 15, 9, 20]), batch_size, participation)


def test_sampler_participation_bounds():
    """s = 1 and s = S are valid; s = S is every agent (participation None), s = 1 one agent."""
    sizes = np.array([12, 15, 9, 20])
    every = AgentSampler(np.random.default_rng(0), sizes, 3, 4)
    assert every.participation is None
    np.testing.assert_array_equal(every.participants(), np.arange(4))
    one = AgentSampler(np.random.default_rng(0), sizes, 3, 1)
    assert one.participation == 1 and one.participants().shape == (1,)


def test_the_key_is_the_first_draw_of_a_generator():
    """From a Generator (tests, tools): the key is its first int64 draw in [0, 2^63), whatever
    the participation scheme."""
    expected = int(np.random.default_rng(17).integers(0, 2 ** 63, dtype=np.int64))
    for participation in (None, 2, {"scheme": "uniform", "s": 3}):
        sampler = AgentSampler(np.random.default_rng(17), np.array([12, 15, 9, 20]), 3, participation)
        assert sampler.key == expected and (sampler.t, sampler.k) == (0, 0)


def test_a_runs_draws_are_keyed_by_seed_and_experiment_only():
    """SAMPLER_VERSION 3: the key is the first int64 draw of stream(seed, "sampling",
    experiment), whatever the batch size or scheme; the participants come from stream(seed,
    "participation", experiment, canonical scheme as JSON)."""
    sizes = np.array([12, 15, 9, 20])
    expected = int(stream(4, "sampling", "exp").integers(0, 2 ** 63, dtype=np.int64))
    for B, participation in ((3, None), (9, 2), (5, {"scheme": "bernoulli", "rho": 0.5})):
        assert AgentSampler(Draws(4, "exp"), sizes, B, participation).key == expected
    assert AgentSampler(Draws(5, "exp"), sizes, 3).key != expected
    assert AgentSampler(Draws(4, "other"), sizes, 3).key != expected
    assert Draws(4, "exp").child("2eta").batch_key != expected
    want = stream(4, "participation", "exp", "2").choice(4, size=2, replace=False)
    np.testing.assert_array_equal(AgentSampler(Draws(4, "exp"), sizes, 3, 2).participants(), np.sort(want))


def test_the_same_scheme_draws_the_same_participants_whatever_else_differs():
    """Two samplers of one experiment and seed with the same scheme (written two ways) draw
    the same participants round after round, whatever their batch sizes and however many
    batches they draw per round; another scheme or option draws its own."""
    sizes = np.full(10, 8)
    bern = {"scheme": "bernoulli", "rho": 0.4}
    a = AgentSampler(Draws(1, "e"), sizes, 2, bern)
    b = AgentSampler(Draws(1, "e"), sizes, 8, {"scheme": "bernoulli", "rho": 0.4, "probabilities": None})
    c = AgentSampler(Draws(1, "e"), sizes, 2, {"scheme": "bernoulli", "rho": 0.6})
    u1 = AgentSampler(Draws(1, "e"), sizes, 2, 3)
    u2 = AgentSampler(Draws(1, "e"), sizes, 4, {"scheme": "uniform", "s": 3})
    same_bc = []
    for t in range(30):
        pa, pb, pc = a.participants(), b.participants(), c.participants()
        np.testing.assert_array_equal(pa, pb)
        np.testing.assert_array_equal(u1.participants(), u2.participants())
        same_bc.append(np.array_equal(pa, pc))
        for k in range(t % 4):
            a.batches(pa)                                   # a draws batches, b none
    assert not all(same_bc)


def test_unequal_sizes_with_B_equal_to_the_largest_are_not_the_full_shortcut():
    """The all-samples shortcut needs every N_j = B: with unequal sizes and B = min N_j the
    rows are draws (the smallest agent's row is all its samples, the others' are not)."""
    sizes = np.array([4, 9, 4])
    sampler = AgentSampler(np.random.default_rng(3), sizes, 4)
    b = np.asarray(sampler.batches(np.arange(3)))
    np.testing.assert_array_equal(b, batch_indices(sampler.key, 0, np.arange(3), sizes, 4))
    np.testing.assert_array_equal(b[0], np.arange(4))
    assert b[1].max() < 9 and sampler.k == 1


def test_the_sampler_keeps_its_own_read_only_local_sizes():
    # the largest N_j is read once at construction: the sizes it came from cannot change under it
    sizes = np.array([5, 7, 6])
    sampler = AgentSampler(np.random.default_rng(0), sizes, 2)
    sizes[1] = 3                                       # the caller's array is not the sampler's
    assert sampler.local_sizes.tolist() == [5, 7, 6]
    with pytest.raises(ValueError):
        sampler.local_sizes[0] = 9
    full = AgentSampler(np.random.default_rng(0), np.array([4, 4]), 4)
    assert full.batches(np.array([0, 1]), 0, 0).shape == (2, 4)       # B = N: every sample

"""Participation schemes (rfl.participation) against their definitions: the authors' four
modes (RFedAGSP.m options 1-4), unbiasedness of the inverse-probability aggregate by exact
enumeration, the estimated-probability weights on a hand-made sequence, config checks, run ids,
and every strategy against its per-agent reference loop under each scheme."""

import itertools

import numpy as np
import pytest

from rfl import config as cfg
from rfl.algorithms import AgentSampler, Fixed
from rfl.algorithms.aggregation import anchored_mean, retract_weighted_stream, tangent_mean
from rfl.manifolds import Euclidean, Sphere
from rfl.participation import canonical, check, make_scheme, tag
from rfl.registry import ALGORITHMS, PARTICIPATION


class ScriptedRng:
    """Stands in for a Generator: ``random(S)`` returns the next scripted row of uniforms,
    ``integers(S)`` the next scripted agent (the draws the Bernoulli schemes make)."""

    def __init__(self, uniforms, picks=()):
        self.uniforms, self.picks = list(uniforms), list(picks)

    def random(self, size):
        row = np.asarray(self.uniforms.pop(0), dtype=float)
        assert row.shape == (size,)
        return row

    def integers(self, n, high=None, dtype=None):
        if high is not None:           # the sampler's mini-batch key (not a scheme's draw)
            return np.int64(12345)
        j = self.picks.pop(0)
        assert 0 <= j < n
        return j


def _uniforms_for(joins, p):
    """Uniforms that make agent i join exactly when joins[i] (u <= p_i joins)."""
    p = np.asarray(p)
    return np.where(joins, p / 2, (1 + p) / 2)


def test_the_four_schemes_are_registered():
    assert {"full", "uniform", "bernoulli", "bernoulli_estimated"} <= set(PARTICIPATION.names())
    assert not PARTICIPATION["bernoulli"].normalised and PARTICIPATION["uniform"].normalised


@pytest.mark.parametrize("S", [3, 4])
def test_bernoulli_aggregate_is_unbiased_for_full_participation(S):
    """E[sum_{i in S_t} zeta_i / (S p_i)] = sum_i zeta_i / S, exactly: the expectation is the
    sum over all 2^S join patterns, each with probability prod p_i^{j_i} (1 - p_i)^{1 - j_i},
    of the scheme's own participants and weights for that pattern (the empty pattern included:
    its one placeholder agent has weight 0)."""
    rng = np.random.default_rng(0)
    p = np.array([0.3, 0.55, 0.8, 0.45])[:S]
    zeta = rng.standard_normal((S, 5))                   # messages (tangent vectors at x_t)
    expectation = np.zeros(5)
    total = 0.0
    for joins in itertools.product([False, True], repeat=S):
        joins = np.array(joins)
        prob = float(np.prod(np.where(joins, p, 1 - p)))
        scheme = make_scheme({"scheme": "bernoulli", "probabilities": p.tolist()}, S,
                             ScriptedRng([_uniforms_for(joins, p)], picks=[S - 1]))
        agents = scheme.participants()
        w = scheme.weights(np.full(S, 10), agents)
        if joins.any():
            np.testing.assert_array_equal(agents, np.flatnonzero(joins))
            np.testing.assert_allclose(w, 1 / (S * p[agents]), rtol=0, atol=1e-15)
        else:
            assert agents.shape == (1,) and w.tolist() == [0.0]
        expectation += prob * (w @ zeta[agents])
        total += prob
    assert total == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose(expectation, zeta.mean(axis=0), rtol=0, atol=1e-14)


def test_bernoulli_estimated_is_biased_where_bernoulli_is_not():
    """Round 0 of the estimated scheme gives every participant q_i = 1, weight 1/S: its
    expected aggregate is sum_i p_i zeta_i / S, not the full one (the test above would fail
    for it)."""
    S, p = 3, np.array([0.3, 0.6, 0.9])
    zeta = np.random.default_rng(1).standard_normal((S, 4))
    expectation = np.zeros(4)
    for joins in itertools.product([False, True], repeat=S):
        joins = np.array(joins)
        if not joins.any():
            continue
        prob = float(np.prod(np.where(joins, p, 1 - p)))
        scheme = make_scheme({"scheme": "bernoulli_estimated", "probabilities": p.tolist()}, S,
                             ScriptedRng([_uniforms_for(joins, p)]))
        agents = scheme.participants()
        expectation += prob * (scheme.weights(np.ones(S), agents) @ zeta[agents])
    np.testing.assert_allclose(expectation, (p @ zeta) / S, rtol=0, atol=1e-14)
    assert np.abs(expectation - zeta.mean(axis=0)).max() > 0.05


def test_bernoulli_estimated_weights_on_a_hand_made_sequence():
    """S = 3, p_i = 0.5. Joins: round 0 {0, 2}; round 1 {1}; round 2 nobody (agent 0 is drawn
    and counted); round 3 everyone. Counts c after each round: (1,0,1), (1,1,1), (2,1,1), (3,2,2);
    q = c / (t + 1); weights 1 / (3 q) of that round's agents."""
    S, p = 3, np.full(3, 0.5)
    rounds = [[1, 0, 1], [0, 1, 0], [0, 0, 0], [1, 1, 1]]
    rng = ScriptedRng([_uniforms_for(np.array(j, bool), p) for j in rounds], picks=[0])
    sampler = AgentSampler(rng, np.array([4, 5, 6]), 2, {"scheme": "bernoulli_estimated", "rho": 0.5})
    expected = [([0, 2], [1 / 3, 1 / 3]),
                ([1], [1 / (3 * 0.5)]),
                ([0], [1 / (3 * (2 / 3))]),
                ([0, 1, 2], [1 / (3 * 0.75), 1 / (3 * 0.5), 1 / (3 * 0.5)])]
    for agents_ref, w_ref in expected:
        agents = sampler.participants()
        np.testing.assert_array_equal(agents, agents_ref)
        np.testing.assert_allclose(sampler.weights(sampler.local_sizes, agents), w_ref, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(sampler.scheme.counts, [3, 2, 2])


def test_bernoulli_joins_follow_the_true_probabilities():
    """Over many rounds each agent joins with frequency p_i (binomial 5-sigma band)."""
    p = np.array([0.2, 0.5, 0.9])
    sampler = AgentSampler(np.random.default_rng(3), np.full(3, 5), 2,
                           {"scheme": "bernoulli", "probabilities": p.tolist()})
    n = 4000
    counts = np.zeros(3)
    for _ in range(n):
        agents = sampler.participants()
        if sampler.weights(sampler.local_sizes, agents).any():
            counts[agents] += 1
    assert np.all(np.abs(counts / n - p) < 5 * np.sqrt(p * (1 - p) / n))


def test_uniform_scheme_is_the_integer_participation_draw_for_draw():
    """participation: 3 and {scheme: uniform, s: 3} draw the same agents as the sampler always
    did (sorted rng.choice without replacement, after the mini-batch key), with N_j-proportional
    weights."""
    sizes = np.array([4, 7, 5, 9, 6])
    a = AgentSampler(np.random.default_rng(9), sizes, 2, 3)
    b = AgentSampler(np.random.default_rng(9), sizes, 2, {"scheme": "uniform", "s": 3})
    ref = np.random.default_rng(9)
    ref.integers(0, 2 ** 63, dtype=np.int64)          # the mini-batch key, drawn at construction
    for _ in range(20):
        x, y = a.participants(), b.participants()
        np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(x, np.sort(ref.choice(5, size=3, replace=False)))
        np.testing.assert_allclose(a.weights(sizes, x), sizes[x] / sizes[x].sum(), rtol=0, atol=1e-15)
    assert a.participation == b.participation == 3
    assert AgentSampler(np.random.default_rng(0), sizes, 2, {"scheme": "full"}).participation is None
    np.testing.assert_array_equal(
        AgentSampler(np.random.default_rng(0), sizes, 2, {"scheme": "full"}).participants(), np.arange(5))


def test_run_ids_name_the_scheme_and_its_options():
    specs = [None, 3, {"scheme": "bernoulli", "rho": 0.3}, {"scheme": "bernoulli", "rho": 0.5},
             {"scheme": "bernoulli_estimated", "rho": 0.3},
             {"scheme": "bernoulli", "probabilities": [0.3, 0.4, 0.5]},
             {"scheme": "bernoulli", "probabilities": [0.3, 0.4, 0.6]}]
    ids = [cfg.run_id("rfedags", 5, 0, s) for s in specs]
    assert len(set(ids)) == len(ids), ids
    assert ids[0] == "rfedags_K5_seed0" and ids[1] == "rfedags_K5_s3_seed0"
    assert ids[2] == "rfedags_K5_bernoulli_rho0p3_seed0"
    # the same scheme spelt two ways is one run
    assert tag({"scheme": "bernoulli"}) == tag({"scheme": "bernoulli", "rho": 0.5})
    assert tag({"scheme": "uniform", "s": 3}) == tag(3) and tag({"scheme": "full"}) == tag(None) == ""
    assert canonical({"scheme": "bernoulli"}) == {"scheme": "bernoulli", "rho": 0.5, "probabilities": None}


@pytest.mark.parametrize("spec,key,text", [
    ({"scheme": "bernouli"}, ["scheme"], "allowed: "),
    ({"scheme": "bernoulli", "rho": 1.5}, ["rho"], "1.5"),
    ({"scheme": "bernoulli", "rho": 0}, ["rho"], "0"),
    ({"scheme": "bernoulli", "p": 0.5}, ["p"], "allowed: rho, probabilities"),
    ({"scheme": "bernoulli", "probabilities": [0.5, 0.5]}, ["probabilities"], "S=4"),
    ({"scheme": "uniform", "s": 5}, ["s"], "S=4"),
    ({"scheme": "uniform"}, ["s"], "missing"),
])
def test_bad_schemes_are_refused_naming_the_key(spec, key, text):
    problems = check(spec, 4)
    assert problems and problems[0][0] == key and text in problems[0][1]
    with pytest.raises(ValueError, match="participation." + key[0]):
        AgentSampler(np.random.default_rng(0), np.full(4, 5), 2, spec)


def test_config_accepts_schemes_and_names_a_bad_one(tmp_path):
    config = cfg.load("config/smoke.yaml")
    exp_name = next(e for e, x in config["experiments"].items()
                    if x["methods"][0]["algorithm"] == "rfedags")
    raw = __import__("rfl.io", fromlist=["read_yaml"]).read_yaml("config/smoke.yaml")
    raw["experiments"][exp_name].pop("source", None)   # its source runs every agent: no other scheme
    methods = raw["experiments"][exp_name]["methods"]
    methods.append({"algorithm": "rfedags", "K": [2], "participation": {"scheme": "bernoulli", "rho": 0.3}})
    methods.append({"algorithm": "rfedags", "K": [2],
                    "participation": {"scheme": "bernoulli_estimated", "rho": 0.3}})
    ok = cfg.validate(raw)
    ids = {r["run_id"] for r in cfg.expand_runs(ok) if r["experiment"] == exp_name}
    assert any("_bernoulli_rho0p3_" in i for i in ids) and any("_bernoulli_estimated_rho0p3_" in i for i in ids)
    methods.append({"algorithm": "rfedags", "K": [2], "participation": {"scheme": "bernoulli", "rho": 2}})
    with pytest.raises(cfg.ConfigError, match=rf"experiments\.{exp_name}\.methods\.\d+\.participation\.rho"):
        cfg.validate(raw)
    methods[-1] = {"algorithm": "rfedags", "K": [2], "participation": {"scheme": "bernoulli", "rho": 0.3}}
    with pytest.raises(cfg.ConfigError, match="overwrite each other"):
        cfg.validate(raw)


# ---- aggregation with weights that do not sum to 1 ----------------------------------
def test_unnormalised_weights_aggregate_the_updates_not_the_points():
    """With w not summing to 1: the anchored mean is x_t + sum w (x^j - x_t) (not sum w x^j),
    the Euclidean tangent mean is the same point, and the stream sum is x_t + sum w zeta."""
    rng = np.random.default_rng(4)
    x_t, pts = rng.standard_normal(3), rng.standard_normal((2, 3))
    w = np.array([0.7, 0.9])
    expected = x_t + 0.7 * (pts[0] - x_t) + 0.9 * (pts[1] - x_t)
    np.testing.assert_allclose(anchored_mean(w, pts, x_t), expected, rtol=0, atol=1e-14)
    np.testing.assert_allclose(tangent_mean(Euclidean(3), x_t, pts, w), expected, rtol=0, atol=1e-14)
    np.testing.assert_allclose(retract_weighted_stream(Euclidean(3), x_t, pts - x_t, w), expected,
                               rtol=0, atol=1e-14)
    # zero weights leave the server where it is, on a curved space too
    M = Sphere(4)
    y = M.random_point(rng, 3)
    np.testing.assert_allclose(tangent_mean(M, y[0], y[1:], np.zeros(2)), y[0], rtol=0, atol=1e-15)


# ---- every strategy under every scheme against its reference loop ------------------------
SCHEMES = [{"scheme": "bernoulli", "rho": 0.5}, {"scheme": "bernoulli_estimated", "rho": 0.6},
           {"scheme": "bernoulli", "probabilities": "per-agent"}]


def _cases():
    from rfl.testing.strategy import CONTRACT_PROBLEMS
    out = []
    for name, cls in ALGORITHMS.items():
        if not cls.federated or getattr(cls, "decentralised", False):
            continue                    # decentralised: every agent in every round, no scheme
        for cp in CONTRACT_PROBLEMS:
            if not cls.missing(cp.build()):
                out.append(pytest.param(name, cp, id=f"{name}-{cp.name}"))
    return out


@pytest.mark.parametrize("scheme", SCHEMES, ids=["bernoulli", "estimated", "bernoulli-p_i"])
@pytest.mark.parametrize("name,cp", _cases())
def test_strategies_match_reference_loops_under_the_scheme(name, cp, scheme):
    from rfl.testing.reference_loops import REFERENCE_LOOPS
    problem = cp.build()
    S = problem.n_agents
    if scheme.get("probabilities") == "per-agent":
        scheme = {"scheme": "bernoulli", "probabilities": list(np.linspace(0.25, 0.9, S))}
    from rfl.testing.strategy import CONTRACT_OPTIONS
    cls = ALGORITHMS[name]
    options = {**cls.option_defaults(), **CONTRACT_OPTIONS.get(name, {})}
    B = min(4, int(np.min(problem.local_sizes)))
    alg = cls(problem, Fixed(cp.alpha), 3, B, scheme, **options)
    x0 = problem.initial_point(np.random.default_rng(12))
    vec = [x0] + [np.array(x, copy=True) for _, x, _ in alg.iterate(x0, 6, np.random.default_rng(11))]
    sampler = AgentSampler(np.random.default_rng(11), problem.local_sizes, B, scheme)
    ref = REFERENCE_LOOPS[name](problem, x0, Fixed(cp.alpha), 3, 6, sampler, **options)
    scale = max(1.0, float(np.abs(np.array(ref)).max()))
    np.testing.assert_allclose(np.array(vec), np.array(ref), rtol=0, atol=1e-12 * scale)
    assert np.abs(vec[-1] - vec[0]).max() > 1e-3 * scale
    assert problem.manifold.distance_from_manifold(np.array(vec)).max() < 1e-10

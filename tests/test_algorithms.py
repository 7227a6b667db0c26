"""RFedAGS / RFedAvg / FedAvg: exact identities, the geometries the strategy contract does not
pick, the sampler, the step rules; declarations and their checks.

(Vectorised == per-agent reference loop for every strategy on its default problems is the
strategy contract's: tests/test_strategy_contract.py.)"""

import numpy as np
import pytest

from rfl.algorithms import (AgentSampler, Decaying, FedAvg, FederatedStrategy, Fixed, RFedAGS,
                            RFedAvg, RoundResult)
from rfl.data.cpesph import generate
from rfl.problems.cpesph import CPESph
from rfl.registry import ALGORITHMS
from rfl.testing.reference_loops import (REFERENCE_LOOPS, EuclideanOps, SphereOps, fedavg_loop,
                                         rfedags_loop, rfedavg_loop)


def _iterates(alg, x0, rounds, seed):
    return [x0] + [x for _, x, _ in alg.iterate(x0, rounds, np.random.default_rng(seed))]


def _sampler(problem, B, s, seed):
    return AgentSampler(np.random.default_rng(seed), problem.local_sizes, B, s)


@pytest.fixture(scope="module")
def sphere_data():
    return generate(np.random.default_rng(5), d=7, nu=0.2, S=6, N=15)["Z"]


@pytest.mark.parametrize("participation", [None, 3])
@pytest.mark.parametrize("geometry", [("normalize", "projection"), ("exp", "parallel")])
def test_rfedags_matches_reference_loop(sphere_data, participation, geometry):
    """Geometries other than the contract's CPESph default (normalize, parallel)."""
    retraction, transport = geometry
    p = CPESph(sphere_data, retraction=retraction, transport=transport)
    x0 = p.initial_point(np.random.default_rng(1))
    step = Decaying(2.0, 1.5, 3)
    vec = _iterates(RFedAGS(p, step, 4, 5, participation), x0, 8, seed=9)
    ref = rfedags_loop(p, x0, step, 4, 8, _sampler(p, 5, participation, 9),
                       ops=SphereOps(8, retraction, transport))
    np.testing.assert_allclose(np.array(vec), np.array(ref), rtol=0, atol=1e-12)
    assert np.abs(vec[-1] - vec[0]).max() > 1e-2      # the iterates actually moved


@pytest.mark.parametrize("participation", [None, 2])
def test_rfedavg_matches_reference_loop_with_exp_retraction(sphere_data, participation):
    p = CPESph(sphere_data, retraction="exp", transport="projection")
    x0 = p.initial_point(np.random.default_rng(2))
    step = Fixed(3.0)
    vec = _iterates(RFedAvg(p, step, 3, 6, participation), x0, 8, seed=4)
    ref = rfedavg_loop(p, x0, step, 3, 8, _sampler(p, 6, participation, 4),
                       ops=SphereOps(8, "exp", "projection"))
    np.testing.assert_allclose(np.array(vec), np.array(ref), rtol=0, atol=1e-12)
    assert np.abs(vec[-1] - vec[0]).max() > 1e-2


@pytest.mark.parametrize("participation", [None, 3])
def test_rfedags_on_euclidean_space_is_fedavg(least_squares, participation):
    """With R_x(u) = x + u and identity transport, x_t + sum_j p_j sum_k eta^j_k = sum_j p_j x^j_K."""
    p = least_squares
    x0 = np.zeros(4)
    step = Fixed(0.05)
    ags = _iterates(RFedAGS(p, step, 5, 4, participation), x0, 15, seed=3)
    avg = _iterates(FedAvg(p, step, 5, 4, participation), x0, 15, seed=3)
    loop = fedavg_loop(p, x0, step, 5, 15, _sampler(p, 4, participation, 3))
    np.testing.assert_allclose(np.array(ags), np.array(avg), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.array(avg), np.array(loop), rtol=0, atol=1e-12)
    assert np.abs(ags[-1] - ags[0]).max() > 0.1      # the iterates actually moved


def test_rfedags_euclidean_matches_reference_loop(least_squares):
    p = least_squares
    x0 = np.ones(4)
    step = Fixed(0.05)
    vec = _iterates(RFedAGS(p, step, 3, 6, 4), x0, 6, seed=8)
    ref = rfedags_loop(p, x0, step, 3, 6, _sampler(p, 6, 4, 8), ops=EuclideanOps())
    np.testing.assert_allclose(np.array(vec), np.array(ref), rtol=0, atol=1e-12)


@pytest.mark.parametrize("participation", [None, 4])
def test_rfedags_with_exp_parallel_and_one_step_is_rfedavg(sphere_data, participation):
    """K = 1: zeta^j = eta^j (transport x_t -> x_t is the identity) and Log_{x_t}(Exp_{x_t}(eta^j)) = eta^j."""
    p = CPESph(sphere_data, retraction="exp", transport="parallel")
    x0 = p.initial_point(np.random.default_rng(3))
    step = Decaying(4.0, 1.0, 2)
    ags = _iterates(RFedAGS(p, step, 1, 7, participation), x0, 12, seed=6)
    avg = _iterates(RFedAvg(p, step, 1, 7, participation), x0, 12, seed=6)
    np.testing.assert_allclose(np.array(ags), np.array(avg), rtol=0, atol=1e-12)
    assert np.abs(ags[-1] - ags[0]).max() > 1e-2


def test_rfedags_and_rfedavg_differ_for_several_local_steps(sphere_data):
    """The identity above is special to K = 1: with K > 1 on a curved space the aggregations differ."""
    p = CPESph(sphere_data, retraction="exp", transport="parallel")
    x0 = p.initial_point(np.random.default_rng(3))
    ags = _iterates(RFedAGS(p, Fixed(20.0), 5, 7), x0, 3, seed=6)
    avg = _iterates(RFedAvg(p, Fixed(20.0), 5, 7), x0, 3, seed=6)
    assert np.abs(np.array(ags) - np.array(avg)).max() > 1e-8


def test_sampler_draws_without_replacement_and_respects_sizes():
    rng = np.random.default_rng(0)
    sizes = np.array([5, 9, 7])
    s = AgentSampler(rng, sizes, 5, 2)
    for _ in range(50):
        agents = s.participants()
        assert len(set(agents)) == 2 and np.all(np.diff(agents) > 0)
        b = s.batches(agents)
        assert b.shape == (2, 5)
        for row, j in enumerate(agents):
            assert len(set(b[row])) == 5 and b[row].max() < sizes[j]
    np.testing.assert_allclose(AgentSampler.weights(sizes, np.array([0, 2])), [5 / 12, 7 / 12])


def test_partial_participation_samples_uniformly():
    s = AgentSampler(np.random.default_rng(1), np.full(10, 4), 2, 3)
    counts = np.zeros(10)
    for _ in range(3000):
        counts[s.participants()] += 1
    # each agent is chosen with probability s/S = 0.3: 900 expected, sd ~ 25
    assert np.all(np.abs(counts - 900) < 150)


def test_decaying_rule_follows_5_2():
    step = Decaying(1.0, 0.1, 50)
    assert step(0) == 1.0
    assert step(1) == step(49) == pytest.approx(10.0)
    assert step(50) == step(99) == pytest.approx(1 / 1.1)
    assert step(100) == pytest.approx(1 / 2.1)


def test_fixed_step_converges_linearly_to_a_neighbourhood():
    """Theorem 4.3 behaviour: geometric decrease of F(x_t) - F* down to a floor that scales with alpha.

    Measured on this instance (excess risk, run seed 2): alpha = 2 goes 2.3e-2 -> 2.1e-4 in 10
    rounds, then fluctuates around 4.6e-5; alpha = 0.5 settles around 1.2e-5.
    """
    Z = generate(np.random.default_rng(0), d=9, nu=0.2, S=5, N=30)["Z"]
    p = CPESph(Z)
    F_star = p.cost(p.closed_form_optimum())
    x0 = p.initial_point(np.random.default_rng(1))

    def excess(alpha, rounds, seed=2):
        alg = RFedAGS(p, Fixed(alpha), 5, 10)
        return np.array([p.cost(x) - F_star for _, x, _ in alg.iterate(x0, rounds, np.random.default_rng(seed))])

    e = excess(2.0, 150)
    # linear phase (the theorem bounds the expectation): the mean over 5 runs of log(excess) is a
    # straight line of clearly negative slope over the first 10 rounds (one run's line deviates
    # from it by 0.2-0.6 depending on its draws)
    log_e = np.mean([np.log(excess(2.0, 11, seed)) for seed in range(2, 7)], axis=0)
    slope, icpt = np.polyfit(np.arange(11), log_e, 1)
    assert slope < -0.25
    assert np.abs(log_e - (icpt + slope * np.arange(11))).max() < 0.5
    # then a floor: far below the start, and no longer decreasing geometrically
    floor_big = np.median(e[-50:])
    assert floor_big < 1e-2 * e[0]
    assert np.median(e[-50:]) > 0.2 * np.median(e[50:100])
    # the neighbourhood shrinks with the step size (O(alpha sigma^2 / B) in Theorem 4.3)
    floor_small = np.median(excess(0.5, 400)[-50:])
    assert floor_small < 0.5 * floor_big


# ---- declarations -----------------------------------------------------------------
def test_declarations_are_complete_and_in_the_figure_order():
    from rfl.manifolds.base import Manifold
    order = ["rfedags", "rfedavg", "rfedsvrg", "rfedproj", "fedavg", "scafflsa", "rsd", "rcg", "rlbfgs",
             "scaffold", "fedrr", "rfedags_rr", "zorfedproj", "rfedprox", "drsgd", "drgta", "noncooperative",
             "diffusion", "fusion_centre", "dprgd", "idprgd"]
    builtin = {n: c for n, c in ALGORITHMS.items() if c.__module__.startswith("rfl.algorithms.")}
    assert sorted(builtin, key=lambda n: builtin[n].plot_order) == order
    for name, cls in builtin.items():
        assert cls.name == name and isinstance(cls.label, str) and cls.label
        assert cls.requires <= set(Manifold.CAPABILITIES)
        assert cls.fields and cls.fields <= {"gradient", "linear_field"}
        assert set(cls.style) == {"color", "ls"} and cls.style["ls"] in ("-", "--", "-.", ":")
        assert cls.federated == issubclass(cls, FederatedStrategy)
        if cls.federated:
            assert name in REFERENCE_LOOPS
    assert ALGORITHMS["fedavg"].label == "FedAvg"
    assert ALGORITHMS["fedavg"].problem_labels == {"lsa": "FedLSA (FedAvg)"}
    assert [n for n in order if builtin[n].style["color"] is None] == ["rfedags", "rfedavg", "fedavg"]


def test_declared_options_become_checked_attributes(sphere_data):
    """Each declared option is an attribute: its default, or the given value checked against
    its schema; an undeclared or invalid option is refused by name."""
    from rfl.algorithms import RFedProj
    p = CPESph(sphere_data)
    assert RFedProj.option_defaults() == {"server_step": 1.0}
    assert RFedProj(p, Fixed(0.1), 2, 3).server_step == 1.0
    assert RFedProj(p, Fixed(0.1), 2, 3, server_step=0.25).server_step == 0.25
    for bad in (0, -1.0, "1", None):
        with pytest.raises(ValueError, match=f"rfedproj option server_step = {bad!r}"):
            RFedProj(p, Fixed(0.1), 2, 3, server_step=bad)
    with pytest.raises(TypeError, match="rfedproj takes no option 'eta_g'; allowed: server_step"):
        RFedProj(p, Fixed(0.1), 2, 3, eta_g=0.5)
    with pytest.raises(TypeError, match="rfedags takes no option 'server_step'; allowed: local_method"):
        RFedAGS(p, Fixed(0.1), 2, 3, server_step=0.5)
    for name, cls in ALGORITHMS.items():
        for option, schema in cls.options.items():
            assert "default" in schema, (name, option)


@pytest.mark.parametrize("name,missing", [("fedavg", "flat"), ("scafflsa", "flat")])
def test_flat_strategies_refuse_a_curved_manifold(sphere_data, name, missing):
    p = CPESph(sphere_data)
    with pytest.raises(ValueError, match=f"{name} cannot run on sphere with retraction "
                                         f"'normalize': missing {missing}"):
        ALGORITHMS[name](p, Fixed(0.1), 2, 3)


def test_round_result_is_frozen_and_rounds_count_local_work(least_squares):
    alg = FedAvg(least_squares, Fixed(0.05), 3, 4, 2)
    r = alg.round(np.zeros(4), 0, alg.sampler(np.random.default_rng(0)))
    assert isinstance(r, RoundResult) and r.participants.shape == (2,)
    assert r.grad_evals == 2 * 3 * 4 and r.floats == 2 * 2 * 4
    with pytest.raises(AttributeError):
        r.x = np.ones(4)


def test_a_new_strategy_registers_itself_and_is_checked(least_squares):
    """A subclass declaring ``name`` is an algorithm of the registry; its ``requires`` are
    checked against the problem's manifold at construction."""
    from rfl.algorithms.aggregation import weighted_mean

    class Plain(FederatedStrategy):
        name = "plain_for_test"
        label = "Plain"
        requires = frozenset({"nearest_point"})

        def round(self, x_t, t, sampler):
            agents = sampler.participants()
            return self.result(weighted_mean(sampler.weights(self.problem.local_sizes, agents),
                                             self.broadcast(x_t, agents.shape[0])), agents)

    try:
        assert ALGORITHMS["plain_for_test"] is Plain and Plain.federated
        with pytest.raises(ValueError, match="plain_for_test cannot run on euclidean .*missing nearest_point"):
            Plain(least_squares, Fixed(0.1), 1, 2)
    finally:
        ALGORITHMS.remove("plain_for_test")


# ---- declarations: what a problem lacks, named -------------------------------------
def _undeclared(**attrs):
    """A Declared subclass that is not registered (``name`` set after the class exists)."""
    from rfl.algorithms.base import Declared
    cls = type("Undeclared", (Declared,), {k: v for k, v in attrs.items() if k != "name"})
    cls.name = attrs.get("name", "undeclared")
    return cls


def test_missing_asks_the_manifold_with_its_own_retraction():
    """Stiefel with the QR retraction but no inverse of it: the tangent mean is missing for
    that geometry although the default (polar) retraction would offer it."""
    from rfl.algorithms import RFedSVRG
    from rfl.data import mbcfsti
    from rfl.manifolds import Stiefel
    from rfl.problems.mbcfsti import MBCFSti

    class NoQRInverse(Stiefel):                  # no ``name``: not registered
        inverse_retraction_qr = None

    data = mbcfsti.generate(np.random.default_rng(3), d=6, p=2, S=3, N=8)
    qr, polar = (MBCFSti.from_arrays(data, retraction=r) for r in ("qr", "polar"))
    qr.manifold.__class__ = NoQRInverse
    polar.manifold.__class__ = NoQRInverse
    assert RFedSVRG.missing(qr) == ["tangent_mean"]
    assert RFedSVRG.missing(polar) == []
    assert RFedAvg.missing(qr) == ["tangent_mean"]


def test_missing_names_the_kind_of_field_and_what_the_algorithm_follows():
    """A problem's ``field`` (default "gradient" when it declares none) must be one the
    algorithm follows; the phrase lists those in sorted order."""
    from types import SimpleNamespace

    from rfl.manifolds import Euclidean
    flat = Euclidean((3,))
    lsa_like = SimpleNamespace(manifold=flat, field="linear_field")
    no_field = SimpleNamespace(manifold=flat)
    assert RFedAGS.missing(lsa_like) == ["a linear_field field (it follows: gradient)"]
    assert RFedAGS.missing(no_field) == [] and FedAvg.missing(lsa_like) == []
    two = _undeclared(fields=frozenset({"linear_field", "gradient"}))
    assert two.missing(SimpleNamespace(manifold=flat, field="hessian")) == [
        "a hessian field (it follows: gradient, linear_field)"]


def test_check_problem_lists_everything_missing():
    """Several capabilities missing: all of them, comma-separated; a manifold without a
    retraction name is named alone."""
    from types import SimpleNamespace
    bare = SimpleNamespace(name="toy", offers=lambda capability, retraction=None: False)
    two = _undeclared(name="two", requires=frozenset({"log", "flat"}))
    with pytest.raises(ValueError, match=r"^two cannot run on toy: missing flat, log$"):
        two.check_problem(SimpleNamespace(manifold=bare))
    assert two.missing(SimpleNamespace(manifold=bare)) == ["flat", "log"]


def test_unknown_options_are_all_named_with_the_allowed_ones(sphere_data):
    p = CPESph(sphere_data)
    with pytest.raises(TypeError, match=r"^rfedags takes no option 'a', 'b'; allowed: local_method$"):
        RFedAGS(p, Fixed(0.1), 2, 3, b=1, a=2)
    with pytest.raises(TypeError, match=r"^rfedavg takes no option 'a'; allowed: none$"):
        RFedAvg(p, Fixed(0.1), 2, 3, a=1)
    two = _undeclared(name="two", options={"u": {"type": "number", "default": 1.0},
                                           "v": {"type": "number", "default": 2.0}})()
    with pytest.raises(TypeError, match=r"^two takes no option 'w'; allowed: u, v$"):
        two.set_options({"w": 0})
    two.set_options({"v": 5.0})
    assert (two.u, two.v) == (1.0, 5.0)


@pytest.mark.parametrize("K", [0, -1, 2.5, 1.0, "2", None])
def test_K_must_be_an_integer_at_least_one(sphere_data, K):
    with pytest.raises(ValueError, match=rf"^K must be an integer >= 1, got {K!r}$".replace("(", r"\(")):
        RFedAGS(CPESph(sphere_data), Fixed(0.1), K, 3)


def test_K_one_and_numpy_integers_are_accepted(sphere_data):
    assert RFedAGS(CPESph(sphere_data), Fixed(0.1), 1, 3).K == 1
    alg = RFedAGS(CPESph(sphere_data), Fixed(0.1), np.int64(3), 3)
    assert alg.K == 3 and type(alg.K) is int


# ---- step-size rules: bad values named --------------------------------------------
@pytest.mark.parametrize("make,match", [
    (lambda: Fixed(0), r"^step\.alpha must be positive, got 0$"),
    (lambda: Fixed(-0.5), r"^step\.alpha must be positive, got -0\.5$"),
    (lambda: Decaying(0.0, 1.0, 1), r"^step\.alpha0 must be positive, got 0\.0$"),
    (lambda: Decaying(1.0, 0, 1), r"^step\.beta must be positive, got 0$"),
    (lambda: Decaying(1.0, 1.0, 0), r"^step\.dec must be an integer >= 1, got 0$"),
    (lambda: Decaying(1.0, 1.0, 1.5), r"^step\.dec must be an integer >= 1, got 1\.5$"),
    (lambda: Decaying(1.0, 1.0, 2.0), r"^step\.dec must be an integer >= 1, got 2\.0$")])
def test_step_rules_refuse_bad_parameters_by_name(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_step_rules_accept_the_smallest_valid_parameters():
    """dec = 1 shrinks every round: alpha_t = alpha_0 / (beta + t)."""
    step = Decaying(2.0, 0.5, 1)
    assert [step(t) for t in range(4)] == [2.0, 2.0 / 1.5, 2.0 / 2.5, 2.0 / 3.5]
    assert Fixed(1e-300)(7) == 1e-300


def test_make_step_size_names_an_unknown_or_missing_rule():
    from rfl.algorithms.stepsize import make_step_size
    assert make_step_size({"rule": "fixed", "alpha": 0.3})(5) == 0.3
    with pytest.raises(ValueError, match=r"^step\.rule=None is unknown; allowed: fixed, decaying$"):
        make_step_size({"alpha": 0.3})
    with pytest.raises(ValueError, match=r"^step\.rule='adam' is unknown; allowed: fixed, decaying$"):
        make_step_size({"rule": "adam"})


# ---- the local work functions, step by step ---------------------------------------------
@pytest.mark.parametrize("method", ["sgd", "rsvrg"])
def test_local_steps_ask_for_the_batch_of_each_step_in_order(sphere_data, method):
    """batches(k) is called once per local step with k = 0, ..., K-1 (a Flower client draws
    its rows from k), by RFedAGS's stream and by RFedAvg's local SGD; a local method the
    stream does not know is refused by name."""
    from rfl.algorithms.rfedags import gradient_stream
    from rfl.algorithms.rfedavg import local_sgd
    p = CPESph(sphere_data)
    agents = np.array([0, 2, 5])
    x = np.repeat(p.initial_point(np.random.default_rng(0))[None], 3, axis=0)
    sampler = _sampler(p, 4, None, 2)
    for fn, kw in ((gradient_stream, {"local_method": method}), (local_sgd, {})):
        if fn is local_sgd and method == "rsvrg":
            continue
        seen = []

        def batches(k):
            seen.append(k)
            return sampler.batches(agents)

        fn(p, x, agents, 0.1, 4, batches, **kw)
        assert seen == [0, 1, 2, 3], fn.__name__
    plain = gradient_stream(p, x, agents, 0.1, 2, lambda k: _sampler(p, 4, None, 3).batches(agents))
    sgd = gradient_stream(p, x, agents, 0.1, 2, lambda k: _sampler(p, 4, None, 3).batches(agents), "sgd")
    np.testing.assert_array_equal(plain, sgd)                       # the default is plain SGD
    with pytest.raises(ValueError, match=r"^local_method='adam' is unknown; allowed: sgd, rsvrg$"):
        gradient_stream(p, x, agents, 0.1, 2, lambda k: sampler.batches(agents), "adam")


def test_fedavg_uses_the_step_of_each_round(least_squares):
    """FedAvg with the decaying rule (5.2) equals the per-agent loop with the same rule."""
    p = least_squares
    x0 = np.zeros(4)
    step = Decaying(0.2, 1.0, 1)
    avg = _iterates(FedAvg(p, step, 3, 4, 2), x0, 6, seed=4)
    loop = fedavg_loop(p, x0, step, 3, 6, _sampler(p, 4, 2, 4))
    np.testing.assert_allclose(np.array(avg), np.array(loop), rtol=0, atol=1e-12)


def test_rfedproj_round_without_reset_starts_from_the_given_point(sphere_data):
    """A round called before any reset takes x_bar = x_t: the same as reset(x_t) first."""
    from rfl.algorithms import RFedProj
    p = CPESph(sphere_data)
    x0 = p.initial_point(np.random.default_rng(1))
    fresh = RFedProj(p, Fixed(0.1), 2, 3)
    after_reset = RFedProj(p, Fixed(0.1), 2, 3)
    after_reset.reset(x0)
    a = fresh.round(x0, 0, _sampler(p, 3, None, 5))
    b = after_reset.round(x0, 0, _sampler(p, 3, None, 5))
    np.testing.assert_array_equal(a.x, b.x)
    assert np.all(np.isfinite(a.x)) and np.abs(a.x - x0).max() > 1e-6

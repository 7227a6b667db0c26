"""RFedSVRG (Li & Ma, Algorithm 1) and RFedProj (Zhang-Hu-So-Johansson, Algorithm 1): the
manifold projections they rest on, the per-agent reference loops, exact reductions to
(projected) Riemannian gradient descent, cost counters, and removal of client drift on
heterogeneous data."""

import numpy as np
import pytest

from rfl.algorithms import AgentSampler, Decaying, Fixed, RFedAvg
from rfl.algorithms.rfedproj import RFedProj
from rfl.algorithms.rfedsvrg import RFedSVRG
from rfl.data import mbcfsti
from rfl.data.cpesph import generate
from rfl.manifolds import SPD, Euclidean, Sphere, Stiefel
from rfl.problems.cpesph import CPESph
from rfl.problems.mbcfsti import MBCFSti
from rfl.testing.reference_loops import SphereOps, StiefelOps, rfedproj_loop, rfedsvrg_loop, sphere_project

TOL = 1e-12


def _iterates(alg, x0, rounds, seed):
    return [x0] + [x for _, x, _ in alg.iterate(x0, rounds, np.random.default_rng(seed))]


class RecordingSampler(AgentSampler):
    """An AgentSampler that remembers each round's participants (same draws as the plain one)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.rounds = []

    def participants(self):
        agents = super().participants()
        self.rounds.append(set(agents.tolist()))
        return agents


def _sampler(problem, B, s, seed):
    return RecordingSampler(np.random.default_rng(seed), problem.local_sizes, B, s)


@pytest.fixture(scope="module")
def hetero_Z():
    """CPESph with a different V_i per agent; top eigenvalues of C: 0.0328, 0.0384, 0.0439."""
    return generate(np.random.default_rng(5), d=7, nu=0.2, S=6, N=15, heterogeneous=True)["Z"]


@pytest.fixture(scope="module")
def brockett():
    """MBCFSti on St(3, 8), 5 agents with 10 matrices each (finite samples: heterogeneous f_i)."""
    return MBCFSti.from_arrays(mbcfsti.generate(np.random.default_rng(3), d=8, p=3, S=5, N=10))


# ---- P_M ----------------------------------------------------------------------
def test_sphere_projection_is_normalisation():
    M = Sphere(5)
    x = 3.0 * np.random.default_rng(0).standard_normal((4, 5))
    y = M.nearest_point(x)
    np.testing.assert_allclose(y, x / np.linalg.norm(x, axis=1, keepdims=True), rtol=0, atol=TOL)
    assert M.distance_from_manifold(y).max() < TOL
    np.testing.assert_allclose(M.nearest_point(y), y, rtol=0, atol=TOL)          # identity on M


def test_stiefel_projection_is_the_nearest_point():
    """P(X) = X (X^T X)^{-1/2} (an independent formula for the polar factor), idempotent,
    and no closer point among 200 random points of St(3, 7) and small perturbations of P(X)."""
    rng = np.random.default_rng(1)
    M = Stiefel(7, 3)
    x = rng.standard_normal((4, 7, 3))
    y = M.nearest_point(x)
    w, v = np.linalg.eigh(x.swapaxes(-1, -2) @ x)
    inv_sqrt = (v / np.sqrt(w)[:, None, :]) @ v.swapaxes(-1, -2)
    np.testing.assert_allclose(y, x @ inv_sqrt, rtol=0, atol=TOL)
    assert M.distance_from_manifold(y).max() < TOL
    np.testing.assert_allclose(M.nearest_point(y), y, rtol=0, atol=TOL)
    d_best = np.linalg.norm(x - y, axis=(1, 2))
    for _ in range(200):
        for q in (M.random_point(rng, 4), M.retraction(y, 1e-2 * M.random_tangent(rng, y))):
            assert np.all(np.linalg.norm(x - q, axis=(1, 2)) >= d_best - TOL)


@pytest.mark.parametrize("manifold", [Euclidean(3), SPD(3)])
def test_manifolds_without_projection_say_so(manifold):
    with pytest.raises(NotImplementedError, match=f"{manifold.name} has no Euclidean projection; "
                                                  f"RFedProj needs a compact embedded submanifold"):
        manifold.nearest_point(np.zeros((1,) + manifold.point_shape))


def test_rfedproj_rejects_a_manifold_without_projection(least_squares):
    with pytest.raises(ValueError, match="rfedproj cannot run on euclidean with retraction 'exp': "
                                         "missing nearest_point"):
        RFedProj(least_squares, Fixed(0.1), 2, 3)


def test_rfedsvrg_needs_a_log_or_an_inverse_retraction():
    """Stiefel has no closed-form Log; the tangent mean uses the inverse of the polar or of the
    QR retraction; a manifold that offers neither is refused by name."""
    from rfl.manifolds import Stiefel

    class NoInverse(Stiefel):                      # no ``name``: not registered
        @classmethod
        def offers(cls, capability, retraction=None):
            return capability != "tangent_mean" and super().offers(capability, retraction)

    data = mbcfsti.generate(np.random.default_rng(3), d=8, p=3, S=5, N=10)
    RFedSVRG(MBCFSti.from_arrays(data, retraction="polar"), Fixed(0.1), 2, 3)
    RFedSVRG(MBCFSti.from_arrays(data, retraction="qr"), Fixed(0.1), 2, 3)
    problem = MBCFSti.from_arrays(data, retraction="qr")
    problem.manifold.__class__ = NoInverse
    with pytest.raises(ValueError, match="rfedsvrg cannot run on stiefel with retraction 'qr': "
                                         "missing tangent_mean"):
        RFedSVRG(problem, Fixed(0.1), 2, 3)


# ---- vectorised == per-agent loop ------------------------------------------------
@pytest.mark.parametrize("correction", ["all_agents", "participants"])
@pytest.mark.parametrize("participation", [None, 3])
def test_rfedsvrg_matches_reference_loop_heterogeneous_exp_projection(hetero_Z, participation, correction):
    """Heterogeneous data and a geometry other than the contract's (normalize, parallel)."""
    p = CPESph(hetero_Z, retraction="exp", transport="projection")
    x0 = p.initial_point(np.random.default_rng(1))
    step = Decaying(2.0, 1.5, 3)
    vec = _iterates(RFedSVRG(p, step, 4, 5, participation, correction=correction), x0, 8, seed=9)
    ref = rfedsvrg_loop(p, x0, step, 4, 8, _sampler(p, 5, participation, 9),
                        ops=SphereOps(8, "exp", "projection"), correction=correction)
    np.testing.assert_allclose(np.array(vec), np.array(ref), rtol=0, atol=TOL)
    assert np.abs(vec[-1] - vec[0]).max() > 1e-2      # the iterates actually moved


def _skip_and_return(rounds):
    """Agents that took part in round r, missed r + 1 and came back in r + 2 (their c was reset)."""
    return {j for a, b, c in zip(rounds, rounds[1:], rounds[2:]) for j in a & c - b}


@pytest.mark.parametrize("participation", [None, 3])
@pytest.mark.parametrize("server_step", [1.0, 0.7])
def test_rfedproj_matches_reference_loop_on_the_sphere(hetero_Z, participation, server_step):
    p = CPESph(hetero_Z)
    x0 = p.initial_point(np.random.default_rng(2))
    step = Decaying(1.5, 1.0, 4)
    alg = RFedProj(p, step, 3, 5, participation, server_step=server_step)
    vec = _iterates(alg, x0, 10, seed=4)
    sampler = _sampler(p, 5, participation, 4)
    ref = rfedproj_loop(p, x0, step, 3, 10, sampler, server_step=server_step)
    np.testing.assert_allclose(np.array(vec), np.array(ref), rtol=0, atol=TOL)
    assert np.abs(vec[-1] - vec[0]).max() > 1e-2
    # the corrections are in play: after one round they are far from zero
    alg.reset(x0)
    alg.round(x0, 0, alg.sampler(np.random.default_rng(4)))
    assert np.linalg.norm(alg.c) > 1e-2
    if participation is not None:
        rounds = sampler.rounds
        assert any(a & b for a, b in zip(rounds, rounds[1:]))      # some agent keeps its c
        assert _skip_and_return(rounds)                            # some agent's c is reset to 0


@pytest.mark.parametrize("participation", [None, 3])
def test_rfedproj_line_15_is_average_minus_old(hetero_Z, participation):
    """Line 15 with its factor read as 1/(eta_g eta K), c_j = (P(x_bar^r) - x_bar^{r+1})/(eta_g eta K)
    - old_j, equals 'average - old' plus sum_j p_j c_j^r, which vanishes when all agents take
    part in every round; under partial participation it does not, and the implemented form is
    'average - old' (the difference after 10 rounds is ~6e-3 in this instance)."""
    p = CPESph(hetero_Z)
    x0 = p.initial_point(np.random.default_rng(2))
    step = Fixed(0.8)
    vec = _iterates(RFedProj(p, step, 3, 5, participation, server_step=0.6), x0, 10, seed=7)
    lit = rfedproj_loop(p, x0, step, 3, 10, _sampler(p, 5, participation, 7), server_step=0.6,
                        line15=True)
    gap = np.abs(np.array(vec) - np.array(lit)).max()
    if participation is None:
        assert gap < TOL
    else:
        assert gap > 1e-4


@pytest.mark.parametrize("participation", [None, 2])
def test_rfedproj_matches_reference_loop_on_stiefel(brockett, participation):
    p = brockett
    x0 = p.initial_point(np.random.default_rng(3))
    step = Fixed(0.03)
    vec = _iterates(RFedProj(p, step, 3, 4, participation, server_step=0.8), x0, 10, seed=5)
    sampler = _sampler(p, 4, participation, 5)
    ref = rfedproj_loop(p, x0, step, 3, 10, sampler, ops=StiefelOps(8, 3), server_step=0.8)
    np.testing.assert_allclose(np.array(vec), np.array(ref), rtol=0, atol=TOL)
    assert np.abs(vec[-1] - vec[0]).max() > 1e-2
    assert max(p.manifold.distance_from_manifold(np.array(vec))) < TOL
    if participation is not None:
        assert _skip_and_return(sampler.rounds)


# ---- exact reductions ------------------------------------------------------------
@pytest.mark.parametrize("agents", [1, 6])
def test_rfedsvrg_one_step_full_batch_is_riemannian_gradient_descent(hetero_Z, agents):
    """K = 1, B = N, Exp retraction: the local step is taken at x_t, where g_j(x_t) -
    (grad f_j(x_t) - grad f(x_t)) = grad f(x_t), so x_{t+1} = Exp_{x_t}(-eta grad F(x_t)) for one
    agent (as the brief states) and, all agents taking part, for any number of them."""
    p = CPESph(hetero_Z[:agents], retraction="exp", transport="parallel")
    ops = SphereOps(8, "exp", "parallel")
    x0 = p.initial_point(np.random.default_rng(4))
    step = Decaying(3.0, 1.0, 2)
    vec = _iterates(RFedSVRG(p, step, 1, 15), x0, 12, seed=1)
    gd = [x0]
    for t in range(12):
        gd.append(ops.exp(gd[-1], -step(t) * ops.euclidean_to_riemannian_gradient(gd[-1], -2.0 * p.C @ gd[-1])))
    np.testing.assert_allclose(np.array(vec), np.array(gd), rtol=0, atol=TOL)
    assert np.abs(vec[-1] - vec[0]).max() > 1e-2


def test_rfedsvrg_corrections_coincide_with_every_agent_taking_part(hetero_Z):
    p = CPESph(hetero_Z)
    x0 = p.initial_point(np.random.default_rng(6))
    a, b = (_iterates(RFedSVRG(p, Fixed(1.5), 3, 5, None, correction=c), x0, 6, seed=3)
            for c in ("all_agents", "participants"))
    np.testing.assert_array_equal(np.array(a), np.array(b))
    assert np.abs(a[-1] - a[0]).max() > 1e-2


def test_rfedsvrg_partial_participation_corrects_with_the_gradient_over_all_agents(hetero_Z):
    """s = 2 of S = 6, K = 1, B = N, Exp: the local step is at x_t, where g_j(x_t) - (grad
    f_j(x_t) - G) = G, so x_{t+1} = Exp_{x_t}(-alpha G) whoever takes part. By hand: G =
    (I - x x^T)(-2 C x) with C = sum_i p_i Z_i^T Z_i / N over all six agents (the default,
    Li & Ma's grad f), or C over the round's two participants with p renormalised
    (``correction: participants``); the participants are redrawn from the seed."""
    p = CPESph(hetero_Z, retraction="exp", transport="parallel")
    ops = SphereOps(8, "exp", "parallel")
    N = hetero_Z.shape[1]
    C = np.einsum("snd,sne->sde", hetero_Z, hetero_Z) / N                # C_i: (S, d, d)
    np.testing.assert_allclose(C.mean(axis=0), p.C, rtol=0, atol=1e-15)  # p_i = 1/6
    x0 = p.initial_point(np.random.default_rng(7))
    step, seed, rounds = Fixed(3.0), 4, 8
    draws = AgentSampler(np.random.default_rng(seed), p.local_sizes, N, 2)
    everyone, participants = [x0], [x0]
    for t in range(rounds):
        agents = draws.participants()
        draws.batches(agents)                                            # the round's K = 1 draw
        for xs, Ct in ((everyone, C.mean(axis=0)), (participants, C[agents].mean(axis=0))):
            x = xs[-1]
            xs.append(ops.exp(x, -step(t) * (-2.0 * (Ct @ x - x * (x @ Ct @ x)))))
    default = _iterates(RFedSVRG(p, step, 1, N, 2), x0, rounds, seed=seed)
    restricted = _iterates(RFedSVRG(p, step, 1, N, 2, correction="participants"), x0, rounds, seed=seed)
    np.testing.assert_allclose(np.array(default), np.array(everyone), rtol=0, atol=TOL)
    np.testing.assert_allclose(np.array(restricted), np.array(participants), rtol=0, atol=TOL)
    assert np.abs(np.array(everyone) - np.array(participants)).max() > 1e-3   # they differ
    ref = rfedsvrg_loop(p, x0, step, 1, rounds, _sampler(p, N, 2, seed), ops=ops)
    np.testing.assert_allclose(np.array(ref), np.array(everyone), rtol=0, atol=TOL)
    ref = rfedsvrg_loop(p, x0, step, 1, rounds, _sampler(p, N, 2, seed), ops=ops,
                        correction="participants")
    np.testing.assert_allclose(np.array(ref), np.array(participants), rtol=0, atol=TOL)


def test_rfedsvrg_single_agent_full_batch_is_k_steps_of_riemannian_gd(hetero_Z):
    """S = 1, B = N: the correction grad f_1(x_t) - grad f(x_t) is zero, the local run is K
    retraction steps of gradient descent on f_1 = F, and Exp_{x_t}(Log_{x_t}(x_K)) = x_K."""
    p = CPESph(hetero_Z[:1], retraction="normalize", transport="projection")
    ops = SphereOps(8, "normalize", "projection")
    x0 = p.initial_point(np.random.default_rng(5))
    K, step = 3, Fixed(2.0)
    vec = _iterates(RFedSVRG(p, step, K, 15), x0, 10, seed=2)
    gd = [x0]
    for t in range(10):
        x = gd[-1]
        for _ in range(K):
            x = ops.retraction(x, -step(t) * ops.euclidean_to_riemannian_gradient(x, -2.0 * p.C @ x))
        gd.append(x)
    np.testing.assert_allclose(np.array(vec), np.array(gd), rtol=0, atol=TOL)
    assert np.abs(vec[-1] - vec[0]).max() > 1e-2


def _projected_gd_check(p, x0, eta, eta_g, rounds, project):
    """K = 1, B = N_j, all agents: P(x_bar^{r+1}) = P(y - eta_g eta grad F(y)), y = P(x_bar^r)
    (with eta_g = 1 the poster's x_tilde^{r+1}), in every round although the c_j are non-zero:
    sum_j p_j c_j^r = avg^{r-1} - sum_j p_j old_j^{r-1} = 0, so the corrections cancel in the
    server average."""
    alg = RFedProj(p, Fixed(eta), 1, int(p.local_sizes.min()), server_step=eta_g)
    vec = _iterates(alg, x0, rounds, seed=3)
    for y, y_next in zip(vec, vec[1:]):
        np.testing.assert_allclose(y_next, project(y - eta_g * eta * p.grad(y)), rtol=0, atol=TOL)
    assert np.abs(vec[-1] - vec[0]).max() > 1e-2
    sampler = alg.sampler(np.random.default_rng(3))
    alg.reset(x0)
    for t in range(2):
        alg.round(None, t, sampler)
    assert np.linalg.norm(alg.c) > 1e-3 * np.linalg.norm(p.grad(x0))   # corrections present, yet cancel


@pytest.mark.parametrize("eta_g", [1.0, 0.5])
def test_rfedproj_one_step_full_batch_is_projected_gradient_step_sphere(hetero_Z, eta_g):
    p = CPESph(hetero_Z)
    _projected_gd_check(p, p.initial_point(np.random.default_rng(6)), 3.0, eta_g, 12, sphere_project)


@pytest.mark.parametrize("eta_g", [1.0, 0.5])
def test_rfedproj_one_step_full_batch_is_projected_gradient_step_stiefel(brockett, eta_g):
    p = brockett
    _projected_gd_check(p, p.initial_point(np.random.default_rng(6)), 0.05, eta_g, 12,
                        StiefelOps(8, 3).project)


# ---- counters ---------------------------------------------------------------------
def _counts(alg, x0, rounds, seed):
    """(grad_evals, floats) after each round, read as the run goes (``iterate`` updates one
    Counters object in place, as the base class does)."""
    return [(c.grad_evals, c.floats) for _, _, c in alg.iterate(x0, rounds, np.random.default_rng(seed))]


def test_rfedsvrg_counts_full_local_gradients_and_double_communication(hetero_Z):
    """s = 2 of S = 6 agents, K = 3, B = 4, N_j = 15, n = 8. Default (all_agents): all six
    compute and upload grad f_i(x_t) after receiving x_t, the two participants receive grad
    f(x_t) and upload x^j_K; participants: only the two do all of it."""
    p = CPESph(hetero_Z)
    x0 = p.initial_point(np.random.default_rng(0))
    rows = _counts(RFedSVRG(p, Fixed(0.5), 3, 4, 2), x0, 5, 0)
    assert [g for g, _ in rows] == [(t + 1) * (2 * 3 * 4 + 6 * 15) for t in range(5)]
    assert [f for _, f in rows] == [(t + 1) * (2 * 6 * 8 + 2 * 2 * 8) for t in range(5)]
    rows = _counts(RFedSVRG(p, Fixed(0.5), 3, 4, 2, correction="participants"), x0, 5, 0)
    assert [g for g, _ in rows] == [(t + 1) * (2 * 3 * 4 + 2 * 15) for t in range(5)]
    assert [f for _, f in rows] == [(t + 1) * 4 * 2 * 8 for t in range(5)]
    full = [_counts(RFedSVRG(p, Fixed(0.5), 3, 4, None, correction=c), x0, 5, 0)
            for c in ("all_agents", "participants")]
    assert full[0] == full[1] == [((t + 1) * (6 * 3 * 4 + 6 * 15), (t + 1) * 4 * 6 * 8) for t in range(5)]


@pytest.mark.parametrize("participation", [None, 3])
def test_rfedproj_counts(hetero_Z, participation):
    """s K B sample gradients; 2 s n floats, plus n for every agent returning from the previous
    round when not all agents take part (it needs that round's average gradient)."""
    p = CPESph(hetero_Z)
    x0 = p.initial_point(np.random.default_rng(0))
    rows = _counts(RFedProj(p, Fixed(0.5), 3, 4, participation), x0, 6, 8)
    s = participation or 6
    assert [g for g, _ in rows] == [(t + 1) * s * 3 * 4 for t in range(6)]
    sampler = _sampler(p, 4, participation, 8)
    rfedproj_loop(p, x0, Fixed(0.5), 3, 6, sampler)
    extra = [0] + [len(a & b) if participation else 0 for a, b in zip(sampler.rounds, sampler.rounds[1:])]
    assert [f for _, f in rows] == list(np.cumsum([2 * s * 8 + 8 * e for e in extra]))
    assert participation is None or sum(extra) > 0


# ---- client drift -------------------------------------------------------------------
def test_rfedsvrg_removes_client_drift(hetero_Z):
    """Heterogeneous CPESph, full batches, K = 5 local steps, fixed alpha = 2, 250 rounds.
    Measured (||grad F(x0)|| = 2.0e-2): RFedSVRG reaches ||grad F|| = 8.3e-15 and distance
    7.6e-13 rad to x* (linear rate, ~ x0.3 per 15 rounds; 5.9e-10 at round 150); RFedAvg stalls
    from round ~30 on at ||grad F|| = 3.94e-3, distance 0.166 rad: the fixed point of its local
    runs is not stationary for F. Ratio of the final gradient norms ~ 5e11."""
    p = CPESph(hetero_Z)
    x0 = p.initial_point(np.random.default_rng(1))
    x_star = p.closed_form_optimum()
    svrg = _iterates(RFedSVRG(p, Fixed(2.0), 5, 15), x0, 250, seed=0)
    avg = _iterates(RFedAvg(p, Fixed(2.0), 5, 15), x0, 250, seed=0)
    g_svrg, g_avg = p.grad_norm(svrg[-1]), p.grad_norm(avg[-1])
    assert g_svrg < 1e-10 and p.distance_to_optimum(svrg[-1], x_star) < 1e-8
    assert g_avg > 1e-3 and p.distance_to_optimum(avg[-1], x_star) > 0.1
    assert abs(p.grad_norm(avg[-100]) - g_avg) < 1e-6 * g_avg          # stalled, not slow
    assert g_avg > 1e6 * g_svrg


def test_rfedproj_converges_to_a_stationary_point_on_the_sphere(hetero_Z):
    """Same instance and K = 5, eta = 2, eta_g = 1, 250 rounds. Measured ||grad F(P(x_bar))|| =
    1.8e-15 from 2.0e-2 (a fixed point has avg = grad F(P(x_bar)) = 0), distance 1.7e-13 rad to
    the minimiser x*; the server point itself settles on the manifold (x_bar = P(x_bar) at the
    fixed point) while c_j -> -grad f_j(x*) != 0."""
    p = CPESph(hetero_Z)
    x0 = p.initial_point(np.random.default_rng(1))
    alg = RFedProj(p, Fixed(2.0), 5, 15)
    sampler = alg.sampler(np.random.default_rng(0))
    alg.reset(x0)
    for t in range(250):
        alg.round(None, t, sampler)
    x_bar, c = alg.x_bar, alg.c
    y = sphere_project(x_bar)
    assert p.grad_norm(y) < 1e-10
    assert p.distance_to_optimum(y, p.closed_form_optimum()) < 1e-8
    assert np.linalg.norm(x_bar - y) < 1e-10
    assert np.linalg.norm(c) > 1e-3                    # the corrections stay non-zero at the fixed point
    # without the correction (c_j = 0) the same local runs drift: RFedAvg-like stall
    avg = _iterates(RFedAvg(p, Fixed(2.0), 5, 15), x0, 250, seed=0)
    assert p.grad_norm(avg[-1]) > 1e6 * p.grad_norm(y)


def test_rfedproj_converges_to_a_stationary_point_on_stiefel(brockett):
    """Brockett cost on St(3, 8), K = 5, eta = 0.05, full batches, 400 rounds. Measured:
    ||grad F|| from 2.95 to 3.1e-15, F - F* = 4.4e-16, distance 7e-15 to X* (the global minimiser);
    eta = 0.06 already oscillates (non-convergent, ||grad F|| ~ 2e-4), so the step is near its limit."""
    p = brockett
    x0 = p.initial_point(np.random.default_rng(1))
    xs = _iterates(RFedProj(p, Fixed(0.05), 5, 10), x0, 400, seed=0)
    assert p.grad_norm(xs[0]) > 1.0
    assert p.grad_norm(xs[-1]) < 1e-10
    assert p.cost(xs[-1]) - p.optimal_value() < 1e-10

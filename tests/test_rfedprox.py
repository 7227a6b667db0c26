"""RFedProx (Riemannian FedProx, Li & Ma's baseline): mu = 0 and K = 1 are RFedAvg; many
local steps reach the prox point, in closed form on a flat quadratic and through its
first-order condition grad f_j(y) = mu Log_y(x_t) on the sphere. (Vectorised == the per-agent
reference loop on the sphere and on Stiefel: tests/test_strategy_contract.py.)"""

import numpy as np
import pytest

from rfl.algorithms import Fixed, RFedAvg, RFedProx
from rfl.data.cpesph import generate as cpesph_data
from rfl.data.mbcfsti import generate as mbcfsti_data
from rfl.problems.cpesph import CPESph
from rfl.problems.mbcfsti import MBCFSti
from rfl.problems.quadratic import HeterogeneousQuadratic


def _iterates(alg, x0, rounds, seed):
    return np.array([x0] + [x for _, x, _ in alg.iterate(x0, rounds, np.random.default_rng(seed))])


def _sphere():
    return CPESph(cpesph_data(np.random.default_rng(5), d=7, nu=0.2, S=6, N=15, heterogeneous=True)["Z"],
                  retraction="normalize", transport="parallel")


def _stiefel():
    return MBCFSti.from_arrays(mbcfsti_data(np.random.default_rng(3), d=8, p=3, S=5, N=10),
                               retraction="polar", transport="projection")


@pytest.mark.parametrize("make, alpha", [(_sphere, 1.0), (_stiefel, 0.03)])
@pytest.mark.parametrize("participation", [None, 2])
def test_mu_zero_is_rfedavg_and_one_local_step_is_rfedavg_for_any_mu(make, alpha, participation):
    """mu = 0 removes the proximal term: RFedAvg bit for bit on the same draws. With K = 1 the
    only local step starts at x_t, where Log_{x_t}(x_t) = 0: RFedAvg for any mu."""
    p = make()
    x0 = p.initial_point(np.random.default_rng(2))
    avg = _iterates(RFedAvg(p, Fixed(alpha), 4, 5, participation), x0, 6, seed=4)
    np.testing.assert_array_equal(_iterates(RFedProx(p, Fixed(alpha), 4, 5, participation, mu=0.0), x0, 6, 4), avg)
    prox = _iterates(RFedProx(p, Fixed(alpha), 4, 5, participation, mu=3.0), x0, 6, seed=4)
    assert np.abs(prox - avg).max() > 1e-6                 # K > 1: the term acts
    one = _iterates(RFedAvg(p, Fixed(alpha), 1, 5, participation), x0, 6, seed=4)
    np.testing.assert_allclose(_iterates(RFedProx(p, Fixed(alpha), 1, 5, participation, mu=3.0), x0, 6, 4),
                               one, rtol=0, atol=1e-12)


def test_many_local_steps_on_a_flat_quadratic_reach_the_prox_points():
    """f_j(y) = 1/2 y^T A_j y + b_j^T y: the local iteration contracts to the prox point
    argmin f_j(y) + mu/2 |y - x|^2 = (A_j + mu I)^{-1} (mu x - b_j), and the server averages
    them (equal local sizes: p_j = 1/N)."""
    arrays = HeterogeneousQuadratic.generate(np.random.default_rng(7), "heterogeneous", 4, 3, 5)
    p = HeterogeneousQuadratic.from_arrays(arrays)
    x = np.array([1.0, -2.0, 0.5])
    mu = 1.5
    alg = RFedProx(p, Fixed(0.2), 300, 5, mu=mu)          # full local batches: exact gradients
    _, x1, _ = next(alg.iterate(x, 1, np.random.default_rng(0)))
    prox = [np.linalg.solve(A + mu * np.eye(3), mu * x - b) for A, b in zip(arrays["A_mean"], arrays["b_mean"])]
    np.testing.assert_allclose(x1, np.mean(prox, axis=0), rtol=0, atol=1e-12)


def test_many_local_steps_on_the_sphere_reach_a_point_where_grad_f_j_is_mu_log_to_x_t():
    """One agent per round with its full local batch: after many small steps its iterate y is
    stationary for f_j(y) + mu/2 d(y, x_t)^2, grad f_j(y) - mu Log_y(x_t) = 0 (a sign error in
    the proximal term makes it stationary for the other sign, leaving 2 mu |Log_y(x_t)|)."""
    p = _sphere()
    x0 = p.initial_point(np.random.default_rng(2))
    mu = 2.0
    alg = RFedProx(p, Fixed(0.05), 3000, 15, participation=1, mu=mu)
    _, y, counters = next(alg.iterate(x0, 1, np.random.default_rng(1)))
    j = counters.participants
    m = p.manifold
    grad = m.euclidean_to_riemannian_gradient(y[None], p.local_egrad(y[None], j))[0]
    pull = m.log(y[None], x0[None])[0]
    assert np.linalg.norm(pull) > 1e-2                     # y is away from x_t: the test is not void
    np.testing.assert_allclose(grad - mu * pull, 0.0, rtol=0, atol=1e-9)

"""Weighted Fréchet means (rfl/manifolds/frechet.py) against closed forms: the weighted
average on R^n, the weighted geometric mean of commuting SPD matrices, the geodesic point
at fraction w of the way on H^2 and Gr(n, p), and Karcher's step as an exact gradient step."""

import numpy as np
import pytest

from rfl.manifolds import SPD, Euclidean, Grassmann, Lorentz
from rfl.manifolds.frechet import frechet_step, karcher_mean, tangent_mean


def test_euclidean_mean_is_weighted_average():
    rng = np.random.default_rng(0)
    M = Euclidean(4)
    pts = rng.standard_normal((3, 5, 4))
    w = rng.dirichlet(np.ones(5), size=3)
    got = karcher_mean(M, pts, w)
    np.testing.assert_allclose(got, np.einsum("sm,smi->si", w, pts), atol=1e-12)


def test_spd_commuting_mean_is_weighted_geometric_mean():
    """For diagonal (commuting) SPD matrices the affine-invariant weighted mean is
    exp(sum_j w_j log D_j), entrywise on the diagonals."""
    rng = np.random.default_rng(1)
    M = SPD(3)
    diag = np.exp(rng.standard_normal((2, 4, 3)))
    pts = np.zeros((2, 4, 3, 3))
    for s in range(2):
        for j in range(4):
            pts[s, j] = np.diag(diag[s, j])
    w = rng.dirichlet(np.ones(4), size=2)
    got = karcher_mean(M, pts, w)
    want = np.exp(np.einsum("sm,smi->si", w, np.log(diag)))
    for s in range(2):
        np.testing.assert_allclose(got[s], np.diag(want[s]), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("M", [Lorentz(2), Grassmann(6, 2), SPD(3)], ids=lambda m: m.name)
def test_two_point_mean_lies_on_geodesic(M):
    """The mean of x (weight 1 - w) and y (weight w) is Exp_x(w Log_x y): at distance
    w d(x, y) from x and (1 - w) d(x, y) from y."""
    rng = np.random.default_rng(2)
    x, y = M.random_point(rng, 1), M.random_point(rng, 1)
    w = 0.3
    got = karcher_mean(M, np.stack([x, y], axis=1), [1 - w, w])
    d = M.dist(x, y)[0]
    assert M.dist(got, x)[0] == pytest.approx(w * d, rel=1e-8)
    assert M.dist(got, y)[0] == pytest.approx((1 - w) * d, rel=1e-8)


@pytest.mark.parametrize("M", [Lorentz(2), SPD(3), Grassmann(6, 2)], ids=lambda m: m.name)
def test_tangent_mean_is_minus_gradient_of_half_weighted_squared_distance(M):
    """<sum_j w_j Log_x y_j, v>_x = -d/dt (1/2) sum_j w_j d^2(Exp_x(t v), y_j) at t = 0,
    by central differences."""
    rng = np.random.default_rng(3)
    x = M.random_point(rng, 1)
    pts = np.stack([M.exp(x, 0.5 * M.random_tangent(rng, x)) for _ in range(4)], axis=1)
    w = np.array([0.1, 0.2, 0.3, 0.4])
    v = M.random_tangent(rng, x)
    h = 1e-5

    def f(p):
        return 0.5 * sum(w[j] * M.dist(p, pts[:, j])[0] ** 2 for j in range(4))

    fd = (f(M.exp(x, h * v)) - f(M.exp(x, -h * v))) / (2 * h)
    assert M.inner(x, tangent_mean(M, x, pts, w), v)[0] == pytest.approx(-fd, rel=1e-6, abs=1e-9)


def test_frechet_step_moves_fraction_gamma_towards_a_single_neighbour():
    """With one neighbour y of weight 1, Exp_x(gamma Log_x y) is at distance gamma d(x, y)."""
    rng = np.random.default_rng(4)
    M = Lorentz(2)
    x, y = M.random_point(rng, 1), M.random_point(rng, 1)
    got = frechet_step(M, x, y[:, None], [1.0], gamma=0.25)
    assert M.dist(x, got)[0] == pytest.approx(0.25 * M.dist(x, y)[0], rel=1e-10)


def test_bad_weights_refused():
    M = Euclidean(2)
    with pytest.raises(ValueError, match="sum to 1"):
        karcher_mean(M, np.zeros((1, 2, 2)), [0.5, 0.6])


def test_karcher_mean_converges_on_spread_h2_points_where_the_unit_step_oscillates():
    """Points of H^2 about 3 apart: the mean is stationary (its gradient ~ 0) and no farther
    in mean squared distance than any of the points themselves."""
    M = Lorentz(2)
    rng = np.random.default_rng(9)
    pts = M.exp(M.origin(12), 3.0 * M.random_tangent(rng, M.origin(12)))[None]
    x = karcher_mean(M, pts)
    w = np.full(12, 1 / 12)
    assert M.norm(x, tangent_mean(M, x, pts, w))[0] < 1e-10

    def f(p):
        return np.mean(M.dist(np.repeat(p, 12, 0), pts[0]) ** 2)

    assert all(f(x) <= f(pts[0, j:j + 1]) for j in range(12))


def test_grassmann_representative_projection_is_the_closest_orthonormal_matrix():
    """P(X) is orthonormal, fixes orthonormal matrices, and is no farther from X in the
    Frobenius norm than 200 random orthonormal matrices near it."""
    rng = np.random.default_rng(13)
    M = Grassmann(7, 3)
    X = M.random_point(rng, 1) + 0.3 * rng.standard_normal((1, 7, 3))
    P = M.representative_projection(X)
    assert M.distance_from_manifold(P)[0] < 1e-12
    np.testing.assert_allclose(M.representative_projection(P), P, atol=1e-12)
    best = np.linalg.norm(X - P)
    others = M.random_point(rng, 200) * 0.0 + np.array([M.retraction(P, 0.3 * M.random_tangent(rng, P))[0]
                                                         for _ in range(200)])
    assert all(best <= np.linalg.norm(X[0] - Y) + 1e-12 for Y in others)

"""Hyperbolic space H^d in the Lorentz (hyperboloid) model.

H^d = {x in R^{d+1} : <x, x>_L = -1, x_0 > 0} with the Minkowski inner product
<x, y>_L = -x_0 y_0 + sum_{i>=1} x_i y_i; T_x H^d = {u : <x, u>_L = 0}, on which <., .>_L is
positive definite (the Riemannian metric). Formulas: Nickel & Kiela, "Learning continuous
hierarchies in the Lorentz model of hyperbolic geometry" (ICML 2018), Section 3, and Boumal,
"An introduction to optimization on smooth manifolds" (2023), Section 7.6.

Points and tangent vectors: ``(S, d + 1)``.

Numerics: a point is stored with x_0 recomputed as sqrt(1 + ||x_{1:}||^2) after every map that
produces a point, so the constraint holds to rounding in x_0 (relative), not to rounding
accumulated over steps; ``distance_from_manifold`` measures exactly that gap,
|x_0 - sqrt(1 + ||x_{1:}||^2)|, which stays at O(eps x_0) (the Minkowski form |<x, x>_L + 1|
would be O(eps x_0^2), dominated by cancellation far from the origin). arccosh's argument
-<x, y>_L is clipped at 1.
"""

from __future__ import annotations

import numpy as np

from .base import Manifold


def _col(a: np.ndarray) -> np.ndarray:
    return a[:, None]


def minkowski(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """<u, v>_L = -u_0 v_0 + sum_{i>=1} u_i v_i, row-wise: ``(S, n) x (S, n) -> (S,)``."""
    return np.einsum("si,si->s", u[:, 1:], v[:, 1:]) - u[:, 0] * v[:, 0]


def _renormalise(x: np.ndarray) -> np.ndarray:
    """The point of H^d with the spatial part x_{1:}: x_0 = sqrt(1 + ||x_{1:}||^2)."""
    out = np.array(x, dtype=float, copy=True)
    out[:, 0] = np.sqrt(1.0 + np.einsum("si,si->s", out[:, 1:], out[:, 1:]))
    return out


def _sinhc(t: np.ndarray) -> np.ndarray:
    """sinh(t) / t, with its Taylor series 1 + t^2/6 + t^4/120 near 0."""
    small = np.abs(t) < 1e-4
    safe = np.where(small, 1.0, t)
    return np.where(small, 1.0 + t * t / 6.0 + t ** 4 / 120.0, np.sinh(safe) / safe)


def poincare_to_lorentz(p: np.ndarray) -> np.ndarray:
    """Poincaré ball B^d = {p : ||p|| < 1} -> H^d: x = (1 + ||p||^2, 2 p) / (1 - ||p||^2).

    ``p: (S, d) -> (S, d + 1)``."""
    p = np.asarray(p, dtype=float)
    sq = np.einsum("si,si->s", p, p)
    if np.any(sq >= 1.0):
        raise ValueError(f"Poincaré points must lie in the open unit ball; largest norm "
                         f"{np.sqrt(sq.max())}")
    x = np.concatenate([_col(1.0 + sq), 2.0 * p], axis=1) / _col(1.0 - sq)
    return _renormalise(x)


def lorentz_to_poincare(x: np.ndarray) -> np.ndarray:
    """H^d -> Poincaré ball: p = x_{1:} / (1 + x_0). ``(S, d + 1) -> (S, d)``."""
    x = np.asarray(x, dtype=float)
    return x[:, 1:] / _col(1.0 + x[:, 0])


class Lorentz(Manifold):
    """H^d in R^{d+1} (the hyperboloid sheet x_0 > 0) with the metric <., .>_L on T_x H^d."""

    name = "lorentz"
    RETRACTIONS = ("exp",)
    TRANSPORTS = ("parallel",)
    ISOMETRIC_TRANSPORTS = ("parallel",)

    def __init__(self, d: int, retraction: str | None = None, transport: str | None = None):
        if d < 1:
            raise ValueError(f"hyperbolic space needs d >= 1, got d={d}")
        super().__init__((d + 1,), d, retraction, transport)
        self.d = d

    @classmethod
    def examples(cls):
        """H^2 (hyperbolic structured prediction on WordNet), H^1 and H^5."""
        return [cls(2), cls(1), cls(5)]

    # ---- metric and tangent spaces -------------------------------------------------------
    def inner(self, x, u, v):
        """<u, v>_x = <u, v>_L (positive definite on T_x H^d): ``(S,)``."""
        return minkowski(u, v)

    def projection(self, x, u):
        """P_x(u) = u + <x, u>_L x, the <., .>_L-orthogonal projection onto T_x H^d
        (<x, P_x u>_L = <x, u>_L + <x, u>_L <x, x>_L = 0)."""
        return u + _col(minkowski(x, u)) * x

    def euclidean_to_riemannian_gradient(self, x, egrad):
        """grad f(x) = P_x(J egrad), J = diag(-1, 1, ..., 1): J egrad is the gradient for the
        Minkowski form (<J g, u>_L = g^T u), then projected onto T_x H^d."""
        g = np.array(egrad, dtype=float, copy=True)
        g[:, 0] = -g[:, 0]
        return self.projection(x, g)

    # ---- Exp, Log, distance ----------------------------------------------------------------
    def exp(self, x, u):
        """Exp_x(u) = cosh(||u||_L) x + sinh(||u||_L) u / ||u||_L, re-normalised onto H^d."""
        t = np.sqrt(np.maximum(minkowski(u, u), 0.0))
        return _renormalise(_col(np.cosh(t)) * x + _col(_sinhc(t)) * u)

    def log(self, x, y):
        """Exp_x^{-1}(y) = d(x, y) w / ||w||_L with w = y + <x, y>_L x = P_x(y)."""
        w = y + _col(minkowski(x, y)) * x
        nw = np.sqrt(np.maximum(minkowski(w, w), 0.0))
        dist = np.arcsinh(nw)          # ||P_x y||_L = sinh d(x, y); accurate also for y ~ x
        scale = np.divide(dist, nw, out=np.ones_like(nw), where=nw > 0)
        return _col(scale) * w

    def dist(self, x, y):
        """d(x, y) = arccosh(-<x, y>_L), argument clipped at 1; near x = y (where arccosh
        loses half the digits) arcsinh of ||P_x y||_L = sinh d instead."""
        c = np.maximum(-minkowski(x, y), 1.0)
        out = np.arccosh(c)
        near = np.flatnonzero(c < 1.5)
        if near.size:
            xn, yn = x[near], y[near]
            w = yn + _col(minkowski(xn, yn)) * xn
            out[near] = np.arcsinh(np.sqrt(np.maximum(minkowski(w, w), 0.0)))
        return out

    # ---- transport ----------------------------------------------------------------------------
    def transport_parallel(self, x, y, u):
        """Parallel transport along the geodesic from x to y:

        Gamma(u) = u + <y, u>_L / (1 - <x, y>_L) (x + y)

        (the hyperbolic analogue of the sphere's u - <y, u>/(1 + <x, y>) (x + y); it maps x's
        tangent space onto y's isometrically and is the identity at y = x)."""
        coef = minkowski(y, u) / (1.0 - minkowski(x, y))
        return u + _col(coef) * (x + y)

    # ---- points --------------------------------------------------------------------------------
    def origin(self, n: int = 1) -> np.ndarray:
        """The base point (1, 0, ..., 0), ``(n, d + 1)``."""
        o = np.zeros((n, self.d + 1))
        o[:, 0] = 1.0
        return o

    def random_point(self, rng, n=1):
        """Exp at the origin of a tangent vector with uniform direction and norm uniform in
        [0, 1] (points within distance 1 of the origin, where x_0 <= cosh 1)."""
        v = rng.standard_normal((n, self.d))
        v /= _col(np.linalg.norm(v, axis=1))
        v *= _col(rng.uniform(0.0, 1.0, n))
        u = np.concatenate([np.zeros((n, 1)), v], axis=1)
        return self.exp(self.origin(n), u)

    def distance_from_manifold(self, x):
        """|x_0 - sqrt(1 + ||x_{1:}||^2)|: zero exactly on the upper sheet of the hyperboloid."""
        x = np.asarray(x, dtype=float)
        return np.abs(x[:, 0] - np.sqrt(1.0 + np.einsum("si,si->s", x[:, 1:], x[:, 1:])))

    def to_poincare(self, x: np.ndarray) -> np.ndarray:
        return lorentz_to_poincare(x)

    def from_poincare(self, p: np.ndarray) -> np.ndarray:
        return poincare_to_lorentz(p)

"""Weighted Fréchet (Karcher) means on a manifold with a closed-form Log, batched over agents.

The weighted Fréchet mean of points y_1..y_m with weights w_j >= 0, sum_j w_j = 1, minimises
(1/2) sum_j w_j d^2(x, y_j); its Riemannian gradient is -sum_j w_j Log_x(y_j) (Karcher 1977),
so the fixed-point iteration

    x <- Exp_x(sum_j w_j Log_x(y_j))                                          (Karcher's step)

is Riemannian gradient descent with unit step. On a Hadamard manifold (H^d, SPD with the
affine-invariant metric) the mean is unique and the iteration converges for points in a ball
(Afsari, Tron & Vidal 2013); on the Grassmannian within the injectivity radius.

``frechet_step`` is one such step with a step size gamma: the consensus step of iDPRGD
(Chen & Sun, arXiv 2410.05128, the notebook's ``exp(x_i, gamma * mean log(x_i, x_N(i)))``)
and of the diffusion combine step of Wang et al. (ICML 2025, one gradient step on
sum_l a_lk d^2(., w_l) from w_k). ``karcher_mean`` iterates to a tolerance: DPRGD's exact
consensus (the notebook's ``frechet_mean`` of the neighbours).

Shapes: ``x: (S, *point_shape)``, ``points: (S, m, *point_shape)`` (m neighbours of each of
the S agents), ``weights: (S, m)`` or ``(m,)``.
"""

from __future__ import annotations

import numpy as np

from .base import Manifold


def _weights(weights, S: int, m: int) -> np.ndarray:
    w = np.broadcast_to(np.asarray(weights, dtype=float), (S, m))
    if np.any(w < 0) or np.any(np.abs(w.sum(axis=1) - 1.0) > 1e-9):
        raise ValueError(f"Fréchet-mean weights must be nonnegative and sum to 1 per agent, got "
                         f"row sums {w.sum(axis=1)}")
    return w


def tangent_mean(manifold: Manifold, x: np.ndarray, points: np.ndarray, weights) -> np.ndarray:
    """sum_j w_j Log_x(y_j), minus the Riemannian gradient of (1/2) sum_j w_j d^2(x, y_j):
    ``(S, *point_shape)``."""
    S, m = points.shape[:2]
    w = _weights(weights, S, m)
    xr = np.repeat(x, m, axis=0)
    logs = manifold.log(xr, points.reshape((S * m,) + points.shape[2:]))
    logs = logs.reshape(points.shape)
    return np.einsum("sm,sm...->s...", w, logs)


def frechet_step(manifold: Manifold, x: np.ndarray, points: np.ndarray, weights,
                 gamma: float = 1.0) -> np.ndarray:
    """Exp_x(gamma sum_j w_j Log_x(y_j)): one Riemannian gradient step of step gamma on
    (1/2) sum_j w_j d^2(., y_j) from x. ``(S, *point_shape)``."""
    return manifold.exp(x, gamma * tangent_mean(manifold, x, points, weights))


#: -(lower bound of the sectional curvature) of the manifolds whose curvature is negative
#: somewhere: H^d has curvature -1, SPD with the affine-invariant metric curvatures in
#: [-1/2, 0] (the others here, R^n, the sphere, Stiefel and Grassmann, have none below 0)
NEGATIVE_CURVATURE = {"lorentz": 1.0, "spd": 0.5}


def _zeta(t: np.ndarray) -> np.ndarray:
    """t coth t (1 at t = 0): the largest Hessian eigenvalue of (1/2) d^2(., y) at distance t
    in curvature -1."""
    small = t < 1e-6
    safe = np.where(small, 1.0, t)
    return np.where(small, 1.0 + t * t / 3.0, safe / np.tanh(safe))


def karcher_mean(manifold: Manifold, points: np.ndarray, weights=None, x0: np.ndarray | None = None,
                 tol: float = 1e-12, max_iter: int = 1000) -> np.ndarray:
    """The weighted Fréchet mean of each agent's m points by Riemannian gradient descent on
    (1/2) sum_j w_j d^2(., y_j) from ``x0`` (default: each agent's first point), until the
    gradient norm ||sum_j w_j Log_x y_j||_x is below ``tol`` times (1 + the mean distance to
    the points) for every agent; RuntimeError(message, last iterate) after ``max_iter`` steps. ``(S, *point_shape)``.

    Step 1 / sum_j w_j zeta(sqrt(kappa) d(x, y_j)), zeta(t) = t coth t and -kappa the lowest
    sectional curvature (``NEGATIVE_CURVATURE``): the Hessian's eigenvalues lie in
    [1, sum_j w_j zeta(...)] on a Hadamard manifold, so the step never overshoots and the
    iteration contracts. Where kappa = 0 this is Karcher's unit step Exp_x(sum_j w_j Log_x y_j).
    (A unit step on spread points of H^2 oscillates: the Hessian's eigenvalues reach d coth d.)"""
    S, m = points.shape[:2]
    w = _weights(np.full(m, 1.0 / m) if weights is None else weights, S, m)
    x = points[:, 0].copy() if x0 is None else np.array(x0, dtype=float)
    kappa = NEGATIVE_CURVATURE.get(manifold.name, 0.0)
    flat = points.reshape((S * m,) + points.shape[2:])
    shape = (S,) + (1,) * (x.ndim - 1)
    for _ in range(max_iter):
        xr = np.repeat(x, m, axis=0)
        logs = manifold.log(xr, flat)
        d = manifold.norm(xr, logs).reshape(S, m)                 # d(x, y_j) = ||Log_x y_j||_x
        v = np.einsum("sm,sm...->s...", w, logs.reshape(points.shape))
        if np.all(manifold.norm(x, v) <= tol * (1.0 + np.mean(d, axis=1))):
            return x
        step = 1.0 / np.sum(w * _zeta(np.sqrt(kappa) * d), axis=1)
        x = manifold.exp(x, step.reshape(shape) * v)
    g = manifold.norm(x, tangent_mean(manifold, x, points, w))
    raise RuntimeError(f"Karcher mean on {manifold.name}: gradient norm {g.max():.2e} > {tol:g} "
                       f"(relative) after {max_iter} steps", x)

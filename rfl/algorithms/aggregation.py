"""Server aggregation of the participants' messages (the weighted sums of the strategies).

Every strategy aggregates through these functions, with p_j the sampler's weights
(N_j-proportional, renormalised over the participants; ``AgentSampler.weights``):

* ``weighted_mean``: sum_j p_j x^j, of points of a flat space or of tangent vectors
  at one point (FedAvg, SCAFFLSA, RFedProj's ambient average, RFedSVRG's grad f(x_t));
* ``tangent_mean``: Exp_{x_t}(sum_j p_j Exp_{x_t}^{-1}(x^j)) (RFedAvg, RFedSVRG; the
  manifold's ``tangent_log`` / ``tangent_exp`` pair);
* ``retract_weighted_stream``: R_{x_t}(sum_j p_j zeta^j) (RFedAGS, Algorithm 1 line 13).

* ``anchored_mean``: x_t + sum_j p_j (x^j - x_t), the average of points of a flat space
  (or of an ambient space) taken as displacements from the round's anchor x_t (FedAvg,
  SCAFFLSA, RFedProj's line 12).

Weights that do not sum to 1. The participation schemes ``bernoulli`` and
``bernoulli_estimated`` (``rfl.participation``) weight agent i by 1 / (N q_i), and these
weights sum to 1 only on average. Every aggregation above is then read as an estimate of the
full-participation aggregate *of the updates*, with x_t as the origin: the stream sum
R_{x_t}(sum_i w_i zeta^i) (the authors' ``retr(x, Delta, 1/N)``), the tangent mean
Exp_{x_t}(sum_i w_i Log_{x_t}(x^i)) (a direction in T_{x_t}M scaled by the weights, not a
renormalised mean: an absent agent contributes Log_{x_t}(x_t) = 0), and the anchored mean
x_t + sum_i w_i (x^i - x_t). With w_i = 1/(N p_i) and independent joins each is unbiased for
the full-participation direction (sum_i (1/N) zeta^i, resp. (1/N) sum_i Log(x^i), resp.
(1/N) sum_i (x^i - x_t)). A plain sum_i w_i x^i of *points* would instead scale the point by
sum_i w_i, which is why the strategies average points with ``anchored_mean``; when the weights
sum to 1 it equals ``weighted_mean`` (and is computed as such, so those runs are unchanged).
``weighted_mean`` of tangent vectors at one point (RFedSVRG's grad f(x_t)) needs no anchor:
the zero vector is its origin.
"""

from __future__ import annotations

import numpy as np


def weighted_mean(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """sum_j p_j x^j over the agents axis: w (s,), x (s, *shape) -> shape (one matrix-vector
    product, which on this code's BLAS gives the same bits as ``np.tensordot(w, x, 1)``)."""
    return (w @ x.reshape(x.shape[0], -1)).reshape(x.shape[1:])


def tangent_mean(manifold, x_t: np.ndarray, points: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Exp_{x_t}(sum_j p_j Exp_{x_t}^{-1}(x^j)) (paper (3.3); Li & Ma's consensus step), with
    the manifold's tangent_log / tangent_exp: x_t ``point_shape``, points (s, *point_shape),
    w (s,) -> ``point_shape``."""
    base = np.repeat(x_t[None], points.shape[0], axis=0)
    direction = weighted_mean(w, manifold.tangent_log(base, points))
    return manifold.tangent_exp(x_t[None], direction[None])[0]


def retract_weighted_stream(manifold, x_t: np.ndarray, zeta: np.ndarray, w: np.ndarray) -> np.ndarray:
    """R_{x_t}(sum_j p_j zeta^j) (RFedAGS, Algorithm 1 line 13): x_t ``point_shape``, zeta
    (s, *point_shape) tangent vectors at x_t, w (s,) -> ``point_shape``."""
    return manifold.retraction(x_t[None], weighted_mean(w, zeta)[None])[0]


def anchored_mean(w: np.ndarray, x: np.ndarray, anchor: np.ndarray) -> np.ndarray:
    """x_t + sum_j p_j (x^j - x_t) over the agents axis: w (s,), x (s, *shape), anchor (x_t)
    ``shape`` -> shape. Weights summing to 1 (to 1e-12) give ``weighted_mean(w, x)``, the same
    point up to rounding (bit for bit the plain average of the normalised schemes)."""
    w = np.asarray(w, dtype=float)
    if abs(w.sum() - 1.0) <= 1e-12:
        return weighted_mean(w, x)
    return anchor + weighted_mean(w, x - anchor[None])

"""Server aggregation of the participants' messages (the weighted sums of the strategies).

Every strategy aggregates through these functions, with p_j the sampler's weights
(N_j-proportional, renormalised over the participants; ``AgentSampler.weights``):

* ``weighted_mean``: sum_j p_j x^j, of points of a flat space or of tangent vectors
  at one point (FedAvg, SCAFFLSA, RFedProj's ambient average, RFedSVRG's grad f(x_t));
* ``tangent_mean``: Exp_{x_t}(sum_j p_j Exp_{x_t}^{-1}(x^j)) (RFedAvg, RFedSVRG; the
  manifold's ``tangent_log`` / ``tangent_exp`` pair);
* ``retract_weighted_stream``: R_{x_t}(sum_j p_j zeta^j) (RFedAGS, Algorithm 1 line 13).

The weights are used as given (they sum to 1 when they come from the sampler).
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

"""The consensus primitives of the decentralised methods, on a stack of per-agent points.

Points ``X: (S, *point_shape)``, one per agent; ``Wt: (S, S)`` a mixing matrix (W^t for t
consensus steps). Two geometries, each a manifold capability (``Manifold.offers``):

- ``ambient_consensus`` (embedded manifolds; Chen et al. 2021, ICML, eq. (2.2) and
  Algorithm 1 line 3): the direction P_{T_{x_i}M}(sum_j Wt_ij x_j - x_i), the Riemannian
  gradient of -phi^t at x_i with phi^t(x) = 1/4 sum_ij Wt_ij ||x_i - x_j||^2 for symmetric Wt;
  the network mean is the projected ambient mean P_M(1/S sum_i x_i) (their IAM, ``Stiefel``:
  the polar factor), the consensus error sqrt(1/S sum_i ||x_i - xbar||_F^2) (their code's
  ``compute_at_mean``);
- ``frechet_consensus`` (a closed-form Log): the direction sum_j Wt_ij Log_{x_i}(x_j), whose
  Exp step is one step of the weighted Frechet mean of the neighbours; the network mean is
  the Karcher mean (``karcher_mean``), the consensus error sqrt(1/S sum_i dist(x_i, xbar)^2).
"""

from __future__ import annotations

import numpy as np

#: network means, by the consensus geometry they go with
MEANS = {"ambient_consensus": "projected", "frechet_consensus": "karcher"}
#: Karcher mean: stop when the mean tangent step's norm is below this, or after KARCHER_STEPS
KARCHER_TOL = 1e-12
KARCHER_STEPS = 100


def mix(Wt: np.ndarray, X: np.ndarray) -> np.ndarray:
    """sum_j Wt_ij X_j for every i: ``(S, *shape)`` (ambient mixing)."""
    return np.tensordot(Wt, X, axes=(1, 0))


def ambient_direction(manifold, X: np.ndarray, Wt: np.ndarray) -> np.ndarray:
    """P_{T_{x_i}M}(sum_j Wt_ij x_j - x_i): ``(S, *shape)``."""
    return manifold.projection(X, mix(Wt, X) - X)


def frechet_direction(manifold, X: np.ndarray, Wt: np.ndarray) -> np.ndarray:
    """sum_j Wt_ij Log_{x_i}(x_j) (the j = i term is 0): ``(S, *shape)``; one batched Log over
    the nonzero off-diagonal entries of Wt."""
    S = X.shape[0]
    i, j = np.nonzero(Wt * (1 - np.eye(S)))
    out = np.zeros_like(X)
    if i.size:
        logs = manifold.log(X[i], X[j]) * Wt[i, j].reshape((-1,) + (1,) * (X.ndim - 1))
        np.add.at(out, i, logs)
    return out


def consensus_direction(manifold, X, Wt, geometry: str) -> np.ndarray:
    """The consensus direction of ``geometry`` ("ambient_consensus" or "frechet_consensus")."""
    if geometry == "ambient_consensus":
        return ambient_direction(manifold, X, Wt)
    if geometry == "frechet_consensus":
        return frechet_direction(manifold, X, Wt)
    raise ValueError(f"unknown consensus geometry {geometry!r}; allowed: {', '.join(MEANS)}")


def projected_mean(manifold, X: np.ndarray) -> np.ndarray:
    """P_M(1/S sum_i x_i): ``point_shape`` (the mean itself on a flat manifold; on Gr(r, m) the
    polar factor of the mean of the representatives, ``representative_projection``)."""
    mean = X.mean(axis=0)
    if manifold.FLAT:
        return mean
    project = getattr(manifold, "representative_projection", None) or manifold.nearest_point
    return project(mean[None])[0]


def karcher_mean(manifold, X: np.ndarray, tol: float = KARCHER_TOL, steps: int = KARCHER_STEPS,
                 start: np.ndarray | None = None) -> np.ndarray:
    """The Karcher mean argmin_y sum_i dist(y, x_i)^2 by Riemannian gradient descent from x_1
    with the curvature-bounded step of ``rfl.manifolds.frechet.karcher_mean`` (Karcher's unit
    step y <- Exp_y(1/S sum_i Log_y(x_i)) where the curvature is >= 0; on H^d and SPD the unit
    step overshoots spread points and oscillates), from ``start`` (default x_1; a run passes
    its previous network mean, a few steps away): ``point_shape``. After ``steps`` steps the
    last iterate is returned."""
    from rfl.manifolds.frechet import karcher_mean as frechet_karcher_mean

    try:
        x0 = X[:1] if start is None else np.asarray(start)[None]
        return frechet_karcher_mean(manifold, X[None], x0=x0, tol=tol, max_iter=steps)[0]
    except RuntimeError as unfinished:
        return unfinished.args[1][0]


def network_mean(manifold, X: np.ndarray, geometry: str, start: np.ndarray | None = None) -> np.ndarray:
    """The network mean of ``geometry``'s kind (``MEANS``): ``point_shape`` (``start``: where
    the Karcher iteration starts, default x_1)."""
    if MEANS[geometry] == "projected":
        return projected_mean(manifold, X)
    return karcher_mean(manifold, X, start=start)


def consensus_error(manifold, X: np.ndarray, xbar: np.ndarray, geometry: str) -> float:
    """sqrt(1/S sum_i d(x_i, xbar)^2), d the ambient (Frobenius) distance for the projected
    mean and the Riemannian distance for the Karcher mean."""
    if MEANS[geometry] == "projected":
        return float(np.sqrt(np.mean(np.sum((X - xbar[None]) ** 2, axis=tuple(range(1, X.ndim))))))
    d = manifold.dist(np.repeat(xbar[None], X.shape[0], axis=0), X)
    return float(np.sqrt(np.mean(d ** 2)))

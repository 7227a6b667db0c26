"""Checks shared by the manifold tests (in the spirit of geomstats' test cases)."""

from __future__ import annotations

import numpy as np

BATCHED_MAPS = {                      # name -> (method, which of x, y, u, v, g it takes)
    "inner": ("inner", "xuv"), "norm": ("norm", "xu"), "projection": ("projection", "xg"),
    "euclidean_to_riemannian_gradient": ("euclidean_to_riemannian_gradient", "xg"), "retraction": ("retraction", "xu"), "exp": ("exp", "xu"),
    "log": ("log", "xy"), "dist": ("dist", "xy"), "transport": ("transport", "xyu"),
    "transport_parallelization": ("transport_parallelization", "xyu"),
    "distance_from_manifold": ("distance_from_manifold", "x"),
}


def assert_batched_equals_per_agent(M, names, tol, **arrays):
    """Each map in ``names`` on the whole agents axis equals the per-agent loop over slices
    j:j+1. ``arrays``: x, y, u, v, g of shape (S, *shape), as the maps need."""
    S = arrays["x"].shape[0]
    for name in names:
        method, args = BATCHED_MAPS[name]
        f = getattr(M, method)
        batched = f(*(arrays[a] for a in args))
        looped = np.concatenate([f(*(arrays[a][j:j + 1] for a in args)) for j in range(S)])
        assert batched.shape == looped.shape, name
        np.testing.assert_allclose(batched, looped, rtol=tol, atol=tol, err_msg=name)

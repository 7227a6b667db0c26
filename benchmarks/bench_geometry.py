"""Geometry micro-benchmarks: each manifold map on a batch of S agents.

Manifolds at the sizes the problems use, ``SIZES`` (sphere S^25: CPESph; St(2, 25): MBCFSti;
St(3, 64): kPCA; Gr(5, 100): multitask; SPD(2): CFMSPD; SPD(10)); its keys are the benchmark's
parameter names, fixed so that results compare across commits. Maps: the retraction and
transport each manifold is built with by default, the projection transport where it exists,
Exp and Log. Points are random; tangent vectors are random with norm 0.1 (the other end of a
transport is the retraction along them), so the maps run in their usual regime.
"""

from __future__ import annotations

import numpy as np

from ._common import Skip
from rfl.manifolds import SPD, Grassmann, Sphere, Stiefel

SIZES = {
    "sphere(26)": lambda: Sphere(26),
    "stiefel(25,2)": lambda: Stiefel(25, 2),
    "stiefel(64,3)": lambda: Stiefel(64, 3),
    "grassmann(100,5)": lambda: Grassmann(100, 5),
    "spd(2)": lambda: SPD(2),
    "spd(10)": lambda: SPD(10),
}
MAPS = ["retraction", "transport", "transport_projection", "exp", "log"]


class Geometry:
    params = [list(SIZES), MAPS, [20, 1000]]
    param_names = ["manifold", "map", "S"]

    def setup(self, manifold, name, S):
        m = SIZES[manifold]()
        if name == "transport_projection" and "projection" not in m.TRANSPORTS:
            raise Skip(f"{m.name} has no projection transport")
        if name == "log" and not m.offers("log"):
            raise Skip(f"{m.name} has no closed-form Log")
        rng = np.random.default_rng(0)
        x = m.random_point(rng, S)
        u = 0.1 * m.random_tangent(rng, x)
        y = m.retraction(x, u)
        v = m.random_tangent(rng, x)
        self.call = {
            "retraction": lambda: m.retraction(x, u),
            "transport": lambda: m.transport(x, y, v),
            "transport_projection": lambda: m.transport_projection(x, y, v),
            "exp": lambda: m.exp(x, u),
            "log": lambda: m.log(x, y),
        }[name]

    def time_map(self, manifold, name, S):
        self.call()

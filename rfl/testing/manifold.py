"""The identities every manifold must satisfy, as a pytest test class (in the spirit of
geomstats' test cases).

``ManifoldContract``'s tests take a ``manifold`` argument. By default it runs over the
``examples()`` of every manifold in ``rfl.registry.MANIFOLDS``, so a manifold is tested by
declaring itself (tests/test_manifold_contract.py collects it once for the whole registry).
A plug-in checks its own manifold by subclassing the contract in its test suite (the
subclass's name starts with ``Test`` so that pytest collects it; the contract itself is not
collected)::

    from rfl.testing.manifold import ManifoldContract

    class TestMyManifold(ManifoldContract):
        manifolds = [MyManifold(3), MyManifold(3, retraction="cayley")]

A test that does not hold for a manifold (say, its transport is not the identity at
y = x) is overridden in the subclass, with the reason. What each test checks is in its
docstring; random inputs come from a seeded generator, ``n_agents`` agents at a time, and
``y = R_x(v)`` with ``||v||_x <= step`` (within the injectivity radius of the examples).

Tolerances: identities hold to ``TOL`` (rounding of O(10) dense factorisations of matrices
of size <= 100); central differences with step ``H`` are accurate to
``H^2 |c'''| / 6 + eps |c| / H``, bounded by ``FD_TOL`` for the unit-speed curves used here,
whose derivatives are O(1) up to the size of the points (scaled in).
"""

from __future__ import annotations

import numpy as np
import pytest

from rfl.registry import MANIFOLDS

EPS = np.finfo(float).eps
TOL = 1e-12
H = 1e-5
FD_TOL = 100 * (H ** 2 + EPS / H)            # ~1.2e-8
SEED = 20240604


# ---- batched == per agent (also used by the manifolds' own tests) -------------------------
#: which of x, y, u, v, g (points, points, tangent, tangent, ambient) each map takes
MAP_ARGS = {
    "inner": "xuv", "norm": "xu", "projection": "xg", "euclidean_to_riemannian_gradient": "xg",
    "retraction": "xu", "exp": "xu", "log": "xy", "dist": "xy", "transport": "xyu",
    "tangent_log": "xy", "tangent_exp": "xu", "nearest_point": "g",
    "distance_from_manifold": "x",
}


def map_args(name: str) -> str:
    """The arguments (letters of x, y, u, v, g) of a map, including retraction_<r>,
    transport_<t> and inverse_retraction_<r>."""
    for prefix, args in (("inverse_retraction_", "xy"), ("retraction_", "xu"),
                         ("transport_", "xyu")):
        if name.startswith(prefix):
            return args
    return MAP_ARGS[name]


def assert_batched_equals_per_agent(M, names, tol, **arrays):
    """Each map in ``names`` on the whole agents axis equals the per-agent loop over slices
    j:j+1. ``arrays``: x, y, u, v, g of shape (S, *shape), as the maps need."""
    S = arrays["x"].shape[0]
    for name in names:
        args = map_args(name)
        f = getattr(M, name)
        batched = f(*(arrays[a] for a in args))
        looped = np.concatenate([f(*(arrays[a][j:j + 1] for a in args)) for j in range(S)])
        assert batched.shape == looped.shape, name
        np.testing.assert_allclose(batched, looped, rtol=tol, atol=tol, err_msg=name)


def maps_of(M) -> list[str]:
    """Every map ``M`` offers, by name (for ``assert_batched_equals_per_agent``)."""
    names = ["inner", "norm", "projection", "euclidean_to_riemannian_gradient", "retraction",
             "exp", "transport", "distance_from_manifold"]
    names += [f"retraction_{r}" for r in M.RETRACTIONS] + [f"transport_{t}" for t in M.TRANSPORTS]
    if M.offers("log"):
        names += ["log", "dist"]
    if M.offers("tangent_mean", M.retraction_name):
        names += ["tangent_log", "tangent_exp"]
    names += [f"inverse_retraction_{r}" for r in M.RETRACTIONS
              if callable(getattr(M, f"inverse_retraction_{r}", None))]
    if M.offers("nearest_point"):
        names.append("nearest_point")
    return names


# ---- parametrisation --------------------------------------------------------------------
def registered_examples() -> list:
    """The ``examples()`` of every registered manifold."""
    return [m for _, cls in MANIFOLDS.items() for m in cls.examples()]


def example_ids(manifolds) -> list[str]:
    """Readable, unique test ids: ``stiefel25x2-polar-parallelization``."""
    ids = [f"{m.name}{'x'.join(map(str, m.point_shape))}-{m.retraction_name}-{m.transport_name}"
           for m in manifolds]
    return [f"{i}-{ids[:k].count(i)}" if ids.count(i) > 1 else i for k, i in enumerate(ids)]


def needs(capability: str):
    """Run a test only on the manifolds that offer ``capability`` (with their retraction)."""
    def mark(test):
        test.capability = capability
        return test
    return mark


def close(a, b, tol=TOL, msg=""):
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=msg)


def _frobenius(M, a):
    """||a||_F over the point axes: ``(S,)``."""
    return np.sqrt(M._sum(a * a))


def _col(M, s):
    """(S,) -> (S, 1, ..., 1) to scale a batch of points or vectors."""
    return np.reshape(s, (-1,) + (1,) * M.point_ndim)


class ManifoldContract:
    """Shared tests of a manifold's maps; see the module docstring for how to use it."""

    #: the instances to test; None: every registered manifold's ``examples()``
    manifolds: list | None = None
    n_agents = 4
    #: largest ||v||_x of the tangent vectors that give the second point y = R_x(v)
    step = 0.5
    #: retraction steps of norm 0.1 in the long run that must stay on the manifold
    long_run = 2000

    def pytest_generate_tests(self, metafunc):
        if "manifold" in metafunc.fixturenames:
            ms = registered_examples() if self.manifolds is None else list(self.manifolds)
            capability = getattr(metafunc.function, "capability", None)
            if capability is not None:
                ms = [m for m in ms if m.offers(capability, m.retraction_name)]
            metafunc.parametrize("manifold", ms, ids=example_ids(ms))

    @pytest.fixture
    def rng(self):
        return np.random.default_rng(SEED)

    def sample(self, M, rng):
        """x: points; u, w: unit tangent vectors at x; v: tangent vectors of norms between
        step / 2 and step, different for each agent (a map that mixes agents' scalars shows);
        y = R_x(v); g: an ambient vector. Each ``(n_agents, *point_shape)``."""
        x = M.random_point(rng, self.n_agents)
        u, w = M.random_tangent(rng, x), M.random_tangent(rng, x)
        v = self.step * _col(M, np.linspace(0.5, 1.0, self.n_agents)) * M.random_tangent(rng, x)
        return dict(x=x, u=u, w=w, v=v, y=M.retraction(x, v), g=rng.standard_normal(x.shape))

    def assert_same_point(self, M, a, b, tol=TOL, msg=""):
        """Equal points: by the Riemannian distance where there is one (it sees through the
        choice of representative, e.g. Grassmann's), else in the ambient coordinates."""
        if M.offers("log"):
            close(M.dist(a, b), np.zeros(a.shape[0]), tol, msg)
        else:
            close(a, b, tol, msg)

    # ---- declaration ------------------------------------------------------------------
    def test_declaration(self, manifold):
        """Registered under its name; ``offers`` answers every capability, refuses others,
        and each answer matches what the map does."""
        M = manifold
        named = next(c for c in type(M).__mro__ if "name" in c.__dict__)
        assert MANIFOLDS[named.name] is named
        assert set(M.ISOMETRIC_TRANSPORTS) <= set(M.TRANSPORTS)
        assert M.retraction_name in M.RETRACTIONS and M.transport_name in M.TRANSPORTS
        with pytest.raises(ValueError, match="allowed: " + ", ".join(M.CAPABILITIES)):
            M.offers("geodesic")
        x = M.random_point(np.random.default_rng(SEED), 1)
        for capability, call in (("log", lambda: M.log(x, x)),
                                 ("nearest_point", lambda: M.nearest_point(x))):
            if M.offers(capability):
                assert call().shape == x.shape
            else:
                with pytest.raises(NotImplementedError):
                    call()
        if M.offers("tangent_mean", M.retraction_name):
            assert M.tangent_log(x, x).shape == x.shape
        else:
            with pytest.raises(NotImplementedError):
                M.tangent_log(x, x)

    @needs("flat")
    def test_flat(self, manifold, rng):
        """Where ``flat`` is offered: Exp_x(u) = x + u, the Frobenius metric, the identity
        projection and transports (what FedAvg and SCAFFLSA assume)."""
        M = manifold
        p = self.sample(M, rng)
        x, u, y, g = p["x"], p["u"], p["y"], p["g"]
        close(M.exp(x, g), x + g)
        close(M.inner(x, g, u), M._sum(g * u))
        close(M.projection(x, g), g)
        for t in M.TRANSPORTS:
            close(getattr(M, f"transport_{t}")(x, y, g), g, msg=t)

    # ---- points ------------------------------------------------------------------------
    def test_random_point_on_manifold(self, manifold, rng):
        """Random points have the point shape, differ and satisfy the constraints; the
        constraint check sees a step off the manifold along a normal direction."""
        M = manifold
        x = M.random_point(rng, self.n_agents)
        assert x.shape == (self.n_agents,) + M.point_shape
        assert np.all(np.isfinite(x))
        assert np.all(M.distance_from_manifold(x) < TOL)
        assert not np.allclose(x[0], x[1])
        if M.dim < M.ambient_size:
            g = rng.standard_normal(x.shape)
            n = g - M.projection(x, g)
            t = 1e-3
            off = x + t * n / _col(M, _frobenius(M, n))
            assert np.all(M.distance_from_manifold(off) > t / 10)

    # ---- metric and tangent spaces -----------------------------------------------------
    def test_inner_and_norm(self, manifold, rng):
        """<u, v>_x is symmetric, bilinear and positive; ||u||_x = sqrt(<u, u>_x)."""
        M = manifold
        p = self.sample(M, rng)
        x, u, w = p["x"], p["u"], p["w"]
        close(M.inner(x, u, w), M.inner(x, w, u))
        close(M.inner(x, 2.0 * u - 3.0 * w, w), 2.0 * M.inner(x, u, w) - 3.0 * M.inner(x, w, w))
        assert np.all(M.inner(x, w, w) > 0)
        close(M.norm(x, u), np.sqrt(M.inner(x, u, u)))
        close(M.norm(x, u), np.ones(self.n_agents))            # random_tangent is unit

    def test_projection(self, manifold, rng):
        """P_x is idempotent and lands in T_x M: a curve x + t P_x(g) leaves M at second order
        only (distance <= t^2 ||P_x g||_F^2 for unit ||P_x g||_F). On an embedded submanifold
        it is the orthogonal projection: g - P_x(g) is orthogonal to T_x M."""
        from rfl.manifolds import EmbeddedSubmanifold

        M = manifold
        p = self.sample(M, rng)
        x, g, u = p["x"], p["g"], p["u"]
        pg = M.projection(x, g)
        close(M.projection(x, pg), pg)
        t = 1e-4
        unit = pg / _col(M, _frobenius(M, pg))
        assert np.all(M.distance_from_manifold(x + t * unit) <= t ** 2 + TOL)
        if isinstance(M, EmbeddedSubmanifold):
            close(M.inner(x, g - pg, u), np.zeros(self.n_agents))
            close(M.inner(x, pg, pg), M._sum(pg * pg))

    # ---- retractions and Exp -----------------------------------------------------------
    def test_retraction_and_exp_at_zero_and_first_order(self, manifold, rng):
        """R_x(0) = x and d/dt R_x(t u) at 0 = u (central differences), for the chosen
        retraction, every retraction of the manifold and Exp; R_x(v) lies on M for steps of
        norm ``step`` and 2."""
        M = manifold
        p = self.sample(M, rng)
        x, u = p["x"], p["u"]
        maps = {"retraction": M.retraction, "exp": M.exp}
        maps.update({f"retraction_{r}": getattr(M, f"retraction_{r}") for r in M.RETRACTIONS})
        scale = 1.0 + np.abs(x).max()
        for name, R in maps.items():
            close(R(x, M.zero_vector(x)), x, msg=name)
            fd = (R(x, H * u) - R(x, -H * u)) / (2 * H)
            close(fd, u, FD_TOL * scale, msg=name)
            for s in (self.step, 2.0):
                assert np.all(M.distance_from_manifold(R(x, s * u)) < TOL), name

    def test_retraction_stays_on_manifold(self, manifold):
        """``long_run`` retraction steps of norm 0.1 from random directions stay on M: no
        rounding drift that accumulates."""
        M = manifold
        rng = np.random.default_rng(SEED)
        x = M.random_point(rng, 2)
        for _ in range(self.long_run):
            x = M.retraction(x, 0.1 * M.random_tangent(rng, x))
        assert np.all(M.distance_from_manifold(x) < TOL)

    # ---- Log and distance --------------------------------------------------------------
    @needs("log")
    def test_exp_log_inverse(self, manifold, rng):
        """Where Log exists: Log_x(Exp_x(v)) = v, Exp_x(Log_x(y)) = y, Log_x(x) = 0, Log lands
        in T_x M, d(x, Exp_x(v)) = ||v||_x."""
        M = manifold
        p = self.sample(M, rng)
        x, v, w = p["x"], p["v"], p["w"]
        close(M.log(x, M.exp(x, v)), v)
        y = M.retraction(x, self.step * w)
        lg = M.log(x, y)
        self.assert_same_point(M, M.exp(x, lg), y)
        close(M.projection(x, lg), lg)
        close(M.log(x, x), np.zeros_like(x))
        close(M.dist(x, M.exp(x, v)), M.norm(x, v))

    @needs("log")
    def test_dist(self, manifold, rng):
        """Where Log exists: d(x, y) = ||Log_x(y)||_x = d(y, x) >= 0, d(x, x) = 0, and the
        triangle inequality."""
        M = manifold
        p = self.sample(M, rng)
        x, y = p["x"], p["y"]
        z = M.retraction(y, self.step * M.random_tangent(rng, y))
        d = M.dist(x, y)
        close(d, M.norm(x, M.log(x, y)))
        close(d, M.dist(y, x))
        assert np.all(d > 0)
        close(M.dist(x, x), np.zeros(self.n_agents))
        assert np.all(M.dist(x, z) <= d + M.dist(y, z) + TOL)

    @needs("log")
    def test_log_and_dist_many_are_the_pairwise_maps(self, manifold, rng):
        """log_many / dist_many (each agent's point to several points) equal log / dist pair
        by pair, in the right slots."""
        M = manifold
        p = self.sample(M, rng)
        x = p["x"]
        ys = np.stack([p["y"], M.retraction(x, self.step * p["w"]),
                       M.retraction(p["y"], self.step * M.random_tangent(rng, p["y"]))], axis=1)
        logs, dists = M.log_many(x, ys), M.dist_many(x, ys)
        assert logs.shape == ys.shape and dists.shape == ys.shape[:2]
        for u in range(ys.shape[1]):
            close(logs[:, u], M.log(x, ys[:, u]))
            close(dists[:, u], M.dist(x, ys[:, u]))

    # ---- transports --------------------------------------------------------------------
    def test_transports(self, manifold, rng):
        """Every transport T_{x->y}: linear, into T_y M, isometric where declared in
        ISOMETRIC_TRANSPORTS, norm non-increasing where it is the projection of an embedded
        submanifold, the identity at y = x, and close to P_{T_y M} for y near x (|T - P| <= 100 h
        at distance h = 1e-6: no jump)."""
        from rfl.manifolds import EmbeddedSubmanifold

        M = manifold
        p = self.sample(M, rng)
        x, y, u, w = p["x"], p["y"], p["u"], p["w"]
        a, b = 2.0, -3.0
        near = M.retraction(x, 1e-6 * M.random_tangent(rng, x))
        for t in M.TRANSPORTS:
            T = getattr(M, f"transport_{t}")
            tu, tw = T(x, y, u), T(x, y, w)
            close(T(x, y, a * u + b * w), a * tu + b * tw, msg=t)
            close(M.projection(y, tu), tu, msg=t)
            if t in M.ISOMETRIC_TRANSPORTS:
                close(M.inner(y, tu, tw), M.inner(x, u, w), msg=t)
                close(M.norm(y, tu), M.norm(x, u), msg=t)
            elif t == "projection" and isinstance(M, EmbeddedSubmanifold):
                assert np.all(M.norm(y, tu) <= M.norm(x, u) + TOL), t
            close(T(x, x, u), u, msg=t)
            jump = _frobenius(M, T(x, near, u) - M.projection(near, u))
            assert np.all(jump <= 1e-4), (t, jump)
        close(M.transport(x, y, u), getattr(M, f"transport_{M.transport_name}")(x, y, u))

    # ---- tangent-mean aggregation and P_M ----------------------------------------------------
    @needs("tangent_mean")
    def test_tangent_mean_lift_and_back(self, manifold, rng):
        """Where the tangent mean is offered: tangent_exp_x(tangent_log_x(y)) = y,
        tangent_log_x(tangent_exp_x(v)) = v, tangent_log_x(x) = 0, lifts in T_x M."""
        M = manifold
        p = self.sample(M, rng)
        x, y, v = p["x"], p["y"], p["v"]
        lift = M.tangent_log(x, y)
        close(M.projection(x, lift), lift)
        self.assert_same_point(M, M.tangent_exp(x, lift), y)
        close(M.tangent_log(x, M.tangent_exp(x, v)), v)
        close(M.tangent_log(x, x), np.zeros_like(x))

    @needs("nearest_point")
    def test_nearest_point(self, manifold, rng):
        """Where P_M is offered: P_M(a) lies on M, P_M is the identity on M (so idempotent),
        maps x + (normal step) back to x, and no random point of M is closer to a."""
        M = manifold
        p = self.sample(M, rng)
        x, g = p["x"], p["g"]
        a = x + g
        pa = M.nearest_point(a)
        assert np.all(M.distance_from_manifold(pa) < TOL)
        close(M.nearest_point(pa), pa)
        close(M.nearest_point(x), x)
        n = g - M.projection(x, g)
        close(M.nearest_point(x + 1e-2 * n / _col(M, _frobenius(M, n))), x)
        best = _frobenius(M, a - pa)
        for _ in range(20):
            q = M.random_point(rng, self.n_agents)
            assert np.all(_frobenius(M, a - q) >= best - TOL)

    # ---- batched == per agent ----------------------------------------------------------
    def test_batched_equals_per_agent(self, manifold, rng):
        """Every map on the agents axis equals the loop over single agents."""
        M = manifold
        p = self.sample(M, rng)
        assert_batched_equals_per_agent(M, maps_of(M), TOL, x=p["x"], y=p["y"], u=p["v"],
                                        v=p["w"], g=p["x"] + p["g"])

    # ---- gradients ---------------------------------------------------------------------
    def test_riemannian_gradient(self, manifold, rng):
        """For f(x) = <c, x>_F + <x, Q x>_F / 2 (Q symmetric) with Euclidean gradient
        c + Q x: grad f(x) is tangent, <grad f(x), u>_x = <egrad, u>_F, and equals the
        directional derivative d/dt f(R_x(t u)) at 0 (central differences) along the
        retraction and Exp."""
        M = manifold
        p = self.sample(M, rng)
        x, u = p["x"], p["u"]
        n = M.ambient_size
        c = rng.standard_normal(n)
        q = rng.standard_normal((n, n)) / np.sqrt(n)
        q = q + q.T

        def f(z):
            flat = z.reshape(z.shape[0], n)
            return flat @ c + 0.5 * np.einsum("si,ij,sj->s", flat, q, flat)

        egrad = (c + x.reshape(-1, n) @ q).reshape(x.shape)
        grad = M.euclidean_to_riemannian_gradient(x, egrad)
        close(M.projection(x, grad), grad)
        scale = 1.0 + np.abs(f(x)).max()
        close(M.inner(x, grad, u), M._sum(egrad * u), TOL * scale)
        for name, R in (("retraction", M.retraction), ("exp", M.exp)):
            fd = (f(R(x, H * u)) - f(R(x, -H * u))) / (2 * H)
            close(M.inner(x, grad, u), fd, FD_TOL * scale, msg=name)

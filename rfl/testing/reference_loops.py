"""Plain reference implementations of the federated strategies, written straight from the
papers' pseudo-code, keyed by strategy name (``REFERENCE_LOOPS``, filled by ``@reference_loop``).

A loop is a Python loop over rounds, agents and local steps on single points (no agents
axis), through single-point manifold maps (pymanopt's where pymanopt has the map, a formula
of the paper otherwise: ``single_point_ops``). It consumes the draws of an ``AgentSampler``
as the vectorised strategies do (per round: ``participants``; per local step k of round t:
the mini-batches of draw number t 2^32 + k, which each agent makes on its own:
``own_batches``), so the two can be compared draw for draw; the strategy contract
(``rfl.testing.strategy``), the algorithm tests and the speed-up benchmarks use them as the
oracle.

Every loop is called as ``loop(problem, x1, step_size, K, rounds, sampler, ops=None,
**options)`` (``options``: the strategy's declared options, e.g. RFedProj's
``server_step``) and returns the server points [x_1, ..., x_{T+1}].
"""

from __future__ import annotations

from typing import Callable

import numpy as np

#: strategy name -> reference loop
REFERENCE_LOOPS: dict[str, Callable] = {}
#: manifold name -> factory of its single-point maps, called with the (batched) manifold
SINGLE_POINT_OPS: dict[str, Callable] = {}


def reference_loop(name: str):
    """Register the decorated function as the reference loop of strategy ``name``."""
    def register(fn):
        REFERENCE_LOOPS[name] = fn
        return fn
    return register


def single_point_maps(manifold_name: str):
    """Register the decorated factory as the single-point maps of manifold ``manifold_name``."""
    def register(factory):
        SINGLE_POINT_OPS[manifold_name] = factory
        return factory
    return register


def single_point_ops(manifold):
    """The single-point maps of ``manifold``'s geometry (retraction and transport by name):
    the independent ones registered for its name with ``single_point_maps`` (pymanopt's or
    the paper's formulas) where they cover its geometry, else the manifold's own batched maps
    applied to one point at a time (``PointwiseOps``; the manifold contract checks those
    maps, so a plug-in manifold needs no registration for the strategy contract)."""
    factory = SINGLE_POINT_OPS.get(manifold.name)
    if factory is not None:
        try:
            return factory(manifold)
        except NotImplementedError:                  # a geometry the independent maps lack
            pass
    return PointwiseOps(manifold)


class PointwiseOps:
    """A batched manifold's maps on single points (an agents axis of length one added and
    removed): the oracle's maps for a manifold without independent single-point maps."""

    def __init__(self, manifold):
        self.m = manifold

    def euclidean_to_riemannian_gradient(self, x, g):
        return self.m.euclidean_to_riemannian_gradient(x[None], g[None])[0]

    def retraction(self, x, u):
        return self.m.retraction(x[None], u[None])[0]

    def transport(self, x, y, u):
        return self.m.transport(x[None], y[None], u[None])[0]

    def exp(self, x, u):
        return self.m.exp(x[None], u[None])[0]

    def log(self, x, y):
        return self.m.log(x[None], y[None])[0]

    def tangent_exp(self, x, u):
        return self.m.tangent_exp(x[None], u[None])[0]

    def tangent_log(self, x, y):
        return self.m.tangent_log(x[None], y[None])[0]

    @property
    def project(self):
        """P_M on one point, or None where the manifold has no nearest point."""
        if not self.m.offers("nearest_point"):
            return None
        return lambda x: self.m.nearest_point(x[None])[0]


# ---- single-point maps ------------------------------------------------------------
class SphereOps:
    """Single-point S^{n-1} maps: pymanopt's where it has them, Appendix E for parallel transport."""

    def __init__(self, n, retraction="normalize", transport="parallel"):
        from pymanopt.manifolds import Sphere
        if retraction not in ("normalize", "exp") or transport not in ("parallel", "projection"):
            raise NotImplementedError(f"sphere reference maps: no {retraction!r} / {transport!r}")
        self.m = Sphere(n)
        self.retraction = self.m.retraction if retraction == "normalize" else self.m.exp
        self.transport = self.parallel if transport == "parallel" else (lambda x, y, u: self.m.projection(y, u))

    def euclidean_to_riemannian_gradient(self, x, g):
        return self.m.euclidean_to_riemannian_gradient(x, g)

    def exp(self, x, u):
        return self.m.exp(x, u)

    def log(self, x, y):
        return self.m.log(x, y)

    tangent_exp, tangent_log = exp, log

    def parallel(self, x, y, u):
        """Appendix E: (I + (cos|v| - 1) v v^T/|v|^2 - sin|v| x v^T/|v|) u, v = Log_x(y)."""
        v = self.m.log(x, y)
        nv = np.linalg.norm(v)
        if nv == 0.0:
            return u.copy()
        P = np.eye(x.size) + (np.cos(nv) - 1) * np.outer(v, v) / nv**2 - np.sin(nv) * np.outer(x, v) / nv
        return P @ u

    @staticmethod
    def project(x):
        """Nearest point of the unit sphere."""
        return x / np.linalg.norm(x)


class StiefelOps:
    """Single-point St(p, n) maps from pymanopt: tangent projection, the named retraction
    (``polar``: the polar factor of X + V; ``qr``) and the projection transport; the polar
    factor as P_M; for the tangent mean, the inverse of the retraction."""

    def __init__(self, n, p, retraction="polar", transport="projection"):
        from pymanopt.manifolds import Stiefel
        if transport != "projection":
            raise NotImplementedError("the Stiefel reference maps have the projection transport only")
        self.m = Stiefel(n, p, retraction=retraction)
        self.retraction_name = retraction

    def euclidean_to_riemannian_gradient(self, x, g):
        return self.m.euclidean_to_riemannian_gradient(x, g)

    def retraction(self, x, u):
        return self.m.retraction(x, u)

    def transport(self, x, y, u):
        return self.m.transport(x, y, u)

    def tangent_exp(self, x, u):
        return self.m.retraction(x, u)

    def tangent_log(self, x, y):
        """The inverse of the retraction. Polar: V = Y S - X, S symmetric, with
        X^T V + V^T X = 0, i.e. (X^T Y) S + S (X^T Y)^T = 2 I (a Lyapunov equation). QR:
        V = Y R - X, R upper triangular with (X^T Y) R + R^T (X^T Y)^T = 2 I, solved as one
        linear system in the p(p+1)/2 entries of R (the images of the basis E_ij, i <= j)."""
        p = x.shape[1]
        if self.retraction_name == "polar":
            from scipy.linalg import solve_continuous_lyapunov
            S = solve_continuous_lyapunov(x.T @ y, 2.0 * np.eye(p))
            return y @ S - x
        m = x.T @ y
        upper = [(i, j) for j in range(p) for i in range(j + 1)]
        iu = np.triu_indices(p)
        cols = []
        for i, j in upper:
            e = np.zeros((p, p))
            e[i, j] = 1.0
            img = m @ e
            cols.append((img + img.T)[iu])
        rhs = (2.0 * np.eye(p))[iu]
        coef = np.linalg.solve(np.array(cols).T, rhs)
        r = np.zeros((p, p))
        for c, (i, j) in zip(coef, upper):
            r[i, j] = c
        return y @ r - x

    @staticmethod
    def project(x):
        """Nearest point of St(p, n): U V^T from the SVD of x."""
        u, _, vt = np.linalg.svd(x, full_matrices=False)
        return u @ vt


class EuclideanOps:
    """R^n: R_x(u) = x + u, identity transport, Riemannian gradient = Euclidean gradient."""

    def retraction(self, x, u):
        return x + u

    def transport(self, x, y, u):
        return u

    def euclidean_to_riemannian_gradient(self, x, g):
        return g

    exp = tangent_exp = retraction

    def log(self, x, y):
        return y - x

    tangent_log = log


def sphere_project(x):
    """Nearest point of the unit sphere."""
    return SphereOps.project(x)


@single_point_maps("sphere")
def _sphere(m):
    return SphereOps(m.n, m.retraction_name, m.transport_name)


@single_point_maps("stiefel")
def _stiefel(m):
    return StiefelOps(m.n, m.p, m.retraction_name, m.transport_name)


@single_point_maps("euclidean")
def _euclidean(m):
    return EuclideanOps()


# ---- mini-batches -------------------------------------------------------------------
def step_draw(t: int, k: int) -> int:
    """The draw number of local step k of round t as sampler version 3 defines it (written out
    here, not taken from the sampler): t 2^32 + k."""
    return t * 2 ** 32 + k


def own_batches(sampler, agents, t, k) -> list[np.ndarray]:
    """The mini-batches of local step k of round t, each agent drawing its own as a client
    holding only its data would: ``batch_indices(key, t 2^32 + k, [j], local_sizes, B)[0]``. A
    vectorised strategy consuming ``batches(agents, t, k)`` agrees with this only if its
    batches are per-agent draws, independent of the other participants and keyed by (t, k):
    ``[(B,)] * s``."""
    from rfl.algorithms.sampling import batch_indices
    c = step_draw(t, k)
    return [batch_indices(sampler.key, c, np.array([j]), sampler.local_sizes, sampler.batch_size)[0]
            for j in agents]


# ---- local fields -------------------------------------------------------------------
def _agent_grad(problem, ops, x, j, batch):
    """Mini-batch Riemannian gradient of agent j at one point x."""
    g = problem.minibatch_egrad(x[None], np.array([j]), batch[None])[0]
    return ops.euclidean_to_riemannian_gradient(x, g)


def lsa_oracle(problem, j, batch):
    """Mini-batch means (A, b) of agent j's TD(0) oracle, rebuilt as explicit matrices
    A(Z) = phi(s)(phi(s) - gamma phi(s'))^T, b(Z) = r(s) phi(s) from the LSA problem's raw
    pool (not through ``minibatch_egrad``): ``(d, d)``, ``(d,)``."""
    if problem.oracle == "exact":
        return problem.A_bar_local[j], problem.b_bar_local[j]
    d = problem.phi.shape[1]
    A, b = np.zeros((d, d)), np.zeros(d)
    for i in batch:
        s, s_next = problem.states[j, i], problem.next_states[j, i]
        A += np.outer(problem.phi[s], problem.phi[s] - problem.gamma * problem.phi[s_next])
        b += problem.r_pi[j, s] * problem.phi[s]
    return A / len(batch), b / len(batch)


def _flat_field(problem, x, j, batch):
    """Agent j's local field at one point of a flat problem: A(Z) x - b(Z) from the oracle
    for federated TD(0), the mini-batch gradient otherwise."""
    from rfl.problems.lsa import FederatedLSA
    if isinstance(problem, FederatedLSA):
        A, b = lsa_oracle(problem, j, batch)
        return A @ x - b
    return problem.minibatch_egrad(x[None], np.array([j]), batch[None])[0]


# ---- the strategies -------------------------------------------------------------------
def _point_mean(w, points, anchor):
    """Server average of points, sum_j p_j x^j, written x_t + sum_j p_j (x^j - x_t) when the
    participation scheme's weights do not sum to 1 (``rfl.algorithms.aggregation``): a loop
    over the participants' points (list) and their weights (s,)."""
    if abs(float(np.sum(w)) - 1.0) <= 1e-12:
        return sum(wj * xj for wj, xj in zip(w, points))
    return anchor + sum(wj * (xj - anchor) for wj, xj in zip(w, points))


@reference_loop("rfedags")
def rfedags_loop(problem, x1, step_size, K, rounds, sampler, ops=None, local_method="sgd"):
    """Algorithm 1 of the RFedAGS paper, line by line. ``local_method="rsvrg"``: line 7 with the
    variance-reduced gradient grad f_{j,B}(x) - Gamma_{x_t -> x}(grad f_{j,B}(x_t) - grad f_j(x_t))
    (the authors' local RSVRG; every step evaluates it, including the first, where it is
    grad f_j(x_t))."""
    ops = ops or single_point_ops(problem.manifold)
    xs = [x1]
    x_t = x1
    for t in range(rounds):
        agents = sampler.participants()
        alpha = step_size(t)
        x = {j: x_t.copy() for j in agents}                      # line 2
        zeta = {j: np.zeros_like(x_t) for j in agents}            # line 4
        g_full = {j: ops.euclidean_to_riemannian_gradient(x_t, problem.local_egrad(x_t[None], np.array([j]))[0])
                  for j in agents} if local_method == "rsvrg" else {}
        for k in range(K):                                        # line 5
            batches = own_batches(sampler, agents, t, k)                     # line 6
            for row, j in enumerate(agents):                      # line 3: agents in parallel
                g = _agent_grad(problem, ops, x[j], j, batches[row])
                if local_method == "rsvrg":
                    g = g - ops.transport(x_t, x[j], _agent_grad(problem, ops, x_t, j, batches[row]) - g_full[j])
                eta = -alpha * g                                                 # line 7
                zeta[j] = zeta[j] + ops.transport(x[j], x_t, eta)                # line 9
                x[j] = ops.retraction(x[j], eta)                                 # line 8
        w = sampler.weights(problem.local_sizes, agents)
        direction = sum(w[row] * zeta[j] for row, j in enumerate(agents))
        x_t = ops.retraction(x_t, direction)                      # line 13
        xs.append(x_t)
    return xs


def _tangent_mean_loop(problem, x1, step_size, K, rounds, sampler, ops, shift=None):
    """Local steps x^j <- R_{x^j}(-alpha (grad f_{j,B}(x^j) + shift(x^j, x_t))), then
    x_{t+1} = Exp_{x_t}(sum_j p_j Log_{x_t}(x^j_K)) (Exp / Log: the manifold's tangent-mean
    pair); ``shift``: a tangent vector at x^j added to the local gradient (None: plain local
    steps); one agent and one point at a time."""
    xs = [x1]
    x_t = x1
    for t in range(rounds):
        agents = sampler.participants()
        alpha = step_size(t)
        x = {j: x_t.copy() for j in agents}
        for k in range(K):
            batches = own_batches(sampler, agents, t, k)
            for row, j in enumerate(agents):
                v = _agent_grad(problem, ops, x[j], j, batches[row])
                if shift is not None:
                    v = v + shift(x[j], x_t)
                x[j] = ops.retraction(x[j], -alpha * v)
        w = sampler.weights(problem.local_sizes, agents)
        x_t = ops.tangent_exp(x_t, sum(w[row] * ops.tangent_log(x_t, x[j]) for row, j in enumerate(agents)))
        xs.append(x_t)
    return xs


@reference_loop("rfedavg")
def rfedavg_loop(problem, x1, step_size, K, rounds, sampler, ops=None):
    """Li & Ma Algorithm 2: local steps, then x_{t+1} = Exp_{x_t}(sum_j p_j Log_{x_t}(x^j_K))
    (Exp / Log: the manifold's tangent-mean pair)."""
    ops = ops or single_point_ops(problem.manifold)
    return _tangent_mean_loop(problem, x1, step_size, K, rounds, sampler, ops)


@reference_loop("rfedprox")
def rfedprox_loop(problem, x1, step_size, K, rounds, sampler, ops=None, mu=0.1):
    """Riemannian FedProx: RFedAvg's loop whose local steps follow grad f_j(y) - mu Log_y(x_t),
    the Riemannian gradient of f_j(y) + (mu/2) d(y, x_t)^2 (Log: the tangent-mean lift)."""
    ops = ops or single_point_ops(problem.manifold)
    return _tangent_mean_loop(problem, x1, step_size, K, rounds, sampler, ops,
                              shift=lambda y, x_t: -mu * ops.tangent_log(y, x_t))


@reference_loop("rfedsvrg")
def rfedsvrg_loop(problem, x1, step_size, K, rounds, sampler, ops=None, correction="all_agents"):
    """Li & Ma Algorithm 1. ``correction``: "all_agents" (grad f(x_t) = sum_i p_i grad f_i(x_t)
    over all S agents, p_i = N_i / sum N), "participants" (the mean over the round's agents
    with the sampler's weights) or "authors" (RFedSVRG_.m's sum, written as its loop)."""
    ops = ops or single_point_ops(problem.manifold)
    xs = [x1]
    x_t = x1
    S = len(problem.local_sizes)
    p = np.asarray(problem.local_sizes, dtype=float) / np.sum(problem.local_sizes)
    for t in range(rounds):
        agents = sampler.participants()
        alpha = step_size(t)
        w = sampler.weights(problem.local_sizes, agents)
        senders = range(S) if correction == "all_agents" else agents
        g_loc = {j: ops.euclidean_to_riemannian_gradient(x_t, problem.local_egrad(x_t[None], np.array([j]))[0])
                 for j in senders}
        if correction == "all_agents":
            g_glob = sum(p[j] * g_loc[j] for j in range(S))
        elif correction == "authors":                            # RFedSVRG_.m, lines 74-78:
            last = agents[-1]                                    # the loop index left at s
            g_glob = g_loc[last]
            for j in agents[1:]:                                 # for i = 2:length(St)
                g_glob = g_glob + g_loc[j]
            g_glob = g_glob / S                                  # / problem.nagents
        else:
            g_glob = sum(w[row] * g_loc[j] for row, j in enumerate(agents))
        x = {j: x_t.copy() for j in agents}
        for k in range(K):
            batches = own_batches(sampler, agents, t, k)
            for row, j in enumerate(agents):
                g = _agent_grad(problem, ops, x[j], j, batches[row])
                v = g - ops.transport(x_t, x[j], g_loc[j] - g_glob)
                x[j] = ops.retraction(x[j], -alpha * v)
        x_t = ops.tangent_exp(x_t, sum(w[row] * ops.tangent_log(x_t, x[j]) for row, j in enumerate(agents)))
        xs.append(x_t)
    return xs


def _zo_agent_grad(problem, project, x, j, batch, u, mu):
    """The zeroth-order estimator of ZO-RFedProj for agent j at one point x, a loop over the
    samples: (n / B) sum_b (f(P(x + mu u_b); z_b) - f(x; z_b)) / mu u_b, n = x.size, each
    f(.; z_b) one sample's cost at one point (``sample_costs`` on a 1 x 1 batch)."""
    B = len(batch)
    out = np.zeros_like(x)
    for b, i in enumerate(batch):
        def f(point):
            return problem.sample_costs(point[None, None], np.array([j]), np.array([[i]]))[0, 0]
        out = out + (f(project(x + mu * u[b])) - f(x)) / mu * u[b]
    return out * (x.size / B)


@reference_loop("zorfedproj")
def zorfedproj_loop(problem, x1, step_size, K, rounds, sampler, ops=None, server_step=1.0,
                    mu=1e-5, project=None):
    """RFedProj's loop (``rfedproj_loop``) with the zeroth-order estimator in place of the
    mini-batch gradient: agent j's directions at the step of mini-batch draw c are
    ``rfl.algorithms.zorfedproj.directions(key, c, j, B, shape)``."""
    from rfl.algorithms.zorfedproj import directions
    ops = ops or single_point_ops(problem.manifold)
    project = project or getattr(ops, "project", None)

    def zo_grad(z, j, batch, draw):
        u = directions(sampler.key, draw, j, len(batch), z.shape)
        return _zo_agent_grad(problem, project, z, j, batch, u, mu)

    return rfedproj_loop(problem, x1, step_size, K, rounds, sampler, ops, server_step,
                         project=project, local_grad=zo_grad)


@reference_loop("rfedproj")
def rfedproj_loop(problem, x1, step_size, K, rounds, sampler, ops=None, server_step=1.0,
                  line15=False, project=None, local_grad=None):
    """Zhang-Hu-So-Johansson Algorithm 1, line by line; c_j = 0 for an agent absent from the
    previous round. Returns [P(x_bar^1), ..., P(x_bar^{R+1})] (P: ``project``, default the
    maps' nearest point).

    Correction: the compact form's c_j^{r+1} = average - old; with ``line15`` the literal line 15
    with its factor read as 1/(eta_g eta K): c_j^{r+1} = (P(x_bar^r) - x_bar^{r+1})/(eta_g eta K) - old_j
    (the same when every agent takes part in every round). ``local_grad(z, j, batch, draw)``:
    agent j's local field at z in place of its mini-batch gradient (draw: the draw number
    of the step's mini-batch, ``step_draw(r, t)``)."""
    ops = ops or single_point_ops(problem.manifold)
    project = project or getattr(ops, "project", None)
    if project is None:
        raise NotImplementedError(f"no single-point nearest point for {problem.manifold.name}")
    x_bar = x1.copy()
    c = {}                                                       # c_j^r of last round's agents
    xs = [project(x_bar)]
    for r in range(rounds):
        agents = sampler.participants()
        eta = step_size(r)
        w = sampler.weights(problem.local_sizes, agents)
        y = project(x_bar)
        z_hat = {j: y.copy() for j in agents}                    # line 3
        z = {j: y.copy() for j in agents}
        c_r = {j: c.get(j, np.zeros_like(y)) for j in agents}
        grads = {j: [] for j in agents}
        for t in range(K):                                       # line 4
            draw = step_draw(r, t)
            batches = own_batches(sampler, agents, r, t)                    # line 5
            for row, j in enumerate(agents):
                if local_grad is None:
                    g = _agent_grad(problem, ops, z[j], j, batches[row])     # line 6
                else:
                    g = local_grad(z[j], j, batches[row], draw)
                grads[j].append(g)
                z_hat[j] = z_hat[j] - eta * (g + c_r[j])                 # line 7
                z[j] = project(z_hat[j])                                 # line 8
        mean_z_hat = _point_mean(w, [z_hat[j] for j in agents], y)
        x_bar_next = y + server_step * (mean_z_hat - y)          # line 12
        old = {j: sum(grads[j]) / K for j in agents}
        if line15:
            avg = (y - x_bar_next) / (server_step * eta * K)
        else:
            avg = sum(w[row] * old[j] for row, j in enumerate(agents))
        c = {j: avg - old[j] for j in agents}                    # line 15
        x_bar = x_bar_next
        xs.append(project(x_bar))
    return xs


@reference_loop("fedavg")
def fedavg_loop(problem, x1, step_size, K, rounds, sampler, ops=None, average_after=None):
    """FedAvg (local SGD + weighted averaging of the local iterates); on federated TD(0) this
    is FedLSA (Mangold et al.): H = K local steps theta <- theta - eta (A(Z) theta - b(Z)).
    The iterates themselves (``average_after`` None)."""
    assert average_after is None, "the loop returns the iterates themselves"
    xs = [x1]
    x_t = x1
    for t in range(rounds):
        agents = sampler.participants()
        alpha = step_size(t)
        x = {j: x_t.copy() for j in agents}
        for k in range(K):
            batches = own_batches(sampler, agents, t, k)
            for row, j in enumerate(agents):
                x[j] = x[j] - alpha * _flat_field(problem, x[j], j, batches[row])
        w = sampler.weights(problem.local_sizes, agents)
        x_t = _point_mean(w, [x[j] for j in agents], x_t)
        xs.append(x_t)
    return xs


@reference_loop("scafflsa")
def scafflsa_loop(problem, theta0, step_size, H, rounds, sampler, ops=None, xi=None):
    """SCAFFLSA: local steps theta <- theta - eta (A(Z) theta - b(Z) - xi_c), averaging,
    xi_c <- xi_c + (theta_{t+1} - theta^c_{t,H}) / (eta H) for the participating agents.

    ``xi``: a dict {agent: xi_c} updated in place (missing agents start at 0), to read the
    control variates after the last round.
    """
    xi = {} if xi is None else xi
    for c in range(problem.n_agents):
        xi.setdefault(c, np.zeros_like(theta0))
    thetas = [theta0]
    theta_t = theta0
    for t in range(rounds):
        agents = sampler.participants()
        eta = step_size(t)
        theta = {c: theta_t.copy() for c in agents}
        for h in range(H):
            batches = own_batches(sampler, agents, t, h)
            for row, c in enumerate(agents):
                theta[c] = theta[c] - eta * (_flat_field(problem, theta[c], c, batches[row]) - xi[c])
        w = sampler.weights(problem.local_sizes, agents)
        theta_t = _point_mean(w, [theta[c] for c in agents], theta_t)
        for c in agents:
            xi[c] = xi[c] + (theta_t - theta[c]) / (eta * H)
        thetas.append(theta_t)
    return thetas


@reference_loop("scaffold")
def scaffold_loop(problem, x1, step_size, K, rounds, sampler, ops=None, server_step=1.0,
                  average_after=None, controls=None):
    """Scaffold, Karimireddy et al. (2020) Algorithm 1 with option II, agent by agent:
    y_i <- y_i - eta (g_i(y_i) - c_i + c); c_i^+ = c_i - c + (x - y_i) / (K eta);
    x <- x + eta_g sum_S p_i (y_i - x); c <- c + sum_S q_i (c_i^+ - c_i), q_i = N_i / N.
    ``controls``: a dict filled with {agent: c_i} and {"c": c} after the last round."""
    assert average_after is None, "the loop returns the iterates themselves"
    S = problem.n_agents
    q = np.asarray(problem.local_sizes, dtype=float) / float(np.sum(problem.local_sizes))
    c_i = {j: np.zeros_like(x1) for j in range(S)}
    c = np.zeros_like(x1)
    xs = [x1]
    x_t = x1
    for t in range(rounds):
        agents = sampler.participants()
        eta = step_size(t)
        y = {j: x_t.copy() for j in agents}
        for k in range(K):
            batches = own_batches(sampler, agents, t, k)
            for row, j in enumerate(agents):
                y[j] = y[j] - eta * (_flat_field(problem, y[j], j, batches[row]) - c_i[j] + c)
        w = sampler.weights(problem.local_sizes, agents)
        mean = _point_mean(w, [y[j] for j in agents], x_t)
        x_next = x_t + server_step * (mean - x_t)
        new = {j: c_i[j] - c + (x_t - y[j]) / (K * eta) for j in agents}
        c = c + sum(q[j] * (new[j] - c_i[j]) for j in agents)
        c_i.update(new)
        x_t = x_next
        xs.append(x_t)
    if controls is not None:
        controls.update(c_i)
        controls["c"] = c
    return xs


@reference_loop("fedrr")
def fedrr_loop(problem, x1, step_size, K, rounds, sampler, ops=None, burn_in=0,
               shared_stream=True, records="extrapolation"):
    """Federated Richardson-Romberg (Mangold et al. 2024): two FedAvg chains, steps eta and
    2 eta, the same participants and mini-batches each round; returns
    2 mean(x^eta_{b+1..t}) - mean(x^{2eta}_{b+1..t}) (the last iterates while t <= b)."""
    assert shared_stream, "the loop shares one stream between the chains"
    chains = {1.0: [x1], 2.0: [x1]}
    out = [x1]
    for t in range(rounds):
        agents = sampler.participants()
        eta = step_size(t)
        x = {f: {j: chains[f][-1].copy() for j in agents} for f in chains}
        for k in range(K):
            batches = own_batches(sampler, agents, t, k)
            for f in chains:
                for row, j in enumerate(agents):
                    x[f][j] = x[f][j] - f * eta * _flat_field(problem, x[f][j], j, batches[row])
        w = sampler.weights(problem.local_sizes, agents)
        for f in chains:
            chains[f].append(_point_mean(w, [x[f][j] for j in agents], chains[f][-1]))
        window = slice(burn_in + 1, None) if t >= burn_in else slice(-1, None)
        a, b = (np.mean(chains[f][window], axis=0) for f in (1.0, 2.0))
        out.append(2 * a - b if records == "extrapolation" else a)
    return out


@reference_loop("rfedags_rr")
def rfedags_rr_loop(problem, x1, step_size, K, rounds, sampler, ops=None, burn_in=0,
                    shared_stream=True, records="extrapolation"):
    """Richardson-Romberg on RFedAGS: Algorithm 1 with steps alpha and 2 alpha on the same
    participants and mini-batches; each chain's iterates after the burn-in averaged by the
    inductive mean m_n = R~_{m_{n-1}}(R~^{-1}_{m_{n-1}}(x_n) / n), recomputed from the list
    every round; returns R~_a(-R~^{-1}_a(b)) of the two means a (alpha), b (2 alpha)."""
    assert shared_stream, "the loop shares one stream between the chains"
    ops = ops or single_point_ops(problem.manifold)
    chains = {1.0: [x1], 2.0: [x1]}
    out = [x1]

    def inductive_mean(points):
        m = points[0]
        for n, p in enumerate(points[1:], start=2):
            m = ops.tangent_exp(m, ops.tangent_log(m, p) / n)
        return m

    for t in range(rounds):
        agents = sampler.participants()
        alpha = step_size(t)
        x = {f: {j: chains[f][-1].copy() for j in agents} for f in chains}
        zeta = {f: {j: np.zeros_like(x1) for j in agents} for f in chains}
        for k in range(K):
            batches = own_batches(sampler, agents, t, k)
            for f in chains:
                for row, j in enumerate(agents):
                    eta = -f * alpha * _agent_grad(problem, ops, x[f][j], j, batches[row])
                    zeta[f][j] = zeta[f][j] + ops.transport(x[f][j], chains[f][-1], eta)
                    x[f][j] = ops.retraction(x[f][j], eta)
        w = sampler.weights(problem.local_sizes, agents)
        for f in chains:
            direction = sum(w[row] * zeta[f][j] for row, j in enumerate(agents))
            chains[f].append(ops.retraction(chains[f][-1], direction))
        window = slice(burn_in + 1, None) if t >= burn_in else slice(-1, None)
        a, b = (inductive_mean(chains[f][window]) for f in (1.0, 2.0))
        out.append(ops.tangent_exp(a, -ops.tangent_log(a, b)) if records == "extrapolation" else a)
    return out


# ---- decentralised strategies (Chen, Garcia, Hong, Shahrampour, ICML 2021) ---------------
def _decentralised_W(problem, graph, weights):
    """The W of a decentralised strategy run on a plain Generator (its graph stream is
    (0, "graph", [graph, weights] as JSON): the strategy's, so the two mix over one graph)."""
    import json

    from rfl.graphs import canonical, make_mixing
    from rfl.random import stream
    spec = json.dumps([canonical(graph, "graph"), canonical(weights, "weights")], sort_keys=True)
    return make_mixing(graph, weights, problem.n_agents, stream(0, "graph", spec)).W


def _consensus_loop(W, points, t):
    """t plain mixing steps z_i <- sum_j W_ij z_j over a list of per-agent arrays."""
    S = len(points)
    for _ in range(t):
        points = [sum(W[i, j] * points[j] for j in range(S) if W[i, j] != 0.0) for i in range(S)]
    return points


def _projected_mean(ops, points):
    """P_M(1/S sum_i x_i) by the manifold's single-point nearest point."""
    return ops.project(sum(points) / len(points))


def _starts(ops, x1, S, spread):
    """The agents' first points: x1, or R_{x1}(spread u_i) with u_i = P_{x1}(z_i) / ||P_{x1}(z_i)||,
    z = standard normals (S, *shape) of the stream (0, "start") (a plain Generator run's)."""
    if not spread:
        return [x1.copy() for _ in range(S)]
    from rfl.random import stream
    z = stream(0, "start").standard_normal((S,) + x1.shape)
    out = []
    for i in range(S):
        u = ops.euclidean_to_riemannian_gradient(x1, z[i])
        out.append(ops.retraction(x1, spread * u / np.linalg.norm(u)))
    return out


def _beta(step_size, beta, beta_rule, t):
    if beta is None:
        return step_size(t)
    k = t + 1
    return {"constant": beta, "1/sqrtk": beta / np.sqrt(k), "1/k": beta / k}[beta_rule]


@reference_loop("drsgd")
def drsgd_loop(problem, x1, step_size, K, rounds, sampler, ops=None, graph="ring",
               weights="metropolis_hastings", consensus_steps=1, consensus_step=1.0, beta=None,
               beta_rule="constant", spread=0.0):
    """Algorithm 1 of Chen et al. (2021) agent by agent: x_i <- R_{x_i}(alpha P_{x_i}(sum_j
    (W^t)_ij x_j - x_i) - beta_k P_{x_i}(grad f_i(x_i; batch))), W^t as t plain mixing steps;
    returns the projected ambient means [xbar_1, ..., xbar_{T+1}]."""
    assert K == 1
    ops = ops or single_point_ops(problem.manifold)
    W = _decentralised_W(problem, graph, weights)
    S = problem.n_agents
    x = _starts(ops, x1, S, spread)
    out = [x1]
    for t in range(rounds):
        agents = sampler.participants()
        batches = own_batches(sampler, agents, t, 0)
        mixed = _consensus_loop(W, x, consensus_steps)
        b = _beta(step_size, beta, beta_rule, t)
        new = []
        for i in range(S):
            cons = ops.euclidean_to_riemannian_gradient(x[i], mixed[i] - x[i])
            g = _agent_grad(problem, ops, x[i], i, batches[i]) if b else 0.0 * x[i]
            new.append(ops.retraction(x[i], consensus_step * cons - b * g))
        x = new
        out.append(_projected_mean(ops, x))
    return out


@reference_loop("drgta")
def drgta_loop(problem, x1, step_size, K, rounds, sampler, ops=None, graph="ring",
               weights="metropolis_hastings", consensus_steps=1, consensus_step=1.0, beta=None,
               beta_rule="constant", spread=0.0):
    """Algorithm 2 of Chen et al. (2021) agent by agent: v_i = P_{x_i}(y_i); x_i <- R_{x_i}(alpha
    P_{x_i}(sum_j (W^t)_ij x_j - x_i) - beta v_i); y_i <- sum_j (W^t)_ij y_j + g_i(x_i^+) - g_i(x_i),
    y_i = g_i(x_1) the full local gradient at the start, g_i(x_i^+) on the batch of draw (t, 0);
    returns the projected ambient means."""
    assert K == 1
    ops = ops or single_point_ops(problem.manifold)
    W = _decentralised_W(problem, graph, weights)
    S = problem.n_agents
    x = _starts(ops, x1, S, spread)
    g = [ops.euclidean_to_riemannian_gradient(x[i], problem.local_egrad(x[i][None], np.array([i]))[0])
         for i in range(S)]
    y = [gi.copy() for gi in g]
    out = [x1]
    for t in range(rounds):
        agents = sampler.participants()
        batches = own_batches(sampler, agents, t, 0)
        mixed_x = _consensus_loop(W, x, consensus_steps)
        mixed_y = _consensus_loop(W, y, consensus_steps)
        b = _beta(step_size, beta, beta_rule, t)
        new_x, new_g = [], []
        for i in range(S):
            cons = ops.euclidean_to_riemannian_gradient(x[i], mixed_x[i] - x[i])
            v = ops.euclidean_to_riemannian_gradient(x[i], y[i])
            new_x.append(ops.retraction(x[i], consensus_step * cons - b * v))
            new_g.append(_agent_grad(problem, ops, new_x[i], i, batches[i]))
        y = [mixed_y[i] + new_g[i] - g[i] for i in range(S)]
        x, g = new_x, new_g
        out.append(_projected_mean(ops, x))
    return out


# ---- streaming and online decentralised strategies (diffusion, DPRGD) --------------------
def _step_batches(problem, sampler, agents, t):
    """Agent by agent: a streaming problem's samples of step t (``stream_batch``), else each
    agent's own draw (t, 0)."""
    if hasattr(problem, "stream_batch"):
        return [problem.stream_batch(t)[j] for j in agents]
    return own_batches(sampler, agents, t, 0)


def _start_stack(problem, x1, spread=0.0):
    """Each agent's start: the problem's ``initial_stack()`` or x1 (these loops have no
    spread start)."""
    assert spread == 0.0, "the streaming reference loops start every agent at x1"
    if hasattr(problem, "initial_stack"):
        return [np.array(p) for p in problem.initial_stack()]
    return [x1.copy() for _ in range(problem.n_agents)]


def _karcher(problem, points, out):
    """The network mean: the Karcher mean of a list of points (rfl.manifolds.frechet, tested
    against closed forms in tests/test_frechet_mean.py), started from the previous mean
    (``out[-1]`` after the first round) as the strategies start it: on Gr(n, p) the mean's
    representative depends on where the iteration starts."""
    from rfl.algorithms.consensus import karcher_mean
    return karcher_mean(problem.manifold, np.array(points), start=out[-1] if len(out) > 1 else None)


def _weighted_log_sum(pw, x, points, weights):
    """sum_j w_j Log_x(y_j) over the nonzero weights, one neighbour at a time."""
    out = np.zeros_like(x)
    for w, y in zip(weights, points):
        if w != 0.0:
            out = out + w * pw.log(x, y)
    return out


@reference_loop("diffusion")
def diffusion_loop(problem, x1, step_size, K, rounds, sampler, ops=None, graph="ring",
                   weights="metropolis_hastings", consensus_steps=1, consensus_step=1.0, beta=None,
                   beta_rule="constant", spread=0.0):
    """Wang et al. (2025) Algorithm 1 agent by agent: psi_k = R_{w_k}(-mu grad f_k(w_k));
    w_k = R_{psi_k}(gamma sum_l (W^t)_kl Log_{psi_k} psi_l); W^t as a matrix power; returns
    the Karcher means of the agents' points."""
    assert K == 1
    ops = ops or single_point_ops(problem.manifold)
    pw = PointwiseOps(problem.manifold)
    Wt = np.linalg.matrix_power(_decentralised_W(problem, graph, weights), consensus_steps)
    S = problem.n_agents
    x = _start_stack(problem, x1)
    out = [x1]
    for t in range(rounds):
        agents = sampler.participants()
        batches = _step_batches(problem, sampler, agents, t)
        mu = _beta(step_size, beta, beta_rule, t)
        psi = [ops.retraction(x[k], -mu * _agent_grad(problem, ops, x[k], k, batches[k])) for k in range(S)]
        x = [ops.retraction(psi[k], consensus_step * _weighted_log_sum(pw, psi[k], psi, Wt[k]))
             for k in range(S)]
        out.append(_karcher(problem, x, out))
    return out


@reference_loop("noncooperative")
def noncooperative_loop(problem, x1, step_size, K, rounds, sampler, ops=None, beta=None,
                        beta_rule="constant", spread=0.0, **_graph):
    """Each agent alone: w_k = R_{w_k}(-mu grad f_k(w_k)); returns the Karcher means."""
    assert K == 1
    ops = ops or single_point_ops(problem.manifold)
    S = problem.n_agents
    x = _start_stack(problem, x1)
    out = [x1]
    for t in range(rounds):
        agents = sampler.participants()
        batches = _step_batches(problem, sampler, agents, t)
        mu = _beta(step_size, beta, beta_rule, t)
        x = [ops.retraction(x[k], -mu * _agent_grad(problem, ops, x[k], k, batches[k])) for k in range(S)]
        out.append(_karcher(problem, x, out))
    return out


@reference_loop("fusion_centre")
def fusion_centre_loop(problem, x1, step_size, K, rounds, sampler, ops=None, beta=None,
                       beta_rule="constant", spread=0.0, **_graph):
    """One point: w = R_w(-mu (1/S) sum_k grad f_k(w)); returns w after each step (all agents
    hold it, so it is their Karcher mean)."""
    assert K == 1
    ops = ops or single_point_ops(problem.manifold)
    S = problem.n_agents
    w = _start_stack(problem, x1)[0]
    out = [x1]
    for t in range(rounds):
        agents = sampler.participants()
        batches = _step_batches(problem, sampler, agents, t)
        mu = _beta(step_size, beta, beta_rule, t)
        g = sum(_agent_grad(problem, ops, w, k, batches[k]) for k in range(S)) / S
        w = ops.retraction(w, -mu * g)
        out.append(w)
    return out


def _online_loop(problem, x1, step_size, rounds, sampler, ops, graph, weights, consensus_steps,
                 beta, beta_rule, consensus):
    ops = ops or single_point_ops(problem.manifold)
    Wt = np.linalg.matrix_power(_decentralised_W(problem, graph, weights), consensus_steps)
    S = problem.n_agents
    x = _start_stack(problem, x1)
    out = [x1]
    for t in range(rounds):
        agents = sampler.participants()
        batches = _step_batches(problem, sampler, agents, t)
        eta = _beta(step_size, beta, beta_rule, t)
        plus = [consensus(x, k, Wt[k]) for k in range(S)]
        x = [ops.retraction(plus[k], -eta * _agent_grad(problem, ops, plus[k], k, batches[k]))
             for k in range(S)]
        out.append(_karcher(problem, x, out))
    return out


@reference_loop("dprgd")
def dprgd_loop(problem, x1, step_size, K, rounds, sampler, ops=None, graph="ring",
               weights="metropolis_hastings", consensus_steps=1, consensus_step=1.0, beta=None,
               beta_rule="constant", spread=0.0):
    """Chen & Sun's DPRGD agent by agent: x_i^+ the weighted Fréchet mean of the neighbours
    (weights (W^t)_i, ``rfl.manifolds.frechet.karcher_mean`` from x_i), then
    x_i = R_{x_i^+}(-eta grad f_i(x_i^+)); returns the Karcher means."""
    from rfl.manifolds.frechet import karcher_mean
    assert K == 1
    m = problem.manifold

    def exact(x, k, w):
        nz = np.flatnonzero(w)
        return karcher_mean(m, np.array([x[j] for j in nz])[None], w[nz][None], x0=x[k][None],
                            tol=1e-14, max_iter=5000)[0]

    return _online_loop(problem, x1, step_size, rounds, sampler, ops, graph, weights,
                        consensus_steps, beta, beta_rule, exact)


@reference_loop("idprgd")
def idprgd_loop(problem, x1, step_size, K, rounds, sampler, ops=None, graph="ring",
                weights="metropolis_hastings", consensus_steps=1, consensus_step=1.0, beta=None,
                beta_rule="constant", spread=0.0):
    """iDPRGD agent by agent: x_i^+ = Exp_{x_i}(gamma sum_j (W^t)_ij Log_{x_i} x_j), then the
    gradient step at x_i^+; returns the Karcher means."""
    assert K == 1
    pw = PointwiseOps(problem.manifold)

    def one_step(x, k, w):
        return pw.exp(x[k], consensus_step * _weighted_log_sum(pw, x[k], x, w))

    return _online_loop(problem, x1, step_size, rounds, sampler, ops, graph, weights,
                        consensus_steps, beta, beta_rule, one_step)

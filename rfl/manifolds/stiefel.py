"""The Stiefel manifold St(p, n) = {X in R^{n x p} : X^T X = I_p}, a Riemannian
submanifold of R^{n x p} (paper Appendix E, 'Stiefel manifold').

Points and tangent vectors: ``(S, n, p)``. T_X St = {X Omega + X_perp K :
Omega^T = -Omega}, X_perp: ``(n, n - p)`` an orthonormal basis of span(X)^perp.
"""

from __future__ import annotations

import numpy as np

from .base import EmbeddedSubmanifold


def _t(a: np.ndarray) -> np.ndarray:
    return a.swapaxes(-1, -2)


def _sym(a: np.ndarray) -> np.ndarray:
    return 0.5 * (a + _t(a))


def _skew(a: np.ndarray) -> np.ndarray:
    return 0.5 * (a - _t(a))


#: ``_polar`` uses the Gram matrix when its eigenvalues are within this ratio (condition number
#: of ``a`` at most 4, so the factor is orthonormal to a few eps); the thin SVD otherwise
_POLAR_GRAM_RATIO = 1.0 / 16.0


def _polar_svd(a: np.ndarray) -> np.ndarray:
    u, _, vt = np.linalg.svd(a, full_matrices=False)
    return u @ vt


def _gram_inv_sqrt(c: np.ndarray):
    """C^{-1/2} of Gram matrices ``c: (..., p, p)`` and the mask of those whose eigenvalues are
    within the ratio ``_POLAR_GRAM_RATIO`` (where C^{-1/2} is used; the others hold garbage).

    p = 2 in closed form (MBCFSti's St(2, 25)): with s = sqrt(det C) and t = sqrt(tr C + 2 s),
    sqrt(C) = (C + s I) / t, whose inverse is [[c22 + s, -c12], [-c12, c11 + s]] / (s t)
    (det(C + s I) = s t^2). Any other p: C = mu N with mu = tr(C) / p; N within
    ``_NEAR_IDENTITY`` of I (a retraction step's Gram matrix I + V^T V) by Newton-Schulz
    (``_sqrt_pair_near_identity``; always within the ratio), the others from one ``eigh``.
    """
    if c.shape[-1] == 2:
        p, b, q = c[..., 0, 0], c[..., 0, 1], c[..., 1, 1]
        tr = p + q
        h = np.hypot(0.5 * (p - q), b)                                 # eigenvalues tr/2 -+ h
        good = 0.5 * tr - h > _POLAR_GRAM_RATIO * (0.5 * tr + h)
        with np.errstate(invalid="ignore", divide="ignore"):
            s = np.sqrt(p * q - b * b)
            f = 1.0 / (s * np.sqrt(tr + 2.0 * s))
        m = np.empty_like(c)
        m[..., 0, 0] = (q + s) * f
        m[..., 1, 1] = (p + s) * f
        m[..., 0, 1] = m[..., 1, 0] = -b * f
        return m, good
    # C^{-1/2} = mu^{-1/2} N^{-1/2}; N's eigenvalues lie in [1/2, 3/2] when near: ratio >= 1/3
    mu = np.trace(c, axis1=-2, axis2=-1) / c.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        _, m, near = _sqrt_pair_near_identity(c / mu[..., None, None])
        m *= (1.0 / np.sqrt(mu))[..., None, None]
    if np.all(near):
        return m, near
    far = ~near
    w, v = np.linalg.eigh(c[far])                                      # (k, p), (k, p, p)
    good = near.copy()
    good[far] = w[..., 0] > _POLAR_GRAM_RATIO * w[..., -1]
    w = np.where(good[far][..., None], w, 1.0)
    m[far] = (v / np.sqrt(w)[..., None, :]) @ _t(v)
    return m, good


#: ``_sqrt_pair_near_identity`` iterates on the matrices within this Frobenius distance of I
#: (which bounds the spectral distance; the iteration converges for any distance below 1)
_NEAR_IDENTITY = 0.5
#: its steps: from distance 1/2 the residual ||I - Z Y|| falls below eps in six
_NEWTON_SCHULZ_STEPS = 8


def _sqrt_pair_near_identity(m: np.ndarray):
    """(M^{1/2}, M^{-1/2}, near) for symmetric positive definite ``m: (..., p, p)``, by the
    coupled Newton-Schulz iteration (Higham, "Functions of Matrices", 2008, eq. (6.35)):

        Y_0 = M, Z_0 = I,  T_k = (3 I - Z_k Y_k) / 2,  Y_{k+1} = Y_k T_k,  Z_{k+1} = T_k Z_k,

    Y_k -> M^{1/2} and Z_k -> M^{-1/2} quadratically while ||I - M|| < 1 (the residual
    I - Z_k Y_k about squares at each step). Batched p x p products only: a retraction step's
    Gram matrix I + V^T V, or X^T Y of nearby points, takes 2-4 steps, against one LAPACK
    eigh or SVD per matrix (2.4 and 4.5 ms for 1000 of 5 x 5). ``near``: the matrices within
    ``_NEAR_IDENTITY`` of I in the Frobenius norm, whose residual reached a few eps; the
    others (and NaN input) hold garbage."""
    p = m.shape[-1]
    eye = np.eye(p)
    near = np.linalg.norm(m - eye, axis=(-2, -1)) <= _NEAR_IDENTITY
    tol = 8.0 * p * np.finfo(float).eps
    y, z = m.copy(), np.broadcast_to(eye, m.shape).copy()
    for _ in range(_NEWTON_SCHULZ_STEPS):
        r = eye - z @ y                                                # residual I - Z Y
        res = np.linalg.norm(r, axis=(-2, -1))
        if not np.any(near & (res > tol)):
            break
        r *= 0.5
        r += eye                                                       # T = (3 I - Z Y) / 2
        y = y @ r
        z = r @ z
    else:
        res = np.linalg.norm(eye - z @ y, axis=(-2, -1))
    return y, z, near & (res <= tol)


def _polar(a: np.ndarray) -> np.ndarray:
    """Orthonormal polar factor P Q^T of the thin SVD a = P S Q^T: ``(..., n, p)``, n >= p.

    Computed as a (a^T a)^{-1/2} from the p x p Gram matrix (the same matrix:
    a (a^T a)^{-1/2} = P S Q^T Q S^{-1} Q^T = P Q^T; ``_gram_inv_sqrt``), which costs a p x p
    problem per agent instead of an n x p SVD. Its rounding error in Q^T Q - I grows like
    eps cond(a)^2, so matrices whose Gram eigenvalues spread by more than 1/_POLAR_GRAM_RATIO
    (cond(a) > 4) take the SVD instead. Retraction steps are far from that: for V in T_X St,
    (X + V)^T (X + V) = I + V^T V.
    """
    p = a.shape[-1]
    if p == 1:
        return a / np.linalg.norm(a, axis=-2, keepdims=True)
    m, good = _gram_inv_sqrt(_t(a) @ a)
    q = a @ m
    if not np.all(good):
        q[~good] = _polar_svd(a[~good])
    return q


def _qf(a: np.ndarray) -> np.ndarray:
    """Q factor of a = Q R with diag(R) > 0: ``(..., n, p)``."""
    q, r = np.linalg.qr(a)
    s = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    s[s == 0] = 1.0
    return q * s[..., None, :]


def complement_transport(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Y_perp X_perp^T w, with Y_perp the orthonormal basis of span(Y)^perp closest to X_perp.

    x, y: (..., n, p) orthonormal; w: (..., n, k) with X^T w = 0. Y_perp is the polar factor of
    (I - Y Y^T) X_perp, so the map does not depend on which basis X_perp is used, is exactly
    the identity when Y = X, is continuous in Y, and is an isometry from span(X)^perp onto
    span(Y)^perp (Y_perp X_perp^T is a partial isometry). In thin form: with the thin SVD
    (I - X X^T) Y = Z diag(s) V^T (s: sines of the principal angles between X and Y),
    X_perp (I - W W^T)^{-1/2} X_perp^T = (I - X X^T) + Z diag((1 - s^2)^{-1/2} - 1) Z^T, so

        Y_perp X_perp^T w = (I - Y Y^T) (w + Z diag((1 - s^2)^{-1/2} - 1) Z^T w).

    A basis from a Householder QR of each point (Y_perp = trailing columns of qr(Y)) would
    also give an isometry, but it jumps wherever a Householder pivot changes sign, so two
    nearby points can get a transport far from the identity (measured: 0.3-0.8 errors for
    steps of 1e-2 on 0.3-0.6% of random pairs), which corrupts a sum of transported vectors.

    Computed without the n x p SVD: X^T Y = P diag(c) V^T (c: the cosines, V: the same right
    singular vectors as those of Ytil = (I - X X^T) Y, since Ytil^T Ytil = I - Y^T X X^T Y), so
    Z = Ytil V diag(1/s) and Z diag(d) Z^T = Ytil V diag(d / s^2) V^T Ytil^T with
    d / s^2 = 1 / (c (1 + c)): no cancellation in d for small angles (where Z is undefined but
    d / s^2 -> 1/2). V diag(1 / (c (1 + c))) V^T = (M^{1/2} + M)^{-1} with M = (X^T Y)^T (X^T Y)
    = V diag(c^2) V^T: for nearby points (M within ``_NEAR_IDENTITY`` of I, every transport of
    a local step) M^{1/2} comes from batched Newton-Schulz products; the others take one p x p
    SVD of X^T Y, c read off directly (accurate near pi/2).
    """
    a = _t(x) @ y                                                      # (..., p, p)
    ytil = y - x @ a                                                   # (..., n, p)
    # V diag(d / s^2) V^T = (M^{1/2} + M)^{-1} with M = A^T A = V diag(c^2) V^T: for nearby
    # points (M near I) from Newton-Schulz's M^{1/2}, the others from the SVD of A
    mm = _t(a) @ a
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        root, _, near = _sqrt_pair_near_identity(mm)
    if np.all(near):
        g = np.linalg.inv(root + mm)
    else:
        g = np.empty_like(mm)
        g[near] = np.linalg.inv(root[near] + mm[near])
        far = ~near
        _, c, vt = np.linalg.svd(a[far])                               # cosines, V^T
        c = np.maximum(c, np.sqrt(np.finfo(float).tiny))
        g[far] = _t(vt) @ (vt / (c * (1.0 + c))[..., :, None])
    w = w + ytil @ (g @ (_t(ytil) @ w))
    return w - y @ (_t(y) @ w)


class Stiefel(EmbeddedSubmanifold):
    """St(p, n) with the embedded metric <U, V>_X = tr(U^T V)  (Appendix E); no closed-form Log."""

    name = "stiefel"
    RETRACTIONS = ("polar", "qr")
    TRANSPORTS = ("parallelization", "projection")
    ISOMETRIC_TRANSPORTS = ("parallelization",)

    def __init__(self, n: int, p: int, retraction: str | None = None,
                 transport: str | None = None):
        if not 1 <= p <= n:
            raise ValueError(f"need 1 <= p <= n, got n={n}, p={p}")
        super().__init__((n, p), n * p - p * (p + 1) // 2, retraction, transport)
        self.n, self.p = n, p

    @classmethod
    def examples(cls):
        """St(2, 25) (MBCFSti) and St(2, 6) (its smoke size), St(3, 64) and St(2, 64) (kPCA),
        p = 1 and p = 2 (closed-form polar factors), p = 3 and the square St(3, 3) = O(3)."""
        return [cls(25, 2, "polar", "parallelization"), cls(25, 2, "qr", "projection"),
                cls(6, 2, "polar", "parallelization"), cls(64, 3, "polar", "parallelization"),
                cls(64, 2, "polar", "parallelization"), cls(25, 1, "polar", "parallelization"),
                cls(5, 1, "qr", "projection"), cls(7, 3, "polar", "projection"),
                cls(7, 3, "qr", "parallelization"), cls(3, 3, "polar", "parallelization")]

    def projection(self, x, u):
        """P_X(U) = U - X sym(X^T U)."""
        return u - x @ _sym(_t(x) @ u)

    def retraction_polar(self, x, u):
        """R_X(V) = (X + V)(I_p + V^T V)^{-1/2}  (Appendix E, polar retraction).

        For V in T_X St this is the orthonormal polar factor of X + V, computed
        from its thin SVD (which keeps X^T X = I to machine precision).
        """
        return _polar(x + u)

    def retraction_qr(self, x, u):
        """R_X(V) = qf(X + V), the Q factor with positive diagonal R."""
        return _qf(x + u)

    def exp(self, x, u):
        """Exp_X(V) = [X, V] expm([[A, -V^T V], [I, A]]) [I; 0] expm(-A), A = X^T V
        (Edelman, Arias & Smith 1998, eq. 2.45)."""
        # imported here, not at the top: only Exp needs scipy (~0.1 s per process)
        import scipy.linalg

        p = self.p
        a = _t(x) @ u
        eye = np.broadcast_to(np.eye(p), a.shape)
        blk = np.block([[a, -_t(u) @ u], [eye, a]])
        top = scipy.linalg.expm(blk)[..., :, :p]
        return np.concatenate([x, u], axis=-1) @ top @ scipy.linalg.expm(-a)

    def transport_parallelization(self, x, y, u):
        """Isometric transport by parallelization (Huang-Absil-Gallivan 2018;
        Appendix E, T(V) = B_Y B_X^dagger V):

        T(X Omega + X_perp K) = Y Omega + Y_perp K, i.e.
        T(V) = Y skew(X^T V) + Y_perp (X_perp^T V)  (= Y X^T V + Y_perp X_perp^T V on T_X St),

        with the bases B_X, B_Y of the tangent spaces built from X_perp and the basis Y_perp of
        span(Y)^perp closest to it (see ``complement_transport``): isometric, exactly the
        identity at Y = X, and continuous in (X, Y).
        """
        normal = u - x @ (_t(x) @ u)
        return y @ _skew(_t(x) @ u) + complement_transport(x, y, normal)

    def inverse_retraction_polar(self, x, y):
        """R_X^{-1}(Y) of the polar retraction (Kaneko, Fiori & Tanaka 2013): V = Y M - X, where
        M (p x p, symmetric positive definite) solves the Lyapunov equation
        (X^T Y) M + M (X^T Y)^T = 2 I_p, which is X^T V + V^T X = 0 for V = Y M - X.
        x, y: (S, n, p) -> (S, n, p)."""
        a = x.swapaxes(-1, -2) @ y                                   # (S, p, p)
        p = self.p
        basis = np.eye(p * p).reshape(p * p, p, p)                   # E_kl, row-major
        images = a[:, None] @ basis[None] + basis[None] @ a.swapaxes(-1, -2)[:, None]
        lyap = images.reshape(a.shape[0], p * p, p * p).swapaxes(-1, -2)   # columns: L(E_kl)
        rhs = np.broadcast_to(2.0 * np.eye(p).reshape(p * p), (a.shape[0], p * p))
        m = np.linalg.solve(lyap, rhs[..., None])[..., 0].reshape(-1, p, p)
        return y @ m - x

    def inverse_retraction_qr(self, x, y):
        """R_X^{-1}(Y) of the QR retraction R_X(V) = qf(X + V) (the inverse Manopt's
        ``stiefelfactory`` and Fed_manifold use; Kaneko, Fiori & Tanaka 2013, for the
        derivation): x, y (S, n, p) -> V (S, n, p).

        Y = qf(X + V) means X + V = Y R with R upper triangular, diag(R) > 0, so V = Y R - X,
        and V is tangent at X exactly when X^T V + V^T X = 0, i.e. with M = X^T Y (p x p)

            M R + R^T M^T = 2 I_p.

        Both sides are symmetric: p(p+1)/2 equations for the p(p+1)/2 unknowns R_ij, i <= j.
        Entry (i, j), i <= j, reads sum_{k<=j} M_ik R_kj + sum_{k<=i} M_jk R_ki = 2 delta_ij:
        for i < j the second sum holds only columns i < j of R, so column j solves the j x j
        system

            A_j r_j = b_j,   A_j = M[:j, :j] with its last row doubled (the i = j equation has
            column j in both sums),   b_j = 2 e_j - [(M R)_{j,i}]_{i<j}, 0 at i = j,

        one column after the other (p small systems per point, batched over S). Y = R_X(V)
        gives back V to rounding; the systems are regular near Y = X (M = I: A_j is the
        identity with a 2 in its corner)."""
        m = _t(x) @ y                                                # (S, p, p) M = X^T Y
        S, p = m.shape[0], self.p
        r = np.zeros_like(m)
        for j in range(1, p + 1):
            a = m[:, :j, :j].copy()                                  # A_j
            a[:, j - 1, :] += m[:, j - 1, :j]
            b = np.zeros((S, j))
            b[:, j - 1] = 2.0
            if j > 1:                                                # (M R)_{j, i}, columns i < j
                b[:, :j - 1] -= np.einsum("sk,ski->si", m[:, j - 1, :j - 1], r[:, :j - 1, :j - 1])
            r[:, :j, j - 1] = np.linalg.solve(a, b[..., None])[..., 0]
        return y @ r - x

    def nearest_point(self, x):
        """P_M(X) = U V^T from the thin SVD X = U Sigma V^T: the nearest point of St(p, n) in
        the Frobenius norm (the orthonormal polar factor; unique when X has full rank p)."""
        return _polar(x)

    def random_point(self, rng, n=1):
        return _qf(rng.standard_normal((n, self.n, self.p)))

    def distance_from_manifold(self, x):
        """||X^T X - I_p||_F."""
        return np.linalg.norm(_t(x) @ x - np.eye(self.p), axis=(-2, -1))

    def to_pymanopt(self):
        from pymanopt.manifolds import Stiefel as PStiefel
        return PStiefel(self.n, self.p, retraction=self.retraction_name)

"""Synthetic data of CFMSPD (paper Section 5.1, following [HHJM24]).

Each sample is drawn from the Wishart distribution W(I_d/d, d) (scale matrix
I_d/d, d degrees of freedom): Z = G G^T with G a d x d matrix of i.i.d.
N(0, 1/d) entries, i.e. the sum of d outer products g g^T with g ~ N(0, I_d/d).
Hence E[Z] = d * I_d/d = I_d, Var[Z_kk] = 2/d and Var[Z_kl] = 1/d (k != l).

"with a diameter D_W": a draw is kept only if its affine-invariant distance to
I_d, ||logm(Z)||_F = sqrt(sum_k log(lambda_k(Z))^2), is below D_W (rejection
sampling, drawn in vectorised batches until S*N samples are accepted). With
d = 2 and d degrees of freedom Z is often near-singular (log lambda_min very
negative), so the acceptance rate is low: about 9.7% for d = 2, D_W = 1
(0.9% for d = 3; essentially 0 for d >= 10, where generation fails loudly).

"We generate S x N data points which then are uniformly partitioned into S
agents": the accepted samples are i.i.d., so splitting them in the order drawn
into S consecutive groups of N is a uniformly random equal-size partition in
distribution.
"""

from __future__ import annotations

import functools

import numpy as np


def wishart(rng: np.random.Generator, d: int, n: int) -> np.ndarray:
    """``n`` draws of W(I_d/d, d): ``(n, d, d)``, Z = G G^T with G_kl ~ N(0, 1/d) i.i.d."""
    g = rng.standard_normal((n, d, d)) / np.sqrt(d)
    z = g @ g.swapaxes(-1, -2)
    return 0.5 * (z + z.swapaxes(-1, -2))            # exactly symmetric in floating point


def distance_to_identity(z: np.ndarray) -> np.ndarray:
    """||logm(Z)||_F for SPD ``z: (..., d, d)``; +inf where Z is not numerically positive definite."""
    w = np.linalg.eigvalsh(z)
    out = np.full(w.shape[:-1], np.inf)
    ok = np.all(w > 0, axis=-1)
    out[ok] = np.sqrt(np.sum(np.log(w[ok]) ** 2, axis=-1))
    return out


@functools.lru_cache(maxsize=32)
def acceptance_rate(d: int, D_W: float) -> float:
    """Fraction of W(I_d/d, d) draws with ||logm Z||_F < D_W, from a fixed pilot of 20000 draws
    (``default_rng(0)``, deterministic): how many draws ``generate`` needs, known up front."""
    with np.errstate(all="ignore"):
        z = wishart(np.random.default_rng(0), d, 20000)
        return float(np.mean(distance_to_identity(z) < D_W))


def generate(rng: np.random.Generator, d: int, S: int, N: int, D_W: float = 1.0,
             max_draws: int = 10_000_000) -> dict[str, np.ndarray]:
    """Return ``{"Z": (S, N, d, d)}``, agent i's SPD samples in ``Z[i]``.

    Rejection sampling of W(I_d/d, d) restricted to {Z : ||logm Z||_F < D_W};
    raises RuntimeError if ``max_draws`` draws do not give S*N accepted samples.
    """
    if d < 1 or S < 1 or N < 1:
        raise ValueError(f"need d, S, N >= 1, got d={d}, S={S}, N={N}")
    if not D_W > 0:
        raise ValueError(f"D_W must be positive, got {D_W}")
    need = S * N
    accepted: list[np.ndarray] = []
    n_acc = n_drawn = 0
    batch = max(1024, 4 * need)
    while n_acc < need:
        if n_drawn >= max_draws:
            raise RuntimeError(
                f"rejection sampling of W(I/{d}, {d}) within D_W={D_W} of I accepted only "
                f"{n_acc} of {need} samples in {n_drawn} draws")
        z = wishart(rng, d, batch)
        keep = z[distance_to_identity(z) < D_W]
        accepted.append(keep)
        n_acc += keep.shape[0]
        n_drawn += batch
        if n_acc < need:                              # size the next batch from the observed rate
            rate = max(n_acc, 1) / n_drawn
            batch = int(min(max(1024, 1.2 * (need - n_acc) / rate), 1_000_000))
    Z = np.concatenate(accepted)[:need].reshape(S, N, d, d)
    return {"Z": np.ascontiguousarray(Z)}

"""Cross-check of rfl's RFedAvg and RFedSVRG against Li & Ma's own code (Fed_manifold,
``Stiefel_fedmanifold.py``: ``fedprox`` with mu = 0 and ``fedlin`` with mu = 0) on its kPCA
instance: n = 10 agents, A_i = G_i G_i^T with G_i (d x p) standard normal, d = 20, p = 15,
r = 5, the QR retraction and its inverse, the projection transport, every agent in every
round (K = n), full local gradients.

The peer's code is not part of rfl and is not copied here: the script reads it from a git
directory (``--peer``, e.g. the snapshot of github:JasonJiaxiangLi/Fed_manifold) into a
temporary folder and runs it in a separate interpreter with pymanopt 0.2.x (its
``pymanopt.tools.multi``) from a side folder (``--pymanopt02``; install it with
``pip install --no-deps --target /tmp/pymanopt02 pymanopt==0.2.5``). Without either the
script says so and exits 0 (skipped).

The peer's f_i(X) = -tr(X^T A_i X)/2 with A_i a *sum* of p outer products; rfl's kPCA agent
holds samples z_ij and A_i = (1/N) sum_j z_ij z_ij^T, so the rows of Z_i are sqrt(p) times the
columns of G_i (N = p): the two A_i, costs, gradients and steps are then the same. Both runs
start at the peer's X_0 with the peer's step eta and tau local steps per round; the script
prints max |X_t(rfl) - X_t(peer)| per round and the largest. Only mu = 0 is compared: the
peer's proximal term (and its Karcher mean) carry a sign error.

    python docs/crosschecks/fed_manifold_kpca.py [--rounds 30] [--tau 3] [--eta 1e-3]
    python docs/crosschecks/fed_manifold_kpca.py --time 50,200,200,5 [--rounds 10]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

DEFAULT_PEER = "/work/.mirror/JasonJiaxiangLi+Fed_manifold/repo"
PEER_FILES = ["Stiefel_fedmanifold.py", "manifolds/__init__.py", "manifolds/manifold.py"] + [
    f"manifolds/{m}.py" for m in ("complexcircle", "euclidean", "fixed_rank", "grassmann", "oblique",
                                  "product", "psd", "rotations", "sphere", "stiefel")]

#: run in the peer's interpreter: its problem, X_0 and the server points of both methods
PEER_DRIVER = r"""
import json, random, sys
import numpy as np
import Stiefel_fedmanifold as F
args = json.loads(sys.argv[1])
np.random.seed(args["seed"]); random.seed(args["seed"])
n, d, p, r = args["n"], args["d"], args["p"], args["r"]
G = np.random.normal(size=(n, d, p))
A = np.einsum("ikp,ilp->ikl", G, G)
pca = F.problem_PCA(n, n, d, p, r=r, A=A)
x0 = pca.manifold.rand()
out = {"G": G.tolist(), "x0": x0.tolist()}
if args.get("time"):
    # seconds per round of the peer's own loop (its time_list), less its per-round metrics
    # (f, principal angles, gradient norm), which rfl's rounds do not compute
    import time
    from scipy.linalg import subspace_angles
    for method in ("fedprox", "fedlin"):
        best = float("inf")
        for _ in range(args["repeats"]):
            res = getattr(pca, method)(outer_iter=args["rounds"], inner_iter=args["tau"], mu=0.0,
                                       eta=args["eta"], x0=x0.copy())
            tic = time.perf_counter()
            for _ in range(args["rounds"]):
                pca.f(x0); sum(subspace_angles(x0, pca.x_star))
                np.linalg.norm(pca.manifold.proj(x0, pca.grad_f(x0)), "fro")
            metrics = (time.perf_counter() - tic) / args["rounds"]
            best = min(best, res[3][-1] / args["rounds"] - metrics)
        out["seconds_" + method] = best
    out.pop("G"); out.pop("x0")
    print(json.dumps(out))
    sys.exit(0)
for method in ("fedprox", "fedlin"):
    xs = []
    original = pca.tangent_space_mean
    def recording(x, x_list, original=original):
        y, t = original(x, x_list)
        xs.append(np.array(y).tolist())
        return y, t
    pca.tangent_space_mean = recording
    getattr(pca, method)(outer_iter=args["rounds"], inner_iter=args["tau"], mu=0.0, eta=args["eta"], x0=x0.copy())
    pca.tangent_space_mean = original
    out[method] = xs
print(json.dumps(out))
"""


def run_peer(peer: Path, pymanopt02: Path, rounds: int, tau: int, eta: float, seed: int,
             size=(10, 20, 15, 5), time=False, repeats=1) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        for f in PEER_FILES:
            text = subprocess.run(["git", f"--git-dir={peer}", "show", f"HEAD:{f}"], check=True,
                                  capture_output=True, text=True).stdout
            (Path(tmp) / f).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / f).write_text(text)
        env = {**os.environ, "PYTHONPATH": f"{pymanopt02}{os.pathsep}{tmp}", "MPLBACKEND": "Agg"}
        res = subprocess.run([sys.executable, "-c", PEER_DRIVER,
                              json.dumps({"rounds": rounds, "tau": tau, "eta": eta, "seed": seed,
                                          "n": size[0], "d": size[1], "p": size[2], "r": size[3],
                                          "time": time, "repeats": repeats})],
                             cwd=tmp, env=env, check=True, capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def run_rfl(G: np.ndarray, x0: np.ndarray, rounds: int, tau: int, eta: float) -> dict:
    from rfl.algorithms import Fixed, RFedAvg, RFedSVRG
    from rfl.problems.kpca import KPCA

    n, d, p = G.shape
    Z = np.sqrt(p) * G.swapaxes(1, 2)                      # (n, N = p, d): (1/N) Z^T Z = G G^T
    problem = KPCA(Z, x0.shape[1], retraction="qr", transport="projection")
    out = {}
    for name, cls in (("fedprox", RFedAvg), ("fedlin", RFedSVRG)):
        alg = cls(problem, Fixed(eta), tau, p, None)       # every agent, full local batches
        out[name] = [np.array(x, copy=True) for _, x, _ in alg.iterate(x0, rounds, np.random.default_rng(0))]
    return out


def time_rfl(size, rounds: int, tau: int, eta: float, seed: int, repeats: int) -> dict:
    """Seconds per round of rfl's RFedAvg and RFedSVRG on the peer's problem of ``size``
    (n, d, p, r), every agent, full local batches (best of ``repeats``)."""
    import time

    from rfl.algorithms import Fixed, RFedAvg, RFedSVRG
    from rfl.problems.kpca import KPCA

    n, d, p, r = size
    G = np.random.default_rng(seed).standard_normal((n, d, p))
    x0 = np.linalg.qr(np.random.default_rng(seed + 1).standard_normal((d, r)))[0]
    problem = KPCA(np.sqrt(p) * G.swapaxes(1, 2), r, retraction="qr", transport="projection")
    out = {}
    for name, cls in (("fedprox", RFedAvg), ("fedlin", RFedSVRG)):
        best = float("inf")
        for _ in range(repeats):
            alg = cls(problem, Fixed(eta), tau, p, None)
            tic = time.perf_counter()
            for _ in alg.iterate(x0, rounds, np.random.default_rng(0)):
                pass
            best = min(best, (time.perf_counter() - tic) / rounds)
        out["seconds_" + name] = best
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer", default=os.environ.get("FED_MANIFOLD_GIT", DEFAULT_PEER))
    ap.add_argument("--pymanopt02", default=os.environ.get("PYMANOPT02", "/tmp/pymanopt02"))
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--tau", type=int, default=3)
    ap.add_argument("--eta", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time", metavar="n,d,p,r", default=None,
                    help="instead of comparing iterates, time both codes per round on the peer's "
                         "problem of this size (e.g. 50,200,200,5), one BLAS thread each")
    ap.add_argument("--repeats", type=int, default=3, help="with --time: best of this many runs")
    args = ap.parse_args(argv)
    peer, side = Path(args.peer), Path(args.pymanopt02)
    if not (peer / "HEAD").exists() or not (side / "pymanopt" / "tools" / "multi.py").exists():
        print(f"skipped: needs the Fed_manifold git directory ({peer}) and pymanopt 0.2.x in {side}")
        return 0
    if args.time:
        size = tuple(int(v) for v in args.time.split(","))
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = "1"
        theirs = run_peer(peer, side, args.rounds, args.tau, args.eta, args.seed, size, True, args.repeats)
        ours = time_rfl(size, args.rounds, args.tau, args.eta, args.seed, args.repeats)
        print(f"size n, d, p, r = {size}; {args.rounds} rounds, tau = {args.tau}, every agent, "
              f"full local batches; seconds per round (best of {args.repeats})")
        for name, label in (("fedprox", "RFedAvg vs fedprox(mu=0)"), ("fedlin", "RFedSVRG vs fedlin(mu=0)")):
            a, b = ours["seconds_" + name], theirs["seconds_" + name]
            print(f"{label}: rfl {a:.4g} s, peer {b:.4g} s, peer / rfl = {b / a:.1f}")
        return 0
    ref = run_peer(peer, side, args.rounds, args.tau, args.eta, args.seed)
    ours = run_rfl(np.array(ref["G"]), np.array(ref["x0"]), args.rounds, args.tau, args.eta)
    worst = 0.0
    for peer_name, label in (("fedprox", "RFedAvg vs fedprox(mu=0)"), ("fedlin", "RFedSVRG vs fedlin(mu=0)")):
        diffs = [float(np.abs(a - np.array(b)).max()) for a, b in zip(ours[peer_name], ref[peer_name])]
        moved = float(np.abs(ours[peer_name][-1] - np.array(ref["x0"])).max())
        print(f"{label}: max |X_t(rfl) - X_t(peer)| per round t=1..{len(diffs)}: "
              + " ".join(f"{v:.1e}" for v in diffs))
        print(f"  largest {max(diffs):.2e}; the iterate moved by {moved:.2e}")
        worst = max(worst, max(diffs))
    print(f"largest difference over both methods and all rounds: {worst:.2e}")
    return 0 if worst < 1e-10 else 1


if __name__ == "__main__":
    sys.exit(main())

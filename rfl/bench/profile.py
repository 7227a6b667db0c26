"""The Dolan-More performance profile (Dolan & More, Math. Program. 91, 2002).

For a measure t_{p,m} > 0 of method m on problem p (smaller is better; +inf when m fails or
cannot run on p), the performance ratio is r_{p,m} = t_{p,m} / min_m' t_{p,m'} and the profile
rho_m(tau) = |{p : r_{p,m} <= tau}| / |P|: the fraction of problems on which m is within a
factor tau of the best. rho_m(1) is the share of problems m wins; rho_m(tau) for large tau the
share it solves at all. A problem no method solves counts for none.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def ratios(t: pd.DataFrame) -> pd.DataFrame:
    """r_{p,m} = t_{p,m} / min_m t_{p,m}: ``t`` problems x methods (> 0, inf allowed); a row
    without a finite value is all inf."""
    t = t.astype(float)
    best = t.min(axis=1)
    r = t.div(best.where(np.isfinite(best)), axis=0)
    return r.fillna(np.inf)


def rho(r: pd.DataFrame, taus) -> pd.DataFrame:
    """rho_m(tau) for each tau of ``taus`` (rows) and method (columns) from ratios ``r``."""
    taus = np.asarray(taus, dtype=float)
    n = len(r.index)
    return pd.DataFrame({m: [(r[m].to_numpy() <= tau).sum() / n for tau in taus] for m in r.columns},
                        index=pd.Index(taus, name="tau"))


def taus_of(r: pd.DataFrame) -> np.ndarray:
    """The steps of the profiles: 1, every finite ratio, and a margin past the largest."""
    finite = r.to_numpy()[np.isfinite(r.to_numpy())]
    top = max(2.0, float(finite.max()) * 2 if finite.size else 2.0)
    return np.unique(np.concatenate([[1.0], finite, [top]]))


def profile_figure(measures: dict[str, pd.DataFrame], labels: dict[str, str], out_pdf) -> dict:
    """One panel per measure (name -> t, problems x method ids): rho_m(tau) against tau on a
    log2 axis, a step per ratio. Writes PDF, PNG and SVG (text kept as text) beside one another
    and returns {measure: rho table} (the plotted numbers)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from pathlib import Path

    from rfl import io

    out = {}
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "rfl-bench",
                                "pdf.fonttype": 42}):
        fig, axes = plt.subplots(1, len(measures), figsize=(5.2 * len(measures), 3.8), squeeze=False)
        for ax, (name, t) in zip(axes[0], measures.items()):
            r = ratios(t)
            taus = taus_of(r)
            prof = rho(r, taus)
            out[name] = prof
            for m in prof.columns:
                ax.step(taus, prof[m], where="post", label=labels.get(m, m))
            ax.set_xscale("log", base=2)
            ax.set_xlim(1, taus[-1])
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlabel(r"$\tau$ (factor of the best)")
            ax.set_ylabel(r"share of problems within $\tau$")
            ax.set_title(name, fontsize=9)
            ax.grid(alpha=0.3)
        axes[0][-1].legend(fontsize=7, loc="lower right")
        fig.suptitle(f"Performance profiles over {len(next(iter(measures.values())).index)} problems",
                     fontsize=10)
        fig.tight_layout()
        base = Path(out_pdf)
        for ext in ("pdf", "png", "svg"):
            with io.atomic_path(base.with_suffix(f".{ext}")) as tmp:
                fig.savefig(tmp, format=ext, dpi=120, metadata={"Date": None} if ext == "svg" else
                            ({"CreationDate": None} if ext == "pdf" else None))
        plt.close(fig)
    return out

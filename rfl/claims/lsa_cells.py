"""The cells of the federated TD(0) / LSA study (Mangold et al., SCAFFLSA) that a claim reads:
the rows of ``paper_tables/fedlsa_bias.csv`` (written by ``rfl lsa``, ``rfl.reporting.lsa``)
that the claim's experiments ran, one per (oracle, setting, N, eta, H), and the statistics
its rules share (Student-t tolerances, rounds still needed by a curve that keeps falling).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from rfl.reporting.lsa import KEY, window_length

from .rule import Evidence, Judgement

#: the study's table, as Evidence.table names it
TABLE = "lsa"


def _key(oracle, setting, N, eta, H, replicas=0) -> tuple:
    return (str(oracle), str(setting), int(N), float(f"{float(eta):.12g}"), int(H), int(replicas))


def experiment_cells(ev: Evidence) -> list[tuple]:
    """(oracle, setting, N, eta, H, replicas) of every cell the claim's experiments run, in
    declaration order: the dataset's oracle (default pool, as ``rfl lsa`` reads it), setting and
    n_agents, the step, every K of its methods and the experiment's replicas (0: one chain). An experiment on another problem, or
    without a fixed step, runs no cell of the study."""
    out = []
    for e in ev.names():
        exp, params = ev.experiment(e), ev.dataset(e).get("params", {})
        if ev.problem(e) != "lsa" or "alpha" not in exp.get("step", {}):
            continue
        Ks = [k for m in exp["methods"] for k in (m["K"] if isinstance(m["K"], list) else [m["K"]])]
        for H in dict.fromkeys(Ks):
            key = _key(params.get("oracle", "pool"), params["setting"], params["n_agents"],
                       exp["step"]["alpha"], H, exp.get("replicas") or 0)
            if key not in out:
                out.append(key)
    return out


def cells(ev: Evidence) -> pd.DataFrame | None:
    """The rows of the study's table that the claim's experiments ran (the table's order), None
    without the table."""
    t = ev.table(TABLE)
    if t is None:
        return None
    mine = set(experiment_cells(ev))
    if len(t):           # tables written before the replicas: one chain per seed
        t = t.assign(replicas=t["replicas"].fillna(0).astype(int) if "replicas" in t else 0)
    keep = [_key(*(r[k] for k in KEY)) in mine for _, r in t.iterrows()]
    return t[np.array(keep, bool)] if len(t) else t


def no_table(verdict: str | None) -> Judgement:
    """The judgement of a claim whose experiments have no row in the study's table: ``verdict``
    (undecided for a claim, None for a measurement), the note and what would decide it."""
    return Judgement(verdict, notes=["No row of `paper_tables/fedlsa_bias.csv` for these experiments."],
                     decide="the study's table `paper_tables/fedlsa_bias.csv` (`rfl lsa`) with these "
                            "experiments' cells")


def where(r, eta: bool = True) -> str:
    """A cell's name in the report: "heterogeneous, N = 10, eta = 10, H = 1000"."""
    return (f"{r['setting']}, N = {int(r['N'])}" + (f", eta = {float(r['eta']):g}" if eta else "")
            + f", H = {int(r['H'])}")


def t_quantile(seeds: float, level: float) -> float:
    """Two-sided ``level`` quantile of Student's t with seeds - 1 degrees of freedom (the
    standard error is itself estimated from ``seeds`` values); NaN with fewer than 2 seeds."""
    if not seeds >= 2:
        return np.nan
    return float(stats.t.ppf(0.5 + level / 2, seeds - 1))


def rounds_to_reach(last: float, rate: float, target: float) -> float:
    """Further rounds for a curve at ``last`` that keeps falling by ``rate`` per round to reach
    ``target``: the least n with last rate^n <= target; 0 if it is there, inf if it does not
    fall (rate >= 1), NaN without finite numbers."""
    if not (np.isfinite(rate) and np.isfinite(last) and np.isfinite(target)):
        return np.nan
    if last <= target:
        return 0.0
    if rate >= 1 or target <= 0:
        return np.inf
    return float(np.ceil(np.log(target / last) / np.log(rate)))


def window_start(rounds: int, tail: float) -> int:
    """The first round of the plateau window of a curve recorded at rounds 0..``rounds``
    (``rfl.reporting.lsa.window_length``)."""
    return int(rounds) - window_length(pd.Series(np.zeros(int(rounds) + 1)), tail) + 1


def rounds_for_window_start(round_: float, tail: float, start: int = 1) -> float:
    """The least number of rounds (from ``start``) whose plateau window starts at ``round_`` or
    later; inf for an infinite ``round_``."""
    if not np.isfinite(round_):
        return np.inf
    if tail >= 1:                    # the window is the whole curve: it starts at round 1
        return float(max(int(start), 1)) if round_ <= 1 else np.inf
    # window_start(r) <= r (1 - tail) + 1.5 and grows with r: no smaller r can do
    r = max(int(start), 1, int(np.floor((round_ - 1.5) / (1 - tail))))
    while window_start(r, tail) < round_:
        r += 1
    return float(r)

"""Federated TD(0) / LSA: FedLSA's plateau against its predicted bias, SCAFFLSA beside it.

Mangold et al. (SCAFFLSA, NeurIPS 2024; slides "Analysis of FedLSA"): with a fixed step eta,
H local steps and every agent in every round, FedLSA's expected iterate converges to
theta* + theta_inf^bias,

    theta_inf^bias = [mean_c (I - Gamma_c)]^{-1} mean_c (I - Gamma_c)(theta*_c - theta*),
    Gamma_c = (I - eta A_bar_c)^H,

while SCAFFLSA's control variates remove that bias. This module reads result files only:
each run's table (``excess_risk`` = ||theta_t - theta*||^2, since F* = 0 for problem ``lsa``)
and its metadata (``spec``: setting, N = n_agents, eta, H = K, algorithm, oracle;
``predictions``: ``fedlsa_bias_sq`` = ||theta_inf^bias||^2 for the run's (eta, H), computed by
the run from the exact A_bar_c, ``rfl.problems.lsa.FederatedLSA.predictions``).

Per (setting, N, eta, H) it reports the predicted ||bias||^2, FedLSA's measured plateau (the
mean over the last ``tail`` fraction of rounds of the seed-mean curve E||theta_t - theta*||^2),
their relative error, SCAFFLSA's error at the last round, and the factor by which SCAFFLSA
lowers FedLSA's error (plateau / SCAFFLSA's last value). ``window_ratio`` (curve at the start
of the tail window / curve at the last round) says whether a curve has levelled off (~1) or is
still decreasing (> 1); ``scafflsa_rate`` is SCAFFLSA's per-round factor over the second half
of the rounds (``tail_rate``, ``RATE_WINDOW``); ``initial`` is E||theta_0 - theta*||^2. With H = 1 the bias is exactly 0 (sum_c eta A_bar_c (theta*_c - theta*)
= eta (b_bar - A_bar theta*) = 0), so no relative error is formed.

Stochastic pool oracle (mini-batches of B transitions of each agent's pool): the run records
FedLSA's exact stationary E||theta - theta*||^2 (``fedlsa_plateau_pool``: bias^2 + variance,
``FederatedLSA.fedlsa_stationary_pool``), which is the predicted plateau of those rows; the
measured plateau's Monte Carlo standard error ``fedlsa_plateau_se`` is the standard deviation
over seeds of each seed's window mean / sqrt(seeds) (seeds are independent; rounds within a
seed are not), and ``z`` = (measured - predicted) / that error. ``transient`` bounds what is
left of the start at the window's first round (initial x rho^round, rho the second-moment
round map's contraction).

Replicas (an experiment's ``replicas: R``, ``rfl.algorithms.replicas``): R independent chains per
seed, a cell of its own (``replicas`` in the key; the figures draw the one-chain cells). Its
plateau is the mean over every replica of every seed of the replica's mean of ||theta_t -
theta*||^2 over the replicas' window (the last half of the rounds, the metadata's
``sq_dist_mean``), its standard error their standard deviation / sqrt(replicas x seeds)
(independent chains), and ``transient`` is taken at that window's first round. ``drift``: the
mean of the seed-mean curve over the second half of the plateau window minus that over its
first half (a curve still falling inside its window shows it beyond its noise).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from rfl import io  # noqa: E402

from .figures import algorithm_label, save_figure  # noqa: E402
from .tables import write_markdown  # noqa: E402

# The study compares FedAvg on the LSA field (FedLSA) with SCAFFLSA.
FEDLSA, SCAFFLSA = "fedavg", "scafflsa"
FLOOR = 1e-20        # values below (round-off of ||theta*||^2 ~ 1e2..1e3) are drawn at the floor
KEY = ["oracle", "setting", "N", "eta", "H", "replicas"]
RATE_WINDOW = 0.5    # SCAFFLSA's per-round factor is measured over the second half of the rounds


def collect(tables) -> list[dict]:
    """One record per run: the KEY fields, method, seed, batch size, predicted ||bias||^2 and
    predicted plateau (exact oracle: the bias; pool oracle: ``fedlsa_plateau_pool``) with its
    bias^2 / variance split and the second-moment contraction (NaN without a prediction), and
    the run's table."""
    runs = []
    io.check_sampler_versions(tables)
    for path in tables:
        table, meta = io.read_run_table(path)
        sp = meta["spec"]
        alg = sp["algorithm"]
        if alg["name"] not in (FEDLSA, SCAFFLSA):
            continue
        try:
            params = sp["dataset"]["params"]
            pred = meta.get("predictions") or {}
            oracle = params.get("oracle", "pool")

            def num(key):
                return float(np.nan if pred.get(key) is None else pred[key])
            bias_sq = num("fedlsa_bias_sq")
            rep = meta.get("replicas") or {}
            runs.append({"setting": params["setting"], "N": int(params["n_agents"]),
                         "replicas": int(sp.get("replicas") or 0),
                         "replica_sample": rep.get("sq_dist_mean"),
                         "replica_window_start": rep.get("window_start"),
                         "eta": float(sp["step"]["alpha"]), "H": int(alg["K"]), "method": alg["name"],
                         "seed": sp["seed"], "oracle": oracle,
                         "batch_size": int(alg["batch_size"]), "status": meta["status"],
                         "predicted": bias_sq,
                         "predicted_plateau": bias_sq if oracle == "exact" else num("fedlsa_plateau_pool"),
                         "predicted_variance": 0.0 if oracle == "exact" else num("fedlsa_variance_pool"),
                         "predicted_bias_sq_pool": (bias_sq if oracle == "exact"
                                                    else num("fedlsa_bias_sq_pool")),
                         "contraction": (num("fedlsa_round_contraction") if oracle == "exact"
                                         else num("fedlsa_second_moment_contraction")),
                         "table": table})
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise io.RunTableError(f"{io.run_meta_path(path)}: the FedLSA study needs the spec's "
                                   f"dataset.params (setting, n_agents), step.alpha, algorithm.K "
                                   f"and batch_size; bad or missing: {exc}") from None
    return runs


def mean_curve(tables: list[pd.DataFrame]) -> pd.Series:
    """E||theta_t - theta*||^2: the mean over seeds of ``excess_risk`` per round (rounds that
    every seed reached; a diverged run makes the mean infinite from its divergence on)."""
    wide = pd.concat([t.set_index("round")["excess_risk"].rename(i) for i, t in enumerate(tables)],
                     axis=1)
    return wide.mean(axis=1, skipna=False).replace(np.nan, np.inf)


def seed_plateaus(tables: list[pd.DataFrame], tail: float) -> np.ndarray:
    """Each seed's mean of ``excess_risk`` over the plateau window (``window_length`` of the
    seed-mean curve): ``(seeds,)``; their mean is the seed-mean curve's window mean."""
    curve = mean_curve(tables)
    rounds = curve.index[-window_length(curve, tail):]
    return np.array([float(t.set_index("round")["excess_risk"].reindex(rounds).mean()) for t in tables])


def plateau_se(tables: list[pd.DataFrame], tail: float) -> float:
    """Monte Carlo standard error of the measured plateau: the standard deviation over seeds of
    the seeds' window means / sqrt(seeds) (NaN with one seed or a non-finite window)."""
    m = seed_plateaus(tables, tail)
    if len(m) < 2 or not np.all(np.isfinite(m)):
        return np.nan
    return float(m.std(ddof=1) / np.sqrt(len(m)))


def window_length(curve: pd.Series, tail: float) -> int:
    """Rounds in the plateau window: the last ``tail`` fraction, at least two (so that the
    ratio says something)."""
    return min(len(curve), max(2, int(round(tail * (len(curve) - 1)))))


def plateau(curve: pd.Series, tail: float) -> tuple[float, float]:
    """(mean of the last ``tail`` fraction of rounds (``window_length``), curve at the start of
    that window / curve at the last round)."""
    n = window_length(curve, tail)
    window = curve.iloc[-n:]
    last = float(curve.iloc[-1])
    return float(window.mean()), float(window.iloc[0] / last) if last > 0 else np.nan


def tail_rate(curve: pd.Series, tail: float) -> float:
    """Per-round factor of the curve over the plateau window (geometric mean: (last / first of
    the window)^(1 / (rounds between them))); < 1 while it still decreases, NaN without two
    positive finite values."""
    n = window_length(curve, tail)
    first, last = float(curve.iloc[-n]), float(curve.iloc[-1])
    if n < 2 or not (first > 0 and last > 0 and np.isfinite(first) and np.isfinite(last)):
        return np.nan
    return (last / first) ** (1.0 / (n - 1))


def replica_plateau(runs: list[dict]) -> tuple[float, float, int, int] | None:
    """(plateau, standard error, sample size, window's first round) of a cell's runs with
    replicas (module docstring), None when a run has no replica sample."""
    if not runs or any(r.get("replica_sample") is None for r in runs):
        return None
    x = np.concatenate([np.asarray(r["replica_sample"], dtype=float) for r in runs])
    se = float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else np.nan
    return float(x.mean()), se, len(x), int(max(r["replica_window_start"] for r in runs))


def window_drift(curve: pd.Series, start: int) -> float:
    """Mean of ``curve`` over the second half of its rounds >= ``start`` minus the mean over the
    first half (NaN with fewer than 2 rounds)."""
    w = curve[curve.index >= start]
    if len(w) < 2:
        return np.nan
    h = len(w) // 2
    return float(w.iloc[len(w) - h:].mean() - w.iloc[:h].mean())


def _groups(runs):
    groups = defaultdict(lambda: defaultdict(list))
    for r in runs:
        groups[tuple(r[k] for k in KEY)][r["method"]].append(r)
    return groups


def summary(runs: list[dict], tail: float) -> pd.DataFrame:
    """One row per (setting, N, eta, H): prediction, plateaus, relative error, SCAFFLSA factor."""
    rows = []
    for key, by_method in sorted(_groups(runs).items()):
        any_run = next(iter(by_method.values()))[0]
        all_runs = [r for rs in by_method.values() for r in rs]

        def pred(field):
            vals = [r[field] for r in all_runs if np.isfinite(r[field])]
            return float(np.max(vals)) if vals else np.nan
        row = dict(zip(KEY, key), batch_size=any_run["batch_size"],
                   predicted_bias_sq=pred("predicted"), predicted_plateau=pred("predicted_plateau"),
                   predicted_variance=pred("predicted_variance"),
                   predicted_bias_sq_pool=pred("predicted_bias_sq_pool"),
                   contraction=pred("contraction"))
        for method, col in ((FEDLSA, "fedlsa"), (SCAFFLSA, "scafflsa")):
            rs = by_method[method]              # (a defaultdict: [] without runs)
            if not rs:
                row.update({f"{col}_plateau": np.nan, f"{col}_last": np.nan, f"{col}_plateau_se": np.nan,
                            f"{col}_window_ratio": np.nan, f"{col}_seeds": 0, f"{col}_rate": np.nan})
                continue
            curve = mean_curve([r["table"] for r in rs])
            level, ratio = plateau(curve, tail)
            se = plateau_se([r["table"] for r in rs], tail)
            start = int(curve.index[-window_length(curve, tail)])
            sample = replica_plateau(rs) if key[KEY.index("replicas")] else None
            if sample is not None:
                level, se, _, start = sample
                row["window_start"] = start
            row[f"{col}_drift"] = window_drift(curve, start)
            row.update({f"{col}_plateau": level, f"{col}_last": float(curve.iloc[-1]),
                        f"{col}_plateau_se": se,
                        f"{col}_window_ratio": ratio, f"{col}_seeds": len(rs),
                        f"{col}_rate": tail_rate(curve, RATE_WINDOW)})
            row.setdefault("rounds", int(curve.index[-1]))
            row.setdefault("initial", float(curve.iloc[0]))     # FedLSA's (same x_0 per seed)
        row["plateau_ratio"] = (row["fedlsa_plateau"] / row["predicted_plateau"]
                                if row["predicted_plateau"] > 0 else np.nan)
        target = row["predicted_plateau"]
        # the exact oracle's H = 1 plateau is 0 (no bias, no noise): no relative error
        row["rel_error"] = (abs(row["fedlsa_plateau"] - target) / target
                            if (row["H"] > 1 or row["oracle"] != "exact") and target > 0 else np.nan)
        row["z"] = ((row["fedlsa_plateau"] - target) / row["fedlsa_plateau_se"]
                    if row["fedlsa_plateau_se"] > 0 else np.nan)
        # (every cell has a run of some method, so "rounds" and "initial" are set)
        start = row.pop("window_start", None)
        if start is None:
            start = row["rounds"] - window_length(pd.Series(np.zeros(row["rounds"] + 1)), tail) + 1
        row["transient"] = float(row["initial"] * row["contraction"] ** start)
        row["scafflsa_factor"] = (row["fedlsa_plateau"] / row["scafflsa_last"]
                                  if row["scafflsa_last"] > 0 else np.inf)
        rows.append(row)
    cols = KEY + ["batch_size", "rounds", "initial", "predicted_bias_sq", "fedlsa_plateau", "rel_error",
                  "fedlsa_window_ratio", "scafflsa_last", "scafflsa_window_ratio", "scafflsa_factor",
                  "fedlsa_seeds", "scafflsa_seeds", "scafflsa_rate", "predicted_plateau", "plateau_ratio",
                  "predicted_bias_sq_pool", "predicted_variance", "contraction", "fedlsa_plateau_se", "z",
                  "transient", "scafflsa_plateau", "scafflsa_plateau_se", "fedlsa_drift", "scafflsa_drift"]
    return pd.DataFrame(rows, columns=cols)


def display(table: pd.DataFrame) -> pd.DataFrame:
    """The summary for reading: one line per (oracle, setting, N, eta, H). The predicted plateau
    is the bias with the exact oracle, bias^2 + variance with the pool oracle; the relative
    error is the measured plateau's against it."""
    exact_h1 = (table["H"] == 1) & (table["oracle"] == "exact")
    out = pd.DataFrame({
        "oracle": table["oracle"], "setting": table["setting"], "N": table["N"].astype(str),
        "eta": table["eta"].map("{:g}".format), "H": table["H"].astype(str),
        "predicted norm(bias)^2": table["predicted_bias_sq"],   # no "|": it would split the Markdown cell
        # (tables of exact-oracle studies written before the pool oracle's prediction: the bias)
        "predicted plateau": table.get("predicted_plateau", table["predicted_bias_sq"]),
        "FedLSA plateau": table["fedlsa_plateau"],
        "rel. error": [("n/a (H = 1: bias 0)" if h else v) for h, v in zip(exact_h1, table["rel_error"])],
        "SCAFFLSA, last round": table["scafflsa_last"],
        "SCAFFLSA factor": [("n/a (H = 1)" if h == 1 else v)
                            for h, v in zip(table["H"], table["scafflsa_factor"])],
        "rounds": table["rounds"].astype(str),
        "seeds": table["fedlsa_seeds"].astype(str),
        "replicas": _replicas(table)})
    return out


def _replicas(table: pd.DataFrame) -> pd.Series:
    """Chains per seed of each cell as text (0: one; tables written before the replicas: 0)."""
    return (table["replicas"] if "replicas" in table else pd.Series(0, index=table.index)).astype(str)


def display_pool(table: pd.DataFrame) -> pd.DataFrame:
    """The pool-oracle rows for reading: predicted bias^2 / variance / plateau (exact, from the
    pool), FedLSA's measured plateau +- its standard error and z, SCAFFLSA's plateau +- error."""
    def pm(v, e):
        return f"{v:.4g} ± {e:.2g}" if np.isfinite(e) else f"{v:.4g}"
    return pd.DataFrame({
        "setting": table["setting"], "N": table["N"].astype(str), "H": table["H"].astype(str),
        "B": table["batch_size"].astype(str),
        "pred. bias^2": table["predicted_bias_sq_pool"], "pred. variance": table["predicted_variance"],
        "pred. plateau": table["predicted_plateau"],
        "FedLSA plateau ± se": [pm(v, e) for v, e in zip(table["fedlsa_plateau"], table["fedlsa_plateau_se"])],
        "z": table["z"],
        "SCAFFLSA plateau ± se": [pm(v, e) for v, e in zip(table["scafflsa_plateau"],
                                                           table["scafflsa_plateau_se"])],
        "rounds": table["rounds"].astype(str), "seeds": table["fedlsa_seeds"].astype(str),
        "replicas": _replicas(table)})


def _plotted(n: int, points: int = 400) -> np.ndarray:
    """Row positions drawn on the log round axis: the first 50 rounds, then ~``points``
    geometrically spaced ones, and the last (a curve of 3000 rounds looks the same, drawn
    much faster)."""
    rows = np.unique(np.concatenate([np.arange(min(n, 50)),
                                     np.geomspace(1, max(n - 1, 1), points).astype(int), [n - 1]]))
    return rows[rows < n]          # (one round: the geometric part's 1 is past the end)


def draw(runs: list[dict], setting: str, out_pdf) -> None:
    """E||theta_t - theta*||^2 vs rounds, one panel per (N, eta): FedLSA (solid) and SCAFFLSA
    (dashed) per H (colour), mean over seeds with a min-max band, and the predicted FedLSA
    bias (dotted, same colour; none for H = 1, where it is 0). PDF + PNG."""
    mine = [r for r in runs if r["setting"] == setting and not r.get("replicas")]
    if not mine:
        raise ValueError(f"no FedLSA/SCAFFLSA run in setting {setting!r}")
    oracles = sorted({r["oracle"] for r in mine})
    panels = sorted({(r["N"], r["eta"]) for r in mine})
    Hs = sorted({r["H"] for r in mine})
    colors = {H: plt.cm.viridis(i / max(1, len(Hs) - 1) * 0.9) for i, H in enumerate(Hs)}
    groups = _groups(mine)
    fig, axes = plt.subplots(len(oracles), len(panels), figsize=(5.4 * len(panels), 4.6 * len(oracles)),
                             squeeze=False)
    cells = [(ax, oracle, N, eta) for row, oracle in zip(axes, oracles)
             for ax, (N, eta) in zip(row, panels)]
    for ax, oracle, N, eta in cells:
        for H in Hs:
            by_method = groups.get((oracle, setting, N, eta, H, 0), {})
            for method, ls in ((FEDLSA, "-"), (SCAFFLSA, "--")):
                rs = by_method.get(method, [])
                if not rs:
                    continue
                wide = pd.concat([r["table"].set_index("round")["excess_risk"].rename(i)
                                  for i, r in enumerate(rs)], axis=1).clip(lower=FLOOR)
                wide = wide.iloc[_plotted(len(wide))]
                mean = wide.mean(axis=1)
                ax.plot(mean.index, mean.values, ls, color=colors[H], lw=1.4)
                ax.fill_between(mean.index, wide.min(axis=1), wide.max(axis=1), color=colors[H],
                                alpha=0.12, lw=0)
            # the predicted FedLSA plateau: the bias (exact oracle; 0 for H = 1), bias^2 + variance (pool)
            preds = [r["predicted_plateau"] for rs in by_method.values() for r in rs
                     if np.isfinite(r["predicted_plateau"])]
            if preds and max(preds) > FLOOR:
                ax.axhline(max(preds), color=colors[H], ls=":", lw=1.2)
        ax.set_xscale("symlog", linthresh=1)
        ax.set_xlim(left=0)
        ax.set_yscale("log")
        ax.set_xlabel("round $t$")
        ax.set_ylabel(r"$E\|\theta_t - \theta^*\|^2$")
        ax.set_title(f"{setting} agents, N = {N}, $\\eta$ = {eta:g}, oracle: {oracle}", fontsize=9)
        ax.grid(True, which="major", alpha=0.3)
    from matplotlib.lines import Line2D

    by_H = [Line2D([], [], color=colors[H], lw=2, label=f"H = {H}") for H in Hs]
    by_style = [Line2D([], [], color="k", ls=ls, lw=1.2, label=label)
                # on the LSA field FedAvg is FedLSA, the name the study compares under
                for ls, label in (("-", "FedLSA"), ("--", algorithm_label(SCAFFLSA)),
                                  (":", "predicted FedLSA plateau"))]
    axes[0][0].add_artist(axes[0][0].legend(handles=by_H, fontsize=7, loc="lower left"))
    axes[0][0].legend(handles=by_style, fontsize=7, loc="lower center")
    n_seeds = max(len(rs) for by in groups.values() for rs in by.values())
    fig.suptitle(f"Federated TD(0) on Garnet MDPs, {setting} agents: mean over up to {n_seeds} "
                 f"seeds (band: min-max), oracle: {', '.join(oracles)}\nvalues below {FLOOR:.0e} "
                 f"(round-off) are drawn at {FLOOR:.0e}; predicted plateau: the bias (exact oracle; "
                 f"none for H = 1, where it is 0), bias^2 + variance (pool oracle)", fontsize=8)
    fig.tight_layout()
    save_figure(fig, out_pdf)


def lsa_study(spec: dict, out_csv, figures, tables) -> pd.DataFrame:
    """Write ``out_csv`` (+ ``.md``) and, for the i-th setting of ``spec['settings']``, the
    figure ``figures[i]`` (PDF, PNG beside it), from the run files ``tables``."""
    if len(figures) != len(spec["settings"]):
        raise ValueError(f"{len(spec['settings'])} settings but {len(figures)} figures")
    runs = collect(tables)
    missing = [s for s in spec["settings"] if not any(r["setting"] == s for r in runs)]
    if missing:          # refused before any output is written
        raise io.RunTableError(f"no FedLSA/SCAFFLSA run in setting {', '.join(map(repr, missing))} "
                               f"among the {len(tables)} run table(s) given; pass the run tables "
                               f"of the study's experiments")
    table = summary(runs, spec["tail"])
    io.write_table(out_csv, table)
    write_markdown(Path(out_csv).with_suffix(".md"), display(table))
    for setting, pdf in zip(spec["settings"], figures):
        draw(runs, setting, pdf)
    return table

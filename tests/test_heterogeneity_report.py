"""The client-drift study (``rfl heterogeneity``): the stationary excess risk of each run, its
mean and spread over seeds per (problem, method, s/S, K), and the table and figure a reader
sees. Every run is written here with excess risks chosen so that the answer is known by
construction; the expected numbers are computed in the test with numpy from those values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rfl import io
from rfl.reporting import heterogeneity as H
from rfl.testing.run_files import write_run

T = 10                                    # rounds 0..10: 11 rows


def curve(last3, T=T):
    """Excess risk 1 at every round, except the last three rounds: ``last3``."""
    c = np.ones(T + 1)
    c[-3:] = last3
    return c


def run(root, experiment, values, *, name="rfedags", K=1, participation=None, S=4, seed=0,
        diverge_at=None):
    """One run file of the study (rounds 0..len(values)-1); with ``diverge_at`` the table stops
    there with a row of status "diverged", as the runner writes it."""
    values = np.asarray(values, dtype=float)
    status = np.array(["ok"] * len(values), dtype=object)
    if diverge_at is not None:
        values, status = values[: diverge_at + 1].copy(), status[: diverge_at + 1]
        values[-1], status[-1] = np.nan, "diverged"
    path = root / "runs" / experiment / f"{name}_K{K}_p{participation}_seed{seed}.csv"
    write_run(path, {"excess_risk": values, "status": status},
              {"experiment": experiment, "seed": seed,
               "algorithm": {"name": name, "K": K, "participation": participation},
               "dataset": {"params": {"S": S}}})
    return str(path)


# ---- the stationary excess risk of one run ----------------------------------------------------
def table(values, status=None):
    return pd.DataFrame({"excess_risk": values, "status": status or ["ok"] * len(values)})


@pytest.mark.parametrize("tail, n", [
    (0.2, 2),          # 0.2 x 10 rounds = 2 rows
    (0.26, 3),         # 2.6 rounds: rounded to 3, not cut to 2
    (0.24, 2),         # 2.4: rounded to 2
    (0.01, 1),         # less than one round: still the last row
    (0.0, 1),
    (1.0, 10)])        # every round after round 0
def test_stationary_is_the_mean_of_the_last_tail_of_rounds(tail, n):
    values = 2.0 ** -np.arange(T + 1)                       # every tail mean differs
    assert H.stationary(table(values), tail) == pytest.approx(np.mean(values[-n:]))


def test_stationary_of_a_run_that_diverged_is_nan():
    values = list(2.0 ** -np.arange(T)) + [np.nan]
    assert np.isnan(H.stationary(table(values, ["ok"] * T + ["diverged"]), 0.2))
    # the same rows without the diverged one have a level
    assert H.stationary(table(values[:T]), 0.2) == pytest.approx(np.mean(values[T - 2:T]))


# ---- the table and the figure from run files --------------------------------------------------
@pytest.fixture
def study(tmp_path):
    """Two problems (CPESph: experiment het_cpe; CFMSPD: het_cfm) and one experiment outside
    the study. CPESph: RFedAGS with every agent at K = 1 (two seeds) and K = 4 (two seeds),
    RFedAGS with s = 2 of S = 4 agents at K = 4 (one seed ok, one diverged), RFedSVRG at K = 4
    (two seeds); CFMSPD: RFedAGS K = 1, one seed. Tail 0.2: the mean of the last 2 rounds."""
    levels = {                                         # (exp, name, K, participation, seed): last 2
        ("het_cpe", "rfedags", 1, None, 0): (0.30, 0.10), ("het_cpe", "rfedags", 1, None, 1): (0.50, 0.30),
        ("het_cpe", "rfedags", 4, None, 0): (0.03, 0.01), ("het_cpe", "rfedags", 4, None, 1): (0.07, 0.05),
        ("het_cpe", "rfedags", 4, 2, 0): (0.9, 0.7),
        ("het_cpe", "rfedsvrg", 4, None, 0): (2e-4, 0.0), ("het_cpe", "rfedsvrg", 4, None, 1): (6e-4, 4e-4),
        ("het_cfm", "rfedags", 1, None, 0): (8.0, 6.0),
    }
    # the run outside the study comes first: it is skipped, not the end of the list
    paths = [run(tmp_path, "other", curve((5.0, 1.0, 1.0)), K=8)]
    paths += [run(tmp_path, e, curve((5.0,) + lv), name=n, K=K, participation=p, seed=s)
              for (e, n, K, p, s), lv in levels.items()]
    paths.append(run(tmp_path, "het_cpe", curve((5.0, 1.0, 1.0)), K=4, participation=2, seed=1,
                     diverge_at=6))
    spec = {"experiments_by_name": {"het_cpe": "CPESph", "het_cfm": "CFMSPD"}, "tail": 0.2}
    return tmp_path, spec, paths, {k: np.mean(v) for k, v in levels.items()}


def _captured(monkeypatch):
    figs = []
    monkeypatch.setattr(H, "save_figure", lambda fig, out: figs.append((fig, out)))
    return figs


def test_collect_one_row_per_run_of_the_study(study):
    root, spec, paths, level = study
    runs = H.collect(spec, paths)
    assert len(runs) == len(paths) - 1                                   # "other" left out
    assert set(runs["problem"]) == {"CPESph", "CFMSPD"}
    row = runs[(runs["algorithm"] == "rfedags") & (runs["K"] == 4) & (runs["participation"] == 0.5)]
    assert list(row["seed"]) == [0, 1] and list(row["status"]) == ["ok", "diverged"]
    assert row["stationary_excess_risk"].iloc[0] == pytest.approx(level[("het_cpe", "rfedags", 4, 2, 0)])
    assert np.isnan(row["stationary_excess_risk"].iloc[1])
    svrg = runs[runs["algorithm"] == "rfedsvrg"]
    assert set(svrg["method"]) == {"RFedSVRG"} and set(svrg["participation"]) == {1.0}
    assert list(runs.columns) == ["problem", "method", "algorithm", "K", "participation", "seed",
                                  "stationary_excess_risk", "status"]


def test_heterogeneity_table_mean_and_spread_over_seeds(study, monkeypatch):
    root, spec, paths, level = study
    figs = _captured(monkeypatch)
    agg = H.heterogeneity(spec, root / "h.pdf", root / "h.csv", paths)
    cell = agg.set_index(["problem", "method", "participation", "K"])
    for K in (1, 4):
        seeds = [level[("het_cpe", "rfedags", K, None, s)] for s in (0, 1)]
        c = cell.loc[("CPESph", "RFedAGS", 1.0, K)]
        assert c["mean"] == pytest.approx(np.mean(seeds))
        assert c["std"] == pytest.approx(np.std(seeds, ddof=1))
        assert (c["seeds"], c["diverged"]) == (2, 0)
    # s/S = 0.5: one seed diverged (no level), the other's level is the mean
    half = cell.loc[("CPESph", "RFedAGS", 0.5, 4)]
    assert half["mean"] == pytest.approx(level[("het_cpe", "rfedags", 4, 2, 0)])
    assert (half["seeds"], half["diverged"]) == (2, 1)
    svrg = cell.loc[("CPESph", "RFedSVRG", 1.0, 4)]
    assert svrg["mean"] == pytest.approx(np.mean([level[("het_cpe", "rfedsvrg", 4, None, s)] for s in (0, 1)]))
    one = cell.loc[("CFMSPD", "RFedAGS", 1.0, 1)]
    assert one["mean"] == pytest.approx(7.0) and np.isnan(one["std"]) and one["seeds"] == 1
    assert len(agg) == 5
    # the CSV holds the same cells; the Markdown table shows s/S as a number and every column
    back = io.read_table(root / "h.csv")
    assert back["mean"].to_numpy() == pytest.approx(agg["mean"].to_numpy())
    md = (root / "h.md").read_text().splitlines()
    assert md[0] == "| problem | method | s/S | K | mean | std | seeds | diverged |"
    m = np.mean([level[("het_cpe", "rfedags", 4, None, s)] for s in (0, 1)])
    s = np.std([level[("het_cpe", "rfedags", 4, None, s)] for s in (0, 1)], ddof=1)
    assert f"| CPESph | RFedAGS | 1 | 4 | {m:.4g} | {s:.4g} | 2 | 0 |" in md
    assert f"| CPESph | RFedAGS | 0.5 | 4 | {level[('het_cpe', 'rfedags', 4, 2, 0)]:.4g} | - | 2 | 1 |" in md
    assert len(figs) == 1 and str(figs[0][1]) == str(root / "h.pdf")


def test_heterogeneity_figure_one_panel_per_problem(study, monkeypatch):
    """What a reader sees: one log-log panel per problem in the config's order, one curve per
    (method, s/S) against K with the mean over seeds and its std as error bars, the study's
    method solid and the others dashed."""
    root, spec, paths, level = study
    figs = _captured(monkeypatch)
    H.heterogeneity(spec, root / "h.pdf", root / "h.csv", paths)
    fig, _ = figs[0]
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["CPESph, heterogeneous agents", "CFMSPD, heterogeneous agents"]
    for ax in axes:
        assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
        assert ax.get_xlabel() == "local steps K"
        assert "last 20% of rounds" in ax.get_ylabel()
    cpe = axes[0]
    legend = [t.get_text() for t in cpe.get_legend().get_texts()]
    assert sorted(legend) == ["RFedAGS, s/S=0.5", "RFedAGS, s/S=1", "RFedSVRG, s/S=1"]
    lines = {lab: c for lab, c in zip(legend, cpe.containers)}
    full = lines["RFedAGS, s/S=1"]
    seeds = {K: [level[("het_cpe", "rfedags", K, None, s)] for s in (0, 1)] for K in (1, 4)}
    assert list(full.lines[0].get_xdata()) == [1, 4]
    assert np.asarray(full.lines[0].get_ydata(), float) == pytest.approx([np.mean(seeds[1]), np.mean(seeds[4])])
    # the error bar of each K spans mean - std .. mean + std (std over seeds, ddof 1)
    bars = full.lines[2][0].get_segments()
    assert len(bars) == 2
    for seg, K in zip(bars, (1, 4)):
        m, sd = np.mean(seeds[K]), np.std(seeds[K], ddof=1)
        assert seg[:, 1] == pytest.approx([m - sd, m + sd])
    assert full.lines[0].get_linestyle() == "-"
    assert lines["RFedSVRG, s/S=1"].lines[0].get_linestyle() == "--"
    assert full.lines[0].get_marker() == "o"
    # one seed: no spread, a zero-length bar (not a missing one)
    cfm = axes[1].containers[0]
    assert cfm.lines[2][0].get_segments()[0][:, 1] == pytest.approx([7.0, 7.0])


def test_heterogeneity_without_a_run_of_the_study_is_refused(study, monkeypatch):
    root, spec, paths, _ = study
    figs = _captured(monkeypatch)
    other = [p for p in paths if "/other/" in p]
    with pytest.raises(io.RunTableError, match=r"none of the 1 run table\(s\) given belongs to the "
                                                r"study's experiments \(het_cpe, het_cfm\)"):
        H.heterogeneity(spec, root / "h.pdf", root / "h.csv", other)
    assert not (root / "h.csv").exists() and figs == []
    with pytest.raises(io.RunTableError, match=r"study's experiments \(none\)"):
        H.heterogeneity({**spec, "experiments_by_name": {}}, root / "h.pdf", root / "h.csv", paths)


@pytest.mark.parametrize("drop", ["S", "K", "seed"])
def test_collect_names_the_missing_spec_key(tmp_path, drop):
    path = run(tmp_path, "het_cpe", curve((1.0, 1.0, 1.0)))
    meta_path = io.run_meta_path(path)
    meta = io.read_json(meta_path)
    if drop == "S":
        del meta["spec"]["dataset"]["params"]["S"]
    elif drop == "K":
        del meta["spec"]["algorithm"]["K"]
    else:
        del meta["spec"]["seed"]
    io.write_json(meta_path, meta)
    spec = {"experiments_by_name": {"het_cpe": "CPESph"}, "tail": 0.2}
    with pytest.raises(io.RunTableError, match=rf"meta\.json: the heterogeneity study needs the spec's "
                                               rf"dataset\.params\.S, algorithm\.K and seed; bad or "
                                               rf"missing: '{drop}'"):
        H.collect(spec, [path])


def test_collect_refuses_runs_of_two_samplers(study):
    root, spec, paths, _ = study
    meta_path = io.run_meta_path(paths[1])
    meta = io.read_json(meta_path)
    meta["sampler"] = meta["sampler"] + 1
    io.write_json(meta_path, meta)
    with pytest.raises(io.RunTableError, match="different mini-batch samplers"):
        H.collect(spec, paths)

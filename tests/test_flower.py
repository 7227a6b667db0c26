"""rfl's strategies on Flower's simulation engine give the in-process simulator's iterates.

Full local batches and full participation: the Flower run's server iterates equal the
simulator's (``FederatedStrategy.iterate``, its own sampler) to 1e-12 round for round, for
RFedAGS, RFedAvg and RFedSVRG on CPESph (sphere) and MBCFSti (Stiefel), and its run table
equals ``rfl run``'s and draws with ``rfl figure``. Mini-batches and partial participation:
the same seeds give the same participants and batches (each client draws its own batch from
the server's (key, draw)), hence the same iterates as the simulator run with the same
counter-based sampler. Bad replies (NaN, wrong shape, off the manifold) are refused by name
and the round proceeds with the others, checked against the aggregate of the good agent.

All runs share one start of the simulation engine per module (it dominates the time).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("flwr", reason="Flower is not installed (pip install -e \".[flower]\")")
pytest.importorskip("ray", reason="Flower's simulation engine needs ray (flwr[simulation])")

from rfl import io, runner
from rfl.algorithms.aggregation import retract_weighted_stream, tangent_mean
from rfl.algorithms.rfedags import gradient_stream
from rfl.algorithms.rfedavg import local_sgd
from rfl.algorithms.sampling import AgentSampler, Draws, batch_indices
from rfl.flower.sampling import agent_batch
from rfl.random import stream

DATASETS = {
    "cpesph": {"name": "cpesph", "problem": "cpesph", "seed": 7, "instance": "fixed",
               "params": {"d": 8, "nu": 0.1, "S": 4, "N": 20}},
    "mbcfsti": {"name": "mbcfsti", "problem": "mbcfsti", "seed": 7, "instance": "fixed",
                "params": {"d": 6, "p": 2, "S": 3, "N": 6}},
}
GEOMETRY = {"cpesph": {"retraction": "normalize", "transport": "parallel"},
            "mbcfsti": {"retraction": "polar", "transport": "parallelization"}}
STEP = {"cpesph": 0.5, "mbcfsti": 0.01}
ROUNDS = 4


def make_spec(ds, algorithm, K, B, participation=None, seed=0):
    return {"experiment": f"flower_{ds}", "run_id": f"{algorithm}_K{K}_B{B}_p{participation}",
            "seed": seed, "rounds": ROUNDS, "dataset": copy.deepcopy(DATASETS[ds]),
            "geometry": GEOMETRY[ds], "step": {"rule": "fixed", "alpha": STEP[ds]},
            "algorithm": {"name": algorithm, "K": K, "batch_size": B, "participation": participation}}


CASES = {   # name: (dataset, algorithm, K, B, participation)
    "cpesph_ags_full": ("cpesph", "rfedags", 3, 20, None),
    "cpesph_avg_full": ("cpesph", "rfedavg", 3, 20, None),
    "cpesph_svrg_full": ("cpesph", "rfedsvrg", 2, 20, None),
    "mbcfsti_ags_full": ("mbcfsti", "rfedags", 2, 6, None),
    "mbcfsti_avg_full": ("mbcfsti", "rfedavg", 2, 6, None),
    "cpesph_ags_mini": ("cpesph", "rfedags", 3, 5, 2),
    "cpesph_avg_mini": ("cpesph", "rfedavg", 2, 5, 3),
    "cpesph_svrg_mini": ("cpesph", "rfedsvrg", 2, 5, 2),
    "mbcfsti_ags_mini": ("mbcfsti", "rfedags", 2, 3, 2),
}
FAULTS = {1: "nan", 2: "shape", 3: "off-manifold"}
FAULT_SPECS = {"faults_avg": ("cpesph", "rfedavg", 2, 20), "faults_ags": ("cpesph", "rfedags", 2, 20),
               "faults_svrg": ("cpesph", "rfedsvrg", 2, 20)}


def fault_spec(*case):
    spec = make_spec(*case)
    spec.update(experiment="flower_faults", rounds=2)
    return spec


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("flower_data")
    out = {}
    for name, ds in DATASETS.items():
        npz, ref = d / f"{name}.npz", d / f"{name}.ref.npz"
        runner.generate_data(ds, npz)
        runner.compute_reference(ds, npz, ref)
        out[name] = (npz, ref)
    return out


def job(d, name, spec, data):
    npz, ref = data[spec["dataset"]["name"]]
    return dict(spec=spec, data_npz=npz, reference_npz=ref, out_table=d / f"{name}.csv",
                out_meta=d / f"{name}.meta.json", iterates=d / f"{name}.x.npz")


#: an exchange's deadline (``server_main``'s timeout of each send_and_receive): a round's
#: replies take about a second, the first exchange (the greeting) also the start of the
#: engine's worker processes, which took over 20 s on a loaded machine; a round that waits
#: this long is stalled (a reply that never comes) and is ended at half the production
#: default (120 s)
ROUND_TIMEOUT = 60.0


class FlowerRuns:
    """Every case of CASES through one simulation-engine start, started by the first test that
    reads it (``runs[name]`` -> (spec, job)), inside that test's body: the engine's minutes
    count as that test's duration, which mutation testing reads to set each mutant's time
    limit (a module fixture's setup time is not counted, so every mutant the engine reaches
    would be ended by the limit as a "timeout")."""

    def __init__(self, d, data):
        self.d, self.data, self.out = d, data, None

    def run(self) -> dict:
        if self.out is None:
            from rfl.flower.server import run_flower_jobs

            d, data = self.d, self.data
            jobs = {name: job(d, name, make_spec(*case), data) for name, case in CASES.items()}
            jobs.update({name: job(d, name, fault_spec(*case), data) for name, case in FAULT_SPECS.items()})
            experiment = experiment_setup(d)
            run_flower_jobs(list(jobs.values()) + experiment, faults={"flower_faults": FAULTS},
                            timeout=ROUND_TIMEOUT)
            out = {name: (jobs[name]["spec"], jobs[name]) for name in jobs}
            out["experiment"] = experiment
            self.out = out
        return self.out

    def __getitem__(self, name):
        return self.run()[name]


@pytest.fixture(scope="module")
def flower_runs(tmp_path_factory, data):
    """The module's Flower runs (``FlowerRuns``: run on first use)."""
    return FlowerRuns(tmp_path_factory.mktemp("flower_runs"), data)


def experiment_setup(d):
    """The jobs ``rfl flower --config ... --experiment cpesph_fixed`` runs, for a copy of the
    smoke config writing under ``d`` (its data and reference made first, as snakemake would)."""
    from rfl import config as rflconfig
    from rfl.flower.server import experiment_jobs

    text = Path("config/smoke.yaml").read_text()
    cfg_path = d / "smoke.yaml"
    cfg_path.write_text(text.replace('output_dir: ".smoke/"', f'output_dir: "{d}/"'))
    cfg = rflconfig.load(cfg_path)
    ds = rflconfig.dataset_spec(cfg, "cpesph", "fixed")
    (d / "results/data/cpesph").mkdir(parents=True)
    (d / "results/reference/cpesph").mkdir(parents=True)
    runner.generate_data(ds, d / "results/data/cpesph/fixed.npz")
    runner.compute_reference(ds, d / "results/data/cpesph/fixed.npz", d / "results/reference/cpesph/fixed.npz")
    return experiment_jobs(cfg_path, "cpesph_fixed")


def simulator_iterates(spec, data, counted: bool):
    """x_1..x_T of the in-process strategy: with its own sampler (``iterate``), or stepping
    ``round`` with the counter-based sampler the Flower server uses."""
    npz, _ = data[spec["dataset"]["name"]]
    problem = runner.load_problem(spec["dataset"], npz, spec["geometry"])
    alg = runner.make_algorithm(spec, problem)
    x0 = problem.initial_point(stream(spec["seed"], "init", spec["dataset"]["name"]))
    rng = Draws(spec["seed"], spec["experiment"])
    if not counted:
        return np.stack([x.copy() for _, x, _ in alg.iterate(x0, spec["rounds"], rng)])
    sampler = AgentSampler(rng, problem.local_sizes, alg.batch_size, alg.participation)
    alg.reset(x0)
    xs, x = [], x0
    for t in range(spec["rounds"]):
        x = alg.round(x, t, sampler).x
        xs.append(x)
    return np.stack(xs)


@pytest.mark.parametrize("name", [n for n in CASES if n.endswith("_full")])
def test_full_batches_full_participation_equal_the_simulator(flower_runs, data, name):
    spec, j = flower_runs[name]
    got = io.read_arrays(j["iterates"])["x"]
    want = simulator_iterates(spec, data, counted=False)
    assert got.shape == want.shape == (ROUNDS, *want.shape[1:])
    for t in range(ROUNDS):
        np.testing.assert_allclose(got[t], want[t], rtol=0, atol=1e-12, err_msg=f"round {t + 1}")
    assert not np.allclose(got[0], got[-1])          # the runs move


@pytest.mark.parametrize("name", [n for n in CASES if n.endswith("_mini")])
def test_minibatches_and_partial_participation_equal_the_simulator(flower_runs, data, name):
    spec, j = flower_runs[name]
    got = io.read_arrays(j["iterates"])["x"]
    want = simulator_iterates(spec, data, counted=True)
    for t in range(ROUNDS):
        np.testing.assert_allclose(got[t], want[t], rtol=0, atol=1e-12, err_msg=f"round {t + 1}")
    # the draws matter: the full-batch, full-participation run of the same setting differs
    full = dict(copy.deepcopy(spec))
    full["algorithm"].update(batch_size=DATASETS[spec["dataset"]["name"]]["params"]["N"],
                             participation=None)
    assert not np.allclose(got[-1], simulator_iterates(full, data, counted=True)[-1], atol=1e-6)


def test_a_clients_batch_is_its_row_of_the_simulators_draw():
    """Agent j's batch from (key, draw) alone equals its row of the all-agents draw."""
    sizes = np.array([9, 12, 7, 12])
    sampler = AgentSampler(np.random.default_rng(3), sizes, 4, None)
    agents = np.arange(4)
    for c in range(3):
        rows = np.asarray(sampler.batches(agents).indices)
        for j in agents:
            mine = np.asarray(agent_batch(sampler.key, c, int(j), int(sizes[j]), 4).indices)[0]
            np.testing.assert_array_equal(np.sort(rows[j]), np.sort(mine))
            assert len(set(mine)) == 4 and mine.max() < sizes[j]
    np.testing.assert_array_equal(batch_indices(5, 2, np.array([3]), sizes, 4)[0],
                                  batch_indices(5, 2, np.array([0, 1, 3]), sizes, 4)[2])
    assert not np.array_equal(batch_indices(5, 2, np.array([1]), sizes, 4),
                              batch_indices(5, 3, np.array([1]), sizes, 4))


@pytest.mark.parametrize("name", ["cpesph_avg_full", "mbcfsti_ags_full"])
def test_flower_run_table_is_rfl_runs_and_draws(flower_runs, data, name, tmp_path):
    spec, j = flower_runs[name]
    npz, ref = data[spec["dataset"]["name"]]
    sim = runner.run(spec, npz, ref, tmp_path / "sim.csv", tmp_path / "sim.meta.json")
    fl, meta = io.read_run_table(j["out_table"])
    # rfl run's columns, then the participants dropped per round (none here)
    assert list(fl.columns) == list(sim.columns) + ["dropped"]
    assert (fl["dropped"] == 0).all() and all(r["dropped"] == 0 for r in meta["flower"]["rounds"])
    cols = [c for c in sim.columns if c not in ("wall_time", "status")]
    np.testing.assert_allclose(fl[cols].to_numpy(float), sim[cols].to_numpy(float), rtol=1e-10, atol=1e-12)
    assert (fl["status"] == sim["status"]).all()
    assert meta["engine"] == "flower" and meta["flower"]["refused"] == []
    assert meta["spec"] == json.loads(json.dumps(spec, default=str))
    # the nodes' own evaluation of F(x_T) = sum_j p_j f_j(x_T) is the server's cost
    assert meta["flower"]["federated_cost_final"] == pytest.approx(fl["cost"].iloc[-1], rel=1e-12)
    fig_spec = tmp_path / "fig.json"
    fig_spec.write_text(json.dumps({"title": name, "metrics": ["excess_risk"], "x": ["round"]}))
    pdf = tmp_path / "fig.pdf"
    r = subprocess.run([sys.executable, "-m", "rfl", "figure", str(fig_spec), str(pdf),
                        str(j["out_table"])], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    assert pdf.stat().st_size > 0


@pytest.mark.parametrize("name", list(FAULT_SPECS))
def test_bad_replies_are_refused_by_name_and_the_round_proceeds(flower_runs, data, name):
    """Agents 1, 2, 3 send a NaN, a wrong shape, a point off the sphere (a vector off the
    tangent space for RFedAGS; RFedSVRG's grad f_j(x_t) too): each is refused with a reason
    naming its node and agent, and x_{t+1} is agent 0's update alone."""
    spec, j = flower_runs[name]
    algorithm = spec["algorithm"]["name"]
    npz, _ = data["cpesph"]
    problem = runner.load_problem(DATASETS["cpesph"], npz, GEOMETRY["cpesph"])
    m = problem.manifold
    meta = json.loads(io.run_meta_path(j["out_table"]).read_text())
    refused = meta["flower"]["refused"]
    per_round = 2 if algorithm == "rfedsvrg" else 1          # both exchanges refuse them
    assert sorted((r["round"], r["agent"]) for r in refused) == sorted(
        (t, a) for t in (1, 2) for a in (1, 2, 3) for _ in range(per_round))
    reasons = {}
    for r in refused:
        reasons.setdefault(r["agent"], set()).add(r["reason"])
    node_of = {r["agent"]: r["node"] for r in refused}
    assert all(r["node"] == node_of[r["agent"]] for r in refused) and len(set(node_of.values())) == 3
    key = {"rfedags": "zeta", "rfedavg": "x", "rfedsvrg": "x"}[algorithm]
    assert reasons[1] >= {f"array {key!r} has NaN or infinite entries"}
    assert reasons[2] >= {f"array {key!r} has shape (8,), expected (9,)"}
    bad3 = " ".join(reasons[3])
    if algorithm == "rfedags":
        assert "array 'zeta' is not in the tangent space at x_t" in bad3
    else:
        assert "array 'x' is off the manifold" in bad3
    if algorithm == "rfedsvrg":     # the first exchange's grad f_j(x_t) is refused as well
        assert "array 'g' has NaN or infinite entries" in reasons[1]
        assert "array 'g' is not in the tangent space at x_t" in bad3
    x = problem.initial_point(stream(spec["seed"], "init", "cpesph"))
    xs = io.read_arrays(j["iterates"])["x"]
    full = lambda k: np.arange(20)[None]
    one, alpha = np.array([0]), STEP["cpesph"]
    for t in range(2):
        if algorithm == "rfedavg":
            x = tangent_mean(m, x, local_sgd(problem, x[None], one, alpha, 2, full), np.array([1.0]))
        elif algorithm == "rfedags":
            zeta = gradient_stream(problem, x[None], one, alpha, 2, full)
            x = retract_weighted_stream(m, x, zeta, np.array([1.0]))
        else:   # grad f(x_t) from agent 0 alone: its correction vanishes, plain local steps
            x = tangent_mean(m, x, local_sgd(problem, x[None], one, alpha, 2, full), np.array([1.0]))
        np.testing.assert_allclose(xs[t], x, rtol=0, atol=1e-12, err_msg=f"round {t + 1}")
    table = pd.read_csv(j["out_table"])
    assert (table["status"] == "ok").all()
    assert list(table["dropped"]) == [0, 3, 3]            # agents 1, 2, 3 in rounds 1 and 2


def test_cli_refuses_an_algorithm_without_a_flower_strategy(tmp_path, data):
    spec = make_spec("cpesph", "rfedproj", 2, 20)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    npz, ref = data["cpesph"]
    r = subprocess.run([sys.executable, "-m", "rfl", "flower", str(path), str(npz), str(ref),
                        str(tmp_path / "t.csv"), str(tmp_path / "t.meta.json")],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 2
    assert r.stderr.strip() == (f"rfl: error: {path}: algorithm 'rfedproj' has no Flower strategy; "
                                "allowed: rfedags, rfedavg, rfedsvrg")
    assert not (tmp_path / "t.csv").exists()


def test_a_node_holding_only_its_own_data_replies_as_its_row_of_the_full_file(tmp_path, data):
    """A SuperNode given a file of its own agent's arrays (S = 1) computes what the agent's
    row of the workflow's data file computes: same batches (drawn with the global id j),
    same local steps, bit for bit."""
    from rfl.flower.local import Agent

    npz, _ = data["cpesph"]
    Z = io.read_arrays(npz)["Z"]
    own = tmp_path / "agent2.npz"
    io.write_arrays(own, {"Z": Z[2:3]})
    params = json.dumps(DATASETS["cpesph"]["params"])
    geometry = json.dumps(GEOMETRY["cpesph"])
    full = Agent.from_file("cpesph", params, geometry, str(npz), 2)
    mine = Agent.from_file("cpesph", params, geometry, str(own), 2)
    assert (full.row, mine.row, mine.n_local) == (2, 0, 20)
    x = full.problem.initial_point(np.random.default_rng(0))
    for name in ("rfedags", "rfedavg"):
        cfg = {"algorithm": name, "alpha": 0.5, "K": 3, "B": 5, "key": "12345", "draw": 7}
        np.testing.assert_array_equal(full.train(x, cfg), mine.train(x, cfg))
    assert full.local_cost(x) == mine.local_cost(x)
    with pytest.raises(ValueError, match="agent 9 is not in"):
        Agent.from_file("cpesph", params, geometry, str(npz), 9)


def test_an_experiment_of_the_config_runs_through_flower_and_draws(flower_runs, tmp_path):
    """Every run of the smoke config's cpesph_fixed (the jobs ``rfl flower --config
    --experiment`` runs) is written under results/flower/ with rfl run's format, and the
    experiment's figure draws from them."""
    from rfl import config as rflconfig

    jobs = flower_runs["experiment"]
    cfg = rflconfig.load("config/smoke.yaml")
    want = [s["run_id"] for s in rflconfig.expand_runs(cfg) if s["experiment"] == "cpesph_fixed"]
    assert [j["spec"]["run_id"] for j in jobs] == want and len(want) == 6
    tables = []
    for j in jobs:
        assert j["out_table"].parent.parts[-3:] == ("results", "flower", "cpesph_fixed")
        table, meta = io.read_run_table(j["out_table"])
        assert meta["engine"] == "flower" and len(table) == j["spec"]["rounds"] + 1
        assert (table["status"] == "ok").all() and table["excess_risk"].iloc[-1] < table["excess_risk"].iloc[0]
        tables.append(str(j["out_table"]))
    fig_spec = tmp_path / "fig.json"
    fig_spec.write_text(json.dumps({"title": "cpesph_fixed on Flower", "metrics": ["excess_risk"],
                                    "x": ["round", "floats"]}))
    r = subprocess.run([sys.executable, "-m", "rfl", "figure", str(fig_spec), str(tmp_path / "f.pdf"),
                        *tables], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("args, message", [
    (["--experiment", "cpesph_fixed"], "--config and --experiment go together"),
    ([], "give SPEC DATA REFERENCE OUT_TABLE OUT_META"),
    (["--config", "config/smoke.yaml", "--experiment", "nope"], "no experiment 'nope'; allowed: "),
])
def test_cli_flower_argument_errors(args, message):
    r = subprocess.run([sys.executable, "-m", "rfl", "flower", *args], capture_output=True,
                       text=True, check=False)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1

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

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("flwr", reason="Flower is not installed (pip install -e \".[flower]\")")
pytest.importorskip("ray", reason="Flower's simulation engine needs ray (flwr[simulation])")

from rfl import io, runner                                    # noqa: E402
from rfl.algorithms.aggregation import retract_weighted_stream, tangent_mean   # noqa: E402
from rfl.algorithms.rfedags import gradient_stream            # noqa: E402
from rfl.algorithms.rfedavg import local_sgd                  # noqa: E402
from rfl.flower.sampling import CountedSampler, agent_batch, batch_indices   # noqa: E402
from rfl.random import stream                                 # noqa: E402

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


@pytest.fixture(scope="module")
def flower_runs(tmp_path_factory, data):
    """Every case of CASES through one simulation-engine start: {name: (spec, job)}."""
    from rfl.flower.server import run_flower_jobs

    d = tmp_path_factory.mktemp("flower_runs")
    jobs = {name: job(d, name, make_spec(*case), data) for name, case in CASES.items()}
    run_flower_jobs(list(jobs.values()))
    return {name: (jobs[name]["spec"], jobs[name]) for name in jobs}


def simulator_iterates(spec, data, counted: bool):
    """x_1..x_T of the in-process strategy: with its own sampler (``iterate``), or stepping
    ``round`` with the counter-based sampler the Flower server uses."""
    npz, _ = data[spec["dataset"]["name"]]
    problem = runner.load_problem(spec["dataset"], npz, spec["geometry"])
    alg = runner.make_algorithm(spec, problem)
    x0 = problem.initial_point(stream(spec["seed"], "init", spec["dataset"]["name"]))
    rng = stream(spec["seed"], "sampling", spec["experiment"], spec["run_id"])
    if not counted:
        return np.stack([x.copy() for _, x, _ in alg.iterate(x0, spec["rounds"], rng)])
    sampler = CountedSampler(rng, problem.local_sizes, alg.batch_size, alg.participation)
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
    sampler = CountedSampler(np.random.default_rng(3), sizes, 4, None)
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
    assert list(fl.columns) == list(sim.columns)
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
                        str(j["out_table"])], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert pdf.stat().st_size > 0


def test_bad_replies_are_refused_by_name_and_the_round_proceeds(tmp_path, data):
    """Agents 1, 2, 3 send a NaN, a wrong shape, a point off the sphere: each is refused with
    a reason naming its node and agent, and x_{t+1} is agent 0's aggregate alone."""
    from rfl.flower.server import run_flower_jobs

    specs = {"avg": make_spec("cpesph", "rfedavg", 2, 20), "ags": make_spec("cpesph", "rfedags", 2, 20)}
    for s in specs.values():
        s["rounds"] = 2
    jobs = {k: job(tmp_path, k, s, data) for k, s in specs.items()}
    run_flower_jobs(list(jobs.values()), faults=FAULTS)
    npz, _ = data["cpesph"]
    problem = runner.load_problem(DATASETS["cpesph"], npz, GEOMETRY["cpesph"])
    m = problem.manifold
    full = lambda k: np.arange(20)[None]                        # noqa: E731
    one = np.array([0])
    for k, s in specs.items():
        meta = json.loads(io.run_meta_path(jobs[k]["out_table"]).read_text()) \
            if hasattr(io, "run_meta_path") else json.loads(jobs[k]["out_meta"].read_text())
        refused = meta["flower"]["refused"]
        assert sorted((r["round"], r["agent"]) for r in refused) == [(t, a) for t in (1, 2) for a in (1, 2, 3)]
        reasons = {r["agent"]: r["reason"] for r in refused if r["round"] == 1}
        assert "NaN" in reasons[1]
        assert "shape (8,), expected (9,)" in reasons[2]
        assert ("off the manifold" if k == "avg" else "tangent space") in reasons[3]
        x = problem.initial_point(stream(s["seed"], "init", "cpesph"))
        xs = io.read_arrays(jobs[k]["iterates"])["x"]
        for t in range(2):
            if k == "avg":
                xK = local_sgd(problem, x[None], one, STEP["cpesph"], 2, full)
                x = tangent_mean(m, x, xK, np.array([1.0]))
            else:
                zeta = gradient_stream(problem, x[None], one, STEP["cpesph"], 2, full)
                x = retract_weighted_stream(m, x, zeta, np.array([1.0]))
            np.testing.assert_allclose(xs[t], x, rtol=0, atol=1e-12)
        table = pd.read_csv(jobs[k]["out_table"])
        assert (table["status"] == "ok").all()

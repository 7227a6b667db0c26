"""The ServerApp (``rfl.flower.server``) and the ClientApp (``rfl.flower.client``) in this
process, on a grid that hands each message to the ClientApp at once (no engine, no network):
fast and deterministic, and every function they call runs in the test's own process.

* ``server_main`` writes the run table of ``rfl run`` (same columns and values, plus
  ``dropped``), its metadata and the server iterates; they are checked against the in-process
  simulator (``runner.run``) and against a plain loop of the simulator's rounds, and the
  message exchanges (hello, [full-gradient,] train per round, evaluate) against the algorithm;
* faulty clients: each bad reply is refused by name, x_{t+1} is agent 0's update alone (the
  update written out with rfl's per-agent functions);
* ``greet``, ``wait_for_nodes``, ``problem_config``, ``with_dropped``, ``configure_evaluate``
  / ``aggregate_evaluate`` (F = sum_j N_j f_j / sum N) and ``summary``, each on cases whose
  answer is written out.

Iterates and table values: the Flower path and the simulator compute the same maps in the same
order on the same batches (the strategy contract's 1e-12 of O(1) values).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr", reason="Flower is not installed (pip install -e \".[flower]\")")

import flwr  # noqa: E402
from flwr.app import (  # noqa: E402
    ConfigRecord,
    Context,
    Error,
    Message,
    MessageType,
    MetricRecord,
    RecordDict,
)

from rfl import io, runner  # noqa: E402
from rfl.algorithms.aggregation import retract_weighted_stream, tangent_mean  # noqa: E402
from rfl.algorithms.rfedags import gradient_stream  # noqa: E402
from rfl.algorithms.rfedavg import local_sgd  # noqa: E402
from rfl.algorithms.sampling import AgentSampler, Draws  # noqa: E402
from rfl.flower import server as fserver  # noqa: E402
from rfl.flower.client import make_client_app  # noqa: E402
from rfl.flower.strategies import STRATEGIES, to_record  # noqa: E402
from rfl.random import stream  # noqa: E402

S, N, D = 4, 20, 8
DATASET = {"name": "cpesph", "problem": "cpesph", "seed": 7, "instance": "fixed",
           "params": {"d": D, "nu": 0.1, "S": S, "N": N}}
GEOMETRY = {"retraction": "normalize", "transport": "parallel"}
ALPHA, ROUNDS = 0.5, 3
NODE0 = 100                       # node NODE0 + j serves agent j
TIMEOUT = 7.5                     # the run's send_and_receive timeout, passed on as given


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("flower_server")
    npz, ref = d / "cpesph.npz", d / "cpesph.ref.npz"
    runner.generate_data(DATASET, npz)
    runner.compute_reference(DATASET, npz, ref)
    return npz, ref


class InProcessGrid:
    """A Grid whose nodes are the ClientApp ``app`` called in this process. ``node_config``:
    {node id: its node config} (default: nodes NODE0..NODE0+S-1, partition-id j, as under the
    simulation engine). A ClientApp that raises gives an error reply, as Flower does."""

    def __init__(self, app, node_config=None):
        self.app = app
        self.node_config = node_config or {NODE0 + j: {"partition-id": j} for j in range(S)}
        self.exchanges: list[list[Message]] = []
        self.timeouts: list = []
        self.count = 0

    def get_node_ids(self):
        return list(self.node_config)[::-1]             # in no particular order

    def send_and_receive(self, messages, timeout=None):
        messages = list(messages)
        self.exchanges.append(messages)
        self.timeouts.append(timeout)
        replies = []
        for msg in messages:
            self.count += 1
            msg.metadata.__dict__["_message_id"] = f"m{self.count}"   # set by a real grid's push
            node = int(msg.metadata.dst_node_id)
            ctx = Context(run_id=1, node_id=node, node_config=self.node_config[node],
                          state=RecordDict(), run_config={})
            try:
                replies.append(self.app(msg, ctx))
            except Exception as exc:       # noqa: BLE001 - what Flower makes of a failing ClientApp
                replies.append(Message(Error(code=0, reason=f"{type(exc).__name__}: {exc}"), reply_to=msg))
        return replies[::-1]                                  # arrival order: any

    def kinds(self):
        """Per exchange: (message type, phase or None, sorted destination nodes, group ids)."""
        out = []
        for ex in self.exchanges:
            cfg = ex[0].content["config"] if ex else {}
            out.append((ex[0].metadata.message_type if ex else None,
                        cfg.get("phase") if ex else None,
                        sorted(int(m.metadata.dst_node_id) for m in ex),
                        sorted({m.metadata.group_id for m in ex})))
        return out


def make_spec(algorithm, K, B, participation=None, experiment="flower_server", rounds=ROUNDS, **extra):
    return {"experiment": experiment, "run_id": f"{algorithm}_K{K}_B{B}_p{participation}", "seed": 3,
            "rounds": rounds, "dataset": dict(DATASET), "geometry": GEOMETRY,
            "step": {"rule": "fixed", "alpha": ALPHA},
            "algorithm": {"name": algorithm, "K": K, "batch_size": B, "participation": participation, **extra}}


class Lines(logging.Handler):
    """(level, message) of the flwr logger's records while in a ``with`` block."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append((record.levelno, record.getMessage()))

    def __enter__(self):
        logging.getLogger("flwr").addHandler(self)
        return self.lines

    def __exit__(self, *exc):
        logging.getLogger("flwr").removeHandler(self)


def run_server(spec, data, d, faults=None, **kwargs):
    npz, ref = data
    grid = InProcessGrid(make_client_app(faults))
    out = dict(out_table=d / "fl.csv", out_meta=d / "fl.meta.json", iterates=d / "fl.x.npz")
    with Lines() as lines:
        table = fserver.server_main(grid, spec, npz, ref, **out, timeout=TIMEOUT, connect_timeout=1.0, **kwargs)
    grid.log = lines
    return grid, table, out


def simulator_rounds(spec, data):
    """x_1..x_T and the participants of each round, stepping the in-process strategy's
    ``round`` with the counter-based sampler of the run's draws (what the server uses)."""
    npz, _ = data
    problem = runner.load_problem(spec["dataset"], npz, spec["geometry"])
    alg = runner.make_algorithm(spec, problem)
    x = problem.initial_point(stream(spec["seed"], "init", spec["dataset"]["name"]))
    sampler = AgentSampler(Draws(spec["seed"], spec["experiment"]), problem.local_sizes,
                           alg.batch_size, alg.participation)
    alg.reset(x)
    xs = []
    for t in range(spec["rounds"]):
        x = alg.round(x, t, sampler).x
        xs.append(x)
    return np.stack(xs)


CASES = {   # (algorithm, K, B, participation, extra algorithm options)
    "ags_full": ("rfedags", 3, N, None, {}),
    "avg_mini": ("rfedavg", 2, 5, 3, {}),
    "svrg_mini": ("rfedsvrg", 2, 5, 2, {"correction": "participants"}),
    "svrg_all": ("rfedsvrg", 2, N, 3, {"correction": "all_agents"}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_server_main_writes_rfl_runs_table_metadata_and_iterates(case, data, tmp_path, task_identity):
    algorithm, K, B, m, extra = CASES[case]
    spec = make_spec(algorithm, K, B, m, **extra)
    grid, table, out = run_server(spec, data, tmp_path)
    npz, ref = data
    sim = runner.run(spec, npz, ref, tmp_path / "sim.csv", tmp_path / "sim.meta.json")
    fl, meta = io.read_run_table(out["out_table"])
    assert list(fl.columns) == list(sim.columns) + ["dropped"] and len(fl) == ROUNDS + 1
    cols = [c for c in sim.columns if c not in ("wall_time", "status")]
    np.testing.assert_allclose(fl[cols].to_numpy(float), sim[cols].to_numpy(float), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(table[cols].to_numpy(float), fl[cols].to_numpy(float), rtol=0, atol=0)
    assert list(fl["dropped"]) == [0] * (ROUNDS + 1) and (fl["status"] == "ok").all()
    # the server iterates x_1..x_T are the simulator's rounds
    xs = io.read_arrays(out["iterates"])["x"]
    want = simulator_rounds(spec, data)
    assert xs.shape == want.shape == (ROUNDS, D + 1)
    np.testing.assert_allclose(xs, want, rtol=0, atol=1e-12)
    assert not np.allclose(xs[0], xs[-1])
    # metadata: rfl run's, plus the Flower record
    assert meta["engine"] == "flower" and meta["status"] == "ok" and meta["rounds_completed"] == ROUNDS
    sim_meta = json.loads(io.run_meta_path(tmp_path / "sim.csv").read_text())
    assert meta["spec"] == json.loads(json.dumps(spec))
    assert (meta["reference_method"], meta["predictions"]) == (sim_meta["reference_method"], sim_meta["predictions"])
    fl_meta = meta["flower"]
    assert fl_meta["flwr"] == flwr.__version__ and fl_meta["supernodes"] == S and fl_meta["refused"] == []
    per_round = S if m is None else m
    assert fl_meta["rounds"] == [{"round": r, "participants": per_round, "accepted": per_round, "dropped": 0}
                                 for r in range(1, ROUNDS + 1)]
    assert fl_meta["federated_cost_final"] == pytest.approx(fl["cost"].iloc[-1], rel=1e-12)
    # the exchanges: hello to every node, per round [the gradients,] the training, then evaluate
    nodes = [NODE0 + j for j in range(S)]
    kinds = grid.kinds()
    assert kinds[0][:3] == (MessageType.QUERY, "hello", nodes)
    per = 2 if algorithm == "rfedsvrg" else 1
    assert len(kinds) == 1 + per * ROUNDS + 1
    for r in range(1, ROUNDS + 1):
        train = kinds[per * r]
        assert train[0] == MessageType.TRAIN and train[3] == [str(r)] and len(train[2]) == per_round
        if per == 2:
            query = kinds[per * r - 1]
            asked = nodes if extra.get("correction") == "all_agents" else train[2]
            assert query[:3] == (MessageType.QUERY, "full-gradient", asked) and query[3] == [str(r)]
    assert kinds[-1][:3] == (MessageType.EVALUATE, None, nodes)
    assert grid.timeouts == [TIMEOUT] * len(kinds)
    # one log line per round with its counts
    done = [msg for _, msg in grid.log if " done: " in msg and msg.startswith("rfl: round")]
    assert done == [f"rfl: round {r} done: {per_round} participants, {per_round} accepted, 0 dropped"
                    for r in range(1, ROUNDS + 1)]


def test_without_evaluation_there_is_no_federated_cost(data, tmp_path, task_identity):
    grid, _, out = run_server(make_spec("rfedavg", 2, N), data, tmp_path, evaluate=False)
    meta = json.loads(io.run_meta_path(out["out_table"]).read_text())
    assert meta["flower"]["federated_cost_final"] is None
    assert [k[0] for k in grid.kinds()] == [MessageType.QUERY] + [MessageType.TRAIN] * ROUNDS


def test_no_iterates_file_unless_asked(data, tmp_path, task_identity):
    npz, ref = data
    grid = InProcessGrid(make_client_app())
    fserver.server_main(grid, make_spec("rfedags", 1, N, rounds=1), npz, ref, tmp_path / "t.csv",
                        tmp_path / "t.meta.json", connect_timeout=1.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "t.meta.json"]
    assert set(grid.timeouts) == {120.0}                  # the production default round deadline


def test_zero_rounds_write_an_empty_iterates_array_and_evaluate_nothing(data, tmp_path, task_identity):
    grid, table, out = run_server(make_spec("rfedags", 1, N, rounds=0), data, tmp_path)
    xs = io.read_arrays(out["iterates"])["x"]
    assert xs.shape == (0, D + 1) and len(table) == 1
    meta = json.loads(io.run_meta_path(out["out_table"]).read_text())
    assert meta["flower"]["federated_cost_final"] is None and meta["flower"]["rounds"] == []
    assert [k[0] for k in grid.kinds()] == [MessageType.QUERY]          # the greeting only


FAULTS = {1: "nan", 2: "shape", 3: "off-manifold"}


@pytest.mark.parametrize("algorithm", ["rfedags", "rfedavg", "rfedsvrg"])
def test_faulty_clients_are_refused_and_the_round_is_agent_zeros(algorithm, data, tmp_path, task_identity):
    """Agents 1, 2, 3 send a NaN, a wrong shape, a point off the sphere (a vector off the
    tangent space for zeta; RFedSVRG's grad f_j(x_t) too): every refusal is recorded with its
    round, phase, node and agent, and x_{t+1} is agent 0's update alone."""
    spec = make_spec(algorithm, 2, N, experiment="flower_faults", rounds=2)
    grid, _, out = run_server(spec, data, tmp_path, faults={"flower_faults": FAULTS})
    fl, meta = io.read_run_table(out["out_table"])
    key = {"rfedags": "zeta", "rfedavg": "x", "rfedsvrg": "x"}[algorithm]
    off = "is not in the tangent space at x_t" if key == "zeta" else "is off the manifold"
    want = []
    for r in (1, 2):
        phases = (["full-gradient"] if algorithm == "rfedsvrg" else []) + ["train"]
        for phase in phases:
            k = "g" if phase == "full-gradient" else key
            o = "is not in the tangent space at x_t" if k in ("g", "zeta") else "is off the manifold"
            want += [(r, phase, NODE0 + 1, 1, f"array {k!r} has NaN or infinite entries"),
                     (r, phase, NODE0 + 2, 2, f"array {k!r} has shape ({D},), expected ({D + 1},)"),
                     (r, phase, NODE0 + 3, 3, f"array {k!r} {o}")]
    got = [(d["round"], d["phase"], d["node"], d["agent"], d["reason"]) for d in meta["flower"]["refused"]]
    assert sorted(g[:4] for g in got) == sorted(w[:4] for w in want)
    for g in got:
        (w,) = [w for w in want if w[:4] == g[:4]]
        assert g[4].startswith(w[4]), (g, w)
    assert off in " ".join(g[4] for g in got)
    assert list(fl["dropped"]) == [0, 3, 3]
    assert meta["flower"]["rounds"] == [{"round": r, "participants": S, "accepted": 1, "dropped": 3}
                                        for r in (1, 2)]
    npz, _ = data
    problem = runner.load_problem(DATASET, npz, GEOMETRY)
    mf = problem.manifold
    x = problem.initial_point(stream(spec["seed"], "init", "cpesph"))
    full, one = (lambda k: np.arange(N)[None]), np.array([0])
    xs = io.read_arrays(out["iterates"])["x"]
    for t in range(2):
        if algorithm == "rfedags":
            x = retract_weighted_stream(mf, x, gradient_stream(problem, x[None], one, ALPHA, 2, full), np.array([1.0]))
        else:   # RFedSVRG: grad f(x_t) from agent 0 alone, its correction vanishes
            x = tangent_mean(mf, x, local_sgd(problem, x[None], one, ALPHA, 2, full), np.array([1.0]))
        np.testing.assert_allclose(xs[t], x, rtol=0, atol=1e-12, err_msg=f"round {t + 1}")
    # the grad-evals column counts agent 0's work only (and, for RFedSVRG, its N_0 full gradient)
    per_round = 2 * N + (N if algorithm == "rfedsvrg" else 0)
    assert list(fl["grad_evals"]) == [0, per_round, 2 * per_round]


def test_faults_apply_to_their_experiment_only(data, tmp_path, task_identity):
    spec = make_spec("rfedags", 2, N, experiment="another", rounds=1)
    _, _, out = run_server(spec, data, tmp_path, faults={"flower_faults": FAULTS})
    meta = json.loads(io.run_meta_path(out["out_table"]).read_text())
    assert meta["flower"]["refused"] == [] and meta["flower"]["rounds"][0]["accepted"] == S


def test_a_bad_fault_name_is_refused():
    with pytest.raises(ValueError, match="fault 'zero'; allowed: nan, shape, off-manifold"):
        make_client_app({"e": {1: "zero"}})


def test_an_unknown_query_phase_is_an_error_reply(data, task_identity):
    npz, _ = data
    grid = InProcessGrid(make_client_app())
    cfg = ConfigRecord({**fserver.problem_config(make_spec("rfedags", 1, N), npz), "phase": "bogus"})
    (reply,) = grid.send_and_receive([Message(RecordDict({"config": cfg}), dst_node_id=NODE0,
                                              message_type=MessageType.QUERY)])
    assert reply.has_error() and "query phase 'bogus'; allowed: hello, full-gradient" in reply.error.reason


def test_server_main_refuses_an_algorithm_without_a_strategy(data, tmp_path):
    npz, ref = data
    with pytest.raises(ValueError, match="algorithm 'rfedproj' has no Flower strategy; allowed: "
                                         "rfedags, rfedavg, rfedsvrg"):
        fserver.server_main(None, make_spec("rfedproj", 1, N), npz, ref, tmp_path / "t.csv",
                            tmp_path / "t.meta.json")


# ---- greet, wait_for_nodes, problem_config, with_dropped ------------------------------
def pc(data):
    return fserver.problem_config(make_spec("rfedags", 1, N), data[0])


def test_greet_maps_each_agent_to_its_node_and_reads_n_j(data, task_identity):
    config = {200 + i: {"agent": j} for i, j in enumerate([2, 0, 3, 1])}
    grid = InProcessGrid(make_client_app(), config)
    nodes, sizes = fserver.greet(grid, sorted(config), pc(data), S, TIMEOUT)
    assert nodes == {2: 200, 0: 201, 3: 202, 1: 203}
    assert sizes.tolist() == [N] * S and grid.timeouts == [TIMEOUT]
    assert grid.kinds()[0][:3] == (MessageType.QUERY, "hello", sorted(config))


def test_greet_leaves_out_a_node_of_an_agent_beyond_the_run(data, tmp_path, task_identity):
    own = tmp_path / "agent7.npz"
    io.write_arrays(own, {"Z": io.read_arrays(data[0])["Z"][:1]})
    config = {NODE0 + j: {"partition-id": j} for j in range(S)}
    config[99] = {"agent": 7, "data-file": str(own)}            # serves agent 7 of a larger run
    nodes, sizes = fserver.greet(InProcessGrid(make_client_app(), config), sorted(config), pc(data), S, 1.0)
    assert nodes == {j: NODE0 + j for j in range(S)} and len(sizes) == S


def test_greet_refuses_two_nodes_of_one_agent(data, task_identity):
    config = {NODE0: {"agent": 0}, NODE0 + 1: {"agent": 1}, NODE0 + 2: {"agent": 1}, NODE0 + 3: {"agent": 3}}
    with pytest.raises(RuntimeError, match=f"nodes {NODE0 + 1} and {NODE0 + 2} both serve agent 1"):
        fserver.greet(InProcessGrid(make_client_app(), config), sorted(config), pc(data), S, 1.0)


def test_greet_names_the_missing_agents_and_the_nodes_that_failed(data, task_identity):
    config = {NODE0: {"agent": 0}, NODE0 + 1: {"agent": 1}, NODE0 + 2: {}, NODE0 + 3: {"agent": 9}}
    with pytest.raises(RuntimeError) as err:
        fserver.greet(InProcessGrid(make_client_app(), config), sorted(config), pc(data), S, 1.0)
    msg = str(err.value)
    assert msg.startswith("no node serves agent(s) [2, 3]; nodes that could not load an agent: "
                          f"node {NODE0 + 2}: ValueError: this SuperNode does not say which agent")
    assert f"; node {NODE0 + 3}: ValueError: agent 9 is not in" in msg


def test_greet_without_failed_nodes_names_only_the_missing_agents(data, task_identity):
    config = {NODE0: {"agent": 0}, NODE0 + 1: {"agent": 1}}
    with pytest.raises(RuntimeError) as err:
        fserver.greet(InProcessGrid(make_client_app(), config), sorted(config), pc(data), 3, 1.0)
    assert str(err.value) == "no node serves agent(s) [2]"


class Arriving:
    """A grid whose nodes connect one per poll."""

    def __init__(self, ids):
        self.ids, self.polls = list(ids), 0

    def get_node_ids(self):
        self.polls += 1
        return self.ids[: self.polls][::-1]


def test_wait_for_nodes_waits_for_one_node_per_agent(monkeypatch):
    monkeypatch.setattr(fserver.time, "sleep", lambda s: None)
    grid = Arriving([5, 3, 9])
    assert fserver.wait_for_nodes(grid, 3, timeout=60.0) == [3, 5, 9] and grid.polls == 3
    assert fserver.wait_for_nodes(Arriving([5, 3, 9, 4]), 2, timeout=60.0) == [3, 5]


def test_wait_for_nodes_gives_up_after_its_timeout_naming_the_count(monkeypatch):
    clock = iter(np.arange(0.0, 100.0, 0.5))
    monkeypatch.setattr(fserver.time, "monotonic", lambda: float(next(clock)))
    sleeps = []
    monkeypatch.setattr(fserver.time, "sleep", sleeps.append)
    with pytest.raises(RuntimeError, match=r"^2 SuperNode\(s\) connected within 3 s, the run needs one "
                                           r"per agent: 4$"):
        fserver.wait_for_nodes(Arriving([1, 2]), 4, timeout=3.0)
    # polled until the clock passed the deadline (0 + 3 s, read every 0.5 s), 0.2 s apart
    assert len(sleeps) == 6 and set(sleeps) == {0.2}


def test_problem_config_is_what_a_client_needs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = make_spec("rfedags", 1, N)
    spec["dataset"]["params"] = {"S": S, "N": N, "d": D, "nu": 0.1}
    spec["geometry"] = {"transport": "parallel", "retraction": "normalize"}
    got = fserver.problem_config(spec, "data/x.npz")
    assert got == {"experiment": "flower_server", "problem": "cpesph",
                   "params": '{"N": 20, "S": 4, "d": 8, "nu": 0.1}',
                   "geometry": '{"retraction": "normalize", "transport": "parallel"}',
                   "data-file": str(tmp_path / "data" / "x.npz")}
    spec["geometry"] = None
    assert fserver.problem_config(spec, "x.npz")["geometry"] == "{}"


def test_with_dropped_puts_each_rounds_count_in_its_row():
    rounds = [{"round": 1, "dropped": 2}, {"round": 3, "dropped": 1}, {"round": 4, "dropped": 5},
              {"round": 0, "dropped": 7}]
    out = fserver.with_dropped(rounds, 4)
    assert out.tolist() == [0, 2, 0, 1] and out.dtype.kind == "i"
    assert fserver.with_dropped([], 2).tolist() == [0, 0]


def test_run_flower_is_one_job_of_run_flower_jobs(monkeypatch):
    calls = []
    monkeypatch.setattr(fserver, "run_flower_jobs", lambda jobs, **kw: calls.append((jobs, kw)) or ["T0", "T1"])
    assert fserver.run_flower("s", "d", "r", "t", "m", timeout=3, num_cpus=2) == "T0"
    assert calls == [([dict(spec="s", data_npz="d", reference_npz="r", out_table="t", out_meta="m")],
                      {"timeout": 3, "num_cpus": 2})]


def test_experiment_jobs_name_what_is_missing_and_where_runs_go(tmp_path):
    from rfl.config import ConfigError

    cfg = tmp_path / "smoke.yaml"
    cfg.write_text(Path("config/smoke.yaml").read_text().replace('output_dir: ".smoke/"', f'output_dir: "{tmp_path}/"'))
    with pytest.raises(ConfigError, match="no experiment 'nope'; allowed: "):
        fserver.experiment_jobs(cfg, "nope")
    data = tmp_path / "results/data/cpesph/fixed.npz"
    with pytest.raises(ConfigError) as err:
        fserver.experiment_jobs(cfg, "cpesph_fixed")
    assert str(err.value) == (f"{data} is missing; build it first: snakemake --cores 1 --configfile {cfg} {data}")
    for kind in ("data", "reference"):
        p = tmp_path / f"results/{kind}/cpesph/fixed.npz"
        p.parent.mkdir(parents=True)
        p.write_bytes(b"")
    jobs = fserver.experiment_jobs(cfg, "cpesph_fixed", out_dir=tmp_path / "elsewhere")
    assert jobs and all(j["out_table"] == tmp_path / "elsewhere" / f"{j['spec']['run_id']}.csv"
                        and j["out_meta"] == tmp_path / "elsewhere" / f"{j['spec']['run_id']}.meta.json"
                        and j["data_npz"] == data and j["reference_npz"] == tmp_path / "results/reference/cpesph/fixed.npz"
                        and j["spec"]["experiment"] == "cpesph_fixed" for j in jobs)
    default = fserver.experiment_jobs(cfg, "cpesph_fixed")
    assert {j["out_table"].parent for j in default} == {tmp_path / "results/flower/cpesph_fixed"}
    # school_r2 also runs rsd (a centralised baseline): no Flower strategy (its data there)
    from rfl import config as rflconfig
    for spec in rflconfig.expand_runs(rflconfig.load(cfg)):
        if spec["experiment"] == "school_r2":
            for kind in ("data", "reference"):
                p = tmp_path / f"results/{kind}/{spec['dataset']['name']}/{spec['dataset']['instance']}.npz"
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(b"")
    with pytest.raises(ConfigError) as err:
        fserver.experiment_jobs(cfg, "school_r2")
    assert str(err.value) == (f"{cfg}: experiment 'school_r2' runs 'rsd', which has no Flower strategy; "
                              "allowed: rfedags, rfedavg, rfedsvrg")


# ---- the evaluation exchange and the summary line -----------------------------------
SIZES = np.array([3, 5, 7, 11])


def strategy(data, name="rfedags"):
    npz, _ = data
    problem = runner.load_problem(DATASET, npz, GEOMETRY)
    alg = runner.make_algorithm(make_spec(name, 3, 5), problem)
    return STRATEGIES[name](alg, {j: NODE0 + j for j in range(S)}, SIZES, {"problem": "cpesph", "params": "{}"})


def cost_reply(msg, cost, agent):
    return Message(RecordDict({"metrics": MetricRecord({"agent": agent, "cost": cost})}), reply_to=msg)


def test_configure_evaluate_asks_every_node_and_the_cost_is_weighted_by_n_j(data, task_identity):
    st = strategy(data)
    x = np.linspace(-1, 1, D + 1)
    messages = list(st.configure_evaluate(9, to_record(x=x), ConfigRecord(), None))
    assert [int(m.metadata.dst_node_id) for m in messages] == [NODE0 + j for j in range(S)]
    assert all(m.metadata.message_type == MessageType.EVALUATE for m in messages)
    for m in messages:
        np.testing.assert_array_equal(m.content["arrays"]["x"].numpy(), x)
        assert dict(m.content["config"]) == {"problem": "cpesph", "params": "{}", "algorithm": "rfedags"}
    costs = [0.5, 2.0, -1.0, 4.0]
    replies = [cost_reply(m, c, j) for j, (m, c) in enumerate(zip(messages, costs))]
    got = st.aggregate_evaluate(9, replies[::-1])["cost"]
    # the same sum in another order (a dot product): a few ulps apart
    assert got == pytest.approx(sum(n * c for n, c in zip(SIZES, costs)) / SIZES.sum(), rel=1e-14)
    # one agent short (an error reply, a NaN, or no reply at all): no federated cost
    err = Message(Error(code=0, reason="failed"), reply_to=messages[2])
    assert st.aggregate_evaluate(9, replies[:2] + [err] + replies[3:]) is None
    assert st.aggregate_evaluate(9, replies[:2] + [cost_reply(messages[2], float("nan"), 2)] + replies[3:]) is None
    assert st.aggregate_evaluate(9, replies[1:]) is None


def test_a_reply_of_a_node_of_no_agent_does_not_count_in_the_cost(data, task_identity):
    st = strategy(data)
    x = np.linspace(-1, 1, D + 1)
    messages = list(st.configure_evaluate(1, to_record(x=x), ConfigRecord(), None))
    stranger = Message(RecordDict({"config": ConfigRecord({})}), dst_node_id=999, message_type=MessageType.EVALUATE)
    replies = [cost_reply(m, 1.0 + j, j) for j, m in enumerate(messages[:3])] + [cost_reply(stranger, 5.0, 3)]
    assert st.aggregate_evaluate(1, replies) is None


def test_summary_names_the_algorithm_and_its_settings(data):
    lines = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append((record.levelno, record.getMessage()))

    handler = Keep()
    logger = logging.getLogger("flwr")
    logger.addHandler(handler)
    try:
        strategy(data, "rfedsvrg").summary()
    finally:
        logger.removeHandler(handler)
    assert lines == [(logging.INFO, "rfl rfedsvrg on Flower: 4 agents, K=3, B=5, participation=None")]


# ---- a refusal, called directly ---------------------------------------------------------
def test_a_refusal_is_one_log_line_and_one_record(data):
    st = strategy(data)
    with Lines() as lines:
        st.refuse(3, 999, None, "a node that serves no agent of this run")
        st.refuse(2, NODE0 + 1, 1, "no reply", "full-gradient")
    assert lines == [
        (logging.WARNING, "round 3: dropped the train reply of node 999: a node that serves no agent of "
                          "this run; the round proceeds with the others"),
        (logging.WARNING, f"round 2: dropped the full-gradient reply of node {NODE0 + 1} (agent 1): no reply; "
                          "the round proceeds with the others")]
    assert st.refusals == [
        {"round": 3, "phase": "train", "node": 999, "agent": None, "reason": "a node that serves no agent of this run"},
        {"round": 2, "phase": "full-gradient", "node": NODE0 + 1, "agent": 1, "reason": "no reply"}]


def test_an_error_reply_is_refused_as_the_clients_failure(data, task_identity):
    from rfl.flower.client import _reply

    st = strategy(data)
    st.sampler = AgentSampler(np.random.default_rng(1), SIZES, 1, None)
    x0 = np.zeros(D + 1)
    x0[0] = 1.0
    messages = list(st.configure_train(1, to_record(x=x0), ConfigRecord(), None))
    replies = []
    for m in messages:
        j = int(m.metadata.dst_node_id) - NODE0
        replies.append(Message(Error(code=0, reason="the ClientApp raised"), reply_to=m) if j == 2
                       else _reply(m, _FakeAgent(j), {"zeta": np.zeros(D + 1)}))
    _, metrics = st.aggregate_train(1, replies)
    assert [(r["agent"], r["reason"]) for r in st.refusals] == [(2, "the client failed: the ClientApp raised")]
    assert (metrics["participants"], metrics["accepted"], metrics["dropped"]) == (S, S - 1, 1)


class _FakeAgent:
    """What ``_reply`` reads of an agent: its id and N_j."""

    def __init__(self, j):
        self.agent, self.n_local = j, int(SIZES[j])


# ---- run_flower_jobs with the engine replaced by the in-process grid -----------------
class Engine:
    """``flwr.simulation.run_simulation`` in this process: the ServerApp on an
    ``InProcessGrid`` of ``num_supernodes`` nodes serving the ClientApp given."""

    def __init__(self, write=True):
        self.calls, self.write = [], write

    def __call__(self, server_app, client_app, num_supernodes, backend_config=None, verbose_logging=False):
        self.calls.append((num_supernodes, backend_config, verbose_logging))
        if self.write:
            grid = InProcessGrid(client_app, {NODE0 + j: {"partition-id": j} for j in range(num_supernodes)})
            try:
                server_app(grid, Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config={}))
            except Exception:        # noqa: BLE001 - the engine logs a ServerApp's exception and returns
                pass


def jobs_of(data, d, *specs):
    npz, ref = data
    return [dict(spec=s, data_npz=npz, reference_npz=ref, out_table=d / f"{i}.csv", out_meta=d / f"{i}.meta.json")
            for i, s in enumerate(specs)]


def test_run_flower_jobs_runs_every_job_on_one_engine_start(data, tmp_path, task_identity, monkeypatch):
    import flwr.simulation

    engine = Engine()
    monkeypatch.setattr(flwr.simulation, "run_simulation", engine)
    jobs = jobs_of(data, tmp_path, make_spec("rfedags", 2, N, rounds=2),
                   make_spec("rfedavg", 1, N, experiment="flower_faults", rounds=1))
    tables = fserver.run_flower_jobs(jobs, faults={"flower_faults": {3: "nan"}}, num_cpus=2, timeout=TIMEOUT)
    assert engine.calls == [(S, {"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                                 "init_args": {"num_cpus": 2, "include_dashboard": False,
                                               "logging_level": "error", "log_to_driver": False}}, False)]
    assert [len(t) for t in tables] == [3, 2]
    for j, t in zip(jobs, tables):
        np.testing.assert_array_equal(t["cost"].to_numpy(), io.read_run_table(j["out_table"])[0]["cost"].to_numpy())
    refused = json.loads(io.run_meta_path(jobs[1]["out_table"]).read_text())["flower"]["refused"]
    assert [(r["agent"], r["reason"]) for r in refused] == [(3, "array 'x' has NaN or infinite entries")]
    assert json.loads(io.run_meta_path(jobs[0]["out_table"]).read_text())["flower"]["refused"] == []


def test_run_flower_jobs_raises_the_serverapps_exception(data, tmp_path, task_identity, monkeypatch):
    import flwr.simulation

    monkeypatch.setattr(flwr.simulation, "run_simulation", Engine())
    with pytest.raises(ValueError, match="algorithm 'rfedproj' has no Flower strategy"):
        fserver.run_flower_jobs(jobs_of(data, tmp_path, make_spec("rfedproj", 1, N)))


def test_run_flower_jobs_names_the_tables_it_did_not_write(data, tmp_path, task_identity, monkeypatch):
    import flwr.simulation

    monkeypatch.setattr(flwr.simulation, "run_simulation", Engine(write=False))
    jobs = jobs_of(data, tmp_path, make_spec("rfedags", 1, N), make_spec("rfedavg", 1, N))
    jobs[0]["out_table"].write_text("")            # one table there, the other not
    with pytest.raises(RuntimeError) as err:
        fserver.run_flower_jobs(jobs)
    assert str(err.value) == (f"the Flower run ended without writing {jobs[1]['out_table']} (see the log above)")

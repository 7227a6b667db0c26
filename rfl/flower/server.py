"""The ServerApp: one run spec of the workflow, its rounds on Flower, rfl's run files out.

``server_main`` loads the run's problem (for the run table's metrics, computed on the server
as ``rfl run`` computes them) and reference, greets the nodes (each says which agent it
serves and its N_j), builds the strategy of ``rfl.flower.strategies`` and hands
``rfl.runner.execute`` a round driver whose ``iterate`` runs each round as Flower messages:
the table and metadata have ``rfl run``'s format, so figures and reports read them as they
are. The table adds a last column ``dropped``: the round's participants whose reply was
dropped (no reply, late, malformed, ...; 0 in row 0). The metadata adds ``engine:
"flower"``, every dropped reply (``flower.refused``: round, phase, node, agent, reason), the
per-round counts (``flower.rounds``: participants, accepted, dropped) and the federated cost
of the last iterate (sum_j p_j f_j(x_T) from the nodes' own evaluation).

``run_flower`` runs it on Flower's simulation engine, one virtual SuperNode per agent;
``flower/server_app.py`` is the same ServerApp for ``flwr run`` (simulation or deployment).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np
from flwr.app import ConfigRecord, Context, Message, MessageType, RecordDict
from flwr.common.logger import log
from flwr.serverapp import Grid, ServerApp

from rfl import io, runner
from rfl.algorithms.base import Counters
from rfl.algorithms.sampling import AgentSampler
from rfl.flower.strategies import STRATEGIES, to_record


class FlowerRounds:
    """Round driver for ``rfl.runner.execute``: ``iterate(x0, rounds, rng)`` yields
    ``(t, x_{t+1}, Counters)`` like ``FederatedStrategy.iterate``, each round one
    configure_train / send_and_receive / aggregate_train of ``strategy`` on ``grid``."""

    def __init__(self, strategy, grid: Grid, timeout: float | None = None):
        self.strategy, self.grid, self.timeout = strategy, grid, timeout
        self.x = None
        self.history: list[np.ndarray] = []

    def iterate(self, x0, rounds, rng):
        alg = self.strategy.algorithm
        # the simulator's sampler from the run's draws (rfl.algorithms.sampling.Draws):
        # same participants, same key
        self.strategy.sampler = AgentSampler(rng, self.strategy.local_sizes, alg.batch_size,
                                               alg.participation)
        counters = Counters()
        arrays = to_record(x=x0)
        for t in range(rounds):
            messages = self.strategy.configure_train(t + 1, arrays, ConfigRecord(), self.grid)
            replies = self.grid.send_and_receive(messages, timeout=self.timeout)
            arrays, metrics = self.strategy.aggregate_train(t + 1, replies)
            log(logging.INFO, "rfl: round %d done: %d participants, %d accepted, %d dropped",
                t + 1, metrics["participants"], metrics["accepted"], metrics["dropped"])
            grad_evals, floats = self.strategy.last_counts
            counters.grad_evals += grad_evals
            counters.floats += floats
            self.x = np.asarray(arrays["x"].numpy(), dtype=float)
            self.history.append(self.x)
            yield t, self.x, counters


def with_dropped(rounds: list[dict], rows: int) -> np.ndarray:
    """The run table's ``dropped`` column: (rows,) int, 0 for round 0, then each round's
    participants whose reply was dropped (``RiemannianStrategy.rounds``, in round order)."""
    dropped = np.zeros(rows, dtype=int)
    for r in rounds:
        if 0 < r["round"] < rows:
            dropped[r["round"]] = r["dropped"]
    return dropped


def wait_for_nodes(grid: Grid, n: int, timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while len(nodes := sorted(grid.get_node_ids())) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(nodes)} SuperNode(s) connected within {timeout:g} s, "
                               f"the run needs one per agent: {n}")
        time.sleep(0.2)
    return nodes


def greet(grid: Grid, node_ids, problem_config: dict, n_agents: int, timeout) -> tuple[dict, np.ndarray]:
    """Ask every node which agent it serves and its N_j: ({agent: node id}, (S,) N_j)."""
    content = RecordDict({"config": ConfigRecord({**problem_config, "phase": "hello"})})
    replies = grid.send_and_receive([Message(content=content, message_type=MessageType.QUERY,
                                             dst_node_id=n) for n in node_ids], timeout=timeout)
    nodes, sizes, failed = {}, {}, []
    for msg in sorted(replies, key=lambda m: m.metadata.src_node_id):
        node = int(msg.metadata.src_node_id)
        if msg.has_error():              # e.g. a node of a larger federation: not this run's
            failed.append(f"node {node}: {msg.error.reason}")
            continue
        m = msg.content.metric_records["metrics"]
        j = int(m["agent"])
        if j in nodes:
            raise RuntimeError(f"nodes {nodes[j]} and {node} both serve agent {j}")
        if not 0 <= j < n_agents:
            continue
        nodes[j], sizes[j] = node, int(m["num-examples"])
    missing = sorted(set(range(n_agents)) - set(nodes))
    if missing:
        raise RuntimeError(f"no node serves agent(s) {missing}" +
                           (f"; nodes that could not load an agent: {'; '.join(failed)}" if failed else ""))
    return nodes, np.array([sizes[j] for j in range(n_agents)])


def problem_config(spec: dict, data_file) -> dict:
    """The strings every message carries so that a client can load its problem."""
    ds = spec["dataset"]
    return {"experiment": str(spec["experiment"]), "problem": ds["problem"], "params": json.dumps(ds["params"], sort_keys=True),
            "geometry": json.dumps(spec.get("geometry") or {}, sort_keys=True),
            "data-file": str(Path(data_file).resolve())}


def server_main(grid: Grid, spec: dict, data_npz, reference_npz, out_table, out_meta,
                iterates=None, timeout: float | None = 120.0, connect_timeout: float = 60.0,
                evaluate: bool = True):
    """Run ``spec`` with its rounds on ``grid``'s nodes and write rfl's run files (and, if
    ``iterates`` names a file, the server iterates x_1..x_T as its array "x": (T, *point_shape));
    ``evaluate``: ask every node for f_j(x_T) at the end (one more message exchange)."""
    start = time.time()
    name = spec["algorithm"]["name"]
    if name not in STRATEGIES:
        raise ValueError(f"algorithm {name!r} has no Flower strategy; allowed: {', '.join(STRATEGIES)}")
    problem = runner.load_problem(spec["dataset"], data_npz, spec.get("geometry"))
    ref = io.read_arrays(reference_npz)
    algorithm = runner.make_algorithm(spec, problem)
    S = int(np.asarray(problem.local_sizes).shape[0])
    pc = problem_config(spec, data_npz)
    nodes, sizes = greet(grid, wait_for_nodes(grid, S, connect_timeout), pc, S, timeout)
    log(logging.INFO, "rfl: %d nodes greeted after %.1f s", S, time.time() - start)
    strategy = STRATEGIES[name](algorithm, nodes, sizes, pc, timeout=timeout)
    strategy.summary()
    rounds = FlowerRounds(strategy, grid, timeout)
    table = runner.execute(spec, problem, ref["x_star"], float(ref["F_star"]), algorithm=rounds)
    table["dropped"] = with_dropped(strategy.rounds, len(table))
    log(logging.INFO, "rfl: %d rounds done after %.1f s", len(table) - 1, time.time() - start)
    final = None
    if evaluate and rounds.x is not None:
        replies = grid.send_and_receive(
            strategy.configure_evaluate(len(table), to_record(x=rounds.x), ConfigRecord(), grid),
            timeout=timeout)
        res = strategy.aggregate_evaluate(len(table), replies)
        final = None if res is None else float(res["cost"])
    if iterates is not None:
        io.write_arrays(iterates, {"x": np.stack(rounds.history) if rounds.history
                                   else np.empty((0, *problem.manifold.point_shape))})
    status = "diverged" if (table["status"] == "diverged").any() else "ok"
    import flwr
    io.write_json(out_meta, runner._metadata(
        spec, start, status, rounds_completed=int(table["round"].iloc[-1]),
        F_star=float(ref["F_star"]), reference_method=str(ref["method"]),
        predictions=problem.predictions(spec), engine="flower",
        flower={"flwr": flwr.__version__, "supernodes": S,
                "refused": strategy.refusals, "rounds": strategy.rounds,
                "federated_cost_final": final}))
    io.write_table(out_table, table)
    log(logging.INFO, "rfl: wrote %s and %s", out_table, out_meta)
    return table


def make_server_app(jobs: list[dict], errors: list | None = None, **kwargs) -> ServerApp:
    """A ServerApp running ``jobs`` one after the other, each a dict of ``server_main``'s
    arguments (spec, data_npz, reference_npz, out_table, out_meta[, iterates]); ``errors``
    collects an exception it raised (the simulation engine logs a ServerApp's exception)."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        try:
            for job in jobs:
                server_main(grid, **job, **kwargs)
        except BaseException as exc:
            if errors is not None:
                errors.append(exc)
            raise

    return app


def experiment_jobs(config_path, experiment: str, out_dir=None) -> list[dict]:
    """The jobs of every run of ``experiment`` in the workflow config ``config_path``: the
    specs the workflow expands, its data and reference files (results/data|reference/...
    under the config's output_dir, which must exist), and the outputs
    ``out_dir``/RUN_ID.csv (+ .meta.json), by default OUT/results/flower/EXPERIMENT/.
    Raises ``rfl.config.ConfigError`` naming what is missing or allowed."""
    from rfl import config as rflconfig

    cfg = rflconfig.load(config_path)
    if experiment not in cfg["experiments"]:
        raise rflconfig.ConfigError(f"{config_path}: no experiment {experiment!r}; allowed: "
                                    f"{', '.join(cfg['experiments'])}")
    out = cfg.get("output_dir", "")
    target = Path(out_dir) if out_dir else Path(f"{out}results/flower/{experiment}")
    jobs = []
    for spec in rflconfig.expand_runs(cfg):
        if spec["experiment"] != experiment:
            continue
        name = spec["algorithm"]["name"]
        if name not in STRATEGIES:
            raise rflconfig.ConfigError(f"{config_path}: experiment {experiment!r} runs {name!r}, "
                                        f"which has no Flower strategy; allowed: {', '.join(STRATEGIES)}")
        ds = spec["dataset"]
        data, ref = (Path(f"{out}results/{kind}/{ds['name']}/{ds['instance']}.npz")
                     for kind in ("data", "reference"))
        for path in (data, ref):
            if not path.is_file():
                raise rflconfig.ConfigError(f"{path} is missing; build it first: snakemake --cores 1 "
                                            f"--configfile {config_path} {path}")
        target.mkdir(parents=True, exist_ok=True)
        jobs.append(dict(spec=spec, data_npz=data, reference_npz=ref,
                         out_table=target / f"{spec['run_id']}.csv",
                         out_meta=target / f"{spec['run_id']}.meta.json"))
    return jobs


def run_flower_jobs(jobs: list[dict], faults: dict | None = None, num_cpus: int = 1,
                    verbose: bool = False, **kwargs) -> list:
    """Run several specs on one start of Flower's simulation engine (as many virtual
    SuperNodes as the largest problem has agents; a run uses the nodes of its agents) and
    write their run files; returns their tables."""
    from flwr.simulation import run_simulation

    from rfl.flower.client import make_client_app

    S = max(len(runner.PROBLEMS[j["spec"]["dataset"]["problem"]].local_sizes_from(
        j["spec"]["dataset"]["params"])) for j in jobs)
    errors: list = []
    run_simulation(
        server_app=make_server_app(jobs, errors, **kwargs),
        client_app=make_client_app(faults),
        num_supernodes=S,
        backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                        "init_args": {"num_cpus": num_cpus, "include_dashboard": False,
                                      "logging_level": "error", "log_to_driver": verbose}},
        verbose_logging=verbose,
    )
    if errors:
        raise errors[0]
    missing = [str(j["out_table"]) for j in jobs if not Path(j["out_table"]).exists()]
    if missing:
        raise RuntimeError(f"the Flower run ended without writing {', '.join(missing)} (see the log above)")
    return [io.read_run_table(j["out_table"])[0] for j in jobs]


def run_flower(spec: dict, data_npz, reference_npz, out_table, out_meta, **kwargs):
    """Run one spec on Flower's simulation engine, one virtual SuperNode per agent, and write
    its run table and metadata as ``rfl run`` does; returns the table."""
    return run_flower_jobs([dict(spec=spec, data_npz=data_npz, reference_npz=reference_npz,
                                 out_table=out_table, out_meta=out_meta)], **kwargs)[0]

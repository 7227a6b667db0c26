"""Deployment smoke test: a SuperLink and three SuperNodes as separate processes on localhost
(insecure mode, for the test only), one short run submitted with ``flwr run`` of the
repository's Flower app, its iterates checked against the in-process simulator; and (slow:
two minutes, most of it waiting for the dead node's timeout) the same with one SuperNode
killed after round 1, the run finished by the others.

Every process is started in its own session and its whole process group is ended at the
end (the SuperLink and SuperNodes spawn ServerApp/ClientApp processes); FLWR_HOME is a
temporary folder, so nothing is written to the user's ~/.flwr.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr", reason="Flower is not installed (pip install -e \".[flower]\")")
if shutil.which("flower-superlink") is None or shutil.which("flower-supernode") is None:
    pytest.skip("flower-superlink / flower-supernode are not on PATH", allow_module_level=True)

from rfl import io, runner
from rfl.algorithms.sampling import AgentSampler, Draws
from rfl.random import stream

ROOT = Path(__file__).resolve().parents[1]
DEADLINE = 90.0          # seconds from submission to the run table (typically well under 60)
KILL_DEADLINE = 120.0    # seconds from submission to the end of round 1 (the killed run)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"process {proc.args[0]} exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on port {port} after {timeout} s")


def stop(procs) -> None:
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    end = time.monotonic() + 5
    for p in procs:
        try:
            p.wait(timeout=max(0.1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=5)


def test_superlink_and_three_supernodes_give_the_simulators_iterates(tmp_path):
    ds = {"name": "cpesph", "problem": "cpesph", "seed": 7, "instance": "fixed",
          "params": {"d": 8, "nu": 0.1, "S": 3, "N": 20}}
    spec = {"experiment": "deployment", "run_id": "rfedags_K2", "seed": 0, "rounds": 2,
            "dataset": ds, "geometry": {"retraction": "normalize", "transport": "parallel"},
            "step": {"rule": "fixed", "alpha": 0.5},
            "algorithm": {"name": "rfedags", "K": 2, "batch_size": 5, "participation": 2}}
    data, ref = tmp_path / "data.npz", tmp_path / "ref.npz"
    runner.generate_data(ds, data)
    runner.compute_reference(ds, data, ref)
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    home = tmp_path / "flwr_home"
    home.mkdir()
    port = free_port()
    (home / "config.toml").write_text(f'[superlink]\ndefault = "test"\n\n[superlink.test]\n'
                                      f'address = "127.0.0.1:{port}"\ninsecure = true\n')
    env = {**os.environ, "FLWR_HOME": str(home), "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "out"
    procs, logs = [], []

    def start(args, log):
        fh = open(tmp_path / log, "w")          # noqa: SIM115 (closed in the finally below)
        logs.append(fh)
        p = subprocess.Popen(args, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=tmp_path,
                             start_new_session=True)
        procs.append(p)
        return p

    try:
        link = start(["flower-superlink", "--insecure", "--disable-runtime-dependency-installation",
                      "--port", str(port), "--health-server-address", f"127.0.0.1:{free_port()}"],
                     "superlink.log")
        wait_port(port, link, 30)
        for j in range(3):
            start(["flower-supernode", "--insecure", "--superlink", f"127.0.0.1:{port}",
                   "--port", str(free_port()), "--node-config", f"agent={j} data-file='{data}'"],
                  f"supernode{j}.log")
        run_config = " ".join(f"{k}='{v}'" for k, v in {
            "spec": tmp_path / "spec.json", "data": data, "reference": ref,
            "out-table": out / "run.csv", "out-meta": out / "run.meta.json",
            "iterates": out / "run.x.npz"}.items()) + " evaluate=false"
        t0 = time.monotonic()
        sub = subprocess.run([sys.executable, "-m", "flwr.cli.app", "run", str(ROOT / "flower"), "test",
                              "--run-config", run_config], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=60, check=False)
        if sub.returncode != 0:     # the console script, if the module form is not runnable
            sub = subprocess.run(["flwr", "run", str(ROOT / "flower"), "test", "--run-config",
                                  run_config], env=env, cwd=tmp_path, capture_output=True,
                                 text=True, timeout=60, check=False)
        assert sub.returncode == 0, sub.stdout + sub.stderr
        while not (out / "run.csv").exists():
            assert time.monotonic() - t0 < DEADLINE, (
                f"no run table {DEADLINE} s after submission; SuperLink log:\n"
                + (tmp_path / "superlink.log").read_text()[-3000:])
            time.sleep(0.5)
        elapsed = time.monotonic() - t0
    finally:
        stop(procs)
        for fh in logs:
            fh.close()
    print(f"deployment run: {elapsed:.1f} s from submission to run table")
    assert all(p.poll() is not None for p in procs)

    problem = runner.load_problem(ds, data, spec["geometry"])
    alg = runner.make_algorithm(spec, problem)
    x = problem.initial_point(stream(0, "init", "cpesph"))
    sampler = AgentSampler(Draws(0, "deployment"), problem.local_sizes,      # the run's draws
                             alg.batch_size, alg.participation)
    got = io.read_arrays(out / "run.x.npz")["x"]
    for t in range(spec["rounds"]):
        x = alg.round(x, t, sampler).x
        np.testing.assert_allclose(got[t], x, rtol=0, atol=1e-12, err_msg=f"round {t + 1}")
    table, meta = io.read_run_table(out / "run.csv")
    assert list(table.columns[:len(runner.COLUMNS)]) == runner.COLUMNS
    assert (table["status"] == "ok").all() and len(table) == spec["rounds"] + 1
    assert meta["engine"] == "flower" and meta["flower"]["supernodes"] == 3


@pytest.mark.slow
def test_a_supernode_killed_mid_run_leaves_the_run_to_the_others(tmp_path):
    """Three SuperNodes; once round 1 is done (the ServerApp's log line), the SuperNode of
    agent 2 is killed (SIGKILL to its process group). The run still finishes: from round 2 on,
    agent 2 is logged "no reply" after the round's timeout and the round is aggregated over
    agents 0 and 1, so the iterates are the in-process simulator's with agent 2 absent from
    rounds 2.. (same draws), and the table's ``dropped`` column says 1 from round 2 on."""
    ds = {"name": "cpesph", "problem": "cpesph", "seed": 7, "instance": "fixed",
          "params": {"d": 8, "nu": 0.1, "S": 3, "N": 20}}
    # the timeout: a round's replies take seconds (a ClientApp process per message), up to
    # ~20 s on a loaded 2-core machine; the killed node costs one timeout per later round
    rounds, killed, timeout = 3, 2, 45.0
    spec = {"experiment": "deployment", "run_id": "rfedavg_K2", "seed": 0, "rounds": rounds,
            "dataset": ds, "geometry": {"retraction": "normalize", "transport": "parallel"},
            "step": {"rule": "fixed", "alpha": 0.5},
            "algorithm": {"name": "rfedavg", "K": 2, "batch_size": 5, "participation": None}}
    data, ref = tmp_path / "data.npz", tmp_path / "ref.npz"
    runner.generate_data(ds, data)
    runner.compute_reference(ds, data, ref)
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    home = tmp_path / "flwr_home"
    home.mkdir()
    port = free_port()
    (home / "config.toml").write_text(f'[superlink]\ndefault = "test"\n\n[superlink.test]\n'
                                      f'address = "127.0.0.1:{port}"\ninsecure = true\n')
    env = {**os.environ, "FLWR_HOME": str(home), "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "out"
    procs, logs, nodes = [], [], []

    def start(args, log):
        fh = open(tmp_path / log, "w")          # noqa: SIM115 (closed in the finally below)
        logs.append(fh)
        p = subprocess.Popen(args, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=tmp_path,
                             start_new_session=True)
        procs.append(p)
        return p

    def server_log():
        return "\n".join((tmp_path / name).read_text(errors="replace")
                         for name in ("superlink.log", "flwr_run.log") if (tmp_path / name).exists())

    try:
        link = start(["flower-superlink", "--insecure", "--disable-runtime-dependency-installation",
                      "--port", str(port), "--health-server-address", f"127.0.0.1:{free_port()}"],
                     "superlink.log")
        wait_port(port, link, 30)
        for j in range(3):
            nodes.append(start(["flower-supernode", "--insecure", "--superlink", f"127.0.0.1:{port}",
                                "--port", str(free_port()), "--node-config",
                                f"agent={j} data-file='{data}'"], f"supernode{j}.log"))
        run_config = " ".join(f"{k}='{v}'" for k, v in {
            "spec": tmp_path / "spec.json", "data": data, "reference": ref,
            "out-table": out / "run.csv", "out-meta": out / "run.meta.json",
            "iterates": out / "run.x.npz"}.items()) + f" evaluate=false timeout={timeout}"
        t0 = time.monotonic()
        # --stream: flwr run stays attached and prints the ServerApp's log (its round lines)
        start([sys.executable, "-m", "flwr.cli.app", "run", str(ROOT / "flower"), "test",
               "--run-config", run_config, "--stream"], "flwr_run.log")
        while "rfl: round 1 done" not in server_log():
            assert time.monotonic() - t0 < KILL_DEADLINE, (
                f"round 1 not done {KILL_DEADLINE} s after submission; log:\n" + server_log()[-3000:])
            time.sleep(0.5)
        os.killpg(nodes[killed].pid, signal.SIGKILL)       # the SuperNode and its ClientApps
        nodes[killed].wait(timeout=10)
        while not (out / "run.csv").exists():
            assert time.monotonic() - t0 < KILL_DEADLINE + rounds * timeout, (
                "no run table after the kill; log:\n" + server_log()[-3000:])
            time.sleep(0.5)
        elapsed = time.monotonic() - t0
    finally:
        stop(procs)
        for fh in logs:
            fh.close()
    print(f"deployment run with a SuperNode killed: {elapsed:.1f} s from submission to run table")
    table, meta = io.read_run_table(out / "run.csv")
    assert (table["status"] == "ok").all() and len(table) == rounds + 1
    refused = meta["flower"]["refused"]
    print("dropped replies:", refused)
    absent = [set() for _ in range(rounds)]
    for r in refused:
        absent[r["round"] - 1].add(r["agent"])
    # the killed node's agent has no reply in every round after the kill, and the others
    # carry the rounds (a live node slower than the timeout would be dropped too, and the
    # comparison below would still hold; it must not take the whole round)
    assert all(killed in absent[t] for t in range(1, rounds)), refused
    # no reply within the timeout, or the SuperLink's "Node Unavailable" in the node's place
    # once it misses its heartbeats; either way named with the killed node's agent
    assert all(r["reason"] == "no reply" or r["reason"].startswith("the SuperLink answered for the node")
               for r in refused if r["agent"] == killed), refused
    assert all(r["agent"] is not None for r in refused), refused
    assert all(len(a) < 3 for a in absent[1:]), refused
    assert list(table["dropped"]) == [0] + [len(a) for a in absent]
    assert [r["dropped"] for r in meta["flower"]["rounds"]] == [len(a) for a in absent]

    problem = runner.load_problem(ds, data, spec["geometry"])
    alg = runner.make_algorithm(spec, problem)
    x = problem.initial_point(stream(0, "init", "cpesph"))
    sampler = Without(AgentSampler(stream(0, "sampling", "deployment", spec["run_id"]),
                                   problem.local_sizes, alg.batch_size, alg.participation), absent)
    got = io.read_arrays(out / "run.x.npz")["x"]
    for t in range(rounds):
        x = alg.round(x, t, sampler).x
        np.testing.assert_allclose(got[t], x, rtol=0, atol=1e-12, err_msg=f"round {t + 1}")


class Without:
    """The run's sampler with the agents ``absent[t]`` left out of round t's participants (the
    weights and the counter-based mini-batches are the sampler's own)."""

    def __init__(self, sampler, absent):
        self.sampler, self.absent, self.t = sampler, absent, 0

    def participants(self):
        drawn = self.sampler.participants()
        self.t += 1
        return np.array([j for j in drawn if j not in self.absent[self.t - 1]], dtype=int)

    def weights(self, local_sizes, agents):
        return self.sampler.weights(local_sizes, agents)

    def batches(self, agents):
        return self.sampler.batches(agents)

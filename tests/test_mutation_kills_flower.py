"""The ClientApp's helpers called in this process: which agent a SuperNode serves and from which
file (``agent_of``), how a faulty client corrupts its reply (``_corrupt``), and the edge of an
agent's range in ``Agent.from_file``. Under Flower's simulation engine these run in worker
processes, where neither a failing assertion nor mutation testing's map of tests to functions
reaches them."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("flwr")

from flwr.app import ConfigRecord, Context, RecordDict  # noqa: E402

from rfl import runner  # noqa: E402
from rfl.flower.client import FAULTS, _corrupt, agent_of  # noqa: E402
from rfl.flower.local import Agent  # noqa: E402
from rfl.manifolds.sphere import Sphere  # noqa: E402

DATASET = {"name": "cpesph", "problem": "cpesph", "seed": 7, "instance": "fixed",
           "params": {"d": 6, "nu": 0.1, "S": 3, "N": 10}}
GEOMETRY = {"retraction": "normalize", "transport": "parallel"}


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    npz = tmp_path_factory.mktemp("flower_kills") / "cpesph.npz"
    runner.generate_data(DATASET, npz)
    return npz


def _message(data_file) -> SimpleNamespace:
    """What ``agent_of`` reads of a server's message: its content's config record (a Message
    itself can only be built inside a Flower run)."""
    cfg = ConfigRecord({"problem": "cpesph", "params": json.dumps(DATASET["params"]),
                        "geometry": json.dumps(GEOMETRY), "data-file": str(data_file)})
    return SimpleNamespace(content=RecordDict({"config": cfg}))


def _context(node_config: dict) -> Context:
    return Context(run_id=1, node_id=1, node_config=node_config, state=RecordDict(), run_config={})


def test_a_node_serves_the_agent_its_config_names(data_file):
    agent = agent_of(_message(data_file), _context({"agent": 2}))
    assert (agent.agent, agent.row, agent.n_local) == (2, 2, 10)


def test_under_the_simulation_engine_the_partition_id_is_the_agent(data_file):
    agent = agent_of(_message(data_file), _context({"partition-id": 1}))
    assert (agent.agent, agent.row) == (1, 1)


def test_the_node_config_names_agent_before_partition_id(data_file):
    agent = agent_of(_message(data_file), _context({"agent": 0, "partition-id": 2}))
    assert agent.agent == 0


def test_a_node_that_names_no_agent_is_refused_saying_how_to_start_it(data_file):
    with pytest.raises(ValueError, match="--node-config"):
        agent_of(_message(data_file), _context({}))


def test_the_node_data_file_wins_over_the_server_default(data_file, tmp_path):
    from rfl import io
    own = tmp_path / "agent1.npz"
    io.write_arrays(own, {"Z": io.read_arrays(data_file)["Z"][1:2]})
    mine = agent_of(_message(tmp_path / "absent.npz"), _context({"agent": 1, "data-file": str(own)}))
    assert (mine.agent, mine.row, mine.n_local) == (1, 0, 10)


def test_agent_zero_of_a_many_agent_file_is_its_first_row(data_file):
    params, geometry = json.dumps(DATASET["params"]), json.dumps(GEOMETRY)
    first = Agent.from_file("cpesph", params, geometry, str(data_file), 0)
    assert (first.agent, first.row) == (0, 0)
    last = Agent.from_file("cpesph", params, geometry, str(data_file), 2)
    assert last.row == 2
    for bad in (-1, 3):
        with pytest.raises(ValueError, match=f"agent {bad} is not in"):
            Agent.from_file("cpesph", params, geometry, str(data_file), bad)


def test_each_fault_corrupts_as_its_name_says_and_leaves_the_value_alone():
    m = Sphere(4)
    value = np.array([0.5, 0.5, 0.5, 0.5])
    kept = value.copy()
    nan = _corrupt(value, "nan", m)
    assert np.isnan(nan[0]) and np.array_equal(nan[1:], value[1:])
    shape = _corrupt(value, "shape", m)
    assert shape.shape == (3,) and np.array_equal(shape, value[:3])
    off = _corrupt(value, "off-manifold", m)
    np.testing.assert_array_equal(off, 2.0 * value + 1.0)
    assert abs(np.linalg.norm(off) - 1.0) > 0.5                 # off the sphere indeed
    np.testing.assert_array_equal(value, kept)                  # the reply's source untouched
    assert set(FAULTS) == {"nan", "shape", "off-manifold"}
    with pytest.raises(ValueError, match="fault 'zero'; allowed: nan, shape, off-manifold"):
        _corrupt(value, "zero", m)


def test_an_agent_refuses_a_point_of_another_shape(data_file):
    """The problems' compiled kernels do not check bounds: an x (or RFedSVRG's g_ref) of
    another shape than the manifold's point is refused before it reaches them."""
    params, geometry = json.dumps(DATASET["params"]), json.dumps(GEOMETRY)
    agent = Agent.from_file("cpesph", params, geometry, str(data_file), 1)
    x = agent.problem.initial_point(np.random.default_rng(0))          # (7,)
    cfg = {"algorithm": "rfedags", "alpha": 0.5, "K": 2, "B": 5, "key": "1", "draw": 0}
    for bad, shape in ((np.ones(5), "(5,)"), (np.array(np.nan), "()"), (np.ones((1, 7)), "(1, 7)")):
        for call in (lambda: agent.train(bad, cfg), lambda: agent.full_gradient(bad),
                     lambda: agent.local_cost(bad)):
            with pytest.raises(ValueError, match=rf"^x has shape {re.escape(shape)}, expected \(7,\)$"):
                call()
    svrg = dict(cfg, algorithm="rfedsvrg")
    with pytest.raises(ValueError, match=r"^g_ref has shape \(6,\), expected \(7,\)$"):
        agent.train(x, svrg, np.zeros(6))
    assert agent.train(x, svrg, np.zeros(7)).shape == (7,)               # the right shapes pass

"""rfl.graphs on cases whose answer is written out, for the bugs mutation testing found the
other graph tests blind to: the Erdos-Renyi redraw count, a file graph's direction, the exact
wording of a stochasticity error, a spec's defaults and record, the 0/1 adjacency of a
weighted graph, the contract of a component's option defaults, and the errors of a plug-in
topology or weight rule that breaks its promise (declared for one test, then removed)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from rfl.graphs import Topology, WeightRule, check, make_mixing, stochasticity_errors
from rfl.graphs.base import canonical
from rfl.registry import GRAPHS, WEIGHT_RULES


# ---- Erdos-Renyi: attempts counts the draws -----------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_erdos_renyi_attempts_is_the_number_of_draws(seed):
    """The loop written out: draw G(S, p) with the next seed of the generator until connected;
    ``attempts`` is how many draws that took (1 when the first is connected)."""
    S, p = 10, 0.2
    rng = np.random.default_rng(seed)
    draws = 0
    while True:
        draws += 1
        G = nx.gnp_random_graph(S, p, seed=int(rng.integers(2 ** 32)))
        if nx.is_connected(G):
            break
    m = make_mixing({"name": "erdos_renyi", "p": p}, "metropolis_hastings", S, np.random.default_rng(seed))
    assert m.attempts == draws and m.describe()["attempts"] == draws
    assert sorted(m.graph.edges) == sorted(G.edges)


def test_a_certain_edge_probability_takes_one_draw():
    m = make_mixing({"name": "erdos_renyi", "p": 1.0}, "metropolis_hastings", 5, np.random.default_rng(0))
    assert m.attempts == 1 and m.graph.number_of_edges() == 10


# ---- file graphs ------------------------------------------------------------------
def test_an_asymmetric_support_is_a_directed_graph(tmp_path):
    """W_10 != 0 but W_01 = 0: agent 0 sends to 1 and not back; a symmetric-weight rule is
    refused for it, ``given`` keeps its matrix and counts its one-way edges."""
    W = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])   # row- and not column-
    path = tmp_path / "w.csv"
    np.savetxt(path, W, delimiter=",")
    (key, msg), = check({"name": "file", "path": str(path)}, "metropolis_hastings", 3)
    assert key == ["weights"] and msg == (f"metropolis_hastings needs an undirected graph, and the matrix of "
                                          f"{path} is not symmetric in its support; allowed: given")
    m = make_mixing({"name": "file", "path": str(path)}, {"name": "given", "stochastic": "row"}, 3,
                    np.random.default_rng(0))
    assert m.graph.is_directed() and sorted(m.graph.edges) == [(0, 1), (1, 2)]    # j -> i
    assert m.directed_edges == 2


def test_a_symmetric_support_is_an_undirected_graph(tmp_path):
    W = np.array([[0.5, 0.5, 0.0], [0.5, 0.25, 0.25], [0.0, 0.25, 0.75]])
    path = tmp_path / "w.npy"
    np.save(path, W)
    m = make_mixing({"name": "file", "path": str(path)}, "given", 3, np.random.default_rng(0))
    assert not m.graph.is_directed() and sorted(map(sorted, m.graph.edges)) == [[0, 1], [1, 2]]


# ---- stochasticity errors, word for word ------------------------------------------
def test_the_bad_column_names_its_own_sum():
    W = [[0.5, 0.5], [0.1, 0.9]]                     # rows sum to 1; columns to 0.6 and 1.4
    assert stochasticity_errors(W, "column") == ["column 0 sums to 0.6, not 1"]
    assert stochasticity_errors(W, "doubly") == ["column 0 sums to 0.6, not 1"]
    assert stochasticity_errors(np.array(W).T, "row") == ["row 0 sums to 0.6, not 1"]
    assert stochasticity_errors(W, "row") == []


# ---- specs: defaults, errors, the record -------------------------------------------
def test_canonical_fills_every_option_default():
    assert canonical("k_ring") == {"name": "k_ring", "k": 2}
    assert canonical({"name": "erdos_renyi"}, "graph") == {"name": "erdos_renyi", "p": 0.3}
    assert canonical({"name": "erdos_renyi", "p": 0.5}) == {"name": "erdos_renyi", "p": 0.5}
    assert canonical("given", "weights") == {"name": "given", "stochastic": "doubly"}
    assert canonical("ring") == {"name": "ring"}


def test_an_unknown_name_in_a_mapping_is_the_key_itself_or_its_name():
    (key, msg), = check({"name": "torus"}, "metropolis_hastings", 4)
    assert key == ["graph"] and msg.startswith("'torus' is not a known graph; allowed: ")
    (key, _), = check({"name": "torus", "p": 1}, "metropolis_hastings", 4)
    assert key == ["graph", "name"]


def test_the_mixing_records_the_canonical_specs():
    m = make_mixing({"name": "k_ring"}, "laplacian", 6, np.random.default_rng(0))
    d = m.describe()
    assert d["graph"] == {"name": "k_ring", "k": 2} and d["weights"] == {"name": "laplacian"}
    assert (d["stochastic"], d["directed_edges"], d["attempts"]) == ("doubly", 24, 1)
    assert d["sigma2"] == m.sigma2


def test_summaries_show_the_option_defaults():
    assert GRAPHS["k_ring"].summary() == ("The k-nearest ring: agent i talks to i +- 1, ..., i +- k (mod S); "
                                          "k = 1 is the ring. Options: k=2")
    assert WEIGHT_RULES["given"].summary() == (
        'The matrix of a file graph, checked to be as stochastic as ``stochastic`` states. '
        'Options: stochastic="doubly"; W is as stochastic as its option states')


def test_given_states_doubly_by_default():
    assert WEIGHT_RULES["given"].stated() == "doubly"
    assert WEIGHT_RULES["given"].stated(stochastic="column") == "column"


# ---- the weight rules read the graph's edges, not their weights -----------------------
@pytest.mark.parametrize("rule", ["metropolis_hastings", "lazy_metropolis", "laplacian", "uniform"])
def test_edge_weights_of_the_graph_do_not_enter_w(rule):
    plain = nx.path_graph(4)
    weighted = nx.path_graph(4)
    nx.set_edge_attributes(weighted, {e: 5.0 + i for i, e in enumerate(weighted.edges)}, "weight")
    np.testing.assert_array_equal(WEIGHT_RULES[rule].matrix(weighted), WEIGHT_RULES[rule].matrix(plain))


# ---- contracts and plug-ins that break them --------------------------------------------
# (no "contract" in the name: the graphs selection of rfl.testing.mutation deselects -k Contract)
@pytest.mark.parametrize("base", [Topology, WeightRule])
def test_a_refused_option_default_is_a_deep_declaration_error(base):
    body = {"options": {"k": {"type": "integer", "minimum": 1, "default": 0}},
            "build": classmethod(lambda cls, n, rng, **o: None),
            "matrix": classmethod(lambda cls, G, **o: None)}
    cls = type("Helper", (base,), body)                 # no name: not declared
    assert cls.contract_errors() == []
    (err,) = cls.contract_errors(deep=True)
    assert err.startswith("declares option 'k' whose default 0 it refuses")


@pytest.fixture
def plugin():
    """Declare throw-away components; removed after the test."""
    made = []

    def declare(base, name, **body):
        made.append((base, name))
        return type(name.title(), (base,), {"name": name, **body})

    yield declare
    for base, name in made:
        (GRAPHS if base is Topology else WEIGHT_RULES).remove(name)


def test_a_topology_with_the_wrong_number_of_nodes_is_refused(plugin):
    plugin(Topology, "short_by_one", build=classmethod(lambda cls, n, rng, **o: nx.path_graph(n - 1)))
    with pytest.raises(ValueError, match=r"^graph: short_by_one has 4 nodes for S=5 agents$"):
        make_mixing("short_by_one", "metropolis_hastings", 5, np.random.default_rng(0))


def test_a_rule_whose_w_is_not_as_stated_is_refused(plugin):
    plugin(WeightRule, "adjacency_only", matrix=classmethod(lambda cls, G, **o: nx.to_numpy_array(G)))
    with pytest.raises(ValueError, match=r"^weights: adjacency_only on graph ring is not doubly-stochastic: "
                                         r"row 0 sums to 2, not 1$"):
        make_mixing("ring", "adjacency_only", 5, np.random.default_rng(0))


def test_a_file_topology_that_cannot_build_names_its_path(plugin):
    def fail(cls, n, rng, **o):
        raise ValueError("the file changed under us")
    plugin(Topology, "fragile_file", from_file=True, build=classmethod(fail))
    assert check("fragile_file", "given", 3) == [(["graph", "path"], "the file changed under us")]

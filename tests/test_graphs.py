"""Graphs and weight rules (``rfl.graphs``): sigma_2(W) against closed forms, the stated
stochasticity of every rule, connected Erdos-Renyi draws, bad specs refused naming the key."""

from __future__ import annotations

import numpy as np
import pytest

from rfl.graphs import check, make_mixing, second_singular_value, stochasticity_errors
from rfl.registry import GRAPHS, WEIGHT_RULES

RULES = ["metropolis_hastings", "lazy_metropolis", "laplacian", "uniform"]


def mixing(graph, weights="metropolis_hastings", S=8, seed=0):
    return make_mixing(graph, weights, S, np.random.default_rng(seed))


def test_registries_list_the_graphs_and_rules():
    assert {"ring", "k_ring", "erdos_renyi", "star", "complete", "hypercube", "file"} <= set(GRAPHS.names())
    assert set(RULES) | {"given"} <= set(WEIGHT_RULES.names())


@pytest.mark.parametrize("S", [5, 8, 11])
def test_ring_sigma2_closed_form(S):
    # Metropolis-Hastings on a cycle: 1/3 on each edge and the diagonal, a circulant with
    # eigenvalues 1/3 + 2/3 cos(2 pi k / S); symmetric, so singular values are their moduli
    lam = 1 / 3 + 2 / 3 * np.cos(2 * np.pi * np.arange(1, S) / S)
    assert mixing("ring", S=S).sigma2 == pytest.approx(np.abs(lam).max(), abs=1e-12)
    # Laplacian (max degree 2): W = I - L/3, the same matrix on a cycle
    assert mixing("ring", "laplacian", S=S).sigma2 == pytest.approx(np.abs(lam).max(), abs=1e-12)
    # lazy Metropolis: 1/4 on each edge, 1/2 on the diagonal: 1/2 + 1/2 cos(2 pi k / S)
    lazy = 0.5 + 0.5 * np.cos(2 * np.pi * np.arange(1, S) / S)
    assert mixing("ring", "lazy_metropolis", S=S).sigma2 == pytest.approx(np.abs(lazy).max(), abs=1e-12)


@pytest.mark.parametrize("S", [3, 6, 9])
def test_complete_sigma2_closed_form(S):
    # MH and Laplacian on K_S: W = 11^T / S, sigma_2 = 0; lazy: W = (1/2)(I + 11^T/(S-1)) - ...,
    # eigenvalues 1 and 1/2 - 1/(2(S-1)) (multiplicity S-1)
    assert mixing("complete", S=S).sigma2 == pytest.approx(0.0, abs=1e-12)
    assert mixing("complete", "laplacian", S=S).sigma2 == pytest.approx(0.0, abs=1e-12)
    assert mixing("complete", "lazy_metropolis", S=S).sigma2 == pytest.approx(0.5 - 0.5 / (S - 1), abs=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_hypercube_sigma2_closed_form(k):
    # the k-cube's adjacency has eigenvalues k - 2j; MH weights 1/(k+1): W = (I + A)/(k+1),
    # eigenvalues (1 + k - 2j)/(k+1), so sigma_2 = (k-1)/(k+1)
    m = mixing("hypercube", S=2 ** k)
    assert m.sigma2 == pytest.approx((k - 1) / (k + 1), abs=1e-12)
    assert m.directed_edges == 2 ** k * k


def test_k_ring_is_the_circulant_of_its_offsets():
    m = mixing({"name": "k_ring", "k": 2}, S=9)
    A = (m.W > 0) & ~np.eye(9, dtype=bool)
    for i in range(9):
        assert set(np.flatnonzero(A[i])) == {(i + d) % 9 for d in (-2, -1, 1, 2)}


def test_star_sigma2_closed_form():
    # MH on a star with S-1 leaves: hub edges 1/S, hub diagonal 1/S, leaf diagonal 1 - 1/S;
    # eigenvalues 1, 0 and (1 - 1/S) (multiplicity S-2)
    S = 7
    assert mixing("star", S=S).sigma2 == pytest.approx(1 - 1 / S, abs=1e-12)


@pytest.mark.parametrize("graph", ["ring", "star", "complete", "hypercube", {"name": "k_ring", "k": 2},
                                   {"name": "erdos_renyi", "p": 0.4}])
@pytest.mark.parametrize("rule", RULES)
def test_each_rule_gives_the_stochasticity_it_states(graph, rule):
    m = mixing(graph, rule)
    W = m.W
    assert m.stochastic == WEIGHT_RULES[rule].stochastic
    assert W.min() >= -1e-15
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-13)
    if m.stochastic == "doubly":
        np.testing.assert_allclose(W.sum(axis=0), 1.0, atol=1e-13)
        np.testing.assert_allclose(W, W.T, atol=0)              # these three rules are symmetric
    # W is supported on the graph's edges and the diagonal, and every edge gets a weight
    A = np.zeros_like(W)
    for i, j in m.graph.edges:
        A[i, j] = A[j, i] = 1
    off = ~np.eye(W.shape[0], dtype=bool)
    np.testing.assert_array_equal((W[off] > 0), A[off] > 0)


def test_uniform_is_not_column_stochastic_on_a_star():
    # the hub has S-1 neighbours, each leaf one: the hub's column sums to 1/S + (S-1)/2 != 1
    W = mixing("star", "uniform", S=6).W
    assert stochasticity_errors(W, "row") == []
    assert stochasticity_errors(W, "column")


def test_stochasticity_errors_names_the_bad_row_and_column():
    W = np.array([[0.5, 0.5], [0.2, 0.7]])
    assert any("row 1" in e for e in stochasticity_errors(W, "row"))
    assert any("column 0" in e for e in stochasticity_errors(W, "column"))
    assert stochasticity_errors(np.array([[1.2, -0.2], [-0.2, 1.2]]), "doubly")[0].startswith("it has a negative")


def test_second_singular_value_of_a_known_matrix():
    W = np.diag([1.0, -0.7, 0.3])
    assert second_singular_value(W) == pytest.approx(0.7)


def test_a_disconnected_erdos_renyi_draw_is_never_returned():
    import networkx as nx
    # at p = 0.15 on 12 nodes most draws are disconnected: the rule must redraw
    redrawn = 0
    for seed in range(40):
        m = mixing({"name": "erdos_renyi", "p": 0.15}, S=12, seed=seed)
        assert nx.is_connected(m.graph)
        assert m.sigma2 < 1 - 1e-9                               # connected: sigma_2 < 1
        redrawn += m.attempts > 1
    assert redrawn >= 20
    # seeded: the same generator seed gives the same graph
    a = mixing({"name": "erdos_renyi", "p": 0.15}, S=12, seed=3)
    b = mixing({"name": "erdos_renyi", "p": 0.15}, S=12, seed=3)
    np.testing.assert_array_equal(a.W, b.W)


def test_floats_per_consensus_step_count_directed_edges():
    m = mixing("ring", S=6)
    assert m.directed_edges == 12
    assert m.floats(t=3, point_size=20) == 3 * 12 * 20


def test_given_matrix_from_csv_and_npy(tmp_path):
    W = np.array([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]])   # row-stochastic only
    csv = tmp_path / "w.csv"
    np.savetxt(csv, W, delimiter=",")
    m = make_mixing({"name": "file", "path": str(csv)}, {"name": "given", "stochastic": "row"}, 3,
                    np.random.default_rng(0))
    np.testing.assert_array_equal(m.W, W)
    assert m.stochastic == "row"
    npy = tmp_path / "w.npy"
    D = np.array([[0.5, 0.5, 0.0], [0.5, 0.25, 0.25], [0.0, 0.25, 0.75]])  # doubly stochastic
    np.save(npy, D)
    m = make_mixing({"name": "file", "path": str(npy)}, "given", 3, np.random.default_rng(0))
    assert m.stochastic == "doubly" and m.directed_edges == 4
    # the support of a symmetric file matrix with a rule of its own
    m = make_mixing({"name": "file", "path": str(npy)}, "metropolis_hastings", 3, np.random.default_rng(0))
    assert m.W[0, 2] == 0 and m.W[0, 1] == pytest.approx(1 / 3)


@pytest.mark.parametrize("graph, weights, key, text", [
    ("torus", "metropolis_hastings", "graph", "not a known graph"),
    ({"name": "k_ring", "k": -1}, "metropolis_hastings", "graph.k", "-1"),
    ({"name": "k_ring", "k": 5}, "metropolis_hastings", "graph.k", "wrap around"),
    ("hypercube", "metropolis_hastings", "graph", "power of 2"),
    ({"name": "hypercube"}, "metropolis_hastings", "graph.name", "power of 2"),
    ({"name": "erdos_renyi", "p": 0}, "metropolis_hastings", "graph.p", "0"),
    ("ring", "fancy", "weights", "not a known weight rule"),
    ("ring", "given", "weights", "file graph"),
    ({"name": "file", "path": "nowhere.csv"}, "given", "graph.path", "no such file"),
    ({"name": "ring", "k": 2}, "metropolis_hastings", "graph.k", "takes no option"),
])
def test_bad_specs_are_refused_naming_the_key(graph, weights, key, text):
    problems = check(graph, weights, 6)
    assert problems, "accepted"
    path, msg = problems[0]
    assert ".".join(map(str, path)) == key and text in msg
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        make_mixing(graph, weights, 6, np.random.default_rng(0))


def test_a_non_stochastic_matrix_file_is_refused(tmp_path):
    bad = tmp_path / "bad.csv"
    np.savetxt(bad, np.array([[0.6, 0.5], [0.5, 0.5]]), delimiter=",")
    (path, msg), = check({"name": "file", "path": str(bad)}, "given", 2)
    assert path == ["graph", "path"] and "not doubly-stochastic" in msg and "row 0" in msg
    # a row-stochastic matrix stated doubly: the column is named
    row = tmp_path / "row.csv"
    np.savetxt(row, np.array([[0.5, 0.5], [0.1, 0.9]]), delimiter=",")
    (path, msg), = check({"name": "file", "path": str(row)}, "given", 2)
    assert "column" in msg
    assert check({"name": "file", "path": str(row)}, {"name": "given", "stochastic": "row"}, 2) == []
    # a matrix of the wrong size
    (path, msg), = check({"name": "file", "path": str(row)}, "given", 3)
    assert path == ["graph", "path"] and "2 x 2" in msg


def test_rfl_list_shows_the_graphs_and_the_weight_rules():
    from rfl.cli import _registry_for, list_components
    text = list_components([_registry_for("graphs"), _registry_for("weights")])
    assert "graphs (entry-point group rfl.graphs):" in text
    assert "weights (entry-point group rfl.weights):" in text
    for name in ("ring", "k_ring", "erdos_renyi", "star", "complete", "hypercube", "file",
                 "metropolis_hastings", "lazy_metropolis", "laplacian", "uniform", "given"):
        assert f"  {name}  [rfl]" in text
    assert "W is row-stochastic" in text and "W is doubly-stochastic" in text
    assert _registry_for("topology") is _registry_for("graphs")


@pytest.mark.parametrize("S, edges", [(1, 0), (2, 1), (3, 3), (5, 5)])
def test_ring_of_one_two_and_more_agents(S, edges):
    m = mixing("ring", S=S)
    assert m.graph.number_of_nodes() == S and m.graph.number_of_edges() == edges
    np.testing.assert_allclose(m.W.sum(axis=1), 1.0)


def test_a_file_without_a_known_suffix_is_refused(tmp_path):
    (path, msg), = check({"name": "file", "path": str(tmp_path / "w")}, "given", 2)
    assert path == ["graph", "path"] and "suffix-less" in msg and "allowed: .npy or .csv" in msg
    (path, msg), = check({"name": "file", "path": str(tmp_path / "w.txt")}, "given", 2)
    assert "a .txt file" in msg


def test_a_component_that_breaks_its_contract_is_refused_when_declared():
    from rfl.graphs import Topology, WeightRule
    with pytest.raises(TypeError, match="graph 'no_build'.*does not implement build"):
        type("NoBuild", (Topology,), {"name": "no_build"})
    with pytest.raises(TypeError, match="weight rule 'sideways'.*stochastic = 'sideways'"):
        type("Sideways", (WeightRule,), {"name": "sideways", "stochastic": "sideways",
                                         "matrix": classmethod(lambda cls, G: None)})
    with pytest.raises(TypeError, match="weight rule 'no_matrix'.*does not implement matrix"):
        type("NoMatrix", (WeightRule,), {"name": "no_matrix"})
    with pytest.raises(TypeError, match="option named '1k'"):
        type("BadOption", (Topology,), {"name": "bad_option", "options": {"1k": {"type": "integer"}},
                                        "build": classmethod(lambda cls, n, rng: None)})
    assert not {"no_build", "sideways", "no_matrix", "bad_option"} & set(GRAPHS.names() + WEIGHT_RULES.names())


def test_list_lines_are_the_docstrings_first_paragraph():
    assert GRAPHS["ring"].summary() == ("The cycle 0 - 1 - ... - (S-1) - 0 (S = 2: one edge; S = 1: no edge). "
                                        "Options: none")

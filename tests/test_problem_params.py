"""Dataset parameters of every problem, checked before any data exist: ``check_params`` refuses
exactly the values its docstring rules out (the first bad value refused, the last good one
accepted) with a message naming the bad value and what is allowed, and ``memory_bytes``
matches the bytes of the arrays ``generate`` returns (the arrays the docstring counts, measured
with ``nbytes``). Also the defaults of ``rfl.problems.base`` that a toy problem inherits, and
where numba caches the compiled kernels."""

from __future__ import annotations

import os

import jsonschema
import numpy as np
import pytest

from rfl.data import garnet, kpca as kpca_data, lrmc as lrmc_data, school, wordnet
from rfl.data import cfmspd as cfmspd_data
from rfl.manifolds import Euclidean, Sphere
from rfl.problems import base
from rfl.problems.cfmspd import CFMSPD
from rfl.problems.cpesph import CPESph
from rfl.problems.hsp import HSP
from rfl.problems.kpca import KPCA
from rfl.problems.lrmc import LowRankMatrixCompletion as LRMC
from rfl.problems.lsa import FederatedLSA
from rfl.problems.mbcfsti import MBCFSti
from rfl.problems.multitask import MultitaskFeatures, SchoolMultitask
from rfl.problems.pca_sphere import PCASphere
from rfl.problems.pca_stiefel import PCAStiefelSynthetic


def refused(cls, params) -> dict[str, str]:
    """{key: message} of ``check_params``; every message is a non-empty sentence."""
    out = cls.check_params(dict(params))
    assert all(isinstance(k, str) and isinstance(m, str) and m for k, m in out)
    return dict(out)


def nbytes(arrays, keys=None) -> int:
    return sum(np.asarray(arrays[k]).nbytes for k in (arrays if keys is None else keys))


# ---- rfl.problems.base -----------------------------------------------------------------------
class Toy(base.Problem):
    """f_j(x) = 0.5 ||x - c_j||^2 on R^2 with unequal local sizes (no ``name``: not registered)."""

    def __init__(self, sizes=(1, 3)):
        self.manifold = Euclidean(2)
        self.local_sizes = np.asarray(sizes)
        self.c = np.arange(2.0 * len(sizes)).reshape(len(sizes), 2)

    def cost(self, x):
        return float(self.weights @ (0.5 * ((x - self.c) ** 2).sum(axis=1)))

    def egrad(self, x):
        return self.weights @ (x - self.c)


def test_object_schema_allows_exactly_the_required_and_optional_keys():
    req, opt = {"S": base.COUNT}, {"nu": base.POSITIVE, "h": base.NONNEGATIVE}
    schema = base.object_schema(req, opt, description="toy")
    assert schema["description"] == "toy" and schema["required"] == ["S"]
    v = jsonschema.Draft202012Validator(schema)
    assert v.is_valid({"S": 1}) and v.is_valid({"S": 2, "nu": 0.5, "h": 0})
    assert not v.is_valid({})                                  # S required
    assert not v.is_valid({"S": 1, "other": 1})                # no other keys
    assert not v.is_valid({"S": 0}) and not v.is_valid({"S": 1.5})
    assert not v.is_valid({"S": 1, "nu": 0}) and not v.is_valid({"S": 1, "h": -1e-9})
    schema["properties"]["S"]["minimum"] = 7                   # a copy: the shared schema stays
    assert base.COUNT["minimum"] == 1 and req["S"]["minimum"] == 1
    assert base.object_schema(req)["properties"] == req


def test_an_unregistered_problem_inherits_neutral_defaults():
    p = Toy()
    np.testing.assert_allclose(p.weights, [0.25, 0.75])       # N_j / sum N_i
    assert p.n_agents == 2 and isinstance(p.n_agents, int)
    assert Toy.find_raw_inputs() == [] and Toy.check_params({"S": 1}) == []
    assert Toy.memory_bytes({"S": 1}) is None and Toy.local_sizes_note({}) == ""
    assert p.closed_form_optimum() is None and p.reference_candidates() == []
    assert p.extra_metrics(np.zeros(2)) == {} and p.predictions({"algorithm": {}}) == {}
    assert p.field == "gradient" and p.metrics == () and p.raw_inputs == ()
    x, y = np.array([1.0, 2.0]), np.array([4.0, -2.0])
    assert p.distance_to_optimum(x, y) == pytest.approx(5.0)
    # grad and grad_norm: on R^n the Riemannian gradient is the Euclidean one
    g = p.egrad(x)
    np.testing.assert_allclose(p.grad(x), g)
    assert p.grad_norm(x) == pytest.approx(float(np.linalg.norm(g)))
    a = p.initial_point(np.random.default_rng(5))
    np.testing.assert_array_equal(a, p.initial_point(np.random.default_rng(5)))
    assert a.shape == (2,)
    for call in (lambda: Toy.generate(np.random.default_rng(0)), lambda: Toy.from_arrays({}, {}),
                 lambda: Toy.local_sizes_from({}), lambda: p.local_egrad(x[None], np.array([0])),
                 lambda: p.local_cost(x[None], np.array([0])),
                 lambda: p.minibatch_egrad(x[None], np.array([0]), np.array([[0]]))):
        with pytest.raises(NotImplementedError):
            call()


def test_grad_on_a_sphere_is_the_tangent_part_of_egrad():
    class OnSphere(Toy):
        def __init__(self):
            super().__init__()
            self.manifold = Sphere(2)

    p = OnSphere()
    x = np.array([0.6, 0.8])
    g = p.egrad(x)
    np.testing.assert_allclose(p.grad(x), g - (x @ g) * x, atol=1e-15)
    assert p.grad_norm(x) == pytest.approx(abs(float(np.array([-0.8, 0.6]) @ g)))


def test_raw_inputs_without_a_finder_are_refused_naming_them():
    class Reads(Toy):
        raw_inputs = ("tape_a", "tape_b")

    with pytest.raises(FileNotFoundError, match="tape_a, tape_b"):
        Reads.find_raw_inputs()


def test_sample_array_problems_hold_N_samples_for_each_agent():
    assert base.SampleArrayProblem.local_sizes_from({"S": 3, "N": 5}) == [5, 5, 5]
    Z = CPESph.generate(np.random.default_rng(0), d=5, nu=0.1, S=2, N=6)["Z"]
    p = CPESph.from_arrays({"Z": Z}, None, retraction=Sphere.RETRACTIONS[-1])
    assert p.manifold.retraction_name == Sphere.RETRACTIONS[-1]
    np.testing.assert_array_equal(p.Z, Z)


# ---- check_params: boundaries and messages ---------------------------------------------------
def test_cpesph_needs_N_at_least_d_plus_1():
    assert refused(CPESph, {"d": 5, "nu": 0.1, "S": 2, "N": 6}) == {}
    msg = refused(CPESph, {"d": 5, "nu": 0.1, "S": 2, "N": 5})["N"]
    assert msg.startswith("5 ") and "d+1 = 6" in msg and "N >= 6" in msg


def test_mbcfsti_needs_p_at_most_d():
    assert refused(MBCFSti, {"d": 4, "p": 4, "S": 1, "N": 1}) == {}
    msg = refused(MBCFSti, {"d": 4, "p": 5, "S": 1, "N": 1})["p"]
    assert msg.startswith("5 ") and "d = 4" in msg and "1..4" in msg


def test_kpca_images_must_fit_the_class_balanced_pool():
    P = kpca_data.POOL_SIZE
    assert refused(KPCA, {"S": 4, "r": 2, "split": "iid", "n_per_agent": P // 4}) == {}
    assert refused(KPCA, {"S": 7, "r": 2, "split": "iid"}) == {}          # default n: P // S
    msg = refused(KPCA, {"S": 4, "r": 2, "split": "iid", "n_per_agent": P // 4 + 1})["n_per_agent"]
    assert f"{4 * (P // 4 + 1)} images" in msg and f"holds {P}" in msg and f"n_per_agent <= {P // 4}" in msg


def test_pca_stiefel_rank_and_blocks():
    good = {"d": 4, "r": 4, "S": 3, "N": 5, "block": 4}                     # 15 rows: 4 blocks
    assert refused(PCAStiefelSynthetic, good) == {}
    assert refused(PCAStiefelSynthetic, {**good, "n_blocks": 4, "scales": [1.0] * 4}) == {}
    msg = refused(PCAStiefelSynthetic, {**good, "r": 5})["r"]
    assert msg.startswith("5 ") and "d = 4" in msg and "1..4" in msg
    msg = refused(PCAStiefelSynthetic, {**good, "n_blocks": 3})["n_blocks"]
    assert msg.startswith("3 blocks of 4 rows") and "S N = 15" in msg and "n_blocks >= 4" in msg
    msg = refused(PCAStiefelSynthetic, {**good, "scales": [1.0] * 3})["scales"]
    assert msg.startswith("3 scales for the 4 blocks") and "S N = 15" in msg and "at least 4" in msg
    both = refused(PCAStiefelSynthetic, {**good, "r": 9, "n_blocks": 1, "scales": [1.0]})
    assert set(both) == {"r", "n_blocks", "scales"}
    # exactly filled blocks: 16 rows in 4 blocks of 4
    assert refused(PCAStiefelSynthetic, {**good, "N": 8, "S": 2, "n_blocks": 4}) == {}
    assert "n_blocks" in refused(PCAStiefelSynthetic, {**good, "N": 9, "S": 2, "n_blocks": 4})


def test_pca_sphere_shards_and_the_10000_test_images():
    assert refused(PCASphere, {"S": 100, "N": 100}) == {}
    assert refused(PCASphere, {"S": 4, "N": 6, "shards": 3}) == {}
    msg = refused(PCASphere, {"S": 4, "N": 7, "shards": 3})["N"]
    assert msg.startswith("7 ") and "shards = 3" in msg
    msg = refused(PCASphere, {"S": 1, "N": 10001})["N"]
    assert "S * N = 10001" in msg and "S * N <= 10000" in msg
    assert len(PCASphere.check_params({"S": 2, "N": 5001, "shards": 2})) == 2


def test_lrmc_rank_columns_and_entry_budgets():
    good = {"m": 12, "n": 24, "r": 2, "S": 3, "OS": 2.0, "test_fraction": 0.2}
    assert refused(LRMC, good) == {}
    assert refused(LRMC, {**good, "r": 11, "OS": 1.0, "test_fraction": 0.04}) == {}
    msg = refused(LRMC, {**good, "r": 12})["r"]
    assert msg.startswith("12 is not below m = 12") and "1..11" in msg
    msg = refused(LRMC, {**good, "n": 25})["n"]
    assert msg.startswith("25 columns") and "S = 3" in msg
    # OS: at least r training entries per column, k_train = round(OS r (m + n - r)) >= r n
    dof = lrmc_data.degrees_of_freedom(12, 24, 2)
    os_min = 2 * 24 / dof
    assert "OS" not in refused(LRMC, {**good, "OS": os_min, "test_fraction": 0.01})
    msg = refused(LRMC, {**good, "OS": 0.9 * os_min})["OS"]
    k = lrmc_data.n_train(12, 24, 2, 0.9 * os_min)
    assert msg.startswith(f"{k} training entries") and "r n = 48" in msg and f"OS >= {os_min:.4g}" in msg
    # budgets: k_train + k_test <= m n = 288 entries
    k_train = lrmc_data.n_train(12, 24, 2, 2.0)
    tf_max = (288 - k_train) / 288
    assert refused(LRMC, {**good, "test_fraction": tf_max}) == {}
    msg = refused(LRMC, {**good, "test_fraction": tf_max + 1 / 288})["test_fraction"]
    assert msg.startswith(f"{k_train} training + {288 - k_train + 1} test") and "m n = 288" in msg
    # defaults OS = 6, test_fraction = 0.1: 6 * 2 * 34 = 408 > 288 entries before any test
    # entry, so OS is named, with its largest value m n / (r (m + n - r)) = 288 / 68
    msg = refused(LRMC, {"m": 12, "n": 24, "r": 2, "S": 3})["OS"]
    assert "m n = 288" in msg and f"OS <= {288 / 68:.4g}" in msg


def test_multitask_rank_and_task_rows():
    good = {"S": 2, "N": 2, "m": 5, "r": 5, "d_min": 5, "d_max": 5}
    assert refused(MultitaskFeatures, good) == {}
    msg = refused(MultitaskFeatures, {**good, "r": 6})["r"]
    assert msg.startswith("6 is larger than m = 5") and "1..5" in msg
    msg = refused(MultitaskFeatures, {**good, "d_min": 6})["d_min"]
    assert msg.startswith("6 is larger than d_max = 5")
    msg = refused(MultitaskFeatures, {**good, "r": 3, "d_min": 2})["d_min"]
    assert msg.startswith("2 is smaller than r = 3") and "d_min >= 3" in msg
    assert refused(MultitaskFeatures, {**good, "r": 3, "d_min": 2, "lam": 0.1}) == {}
    assert refused(MultitaskFeatures, {**good, "r": 3, "d_min": 3}) == {}
    # defaults d_min = 10, d_max = 50
    assert refused(MultitaskFeatures, {"S": 1, "N": 1, "m": 20, "r": 10}) == {}
    assert "d_min" in refused(MultitaskFeatures, {"S": 1, "N": 1, "m": 20, "r": 11})
    assert "d_min" in refused(MultitaskFeatures, {"S": 1, "N": 1, "m": 20, "r": 2, "d_min": 51})
    assert refused(MultitaskFeatures, {"S": 1, "N": 1, "m": 20, "r": 2, "d_min": 50}) == {}


def test_school_tasks_come_from_its_139_schools():
    assert refused(SchoolMultitask, {"r": 2, "lam": 0.0, "S": 1, "N": 139}) == {}
    msg = refused(SchoolMultitask, {"r": 2, "lam": 0.0, "S": 2, "N": 70})["S"]
    assert "S*N = 140" in msg and "139 schools" in msg and "S*N <= 139" in msg


def test_hsp_needs_a_training_node_for_each_agent():
    n = wordnet.N_NODES - 1
    assert refused(HSP, {"S": n}) == {}
    msg = refused(HSP, {"S": n + 1})["S"]
    assert msg.startswith(f"{n + 1} agents for {n} training nodes") and f"S <= {n}" in msg


def test_cfmspd_rejection_sampler_budget():
    rate = cfmspd_data.acceptance_rate(2, 0.5)
    assert 0 < rate < 1
    n_max = int(rate * 1e7 / 10)                    # S*N samples within 10^7 draws, factor 10 to spare
    assert refused(CFMSPD, {"d": 2, "S": 1, "N": n_max, "D_W": 0.5}) == {}
    msg = refused(CFMSPD, {"d": 2, "S": 1, "N": n_max + 1, "D_W": 0.5})["D_W"]
    assert msg.startswith("0.5 with d = 2") and f"{rate:.1e}" in msg and f"S*N = {n_max + 1}" in msg
    # D_W defaults to 1.0
    rate1 = cfmspd_data.acceptance_rate(2, 1.0)
    assert refused(CFMSPD, {"d": 2, "S": 1, "N": int(rate1 * 1e6)}) == {}
    assert "D_W" in refused(CFMSPD, {"d": 2, "S": 1, "N": int(rate1 * 1e6) + 1})


def test_lsa_settings_oracles_and_garnet_draws():
    good = {"setting": "heterogeneous", "n_agents": 2, "n_states": 6, "n_features": 3}
    assert refused(FederatedLSA, good) == {}
    assert refused(FederatedLSA, {**good, "setting": "homogeneous", "n_agents": 1}) == {}
    msg = refused(FederatedLSA, {**good, "n_agents": 1})["n_agents"]
    assert msg.startswith("1 agent(s)") and "n_agents >= 2" in msg
    assert "pool" in refused(FederatedLSA, {**good, "oracle": "exact", "pool": 10})
    assert refused(FederatedLSA, {**good, "oracle": "exact"}) == {}
    assert refused(FederatedLSA, {**good, "oracle": "pool", "pool": 10}) == {}
    assert refused(FederatedLSA, {**good, "branching": 6}) == {}
    msg = refused(FederatedLSA, {**good, "branching": 7})["branching"]
    assert msg.startswith("7 successors") and "n_states = 6" in msg and "1..6" in msg
    msg = refused(FederatedLSA, {**good, "n_features": 7})["n_features"]
    assert msg.startswith("7 features on n_states = 6") and "1..6" in msg


def test_lsa_refuses_feature_counts_the_garnet_draws_rarely_admit():
    """The pilot's admissible rate decides: a rate r is refused when r * MAX_REDRAWS < 10."""
    p = {"setting": "homogeneous", "n_agents": 1, "n_states": 4, "branching": 1, "n_features": 4}
    rate = garnet.admissible_rate(4, 2, 1, 4, 1)
    bad = rate * garnet.MAX_REDRAWS < 10
    out = refused(FederatedLSA, p)
    assert ("n_features" in out) == bad
    if bad:
        assert f"{rate:.1%}" in out["n_features"] and f"{garnet.MAX_REDRAWS} draws" in out["n_features"]
    # the defaults (30 states, branching 2, 8 features) are admissible
    assert garnet.admissible_rate(30, 2, 2, 8, 1) * garnet.MAX_REDRAWS >= 10
    assert refused(FederatedLSA, {"setting": "homogeneous", "n_agents": 1}) == {}


# ---- memory_bytes: the bytes of the generated arrays ------------------------------------------
def test_memory_of_sample_arrays_is_their_size():
    rng = np.random.default_rng(0)
    p = {"d": 5, "nu": 0.1, "S": 3, "N": 7}
    assert CPESph.memory_bytes(p) == nbytes(CPESph.generate(rng, **p), ["Z"])
    p = {"d": 3, "p": 2, "S": 3, "N": 5}
    assert MBCFSti.memory_bytes(p) == nbytes(MBCFSti.generate(rng, **p), ["A"])
    p = {"d": 3, "S": 2, "N": 5, "D_W": 1.0}
    assert CFMSPD.memory_bytes(p) == nbytes(CFMSPD.generate(rng, **p), ["Z"])
    p = {"S": 3, "r": 2, "split": "iid", "n_per_agent": 11}
    assert KPCA.memory_bytes(p) == nbytes(KPCA.generate(rng, **p), ["Z"])
    p = {"S": 7, "r": 2, "split": "iid"}                          # n_per_agent = 1740 // 7
    assert KPCA.memory_bytes(p) == nbytes(KPCA.generate(rng, **p), ["Z"])


def test_memory_of_pca_stiefel_counts_the_rows_and_the_local_matrices():
    p = {"d": 6, "r": 2, "S": 3, "N": 5, "block": 4}
    arrays = PCAStiefelSynthetic.generate(np.random.default_rng(1), **p)
    problem = PCAStiefelSynthetic.from_arrays(arrays, p)
    assert PCAStiefelSynthetic.memory_bytes(p) == arrays["Z"].nbytes + problem.A_local.nbytes


def test_memory_of_multitask_is_the_rows_padded_to_d_max():
    p = {"S": 2, "N": 3, "m": 4, "r": 2, "d_min": 6, "d_max": 6}
    arrays = MultitaskFeatures.generate(np.random.default_rng(2), **p)
    assert MultitaskFeatures.memory_bytes(p) == nbytes(arrays, ["X", "y"])
    q = {"S": 2, "N": 1, "m": 3, "r": 1}                             # d_max defaults to 50
    arrays = MultitaskFeatures.generate(np.random.default_rng(2), **q, d_min=50)
    assert MultitaskFeatures.memory_bytes(q) == nbytes(arrays, ["X", "y"])


@pytest.mark.parametrize("oracle", ["pool", "exact"])
def test_memory_of_lsa_is_the_mdps_and_the_pools(oracle):
    p = {"setting": "homogeneous", "n_agents": 2, "n_states": 5, "n_actions": 3, "n_features": 2,
         "oracle": oracle}
    if oracle == "pool":
        p["pool"] = 7
    arrays = FederatedLSA.generate(np.random.default_rng(3), **p)
    want = nbytes(arrays, ["P", "R"])
    if oracle == "pool":
        want += nbytes(arrays, ["states", "next_states"])
        assert arrays["states"].shape == (2, 7)
    assert FederatedLSA.memory_bytes(p) == want


def test_memory_of_lsa_defaults():
    """Defaults: 30 states, 2 actions, the default pool of transitions."""
    p = {"setting": "homogeneous", "n_agents": 3}
    nS, nA, pool = 30, 2, garnet.DEFAULT_POOL
    assert FederatedLSA.memory_bytes(p) == 3 * (nS * nA * nS + nS * nA + 2 * pool) * 8
    assert FederatedLSA.memory_bytes({**p, "oracle": "exact"}) == 3 * (nS * nA * nS + nS * nA) * 8


def test_memory_bounds_of_lrmc_hsp_and_school():
    """Problems whose padded arrays depend on the draw: the estimate bounds the arrays."""
    p = {"m": 12, "n": 24, "r": 2, "S": 3, "OS": 2.0, "test_fraction": 0.2}
    arrays = LRMC.generate(np.random.default_rng(4), **p)
    assert LRMC.memory_bytes(p) >= nbytes(arrays) + 2 * 12 * 24 * 8     # and the m x n truth twice
    # HSP: the 1179 training nodes' embedding (3) and weight, whatever S
    assert HSP.memory_bytes({"S": 9}) == HSP.memory_bytes({"S": 1}) == (wordnet.N_NODES - 1) * 4 * 8
    # School: the records and a split padded to the largest school, growing with S N
    one, two = SchoolMultitask.memory_bytes({"S": 1, "N": 1}), SchoolMultitask.memory_bytes({"S": 2, "N": 1})
    assert one >= school.ILEA_N_STUDENTS * 28 * 8 and two > one
    try:
        raw = SchoolMultitask.find_raw_inputs()
    except FileNotFoundError:
        return
    p = {"r": 2, "lam": 1e-3, "S": 3, "N": 5}
    split = SchoolMultitask.generate(np.random.default_rng(5), *raw, **p)
    assert SchoolMultitask.memory_bytes(p) >= nbytes(split) + school.ILEA_N_STUDENTS * 28 * 8


def test_pca_sphere_memory_is_its_images():
    assert PCASphere.memory_bytes({"S": 3, "N": 10}) == 3 * 10 * 28 * 28 * 8


# ---- numba's cache directory -----------------------------------------------------------------
def _read_only_package(monkeypatch, extra_denied=()):
    from rfl.problems import _kernels

    here = os.path.dirname(os.path.abspath(_kernels.__file__))
    real = os.access
    denied = (here,) + tuple(extra_denied)
    monkeypatch.setattr(os, "access", lambda p, m: False if str(p).startswith(denied) else real(p, m))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    return _kernels


def test_numba_cache_falls_back_to_the_temporary_directory(monkeypatch, tmp_path):
    """XDG cache not writable: the system's temporary directory, under rfl/numba."""
    xdg = tmp_path / "xdg"
    kernels = _read_only_package(monkeypatch, extra_denied=(str(xdg),))
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path / "tmp"))
    kernels._numba_cache_dir()
    assert os.environ["NUMBA_CACHE_DIR"] == str(tmp_path / "tmp" / "rfl" / "numba")
    assert (tmp_path / "tmp" / "rfl" / "numba").is_dir()


def test_numba_cache_skips_a_root_it_cannot_create(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    kernels = _read_only_package(monkeypatch)
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))            # makedirs fails under a file
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path / "tmp"))
    kernels._numba_cache_dir()
    assert os.environ["NUMBA_CACHE_DIR"] == str(tmp_path / "tmp" / "rfl" / "numba")


def test_numba_cache_default_root_is_the_home_cache(monkeypatch, tmp_path):
    kernels = _read_only_package(monkeypatch)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    kernels._numba_cache_dir()
    assert os.environ["NUMBA_CACHE_DIR"] == str(tmp_path / ".cache" / "rfl" / "numba")


def test_numba_cache_sets_nothing_when_no_root_is_writable(monkeypatch, tmp_path):
    kernels = _read_only_package(monkeypatch, extra_denied=(str(tmp_path),))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a"))
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path / "b"))
    kernels._numba_cache_dir()
    assert "NUMBA_CACHE_DIR" not in os.environ


def test_numba_cache_stays_in_the_package_when_it_is_writable(monkeypatch):
    from rfl.problems import _kernels

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(os, "access", lambda p, m: True)
    _kernels._numba_cache_dir()
    assert "NUMBA_CACHE_DIR" not in os.environ
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/mine")
    monkeypatch.setattr(os, "access", lambda p, m: False)
    _kernels._numba_cache_dir()
    assert os.environ["NUMBA_CACHE_DIR"] == "/mine"

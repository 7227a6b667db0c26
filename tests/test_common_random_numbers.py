"""Common random numbers (sampler version 3, ``rfl.algorithms.sampling``): within an experiment
and seed, every method and every value of a sweep draws the same participants per round (for
the same participation scheme) and the same mini-batch of agent j at local step k of round t,
whatever its K; so two identical algorithms under different run ids give identical tables.

The draws are recorded where the strategies ask for them (``AgentSampler.batches`` and
``participants``, wrapped) while ``rfl.runner.execute`` runs each spec, and compared across
runs by (t, k, j)."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

from rfl import config as rflconfig
from rfl import runner
from rfl.algorithms.sampling import AgentSampler
from rfl.problems.cpesph import CPESph
from rfl.registry import PROBLEMS

REPO = Path(__file__).resolve().parents[1]
ROUNDS = 4


@pytest.fixture
def recorder(monkeypatch):
    """Every AgentSampler made while the fixture is active, with its draws: ``log`` is a list of
    {"batches": {(t, k, j): [indices, ...]}, "participants": [agents per round]}, one per
    sampler in order of creation (FedRR without a shared stream makes two)."""
    log = []
    init, batches, participants = AgentSampler.__init__, AgentSampler.batches, AgentSampler.participants

    def new_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self._record = {"batches": {}, "participants": []}
        log.append(self._record)

    def new_batches(self, agents, t=None, k=None):
        out = batches(self, agents, t, k)
        step = (self.t if t is None else t, self.k - 1)
        rows = np.asarray(out)
        for row, j in enumerate(np.asarray(agents)):
            self._record["batches"].setdefault((*step, int(j)), []).append(tuple(rows[row]))
        return out

    def new_participants(self):
        agents = participants(self)
        self._record["participants"].append(tuple(int(j) for j in agents))
        return agents

    monkeypatch.setattr(AgentSampler, "__init__", new_init)
    monkeypatch.setattr(AgentSampler, "batches", new_batches)
    monkeypatch.setattr(AgentSampler, "participants", new_participants)
    return log


def _spec(name, K, participation=None, run_id=None, seed=0, experiment="e", B=3, alpha=0.05,
          **options):
    return {"experiment": experiment, "run_id": run_id or f"{name}_K{K}_seed{seed}", "seed": seed,
            "rounds": ROUNDS, "dataset": {"name": "d"}, "step": {"rule": "fixed", "alpha": alpha},
            "algorithm": {"name": name, "K": K, "batch_size": B, "participation": participation,
                          **options}}


def _sphere_problem():
    return CPESph(np.random.default_rng(3).standard_normal((5, 9, 4)))


def _flat_problem():
    params = {"source": "synthetic", "setting": "heterogeneous", "n_agents": 5, "dim": 2, "n": 9}
    cls = PROBLEMS["logistic"]
    return cls.from_arrays(cls.generate(np.random.default_rng(3), **params), params)


def _execute(spec, problem):
    x_star = problem.closed_form_optimum()
    if x_star is None:
        x_star = problem.initial_point(np.random.default_rng(0))
    return runner.execute(spec, problem, x_star, 0.0)


def _complete(record, K, rounds=ROUNDS):
    """Each (t, k, j) of the run drawn exactly once: t < rounds, k < K, j a participant of t."""
    want = {(t, k, j) for t, agents in enumerate(record["participants"]) for k in range(K) for j in agents}
    assert len(record["participants"]) == rounds
    assert set(record["batches"]) == want
    assert all(len(v) == 1 for v in record["batches"].values())


def _agree(a, b) -> int:
    """The number of (t, k, j) both records drew; their batches equal at every one of them."""
    common = set(a["batches"]) & set(b["batches"])
    for key in common:
        assert a["batches"][key] == b["batches"][key], key
    return len(common)


SPHERE_METHODS = [("rfedags", 1, {}), ("rfedags", 3, {}), ("rfedags", 2, {"local_method": "rsvrg"}),
                  ("rfedavg", 2, {}), ("rfedsvrg", 4, {"correction": "participants"}),
                  ("rfedproj", 3, {}), ("zorfedproj", 2, {}), ("rfedags_rr", 3, {})]
FLAT_METHODS = [("fedavg", 3, {}), ("scaffold", 2, {}), ("fedrr", 4, {}), ("rfedags", 1, {}),
                ("rfedavg", 5, {})]


@pytest.mark.parametrize("participation", [None, 2, {"scheme": "bernoulli", "rho": 0.6}],
                         ids=["every", "s2", "bernoulli"])
@pytest.mark.parametrize("case", ["sphere", "flat"])
def test_every_method_of_an_experiment_draws_the_same_batch_at_t_k_j(recorder, case, participation):
    """Methods with different K (and different numbers of gradient evaluations per step) draw,
    for each (round t, local step k, agent j) they share, the same mini-batch; each method draws
    each of its (t, k, j) once; and with one scheme every method has the same participants."""
    problem, methods = (_sphere_problem(), SPHERE_METHODS) if case == "sphere" else (_flat_problem(), FLAT_METHODS)
    for name, K, options in methods:
        _execute(_spec(name, K, participation, **options), problem)
    assert len(recorder) == len(methods)
    for record, (_, K, _) in zip(recorder, methods):
        _complete(record, K)
        assert record["participants"] == recorder[0]["participants"]
    K = [m[1] for m in methods]
    for i in range(len(methods)):
        for j in range(i + 1, len(methods)):
            shared = _agree(recorder[i], recorder[j])
            assert shared == sum(len(p) for p in recorder[0]["participants"]) * min(K[i], K[j])


def test_another_seed_or_experiment_draws_other_batches(recorder):
    """The draws are keyed by (seed, experiment): a run of another seed, or of another
    experiment, draws other batches at the same (t, k, j) (with every agent taking part)."""
    problem = _sphere_problem()
    for seed, experiment in ((0, "e"), (1, "e"), (0, "f")):
        _execute(_spec("rfedags", 2, seed=seed, experiment=experiment), problem)
    base = recorder[0]["batches"]
    for other in recorder[1:]:
        assert set(other["batches"]) == set(base)
        assert sum(other["batches"][key] != base[key] for key in base) > len(base) // 2


def test_participants_are_those_of_the_scheme_not_of_the_method(recorder):
    """Two schemes of one experiment and seed draw independently of each other; a scheme
    written two ways (s = 2 and {scheme: uniform, s: 2}) is one scheme."""
    problem = _sphere_problem()
    _execute(_spec("rfedags", 1, 2), problem)
    _execute(_spec("rfedavg", 3, {"scheme": "uniform", "s": 2}), problem)
    _execute(_spec("rfedags", 1, {"scheme": "bernoulli", "rho": 0.6}), problem)
    _execute(_spec("rfedags", 1, {"scheme": "bernoulli", "rho": 0.7}), problem)
    first, same, bern6, bern7 = (r["participants"] for r in recorder)
    assert first == same
    assert bern6 != bern7 and bern6 != first


def test_fedrr_without_a_shared_stream_gives_its_2eta_chain_independent_draws(recorder):
    """FedRR's ``shared_stream: false`` (its own option, not common random numbers across
    methods): the eta-chain draws the experiment's batches, the 2 eta-chain other ones."""
    problem = _flat_problem()
    _execute(_spec("fedavg", 2), problem)
    _execute(_spec("fedrr", 2, shared_stream=False), problem)
    fedavg, coarse, fine = recorder                 # FedRR.sampler makes the 2 eta-chain's first
    assert _agree(fedavg, fine) == len(fedavg["batches"])
    assert set(coarse["batches"]) == set(fine["batches"])
    assert sum(coarse["batches"][k] != fine["batches"][k] for k in fine["batches"]) > len(fine["batches"]) // 2


NUMERIC = ["round", "cost", "excess_risk", "grad_norm", "dist_to_opt", "grad_evals", "floats"]


@pytest.mark.parametrize("name, K, participation", [
    ("rfedags", 3, None), ("rfedavg", 2, {"scheme": "bernoulli", "rho": 0.6}),
    ("rfedproj", 2, 3), ("zorfedproj", 2, None)])
def test_two_identical_algorithms_under_other_run_ids_give_identical_tables(name, K, participation):
    """One algorithm twice in an experiment, under two run ids (two method labels): the tables
    are equal byte for byte in every numeric column but the wall time (the draws do not depend on
    the run id); a third run with another seed differs (the draws are used)."""
    problem = _sphere_problem()
    a = _execute(_spec(name, K, participation, run_id=f"{name}_K{K}_seed0"), problem)
    b = _execute(_spec(name, K, participation, run_id=f"copy_of_{name}_seed0"), problem)
    assert a[NUMERIC].to_numpy().tobytes() == b[NUMERIC].to_numpy().tobytes()
    assert list(a["status"]) == list(b["status"]) == ["ok"] * (ROUNDS + 1)
    c = _execute(_spec(name, K, participation, seed=1), problem)
    assert not np.array_equal(a["cost"].to_numpy()[1:], c["cost"].to_numpy()[1:])


def test_the_runs_of_a_sweep_share_their_draws(recorder, tmp_path):
    """The smoke config's sweep (RFedProj's server_step x alpha): every run of one seed draws the
    batches of that seed, whatever its swept values; the seeds differ."""
    smoke = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg = copy.deepcopy(smoke)
    name = "cpesph_rfedproj_sweep"
    exp = cfg["experiments"][name]
    for key in ("figures", "tables", "heterogeneity", "lsa", "claims"):
        cfg.pop(key, None)
    cfg.update(figures={}, experiments={name: exp}, datasets={exp["dataset"]: cfg["datasets"][exp["dataset"]]})
    cfg = rflconfig.validate(cfg)
    runs = rflconfig.expand_runs(cfg)
    ds = rflconfig.dataset_spec(cfg, exp["dataset"], "fixed")
    runner.generate_data(ds, tmp_path / "d.npz")
    runner.compute_reference(ds, tmp_path / "d.npz", tmp_path / "r.npz")
    problem = runner.load_problem(ds, tmp_path / "d.npz", runs[0].get("geometry"))
    ref = np.load(tmp_path / "r.npz")
    for spec in runs:
        runner.execute(spec, problem, ref["x_star"], float(ref["F_star"]))
    by_seed: dict = {}
    for spec, record in zip(runs, recorder):
        assert spec.get("sweep")
        by_seed.setdefault(spec["seed"], []).append(record)
    assert len(by_seed) >= 2 and all(len(v) >= 2 for v in by_seed.values())
    for records in by_seed.values():
        for other in records[1:]:
            assert other["batches"] == records[0]["batches"]
            assert other["participants"] == records[0]["participants"]
    seeds = sorted(by_seed)
    assert by_seed[seeds[0]][0]["batches"] != by_seed[seeds[1]][0]["batches"]


# ---- the paper's identity (RFedAGS Section 3.3), method against method on shared draws ----
TOL = 1e-10          # the claims' tolerance (config: identity_*, rule identical_runs)
SMOKE_CFG = REPO / "config" / "smoke.yaml"
EXP, PAR = "exp", "parallel"


@pytest.fixture(scope="module")
def smoke_problems(tmp_path_factory):
    """The smoke config's datasets (generated once), loaded with a given geometry."""
    cfg = rflconfig.load(SMOKE_CFG)
    d = tmp_path_factory.mktemp("identity")
    made = {}

    def load(name, geometry):
        ds = rflconfig.dataset_spec(cfg, name, "fixed")
        if name not in made:
            runner.generate_data(ds, d / f"{name}.npz")
            made[name] = ds
        return runner.load_problem(ds, d / f"{name}.npz", geometry)
    return load


def _gap(problem, K, B, alpha, rounds=12):
    """max over rounds and seeds 0..2 of |cost of RFedAGS - cost of RFedAvg| / the largest |cost|."""
    x_ref = problem.initial_point(np.random.default_rng(99))
    worst = 0.0
    for seed in range(3):
        a, b = (runner.execute({**_spec(name, K, seed=seed, B=B, alpha=alpha), "rounds": rounds},
                               problem, x_ref, 0.0)["cost"].to_numpy() for name in ("rfedags", "rfedavg"))
        assert np.isfinite(a).all() and np.isfinite(b).all()
        worst = max(worst, float(np.abs(a - b).max() / max(np.abs(a).max(), np.abs(b).max())))
    return worst


@pytest.mark.parametrize("dataset, geometry, K, B, alpha", [
    ("cpesph", {"retraction": EXP, "transport": PAR}, 1, 8, 1.0),                  # sphere
    ("cfmspd", {"retraction": EXP, "transport": PAR}, 1, 4, 0.05),                 # SPD
    ("multitask", {"retraction": EXP, "transport": "parallelization"}, 1, 3, 3e-3),  # Grassmann
    ("multitask", {"retraction": EXP, "transport": "projection"}, 1, 3, 3e-3),
    ("fedavg_logistic_het", None, 1, 10, 0.1),                                      # R^d, every K
    ("fedavg_logistic_het", None, 4, 10, 0.1),
    # rfl's own, beyond the paper: Stiefel's RFedAvg lifts with the inverse retraction, and
    # R_x(sum_j w_j R_x^-1(R_x(-alpha g_j))) = R_x(-alpha sum_j w_j g_j) at K = 1 all the same
    ("mbcfsti", {"retraction": "polar", "transport": "parallelization"}, 1, 3, 0.01),
    ("mbcfsti", {"retraction": "qr", "transport": "projection"}, 1, 3, 0.01)])
def test_rfedags_is_rfedavg_where_the_identity_applies(smoke_problems, dataset, geometry, K, B, alpha):
    assert _gap(smoke_problems(dataset, geometry), K, B, alpha) <= TOL


@pytest.mark.parametrize("dataset, geometry, K, B, alpha", [
    ("cpesph", {"retraction": EXP, "transport": PAR}, 2, 8, 1.0),                  # K > 1
    ("cfmspd", {"retraction": EXP, "transport": PAR}, 2, 4, 0.05),
    ("cpesph", {"retraction": "normalize", "transport": PAR}, 1, 8, 1.0),          # not Exp
    ("multitask", {"retraction": "svd", "transport": "parallelization"}, 1, 3, 3e-3),
    ("mbcfsti", {"retraction": "polar", "transport": "parallelization"}, 3, 3, 0.01)])
def test_rfedags_and_rfedavg_differ_where_it_does_not(smoke_problems, dataset, geometry, K, B, alpha):
    """The check discriminates: at K > 1 on a curved manifold, or with a retraction other than
    Exp (while RFedAvg's tangent mean uses Exp and Log), the runs differ beyond the tolerance."""
    assert _gap(smoke_problems(dataset, geometry), K, B, alpha) > TOL

"""Guards a realistic bug would quietly break: the spec cache, the divergence record, the
config's boundaries, and per-seed data instances."""

import copy
import os
from pathlib import Path

import numpy as np
import pytest
import yaml

from rfl import config as rflconfig
from rfl import io, runner
from rfl.algorithms.base import FederatedStrategy
from rfl.problems import CPESph
from rfl.registry import ALGORITHMS

SMOKE = Path(__file__).resolve().parents[1] / "config" / "smoke.yaml"


def test_sync_json_leaves_an_unchanged_file_untouched(tmp_path):
    path = tmp_path / "spec.json"
    assert io.sync_json(path, {"a": 1, "b": [1, 2]}) is True
    past = 1_000_000_000
    os.utime(path, (past, past))
    assert io.sync_json(path, {"b": [1, 2], "a": 1}) is False      # same content, other key order
    assert path.stat().st_mtime == past
    assert io.sync_json(path, {"a": 2, "b": [1, 2]}) is True
    assert path.stat().st_mtime != past and io.read_json(path) == {"a": 2, "b": [1, 2]}


@pytest.fixture
def off_the_sphere():
    """A strategy that returns a finite point 1e-6 off the unit sphere after the first round,
    declared for this test only (the registry-wide contracts never see it)."""

    class OffTheSphere(FederatedStrategy):
        name = "test_off_the_sphere"
        label = "off"

        def round(self, x_t, t, sampler):
            return self.result(x_t * (1 + 1e-6), sampler.participants())

    yield OffTheSphere
    ALGORITHMS.remove(OffTheSphere.name)


def test_a_finite_iterate_off_the_manifold_is_recorded_as_diverged(off_the_sphere):
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((3, 8, 6))
    problem = CPESph(Z)
    x_star = problem.closed_form_optimum()
    spec = {"experiment": "e", "run_id": "r", "seed": 0, "rounds": 5,
            "dataset": {"name": "d"}, "step": {"rule": "fixed", "alpha": 0.1},
            "algorithm": {"name": off_the_sphere.name, "K": 1, "batch_size": 2,
                          "participation": None}}
    table = runner.execute(spec, problem, x_star, problem.cost(x_star))
    assert list(table["status"]) == ["ok", "diverged"]             # stops at the first bad round
    assert np.isfinite(table["cost"].iloc[0]) and np.isnan(table["cost"].iloc[1])
    assert runner.MANIFOLD_TOL < 1e-6


def _smoke():
    return yaml.safe_load(SMOKE.read_text())


@pytest.mark.parametrize("N, ok", [(7, False), (8, False), (9, True)])
def test_cpesph_needs_N_at_least_d_plus_one(N, ok):
    cfg = _smoke()
    cfg["datasets"]["cpesph"]["params"].update(d=8, N=N)
    if ok:
        assert rflconfig.validate(cfg)["datasets"]["cpesph"]["params"]["N"] == N
    else:
        with pytest.raises(rflconfig.ConfigError, match=r"datasets\.cpesph\.params\.N: .*N >= 9"):
            rflconfig.validate(cfg)


@pytest.mark.parametrize("key, value", [("S", True), ("N", 8.0), ("d", "8")])
def test_a_count_must_be_a_true_integer(key, value):
    cfg = _smoke()
    cfg["datasets"]["cpesph"]["params"][key] = value
    with pytest.raises(rflconfig.ConfigError, match=rf"datasets\.cpesph\.params\.{key}: "):
        rflconfig.validate(cfg)


def test_a_resampled_dataset_draws_one_instance_per_seed(tmp_path):
    cfg = rflconfig.validate(_smoke())
    base = copy.deepcopy(cfg["datasets"]["multitask"])
    cfg["datasets"]["multitask"]["resample"] = True
    arrays = {}
    for instance in ("seed0", "seed1", "seed0"):
        spec = {"name": "multitask", "instance": instance, **cfg["datasets"]["multitask"]}
        out = tmp_path / f"{instance}-{len(arrays)}.npz"
        runner.generate_data(spec, out)
        arrays.setdefault(instance, []).append(io.read_arrays(out))
    a0, a1, again = arrays["seed0"][0], arrays["seed1"][0], arrays["seed0"][1]
    assert a0.keys() == a1.keys()
    assert any(not np.array_equal(a0[k], a1[k]) for k in a0)            # seeds differ
    assert all(np.array_equal(a0[k], again[k]) for k in a0)             # a seed repeats
    assert rflconfig.instance_name(base, 3) == "fixed"
    assert rflconfig.instance_name(cfg["datasets"]["multitask"], 3) == "seed3"

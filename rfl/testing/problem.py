"""The contract every federated problem keeps, as a pytest test class.

``ProblemContract`` checks a problem against the mathematics of ``rfl.problems.base``
(F = sum_j p_j f_j, p_j = N_j / sum_i N_i), on small instances built the way the workflow
builds them (``generate`` with a seeded rng, then ``from_arrays``):

* declarations: ``manifold_class``, ``field``, ``params_schema`` (a valid JSON schema that
  accepts the parameters), ``check_params`` (no complaint about them), ``metrics`` with a
  label each, ``from_arrays`` and ``local_sizes_from`` agreeing on the local sizes, every
  retraction of the manifold reaching the problem's manifold;
* determinism: ``generate`` and ``initial_point`` give the same result for the same seed;
* gradients (central finite differences along a random tangent direction v, on the curve
  t -> R_x(t v), whose derivative at 0 is <egrad(x), v> in the ambient inner product):
  ``egrad`` of ``cost``, and ``minibatch_egrad`` on an agent's full batch of ``local_cost``;
* batching: ``minibatch_egrad`` on several agents (unsorted, one repeated) equals one agent at
  a time, and on a mini-batch of B samples equals the mean of its B one-sample gradients;
  ``local_egrad`` is ``minibatch_egrad`` on the full batch; cost = sum_j p_j f_j and
  egrad = sum_j p_j local_egrad_j;
* optimum (where ``closed_form_optimum`` is not None): on the manifold, Riemannian gradient
  (the mean field, for a linear field) ~ 0, cost no larger than at random points, distance 0
  to itself.

A problem whose ``field`` is "linear_field" (A(Z) x - b(Z), not a gradient of its cost)
skips the checks that tie the field to the cost (finite differences, cost = sum_j p_j f_j)
and the full-batch identity (its local field is the exact expectation, a pool only a sample).

Every registered problem is checked with its ``test_params`` by ``tests/test_problem_contract.py``.
A plug-in tests its own problem by subclassing and naming its cases::

    from rfl.testing.problem import ProblemCase, ProblemContract

    class TestMyProblem(ProblemContract):
        def problem_cases(self):
            return [ProblemCase(MyProblem, {"S": 3, "N": 5}),
                    ProblemCase(MyProblem, {"S": 2, "N": 4, "variant": "b"}, seed=1)]

pytest collects the class (its name starts with ``Test``) and runs every check on every case.
A problem that reads raw files (``raw_inputs``) is skipped, with the reason its
``find_raw_inputs`` gives, when they are not on the machine.
"""

from __future__ import annotations

import dataclasses
import json

import jsonschema
import numpy as np
import pytest

from rfl.registry import PROBLEMS

#: central-difference step and tolerance: the truncation error is O(h^2) ~ 1e-8 of the
#: third derivative's scale, far below a wrong factor (2, B/N, a sign) in a gradient
FD_STEP = 1e-4
FD_RTOL = 1e-5
#: identities between two computations of one quantity hold to rounding
RTOL = 1e-9


@dataclasses.dataclass(frozen=True)
class ProblemCase:
    """One small instance: a problem class, dataset parameters and the data seed."""

    problem_class: type
    params: dict
    seed: int = 0

    @property
    def id(self) -> str:
        return f"{self.problem_class.name}-seed{self.seed}"

    def key(self) -> tuple:
        return (self.problem_class, json.dumps(self.params, sort_keys=True), self.seed)


_BUILT: dict = {}


def _arrays(case: ProblemCase) -> dict:
    try:
        inputs = case.problem_class.find_raw_inputs()
    except FileNotFoundError as exc:
        pytest.skip(f"raw inputs of {case.problem_class.name!r} not found: {exc}")
    return case.problem_class.generate(np.random.default_rng(case.seed), *inputs, **case.params)


def build(case: ProblemCase):
    """(arrays, problem) of a case, built once per test process."""
    key = case.key()
    if key not in _BUILT:
        arrays = _arrays(case)
        _BUILT[key] = arrays, case.problem_class.from_arrays(arrays, dict(case.params))
    return _BUILT[key]


def _close(a, b, rtol=RTOL, scale=None):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = max(np.abs(a).max(initial=0.0), np.abs(b).max(initial=0.0), 1e-300) if scale is None else scale
    err = np.abs(a - b).max(initial=0.0)
    assert err <= rtol * scale, f"max |difference| {err:.3e} > {rtol:.0e} * {scale:.3e}"


class ProblemContract:
    """The shared checks (module docstring); ``problem_cases`` names the instances."""

    def problem_cases(self) -> list[ProblemCase]:
        """Default: every registered problem with its ``test_params``."""
        return [ProblemCase(cls, dict(cls.test_params)) for _, cls in PROBLEMS.items()]

    def pytest_generate_tests(self, metafunc):
        if "case" in metafunc.fixturenames:
            cases = self.problem_cases()
            metafunc.parametrize("case", cases, ids=[c.id for c in cases])

    # ---- helpers -------------------------------------------------------------------------
    @staticmethod
    def _point_and_direction(problem, rng):
        m = problem.manifold
        x = m.random_point(rng, 1)
        v = m.projection(x, rng.standard_normal(x.shape))
        v /= np.linalg.norm(v)
        return x, v

    @staticmethod
    def _directional_fd(f, m, x, v):
        """(f(R_x(h v)) - f(R_x(-h v))) / (2h): d/dt f(R_x(t v)) at t = 0."""
        plus, minus = m.retraction(x, FD_STEP * v), m.retraction(x, -FD_STEP * v)
        return (f(plus) - f(minus)) / (2 * FD_STEP)

    @staticmethod
    def _full_batch(problem, agents):
        N = problem.local_sizes[agents]
        assert np.all(N == N[0]), "the full-batch checks assume equal local sizes"
        return np.broadcast_to(np.arange(N[0]), (len(agents), N[0])).copy()

    # ---- declarations --------------------------------------------------------------------
    def test_declarations(self, case):
        from rfl.manifolds import Manifold
        from rfl.problems.base import FIELDS

        cls = case.problem_class
        assert isinstance(cls.manifold_class, type) and issubclass(cls.manifold_class, Manifold)
        assert cls.field in FIELDS
        assert case.params, f"{cls.name}: no test parameters (declare test_params)"
        jsonschema.Draft202012Validator.check_schema(cls.params_schema)
        errors = [e.message for e in jsonschema.Draft202012Validator(cls.params_schema).iter_errors(case.params)]
        assert errors == [], errors
        assert cls.check_params(dict(case.params)) == []
        assert all(isinstance(m, str) for m in cls.metrics)
        assert set(cls.metric_labels) == set(cls.metrics), "every metric needs a figure label"

    def test_from_arrays_and_local_sizes_from_agree(self, case):
        arrays, problem = build(case)
        cls = case.problem_class
        assert isinstance(problem, cls) and isinstance(problem.manifold, cls.manifold_class)
        np.testing.assert_array_equal(problem.local_sizes, cls.local_sizes_from(dict(case.params)))
        assert problem.n_agents == len(problem.local_sizes)
        np.testing.assert_allclose(problem.weights.sum(), 1.0, rtol=1e-12)
        x = problem.manifold.random_point(np.random.default_rng(1), 1)[0]
        for retraction in cls.manifold_class.RETRACTIONS:
            other = cls.from_arrays(arrays, dict(case.params), retraction=retraction)
            assert other.manifold.retraction_name == retraction
            assert other.cost(x) == problem.cost(x)

    def test_generate_and_initial_point_are_deterministic(self, case):
        arrays, problem = build(case)
        again = _arrays(case)
        assert again.keys() == arrays.keys()
        for k in arrays:
            np.testing.assert_array_equal(again[k], arrays[k], err_msg=k)
        a = problem.initial_point(np.random.default_rng(3))
        np.testing.assert_array_equal(a, problem.initial_point(np.random.default_rng(3)))
        assert problem.manifold.distance_from_manifold(a[None])[0] <= 1e-10

    def test_extra_metrics_are_the_declared_metrics(self, case):
        _, problem = build(case)
        x = problem.manifold.random_point(np.random.default_rng(2), 1)[0]
        values = problem.extra_metrics(x)
        assert set(values) == set(case.problem_class.metrics)
        assert all(np.isfinite(v) for v in values.values())

    # ---- gradients -----------------------------------------------------------------------
    @staticmethod
    def _gradient_problem(case):
        """The case's problem, or a skip when its field is not the gradient of its cost."""
        _, problem = build(case)
        if problem.field != "gradient":
            pytest.skip(f"{problem.name}: a {problem.field} is not the gradient of the cost")
        return problem

    def test_egrad_is_the_gradient_of_cost(self, case):
        problem = self._gradient_problem(case)
        rng = np.random.default_rng(4)
        m = problem.manifold
        for _ in range(3):
            x, v = self._point_and_direction(problem, rng)
            fd = self._directional_fd(lambda y: problem.cost(y[0]), m, x, v)
            exact = float(np.sum(problem.egrad(x[0]) * v[0]))
            scale = max(abs(exact), float(np.linalg.norm(problem.egrad(x[0]))), 1e-12)
            _close(fd, exact, FD_RTOL, scale)

    def test_full_batch_minibatch_egrad_is_the_gradient_of_local_cost(self, case):
        problem = self._gradient_problem(case)
        rng = np.random.default_rng(5)
        m = problem.manifold
        for j in range(problem.n_agents):
            agents = np.array([j])
            x, v = self._point_and_direction(problem, rng)
            g = problem.minibatch_egrad(x, agents, self._full_batch(problem, agents))
            fd = self._directional_fd(lambda y: problem.local_cost(y, agents)[0], m, x, v)
            exact = float(np.sum(g * v))
            _close(fd, exact, FD_RTOL, max(abs(exact), float(np.linalg.norm(g)), 1e-12))

    def test_batched_minibatch_egrad_is_per_agent(self, case):
        _, problem = build(case)
        rng = np.random.default_rng(6)
        S = problem.n_agents
        agents = np.concatenate([rng.permutation(S), [S - 1]])      # unsorted, one repeated
        x = problem.manifold.random_point(rng, len(agents))
        B = int(min(3, problem.local_sizes.min()))
        batch = np.stack([rng.choice(problem.local_sizes[a], B, replace=False) for a in agents])
        together = problem.minibatch_egrad(x, agents, batch)
        assert together.shape == x.shape
        for i, a in enumerate(agents):
            alone = problem.minibatch_egrad(x[i:i + 1], agents[i:i + 1], batch[i:i + 1])
            _close(together[i], alone[0])
        together = problem.local_egrad(x, agents)
        for i, a in enumerate(agents):
            _close(together[i], problem.local_egrad(x[i:i + 1], agents[i:i + 1])[0])
        costs = problem.local_cost(x, agents)
        assert costs.shape == (len(agents),)
        for i, a in enumerate(agents):
            _close(costs[i], problem.local_cost(x[i:i + 1], agents[i:i + 1])[0])

    def test_minibatch_egrad_is_the_mean_over_its_samples(self, case):
        _, problem = build(case)
        rng = np.random.default_rng(7)
        agents = np.arange(problem.n_agents)
        x = problem.manifold.random_point(rng, len(agents))
        B = int(min(3, problem.local_sizes.min()))
        batch = np.stack([rng.choice(problem.local_sizes[a], B, replace=False) for a in agents])
        mean = np.mean([problem.minibatch_egrad(x, agents, batch[:, b:b + 1]) for b in range(B)], axis=0)
        _close(problem.minibatch_egrad(x, agents, batch), mean)

    def test_local_egrad_is_the_full_minibatch(self, case):
        _, problem = build(case)
        if problem.field != "gradient":
            pytest.skip(f"{problem.name}: the local {problem.field} is an exact expectation, the "
                        f"local data a sample of it")
        agents = np.arange(problem.n_agents)
        x = problem.manifold.random_point(np.random.default_rng(8), len(agents))
        _close(problem.local_egrad(x, agents),
               problem.minibatch_egrad(x, agents, self._full_batch(problem, agents)))

    def test_cost_and_egrad_are_weighted_sums_of_local_ones(self, case):
        _, problem = build(case)
        S = problem.n_agents
        agents = np.arange(S)
        rng = np.random.default_rng(9)
        for _ in range(2):
            x = problem.manifold.random_point(rng, 1)[0]
            xs = np.broadcast_to(x, (S,) + x.shape).copy()
            _close(problem.egrad(x), np.tensordot(problem.weights, problem.local_egrad(xs, agents), 1))
            if problem.field == "gradient":
                _close(problem.cost(x), problem.weights @ problem.local_cost(xs, agents))

    # ---- optimum -------------------------------------------------------------------------
    def test_closed_form_optimum_is_stationary_and_lowest(self, case):
        _, problem = build(case)
        x_star = problem.closed_form_optimum()
        if x_star is None:
            pytest.skip(f"{problem.name} has no closed-form optimum")
        m = problem.manifold
        assert m.distance_from_manifold(x_star[None])[0] <= 1e-10
        rng = np.random.default_rng(10)
        others = m.random_point(rng, 5)
        scale = max(problem.grad_norm(y) for y in others)
        assert problem.grad_norm(x_star) <= 1e-8 * max(scale, 1.0)
        assert all(problem.cost(x_star) <= problem.cost(y) for y in others)
        assert problem.distance_to_optimum(x_star, x_star) <= 1e-7

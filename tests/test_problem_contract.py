"""Every registered problem keeps the shared contract (``rfl.testing.problem``)."""

from __future__ import annotations

import pytest

from rfl.problems.base import Problem
from rfl.registry import PROBLEMS
from rfl.testing.problem import ProblemContract


class TestRegisteredProblems(ProblemContract):
    """Each check of ``ProblemContract`` on every registered problem's ``test_params``."""


def test_every_registered_problem_is_a_case_with_test_params():
    cases = ProblemContract().problem_cases()
    assert [c.problem_class for c in cases] == [cls for _, cls in PROBLEMS.items()]
    assert len(cases) >= 7 and all(c.params for c in cases)


def test_a_named_problem_must_declare_what_the_workflow_needs():
    with pytest.raises(TypeError, match="must declare: from_arrays, local_sizes_from, generate"):
        class Incomplete(Problem):           # noqa: F841 (never registered)
            name = "incomplete"

            def cost(self, x):
                return 0.0

            def egrad(self, x):
                return x
    assert "incomplete" not in PROBLEMS


def test_a_problem_without_a_name_is_not_registered():
    class Toy(Problem):
        def cost(self, x):
            return 0.0

        def egrad(self, x):
            return x
    assert Toy.__name__ not in PROBLEMS and "problem" not in PROBLEMS

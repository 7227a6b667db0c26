import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

# Property tests: "ci" (the default) draws the same examples on every run, so a commit that
# passes once passes again; "nightly" searches anew and longer:
#   HYPOTHESIS_PROFILE=nightly RFL_PROPERTY_EXAMPLES=5000 python -m pytest tests/test_config_property.py tests/test_inputs.py
settings.register_profile("ci", derandomize=True, database=None, deadline=None)
settings.register_profile("nightly", derandomize=False, deadline=None, max_examples=2000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

sys.path.insert(0, str(Path(__file__).parent))

from rfl.manifolds import Euclidean  # noqa: E402
from rfl.problems.base import Problem  # noqa: E402


class LeastSquares(Problem):
    """f(x; (a, b)) = 0.5 (a^T x - b)^2 on R^n; agent j holds A: (N_j, n), b: (N_j,).

    A Euclidean problem for the identities RFedAGS = FedAvg; unequal N_j allowed
    (padded arrays, sizes in local_sizes).
    """

    def __init__(self, A, b, sizes):
        self.A, self.b = A, b                      # (S, Nmax, n), (S, Nmax)
        self.local_sizes = np.asarray(sizes)
        self.manifold = Euclidean(A.shape[2])

    def minibatch_egrad(self, x, agents, batch):
        a = self.A[agents[:, None], batch]         # (s, B, n)
        r = np.einsum("sbn,sn->sb", a, x) - self.b[agents[:, None], batch]
        return np.einsum("sb,sbn->sn", r, a) / batch.shape[1]

    def _mask(self):
        return np.arange(self.A.shape[1])[None, :] < self.local_sizes[:, None]      # (S, Nmax)

    def local_cost(self, x, agents):
        """f_j(x_j) = (1/(2 N_j)) sum_i (a_i^T x_j - b_i)^2: x (s, n) -> (s,)."""
        r = (np.einsum("sin,sn->si", self.A[agents], x) - self.b[agents]) * self._mask()[agents]
        return 0.5 * (r**2).sum(axis=1) / self.local_sizes[agents]

    def local_egrad(self, x, agents):
        """(1/N_j) A_j^T (A_j x_j - b_j): x (s, n) -> (s, n)."""
        r = (np.einsum("sin,sn->si", self.A[agents], x) - self.b[agents]) * self._mask()[agents]
        return np.einsum("si,sin->sn", r, self.A[agents]) / self.local_sizes[agents, None]

    def cost(self, x):
        r = (self.A @ x - self.b) * self._mask()
        return float(0.5 * (r**2).sum() / self.local_sizes.sum())

    def egrad(self, x):
        r = (self.A @ x - self.b) * self._mask()
        return np.einsum("si,sin->n", r, self.A) / self.local_sizes.sum()


@pytest.fixture
def least_squares():
    rng = np.random.default_rng(11)
    S, Nmax, n = 5, 12, 4
    sizes = np.array([12, 9, 10, 12, 8])
    A = rng.standard_normal((S, Nmax, n))
    b = rng.standard_normal((S, Nmax))
    return LeastSquares(A, b, sizes)


@pytest.fixture(scope="module")
def task_identity():
    """What a Flower ServerApp process has set when a strategy builds its messages (restored
    after): for the tests that call a server strategy's hooks in this process."""
    from flwr.supercore.task_identity import TaskIdentity

    names = ("_run_id", "_node_id", "_task_id")
    saved = {n: getattr(TaskIdentity, n) for n in names}
    for n, value in zip(names, (1, 0, 1)):
        setattr(TaskIdentity, n, value)
    yield
    for n, value in saved.items():
        setattr(TaskIdentity, n, value)

"""Streaming PCA on Gr(n, p) (rfl/problems/streaming_pca.py): the shared problem contract on
its own cases, the generator's statistics (the whitened pooled covariance is exactly
B diag(decay^{2i}) B^T; the iid generator's in expectation), the stream's indices, and the MSD
metric against principal angles computed independently (scipy.linalg.subspace_angles)."""

import numpy as np
import pytest
import scipy.linalg

from rfl.problems.streaming_pca import StreamingPCA
from rfl.testing.problem import ProblemCase, ProblemContract


class TestStreamingPCAContract(ProblemContract):
    def problem_cases(self):
        return [ProblemCase(StreamingPCA, {"n": 6, "p": 2, "S": 3, "T": 8}),
                ProblemCase(StreamingPCA, {"n": 5, "p": 3, "S": 2, "T": 6, "generator": "iid",
                                           "decay": 0.5}, seed=1)]


def test_whitened_pooled_covariance_is_exact_and_u_true_its_top_eigenvectors():
    S, T, n, p = 4, 25, 6, 2
    arrays = StreamingPCA.generate(np.random.default_rng(0), n=n, p=p, S=S, T=T)
    Z = arrays["Z"].reshape(S * T, n)
    cov = Z.T @ Z / (S * T - 1)
    U = arrays["U_true"]
    # eigenvalues 0.8^{2i} in decreasing order, U* spanning the top p
    np.testing.assert_allclose(np.linalg.eigvalsh(cov)[::-1], 0.8 ** (2 * np.arange(n)), rtol=1e-10)
    np.testing.assert_allclose(cov @ U, U * 0.8 ** (2 * np.arange(p)), atol=1e-10)
    problem = StreamingPCA.from_arrays(arrays, {})
    angles = scipy.linalg.subspace_angles(problem.closed_form_optimum(), U)
    assert np.max(angles) < 1e-8


def test_iid_generator_covariance_in_expectation():
    """Sample covariance of 40000 iid draws within 4 standard errors of B diag(sigma^2) B^T
    entrywise (se of an entry <= sigma_max^2 sqrt(2 / N))."""
    S, T, n = 4, 10000, 4
    arrays = StreamingPCA.generate(np.random.default_rng(3), n=n, p=1, S=S, T=T, decay=0.5,
                                   generator="iid")
    Z = arrays["Z"].reshape(-1, n)
    cov = Z.T @ Z / Z.shape[0]
    U = arrays["U_true"]
    # the top eigenvalue is 1 along U*, so U*^T cov U* ~ 1 and the rest of the mass is 0.25 + ...
    assert abs(float(U[:, 0] @ cov @ U[:, 0]) - 1.0) < 4 * np.sqrt(2 / Z.shape[0])
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(cov))[::-1], 0.5 ** (2 * np.arange(n)),
                               atol=4 * np.sqrt(2 / Z.shape[0]))


def test_stream_batch_is_sample_t_of_every_agent_and_bounded():
    problem = StreamingPCA.from_arrays(StreamingPCA.generate(np.random.default_rng(0), n=4, p=1, S=3, T=5), {})
    np.testing.assert_array_equal(problem.stream_batch(2), [[2], [2], [2]])
    g = problem.minibatch_egrad(np.repeat(problem.U_true[None], 3, 0), np.arange(3), problem.stream_batch(4))
    z = problem.Z[:, 4]
    np.testing.assert_allclose(g, -2 * np.einsum("si,sj,jp->sip", z, z, problem.U_true), atol=1e-12)
    with pytest.raises(IndexError):
        problem.stream_batch(5)


def test_msd_is_mean_squared_principal_angles_in_db():
    rng = np.random.default_rng(5)
    problem = StreamingPCA.from_arrays(StreamingPCA.generate(rng, n=7, p=3, S=2, T=4), {})
    X = problem.manifold.random_point(rng, 4)
    want = np.mean([np.sum(scipy.linalg.subspace_angles(X[k], problem.U_true) ** 2) for k in range(4)])
    got = problem.agent_metrics(X)
    assert got["msd"] == pytest.approx(want, rel=1e-9)
    assert got["msd_db"] == pytest.approx(10 * np.log10(want), rel=1e-9)

"""DPRGD and iDPRGD: decentralised projected Riemannian gradient descent for online problems
on Hadamard manifolds (Chen & Sun, arXiv 2410.05128; the authors' ``simulation.ipynb``).

Agent i at step t, with the data of step t (a streaming problem's ``stream_batch``):

    DPRGD:   x_i^+ = argmin_y sum_j W_ij d^2(y, x_j)                 (exact weighted Fréchet mean)
    iDPRGD:  x_i^+ = Exp_{x_i}(gamma sum_j W_ij Log_{x_i}(x_j))      (one step of it, gamma = 1)
    both:    x_i   = Exp_{x_i^+}(-eta grad f_{i,t}(x_i^+))

(the gradient at the consensus point; for f_{i,t} = (1/2K) sum_k d^2(., z_{i,k}^t) the step is
the notebook's Exp(x^+, eta mean_k Log_{x^+} z)). The notebook's exact mean is 100 gradient
steps of size 0.1 from the Poincaré / arithmetic mean (tolerance 1e-6); here it is the Karcher
mean to a relative gradient norm of 1e-12 (``rfl.manifolds.frechet.karcher_mean``). eta is the
gradient step (``gradient_step``), gamma ``consensus_step``, W = W^t.

The column ``log_maps`` counts the Log maps each consensus computed so far, summed over the
agents (a machine-independent measure of the consensus's cost, where the notebook times it):
iDPRGD one per neighbour, DPRGD one per neighbour per iteration of its mean.
"""

from __future__ import annotations

import numpy as np

from rfl.manifolds.frechet import NEGATIVE_CURVATURE, _zeta, tangent_mean

from .decentralised import METRIC_DEFINITIONS, DecentralisedStrategy

LOG_MAPS = "Log maps of the consensus steps so far, summed over agents (DPRGD: neighbours x " \
           "iterations of each exact mean; iDPRGD: neighbours)"
#: DPRGD's exact mean: stop at this relative gradient norm, or after this many steps
TOL = 1e-13
MAX_STEPS = 1000


class _OnlineRiemannian(DecentralisedStrategy):
    requires = frozenset({"frechet_consensus"})
    consensus = "frechet_consensus"
    metrics = {**METRIC_DEFINITIONS, "log_maps": LOG_MAPS}

    def start(self):
        self._log_maps = 0

    def neighbours(self):
        """(S, m) indices of each agent's neighbours (W_ij != 0, j = i included) and (S, m)
        their weights, m the largest degree + 1 (padded with weight 0 at the agent itself)."""
        W = self.Wt
        S = W.shape[0]
        m = int((W != 0).sum(axis=1).max())
        idx = np.tile(np.arange(S)[:, None], (1, m))
        w = np.zeros((S, m))
        for i in range(S):
            nz = np.flatnonzero(W[i])
            idx[i, :nz.size], w[i, :nz.size] = nz, W[i, nz]
        return idx, w

    def consensus_points(self) -> np.ndarray:
        raise NotImplementedError

    def update(self, t, sampler, agents):
        m = self.manifold
        plus = self.consensus_points()
        g = self.gradients(plus, agents, t, sampler)
        self.X = m.retraction(plus, -self.gradient_step(t) * g)
        return agents.shape[0] * self.batch_size

    def round_metrics(self, xbar):
        return {"log_maps": float(self._log_maps)}

    def start_metrics(self, x0, draws):
        return {**super().start_metrics(x0, draws), "log_maps": 0.0}


class DPRGD(_OnlineRiemannian):
    """DPRGD (module docstring): the exact weighted Fréchet mean of the neighbours."""

    name = "dprgd"
    label = "DPRGD"
    style = {"color": "tab:brown", "ls": "--"}
    plot_order = 25

    def consensus_points(self):
        m = self.manifold
        idx, w = self.neighbours()
        pts = self.X[idx]                                   # (S, m, *shape)
        S, k = idx.shape
        kappa = NEGATIVE_CURVATURE.get(m.name, 0.0)
        flat = pts.reshape((S * k,) + pts.shape[2:])
        shape = (S,) + (1,) * (self.X.ndim - 1)
        y = self.X.copy()                                   # from each agent's own point
        active = np.ones(S, dtype=bool)
        for _ in range(MAX_STEPS):
            d = m.dist(np.repeat(y, k, axis=0), flat).reshape(S, k)
            v = tangent_mean(m, y, pts, w)
            self._log_maps += int((w[active] > 0).sum())
            active = m.norm(y, v) > TOL * (1.0 + np.sum(w * d, axis=1))
            if not active.any():
                break
            step = np.where(active, 1.0 / np.sum(w * _zeta(np.sqrt(kappa) * d), axis=1), 0.0)
            y = m.exp(y, step.reshape(shape) * v)
        return y


class IDPRGD(_OnlineRiemannian):
    """iDPRGD (module docstring): one Fréchet step Exp_{x_i}(gamma sum_j W_ij Log_{x_i} x_j)."""

    name = "idprgd"
    label = "iDPRGD"
    style = {"color": "tab:brown", "ls": "-"}
    plot_order = 26

    def consensus_points(self):
        self._log_maps += int((self.Wt * (1 - np.eye(self.Wt.shape[0])) != 0).sum())
        return self.manifold.exp(self.X, self.consensus_step * self.direction(self.X))

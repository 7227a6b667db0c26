"""DRGTA: decentralised Riemannian gradient tracking (Chen, Garcia, Hong, Shahrampour, ICML
2021, Algorithm 2) with multi-step consensus."""

from __future__ import annotations

from .decentralised import DecentralisedStrategy


class DRGTA(DecentralisedStrategy):
    """Agent i, iteration k (Algorithm 2; the authors' ``minimize`` loop):

        v_{i,k}   = P_{T_{x_{i,k}}}( y_{i,k} )
        x_{i,k+1} = R_{x_{i,k}}( alpha P_{T_{x_{i,k}}}( sum_j (W^t)_ij x_{j,k} - x_{i,k} ) - beta v_{i,k} )
        y_{i,k+1} = sum_j (W^t)_ij y_{j,k} + g_i(x_{i,k+1}) - g_i(x_{i,k}),

    g_i the Riemannian gradient of f_i, y_{i,0} = g_i(x_{i,0}) (the full local gradient, as
    the authors'). x and y are mixed in one message per edge and consensus step (the
    authors' ``np.append(x, tracking_grad)``): twice the floats of DRSGD. With a constant beta
    small enough the iterates converge to a critical point at a linear rate under the
    local regularity of PCA (their Theorem 4.7) — exactly, where DRSGD stalls.

    g_i(x_{i,k+1}) is the mini-batch gradient of draw (k, 0); with batch_size = N_j (the
    authors' setting) it is the full local gradient and this is their DRGTA (a smaller batch
    gives stochastic gradient tracking). Network mean: the projected ambient mean.
    """

    name = "drgta"
    label = "DRGTA"
    requires = frozenset({"ambient_consensus"})
    consensus = "ambient_consensus"
    mixed_stacks = 2
    style = {"color": "tab:red", "ls": "-."}
    plot_order = 21

    def start(self):
        m, agents = self.manifold, self._agents()
        self.G = m.euclidean_to_riemannian_gradient(self.X, self.problem.local_egrad(self.X, agents))
        self.Y = self.G.copy()

    def _agents(self):
        import numpy as np
        return np.arange(self.problem.n_agents)

    def update(self, t, sampler, agents):
        m = self.manifold
        mixed_y = self.Wt @ self.Y.reshape(self.Y.shape[0], -1)
        v = m.projection(self.X, self.Y)
        self.X = m.retraction(self.X, self.consensus_step * self.direction(self.X)
                              - self.gradient_step(t) * v)
        g = self.gradients(self.X, agents, t, sampler)
        self.Y = mixed_y.reshape(self.Y.shape) + g - self.G
        self.G = g
        return agents.shape[0] * self.batch_size

"""DRSGD: decentralised Riemannian stochastic gradient descent (Chen, Garcia, Hong,
Shahrampour, ICML 2021, Algorithm 1) with multi-step consensus."""

from __future__ import annotations

from .decentralised import DecentralisedStrategy


class DRSGD(DecentralisedStrategy):
    """Agent i, iteration k (Algorithm 1, lines 3-4; the authors' ``gradient_step``):

        x_{i,k+1} = R_{x_{i,k}}( alpha P_{T_{x_{i,k}}}( sum_j (W^t)_ij x_{j,k} - x_{i,k} )
                                 - beta_k P_{T_{x_{i,k}}}( grad f_i(x_{i,k}; batch) ) ),

    t = ``consensus_steps`` rounds of communication, alpha = ``consensus_step`` (the
    authors': 1), beta_k the step (``gradient_step``: the authors' constant beta_0 / sqrt(T),
    beta_0 / sqrt(k) or beta_0 / k). With a constant beta the iterates reach a neighbourhood
    of consensus and of a critical point of size O(beta) (their Theorem 4.5), not the point.
    One iteration here is one mini-batch step (the authors' loop runs an epoch of them per
    reported iteration, each with its consensus). Network mean: the projected ambient mean.
    ``beta = 0``: consensus alone, no gradient (the code's ``batch_size = 0`` branch), whose
    disagreement contracts by about sigma_2(W)^t per round near consensus.
    """

    name = "drsgd"
    label = "DRSGD"
    requires = frozenset({"ambient_consensus"})
    consensus = "ambient_consensus"
    style = {"color": "tab:brown", "ls": "-."}
    plot_order = 20

    def update(self, t, sampler, agents):
        m = self.manifold
        if self.beta == 0:                        # consensus alone (the code's batch_size = 0)
            self.X = m.retraction(self.X, self.consensus_step * self.direction(self.X))
            return 0
        rgrad = self.gradients(self.X, agents, t, sampler)
        self.X = m.retraction(self.X, self.consensus_step * self.direction(self.X)
                              - self.gradient_step(t) * rgrad)
        return agents.shape[0] * self.batch_size

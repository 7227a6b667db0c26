"""FedAvg (local SGD + averaging, McMahan et al.) for problems on Euclidean space."""

from __future__ import annotations

from .base import FederatedAlgorithm, weighted_mean


class FedAvg(FederatedAlgorithm):
    """x^j_{t,k} = x^j_{t,k-1} - alpha_t * (mini-batch gradient); x_{t+1} = sum_j p_j x^j_{t,K}."""

    name = "fedavg"
    label = "FedLSA (FedAvg)"
    requires = frozenset({"flat"})
    fields = frozenset({"gradient", "linear_field"})

    def __init__(self, problem, *args, **kwargs):
        if problem.manifold.name != "euclidean":
            raise ValueError(f"fedavg needs a Euclidean problem, got manifold {problem.manifold.name!r}")
        super().__init__(problem, *args, **kwargs)

    def round(self, x_t, t, sampler):
        agents = sampler.participants()
        alpha = self.step_size(t)
        x = self.broadcast(x_t, agents.shape[0])                 # a fresh array: updated in place
        for _ in range(self.K):
            g = self.problem.minibatch_egrad(x, agents, sampler.batches(agents))
            g *= alpha
            x -= g
        return weighted_mean(sampler.weights(self.problem.local_sizes, agents), x)   # sum_j p_j x^j_{t,K}

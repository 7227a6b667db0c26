"""FedAvg (local SGD + averaging, McMahan et al.) for problems on Euclidean space."""

from __future__ import annotations

from .aggregation import anchored_mean
from .averaging import AVERAGE_AFTER
from .base import FederatedStrategy


class FedAvg(FederatedStrategy):
    """x^j_{t,k} = x^j_{t,k-1} - alpha_t * (mini-batch gradient); x_{t+1} = sum_j p_j x^j_{t,K}
    (``anchored_mean``: x_t + sum_j p_j (x^j_{t,K} - x_t) when the weights do not sum to 1).
    Option ``average_after``: record the Polyak-Ruppert average of the iterates after that
    burn-in (``rfl.algorithms.averaging``), the estimate of the stationary mean theta* + bias."""

    name = "fedavg"
    label = "FedAvg"
    problem_labels = {"lsa": "FedLSA (FedAvg)"}     # on the LSA field FedAvg is FedLSA (Mangold et al.)
    requires = frozenset({"flat"})
    fields = frozenset({"gradient", "linear_field"})
    options = {"average_after": AVERAGE_AFTER}
    style = {"color": None, "ls": "-"}
    plot_order = 4

    def round(self, x_t, t, sampler):
        agents = sampler.participants()
        alpha = self.step_size(t)
        x = self.broadcast(x_t, agents.shape[0])                 # a fresh array: updated in place
        for k in range(self.K):
            g = self.problem.minibatch_egrad(x, agents, sampler.batches(agents, t, k))
            g *= alpha
            x -= g
        w = sampler.weights(self.problem.local_sizes, agents)
        return self.result(anchored_mean(w, x, x_t), agents)             # sum_j p_j x^j_{t,K}

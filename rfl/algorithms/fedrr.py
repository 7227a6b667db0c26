"""Federated Richardson-Romberg extrapolation (Mangold, Durmus, Dieuleveut, Samsonov,
Moulines 2024, arXiv 2412.01389; slides "A new Federated Method? (A bit of teasing on
Richardson-Romberg)").

With a fixed step eta, FedAvg's iterates converge to a stationary law whose mean is
theta* + eta c + O(eta^2) (c: a heterogeneity part, nonzero for H > 1, and a part due to the
gradient noise; paper Theorem 3). Two FedAvg chains, one with step eta and one with step
2 eta, and their Polyak-Ruppert averages theta_bar_eta, theta_bar_2eta after a burn-in give

    theta_RR = 2 theta_bar_eta - theta_bar_2eta,     bias O(eta^2) instead of O(eta).

``RichardsonRomberg`` runs two chains of any strategy (``chain``) side by side and records
R~_{a}(-R~^{-1}_{a}(b)) (``rfl.algorithms.averaging.extrapolate``; 2 a - b on a flat space)
of their averages a (step eta) and b (step 2 eta); ``FedRR`` is it on FedAvg, and
``rfl.algorithms.rfedags_rr`` on RFedAGS. Each round advances both chains one round from
their own states (the point the runner passes back in is the recorded extrapolation, not a
chain state, and is not used); the round's point is the extrapolation of the averages
(``RunningMean``: of the rounds after ``burn_in``; the last iterates before, so round t <=
burn_in records 2 x_eta - x_2eta).

Mini-batch stream (option ``shared_stream``). True (default): both chains take the same
participants and the same mini-batches in every round (one draw, replayed to the 2 eta-chain):
a coupling of the two chains by one noise sequence, the usual choice of Richardson-Romberg
estimators for stochastic approximation. (The paper's full text was not at hand here; which
of the two its algorithm uses is not checked against it, hence the option.) The eta-chain is
then draw for draw the FedAvg run of the same seed and experiment (``rfl.algorithms.sampling``:
common random numbers). False: the 2 eta-chain draws from its own stream (``Draws.child``),
independent of the eta-chain's. The bias of the
extrapolation is the same either way (each chain's mean is); the sharing changes only its
variance (README, FedRR section: the measured difference).

Control (option ``records: eta_average``): the run records the eta-chain's average a alone,
the Polyak-Ruppert averaged strategy, with the same draws (and the same counters), so that
what the extrapolation adds beyond the averaging can be measured.

Cost. Every participating agent runs both chains: 2 K B sample gradients per agent and round,
and the floats of two FedAvg rounds (two points broadcast, two uploaded): both counters are
twice FedAvg's.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from .averaging import RunningMean, extrapolate
from .base import FederatedStrategy, RoundResult
from .fedavg import FedAvg
from .sampling import Draws


class _Scaled:
    """The step rule t -> factor * step(t)."""

    def __init__(self, step, factor: float):
        self.step, self.factor = step, factor

    def __call__(self, t):
        return self.factor * self.step(t)


class _Recorded:
    """A round's draws (participants, mini-batches, weights), taken from ``sampler`` in order
    (``play``) and handed out again in the same order (``replay``): the 2 eta-chain's sampler
    when the chains share their stream. Other attributes are the sampler's."""

    def __init__(self, sampler):
        self.sampler = sampler
        self.draws = []
        self.position = None

    def replay(self):
        self.position = 0
        return self

    def _next(self, kind, make):
        if self.position is None:
            value = make()
            self.draws.append((kind, value))
            return value
        got, value = self.draws[self.position]
        if got != kind:
            raise RuntimeError(f"the 2 eta-chain asked for {kind} where the eta-chain drew {got}")
        self.position += 1
        return value

    def participants(self):
        return self._next("participants", self.sampler.participants)

    def batches(self, agents, t=None, k=None):
        return self._next("batches", lambda: self.sampler.batches(agents, t, k))

    def weights(self, local_sizes, agents):
        return self._next("weights", lambda: self.sampler.weights(local_sizes, agents))

    def __getattr__(self, name):
        return getattr(self.sampler, name)


class RichardsonRomberg(FederatedStrategy):
    """Two chains of ``chain`` with steps eta and 2 eta, the extrapolation of their averages
    recorded (module docstring). ``fine`` / ``coarse``: the eta- and 2 eta-chains."""

    #: the strategy both chains run
    chain: ClassVar[type]
    options = {
        "burn_in": {"type": "integer", "minimum": 0, "default": 0,
                    "description": "b: the averages are of the chains' iterates after round b"},
        "shared_stream": {"type": "boolean", "default": True,
                          "description": "both chains use the same participants and mini-batches "
                                         "(false: the 2 eta-chain has its own stream)"},
        "records": {"enum": ["extrapolation", "eta_average"], "default": "extrapolation",
                    "description": "the recorded point: the extrapolation, or (a control) the "
                                   "eta-chain's average alone"},
    }

    def __init__(self, problem, step_size, K, batch_size, participation=None, **options):
        super().__init__(problem, step_size, K, batch_size, participation, **options)
        self.fine = self.chain(problem, step_size, K, batch_size, participation)
        self.coarse = self.chain(problem, _Scaled(step_size, 2.0), K, batch_size, participation)
        self.x_fine = self.x_coarse = None
        self._coarse_sampler = None

    def sampler(self, rng):
        """The eta-chain's sampler; without a shared stream the 2 eta-chain's own one draws
        from an independent stream: ``Draws.child("2eta")`` of the run's draws (or a child
        ``Generator.spawn`` of a generator)."""
        if not self.shared_stream:
            child = rng.child("2eta") if isinstance(rng, Draws) else rng.spawn(1)[0]
            self._coarse_sampler = self.coarse.sampler(child)
        return self.fine.sampler(rng)

    def reset(self, x0) -> None:
        """Both chains start at x0, with empty averages."""
        self.fine.reset(x0)
        self.coarse.reset(x0)
        self.x_fine = self.x_coarse = np.array(x0, copy=True)
        self.mean_fine = RunningMean(self.manifold, self.burn_in)
        self.mean_coarse = RunningMean(self.manifold, self.burn_in)

    def round(self, x_t, t, sampler):
        if self.x_fine is None:
            self.reset(x_t)
        if self.shared_stream:
            draws = _Recorded(sampler)
            fine = self.fine.round(self.x_fine, t, draws)
            coarse = self.coarse.round(self.x_coarse, t, draws.replay())
        else:
            if self._coarse_sampler is None:
                raise RuntimeError(f"{self.name} without a shared stream draws through its own "
                                   f"sampler(rng): run it with iterate()")
            fine = self.fine.round(self.x_fine, t, sampler)
            coarse = self.coarse.round(self.x_coarse, t, self._coarse_sampler)
        self.x_fine, self.x_coarse = fine.x, coarse.x
        a = self.mean_fine.update(t, fine.x)
        b = self.mean_coarse.update(t, coarse.x)
        x = extrapolate(self.manifold, a, b) if self.records == "extrapolation" else np.array(a, copy=True)
        return RoundResult(x, fine.participants,
                           fine.grad_evals + coarse.grad_evals, fine.floats + coarse.floats)


class FedRR(RichardsonRomberg):
    """2 theta_bar_eta - theta_bar_2eta of two FedAvg chains (module docstring)."""

    name = "fedrr"
    label = "FedRR"
    chain = FedAvg
    requires = frozenset({"flat"})
    fields = frozenset({"gradient", "linear_field"})
    style = {"color": "tab:purple", "ls": ":"}
    plot_order = 10

"""Riemannian diffusion adaptation, adapt-then-combine (Wang, Borsoi, Richard & Sayed, ICML 2025,
Algorithm 1; the authors' ``riemannian_diffusion_grassmann``), and the two baselines of its
figures: the non-cooperative agents and the fusion centre (their ``riemannian_centralized_*``).

Agent k at step t, with its fresh sample (a streaming problem's ``stream_batch``):

    psi_k = R_{w_k}(-mu grad f(w_k; z_{k,t}))                                   (adapt)
    w_k   = R_{psi_k}(gamma sum_l a_kl Log_{psi_k}(psi_l))                      (combine)

the combine step one Riemannian gradient step of size gamma on (1/2) sum_l a_kl d^2(., psi_l)
from psi_k (the weighted Fréchet mean of the neighbours' intermediate points, approximated by
one step). The authors take the step ``step_size_fm`` on sum_l a_kl d^2 (no 1/2), whose gradient
is twice ours: their 0.8 is gamma = 1.6 here. mu is the gradient step (``gradient_step``:
``beta``, else the experiment's step rule), gamma ``consensus_step``, (a_kl) = W^t.
"""

from __future__ import annotations

import numpy as np

from .decentralised import DecentralisedStrategy


class Diffusion(DecentralisedStrategy):
    """Riemannian diffusion ATC (module docstring). Network mean: the Karcher mean."""

    name = "diffusion"
    label = "Riemannian diffusion"
    requires = frozenset({"frechet_consensus"})
    consensus = "frechet_consensus"
    style = {"color": "#FA7F6F", "ls": "-"}
    plot_order = 23

    def update(self, t, sampler, agents):
        m = self.manifold
        psi = m.retraction(self.X, -self.gradient_step(t) * self.gradients(self.X, agents, t, sampler))
        self.X = m.retraction(psi, self.consensus_step * self.direction(psi))
        return agents.shape[0] * self.batch_size


class NonCooperative(DecentralisedStrategy):
    """Every agent adapts alone: w_k = R_{w_k}(-mu grad f(w_k; z_{k,t})) (the authors'
    ``riemannian_non_cooperative_grassmann``); nothing is sent. The graph only fixes the
    sigma2 column. Network mean: the Karcher mean."""

    name = "noncooperative"
    label = "Riemannian non-cooperative"
    requires = frozenset({"frechet_consensus"})
    consensus = "frechet_consensus"
    style = {"color": "#82B0D2", "ls": "-"}
    plot_order = 22

    def update(self, t, sampler, agents):
        m = self.manifold
        self.X = m.retraction(self.X, -self.gradient_step(t) * self.gradients(self.X, agents, t, sampler))
        return agents.shape[0] * self.batch_size

    def floats_per_round(self, s):
        return 0


class FusionCentre(DecentralisedStrategy):
    """A fusion centre that sees every agent's sample of the step: w = R_w(-mu (1/S) sum_k
    grad f(w; z_{k,t})) (the authors' ``riemannian_centralized_grassmann``: the same step mu on
    the mean of the S sample costs). All agents hold w. Messages: each agent's gradient up and
    w down, 2 S point sizes per step."""

    name = "fusion_centre"
    label = "Riemannian centralised"
    requires = frozenset({"frechet_consensus"})
    consensus = "frechet_consensus"
    style = {"color": "#2F7FC1", "ls": "-"}
    plot_order = 24

    def update(self, t, sampler, agents):
        m = self.manifold
        S = self.X.shape[0]
        w = self.X[:1]
        g = self.gradients(np.repeat(w, S, axis=0), agents, t, sampler).mean(axis=0, keepdims=True)
        self.X = np.repeat(m.retraction(w, -self.gradient_step(t) * g), S, axis=0)
        return agents.shape[0] * self.batch_size

    def floats_per_round(self, s):
        return 2 * s * self.manifold.ambient_size

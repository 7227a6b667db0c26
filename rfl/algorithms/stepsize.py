"""Step-size rules alpha_{t,k} (paper Section 5): fixed, and decaying (5.2).

Rounds are counted from t = 0 (the first round); within a round all K local
steps use the same alpha_t.
"""

from __future__ import annotations


class Fixed:
    """alpha_{t,k} = alpha."""

    def __init__(self, alpha: float):
        if not alpha > 0:
            raise ValueError(f"step.alpha must be positive, got {alpha!r}")
        self.alpha = float(alpha)

    def __call__(self, t: int) -> float:
        return self.alpha


class Decaying:
    """Rule (5.2): alpha_0 at t = 0, else alpha_0 / (beta + c_t), c_t = floor(t / dec).

    (5.2) defines c_0 = 0 and c_t = c_{t-1} + 1 when mod(t, dec) = 0, else c_{t-1},
    which is floor(t / dec): the step shrinks once every ``dec`` rounds.
    """

    def __init__(self, alpha0: float, beta: float, dec: int):
        if not alpha0 > 0:
            raise ValueError(f"step.alpha0 must be positive, got {alpha0!r}")
        if not beta > 0:
            raise ValueError(f"step.beta must be positive, got {beta!r}")
        if not (isinstance(dec, int) and dec >= 1):
            raise ValueError(f"step.dec must be an integer >= 1, got {dec!r}")
        self.alpha0, self.beta, self.dec = float(alpha0), float(beta), int(dec)

    def __call__(self, t: int) -> float:
        if t == 0:
            return self.alpha0
        return self.alpha0 / (self.beta + t // self.dec)


STEP_RULES = {"fixed": Fixed, "decaying": Decaying}


def make_step_size(spec: dict):
    """``{"rule": "fixed", "alpha": 1.0}`` or ``{"rule": "decaying", "alpha0":..., "beta":..., "dec":...}``."""
    spec = dict(spec)
    rule = spec.pop("rule", None)
    if rule not in STEP_RULES:
        raise ValueError(f"step.rule={rule!r} is unknown; allowed: {', '.join(STEP_RULES)}")
    return STEP_RULES[rule](**spec)

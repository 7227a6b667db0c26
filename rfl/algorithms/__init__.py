"""Algorithms: federated strategies (one per module) and centralised solvers.

Each declares itself (``rfl.algorithms.base.Declared``) and is found by name in
``rfl.registry.ALGORITHMS``; they know problems only through the ``Problem`` interface
and manifolds through what they ``offer``.
"""

from .base import CentralizedSolver, Counters, FederatedStrategy, RoundResult
from .centralized import RCG, RSD
from .fedavg import FedAvg
from .fedrr import FedRR
from .rfedags import RFedAGS
from .rfedags_rr import RFedAGSRR
from .rfedavg import RFedAvg
from .rfedprox import RFedProx
from .rfedproj import RFedProj
from .rfedsvrg import RFedSVRG
from .rlbfgs import RLBFGS
from .sampling import AgentSampler
from .scaffold import Scaffold
from .scafflsa import SCAFFLSA
from .stepsize import STEP_RULES, Decaying, Fixed, make_step_size
from .zorfedproj import ZORFedProj

__all__ = ["AgentSampler", "CentralizedSolver", "Counters", "Decaying", "FedAvg", "FedRR", "FederatedStrategy",
           "Fixed", "RCG", "RLBFGS", "RSD", "RFedAGS", "RFedAGSRR", "RFedAvg", "RFedProj", "RFedProx", "RFedSVRG", "RoundResult",
           "SCAFFLSA", "Scaffold", "STEP_RULES", "ZORFedProj", "make_step_size"]


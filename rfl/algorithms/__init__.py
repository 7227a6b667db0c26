"""Algorithms: federated strategies (one per module) and centralised solvers.

They know problems only through the ``Problem`` interface, never by name.
"""

from .base import Counters, FederatedAlgorithm
from .centralized import RCG, RSD
from .fedavg import FedAvg
from .rfedags import RFedAGS
from .rfedavg import RFedAvg
from .rfedproj import RFedProj
from .rfedsvrg import RFedSVRG
from .rlbfgs import RLBFGS
from .sampling import AgentSampler
from .scafflsa import SCAFFLSA
from .stepsize import STEP_RULES, Decaying, Fixed, make_step_size

FEDERATED = {"rfedags": RFedAGS, "rfedavg": RFedAvg, "fedavg": FedAvg, "rfedsvrg": RFedSVRG,
             "rfedproj": RFedProj, "scafflsa": SCAFFLSA}
CENTRALIZED = {"rsd": RSD, "rcg": RCG, "rlbfgs": RLBFGS}

from rfl.registry import ALGORITHMS  # noqa: E402

# registered by declaration once the strategies declare themselves
for _cls in (RFedAGS, RFedAvg, RFedSVRG, RFedProj, FedAvg, SCAFFLSA, RSD, RCG, RLBFGS):
    ALGORITHMS.add(_cls)

__all__ = ["AgentSampler", "CENTRALIZED", "Counters", "RCG", "RLBFGS", "RSD", "Decaying", "FEDERATED", "FedAvg", "FederatedAlgorithm",
           "Fixed", "RFedAGS", "RFedAvg", "RFedProj", "RFedSVRG", "SCAFFLSA", "STEP_RULES", "make_step_size"]

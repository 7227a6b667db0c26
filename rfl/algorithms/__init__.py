"""Algorithms: federated strategies (one per module) and centralised solvers.

They know problems only through the ``Problem`` interface, never by name.
"""

from .base import Counters, FederatedAlgorithm
from .fedavg import FedAvg
from .rfedags import RFedAGS
from .rfedavg import RFedAvg
from .sampling import AgentSampler
from .stepsize import STEP_RULES, Decaying, Fixed, make_step_size

FEDERATED = {"rfedags": RFedAGS, "rfedavg": RFedAvg, "fedavg": FedAvg}

__all__ = ["AgentSampler", "Counters", "Decaying", "FEDERATED", "FedAvg", "FederatedAlgorithm",
           "Fixed", "RFedAGS", "RFedAvg", "STEP_RULES", "make_step_size"]

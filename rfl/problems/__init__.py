"""Problems: cost and gradients of federated learning tasks on a manifold.

``PROBLEMS`` maps the config's problem name to its class; each class builds
from the arrays its data generator wrote (``from_arrays``) and states its local
data sizes from the dataset parameters (``local_sizes_from``), so a config can
be checked before any data exist.
"""

from ._batching import MiniBatch
from .base import Problem
from .cfmspd import CFMSPD
from .cpesph import CPESph
from .kpca import KPCA
from .lsa import FederatedLSA
from .mbcfsti import MBCFSti
from .multitask import MultitaskFeatures, SchoolMultitask

PROBLEMS = {"cpesph": CPESph, "cfmspd": CFMSPD, "mbcfsti": MBCFSti,
            "multitask": MultitaskFeatures, "school": SchoolMultitask, "kpca": KPCA,
            "lsa": FederatedLSA}

__all__ = ["MiniBatch", "Problem", "CFMSPD", "CPESph", "FederatedLSA", "KPCA", "MBCFSti", "MultitaskFeatures", "SchoolMultitask",
           "PROBLEMS"]

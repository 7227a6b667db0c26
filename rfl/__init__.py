"""rfl: a reproducible benchmark suite for Riemannian federated learning.

Layers, bottom to top (data flows one way):
    rfl.manifolds   geometry, batched over a leading agents axis
    rfl.data        data generators and loaders
    rfl.problems    costs and gradients on a manifold
    rfl.algorithms  federated and centralised solvers (know no problem by name)
    rfl.runner      one run spec -> result files (tidy CSV + JSON metadata)
    rfl.reporting   figures and tables, reading result files only
    rfl.cli         the thin command line the Snakefile calls

Importing rfl sets glibc's heap thresholds once for the process (``rfl._allocator``): numpy's
temporaries of a step over many agents then reuse mapped memory instead of faulting it in anew.
"""

from . import _allocator

_allocator.tune()

__version__ = "0.1.0"

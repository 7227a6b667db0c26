"""Every registered manifold's examples() against the shared contract (rfl.testing.manifold)."""

from rfl.testing.manifold import ManifoldContract


class TestManifoldContract(ManifoldContract):
    """The whole registry: ``manifolds`` is left at None."""

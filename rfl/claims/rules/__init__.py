"""The claim rules shipped with rfl: one module per rule, each a ``Rule`` subclass that
registers itself by its ``name`` (``rfl.registry.RULES``)."""

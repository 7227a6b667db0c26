"""Participation schemes: which agents take part in a round, and the server's weights.

One scheme per module, each a ``ParticipationScheme`` subclass that declares itself (``name``,
``options`` as JSON-schema properties with defaults) and is found by name in
``rfl.registry.PARTICIPATION``. ``AgentSampler`` (``rfl.algorithms.sampling``) holds one
scheme per run and delegates ``participants()`` and ``weights(...)`` to it.

A method of a config gives its scheme as ``participation: <int s>`` (s agents uniformly
without replacement), ``participation: null`` (every agent) or
``participation: {scheme: <name>, <option>: <value>, ...}``; ``canonical`` turns any of these
into one value (None, an int, or a dict with every option), which ``tag`` turns into the part
of a run id that names the scheme.
"""

from .base import ParticipationScheme, canonical, check, make_scheme, tag

__all__ = ["ParticipationScheme", "canonical", "check", "make_scheme", "tag"]

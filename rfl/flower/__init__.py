"""Run rfl's federated strategies on Flower (https://flower.ai), the message API of flwr >= 1.41.

The geometry, local steps and aggregation are rfl's own (``rfl.manifolds``,
``rfl.algorithms.rfedags.gradient_stream``, ``rfl.algorithms.rfedavg.local_sgd``,
``rfl.algorithms.aggregation``); this subpackage only moves points and tangent vectors as
Flower ``ArrayRecord``s:

* ``rfl.flower.strategies``: ``flwr.serverapp.strategy.Strategy`` subclasses for RFedAGS,
  RFedAvg and RFedSVRG (participants and mini-batch keys drawn by the server with the
  simulator's sampler; replies validated, a faulty one dropped with a log line, the accepted
  ones ordered by agent and weighted as the simulator weights a round without the dropped
  agents; docs/flower.md, "Faulty clients");
* ``rfl.flower.client``: the ClientApp serving one agent of any registered problem;
* ``rfl.flower.server``: the ServerApp that runs one run spec and writes the same run table
  and metadata as ``rfl run``, and ``run_flower`` (Flower's simulation engine).

Everything but ``rfl.flower.sampling`` and ``rfl.flower.local`` imports flwr, which is an
optional dependency (``pip install "rfl[flower]"``); ``import rfl`` never imports it.
"""

from __future__ import annotations

MISSING = ("Flower is not installed: the rfl Flower apps need flwr[simulation] "
           "(pip install -e \".[flower]\")")


def require_flwr():
    """Import flwr, or raise ImportError with the install line."""
    try:
        import flwr
    except ImportError as exc:
        raise ImportError(MISSING) from exc
    return flwr

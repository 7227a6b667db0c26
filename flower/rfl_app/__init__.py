"""rfl's Flower app: the ServerApp and ClientApp of ``rfl.flower`` for ``flwr run``."""

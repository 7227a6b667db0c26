"""ClientApp: one agent of the run's problem (``rfl.flower.client``); a SuperNode says which
with --node-config "agent=<j> data-file='<path.npz>'" (simulation: its partition-id)."""

from rfl.flower.client import make_client_app

app = make_client_app()

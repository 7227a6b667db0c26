"""rfl's RFedAvg / RFedSVRG with the QR retraction against Li & Ma's own code (Fed_manifold's
fedprox / fedlin, mu = 0) on its kPCA instance: docs/crosschecks/fed_manifold_kpca.py, run
only where the peer's git directory and pymanopt 0.2.x (side folder) are present."""

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "crosschecks" / "fed_manifold_kpca.py"


def _script():
    spec = importlib.util.spec_from_file_location("fed_manifold_kpca", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_iterates_equal_the_peers_to_rounding():
    mod = _script()
    peer = Path(os.environ.get("FED_MANIFOLD_GIT", mod.DEFAULT_PEER))
    side = Path(os.environ.get("PYMANOPT02", "/tmp/pymanopt02"))
    if not (peer / "HEAD").exists() or not (side / "pymanopt" / "tools" / "multi.py").exists():
        pytest.skip(f"needs the Fed_manifold git directory ({peer}) and pymanopt 0.2.x in {side}")
    ref = mod.run_peer(peer, side, rounds=8, tau=3, eta=1e-2, seed=1)
    ours = mod.run_rfl(np.array(ref["G"]), np.array(ref["x0"]), 8, 3, 1e-2)
    for name in ("fedprox", "fedlin"):
        diff = max(float(np.abs(a - np.array(b)).max()) for a, b in zip(ours[name], ref[name]))
        assert len(ours[name]) == len(ref[name]) == 8
        assert diff < 1e-12, (name, diff)
        assert np.abs(ours[name][-1] - np.array(ref["x0"])).max() > 1e-2       # it moved

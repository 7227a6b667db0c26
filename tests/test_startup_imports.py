"""What a job's process imports before its work: loading every registry (as run, data and
figure jobs do) must not pull in the heavy optional modules that only some jobs use."""

import subprocess
import sys

#: modules a registry load must leave unimported (each cost a job 0.3-1 s of start-up)
HEAVY = ("scipy.integrate", "scipy.optimize", "matplotlib", "numba", "sklearn", "flwr")


def test_loading_every_registry_leaves_heavy_modules_unimported():
    code = ("import sys\n"
            "from rfl.registry import ALGORITHMS, PROBLEMS, MANIFOLDS\n"
            "list(ALGORITHMS); list(PROBLEMS); list(MANIFOLDS)\n"
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"loading the registries imported {out.stdout.strip()}"

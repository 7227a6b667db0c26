"""Seconds per federated round on Flower's simulation engine vs the in-process simulator.

RFedAGS on CPESph at the paper's sizes per agent (d = 25, N = 80, B = 64, K = 10, full
participation) with S = 10 and S = 100 agents. Each side runs ``ROUNDS`` rounds of one run
spec and reports the run table's ``wall_time`` (seconds inside the rounds, cumulative) of
rounds 2..ROUNDS over their number (round 1 compiles the kernels, and on Flower starts the
engine's worker, once per run): for Flower, the whole round trip (messages to S virtual SuperNodes, their local
steps, the replies, the checks and the aggregation), without the engine's start-up; for the
simulator, ``FederatedStrategy.round``. Skipped when flwr is not installed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ._common import SEED

ROUNDS = 6


def _spec(S: int) -> dict:
    ds = {"name": f"cpesph_S{S}", "problem": "cpesph", "seed": SEED, "instance": "fixed",
          "params": {"d": 25, "nu": 1e-3, "S": S, "N": 80}}
    return {"experiment": "bench_flower", "run_id": f"rfedags_S{S}", "seed": 0, "rounds": ROUNDS,
            "dataset": ds, "geometry": {"retraction": "normalize", "transport": "parallel"},
            "step": {"rule": "fixed", "alpha": 1.0},
            "algorithm": {"name": "rfedags", "K": 10, "batch_size": 64, "participation": None}}


class FlowerRound:
    params = [["simulator", "flower"], [10, 100]]
    param_names = ["engine", "S"]
    timeout = 900
    unit = "seconds"

    def setup(self, engine, S):
        if engine == "flower":
            try:
                import flwr  # noqa: F401
                import ray  # noqa: F401
            except ImportError:
                raise NotImplementedError("flwr[simulation] is not installed") from None
        from rfl import runner
        self.tmp = tempfile.TemporaryDirectory()
        d = Path(self.tmp.name)
        self.spec = _spec(S)
        self.data, self.ref = d / "data.npz", d / "ref.npz"
        runner.generate_data(self.spec["dataset"], self.data)
        runner.compute_reference(self.spec["dataset"], self.data, self.ref)
        self.out = d

    def teardown(self, engine, S):
        self.tmp.cleanup()

    def track_seconds_per_round(self, engine, S):
        from rfl import runner
        args = (self.spec, self.data, self.ref, self.out / "run.csv", self.out / "run.meta.json")
        if engine == "flower":
            from rfl.flower.server import run_flower
            table = run_flower(*args, evaluate=False)
        else:
            table = runner.run(*args)
        wall = table["wall_time"].to_numpy(float)          # row t: after round t (row 0: x_1)
        return float(wall[ROUNDS] - wall[1]) / (ROUNDS - 1)

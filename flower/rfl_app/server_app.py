"""ServerApp: run the run spec named in the run config (``rfl.flower.server.server_main``)."""

import json
from pathlib import Path

from flwr.app import Context
from flwr.serverapp import Grid, ServerApp

from rfl.flower.server import server_main

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    spec_path = Path(str(cfg["spec"]))
    if not spec_path.is_file():
        raise FileNotFoundError(f"run config 'spec': no run spec at {spec_path} (give an absolute "
                                f"path to results/specs/runs/<experiment>/<run_id>.json)")
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    for out in (cfg["out-table"], cfg["out-meta"]):
        Path(str(out)).parent.mkdir(parents=True, exist_ok=True)
    server_main(grid, spec, str(cfg["data"]), str(cfg["reference"]), str(cfg["out-table"]),
                str(cfg["out-meta"]), iterates=str(cfg.get("iterates", "")) or None,
                timeout=float(cfg.get("timeout", 120.0)), evaluate=bool(cfg.get("evaluate", True)))

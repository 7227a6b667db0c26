"""What a test needs to run the workflow in a folder of its own: the files a copy of the
workflow needs (``WORKFLOW``) and ``copy_workflow``, shared by the tests that run Snakemake in
a temporary tree (faults, data skip, plug-ins, scaling out, the linter)."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: what a copy of the workflow needs
WORKFLOW = ("Snakefile", "rules", "envs", "config")
#: the workflow without the project's configs: for a test that writes its own config
WORKFLOW_NO_CONFIGS = ("Snakefile", "rules", "envs", "config/schema.yaml", "config/paper_values.yaml")


def copy_workflow(dest: Path, items=WORKFLOW, src: Path = REPO) -> Path:
    """Copy ``items`` (paths relative to ``src``) into ``dest``, made if absent; ``dest``."""
    dest = Path(dest)
    for item in items:
        (dest / item).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (src / item).is_dir() else shutil.copy2)(src / item, dest / item)
    return dest

#!/usr/bin/env bash
# Runs inside the new environment, from the workflow's working directory (the clone):
# rfl itself, editable, so the jobs run the clone's code and not a copy of it.
set -euo pipefail
python -m pip install --no-deps --editable .

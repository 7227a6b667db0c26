"""``python -m rfl``: the same command line as ``rfl``, for environments without the script on PATH."""

from rfl.cli import entry

entry()

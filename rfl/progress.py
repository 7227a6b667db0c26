"""Progress of long runs on stderr: rounds done and an ETA, when a person is watching.

On when stderr is a terminal, off otherwise (benchmarks, the workflow's logs, pipes);
the environment variable RFL_PROGRESS=1 / 0 forces it on / off (the Snakefile sets 0, so
jobs stay quiet even when snakemake itself runs in a terminal).
"""

from __future__ import annotations

import os
import sys
import time


def enabled(stream=None) -> bool:
    stream = sys.stderr if stream is None else stream
    forced = os.environ.get("RFL_PROGRESS", "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    return bool(getattr(stream, "isatty", lambda: False)())


class Progress:
    """``update(done)`` after each round of ``total``; prints at most every ``every`` seconds.

    ``label``: what is running (e.g. "cpesph_fixed/rfedags_K10_seed0")."""

    def __init__(self, label: str, total: int, every: float = 1.0, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.on = enabled(self.stream)
        self.label, self.total, self.every = label, max(int(total), 1), every
        self.start = self.last = time.monotonic()
        self.printed = False

    def update(self, done: int) -> None:
        if not self.on:
            return
        now = time.monotonic()
        if now - self.last < self.every and done < self.total:
            return
        self.last = now
        elapsed = now - self.start
        eta = elapsed / done * (self.total - done) if done else float("nan")
        end = "\n" if done >= self.total else ""
        self.stream.write(f"\r{self.label}: round {done}/{self.total}, "
                          f"{elapsed:.0f} s elapsed, ETA {eta:.0f} s{end}")
        self.stream.flush()
        self.printed = done < self.total

    def close(self) -> None:
        """End the line if the run stopped early (divergence, a solver's own stop)."""
        if self.on and self.printed:
            self.stream.write("\n")
            self.stream.flush()
            self.printed = False

"""Seeded random streams: every draw of the project comes from here.

A stream is keyed by a config seed and a tuple of names (experiment, run,
purpose), through ``numpy.random.SeedSequence``; the key, not the order in
which jobs run, fixes the numbers, so results do not depend on ``--cores``.
"""

from __future__ import annotations

import hashlib

import numpy as np


def _word(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "little")


def stream(seed: int, *keys: str) -> np.random.Generator:
    """A Generator determined by ``seed`` and the names ``keys`` only."""
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    ss = np.random.SeedSequence(entropy=int(seed), spawn_key=tuple(_word(str(k)) for k in keys))
    return np.random.Generator(np.random.PCG64(ss))

"""glibc heap thresholds set on import (``rfl._allocator``): freed temporaries stay mapped."""

import os
import subprocess
import sys

import pytest

from rfl import _allocator

glibc = pytest.mark.skipif(not _allocator.tune(), reason="needs glibc (Linux)")

#: a process that computes P_x(u) = u - (x^T u) x on (50000, 26) rows (a temporary and the
#: result, 2540 pages each, both freed) 50 times after a warm-up, and prints the minor page
#: faults of those 50
PROBE = """
import resource, sys
if sys.argv[1] == "rfl":
    import rfl
import numpy as np
x = np.full((50000, 26), 0.1)
c = np.full(50000, 0.5)
for _ in range(3):
    x - c[:, None] * x
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    x - c[:, None] * x
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str, **env) -> int:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    environ.update(env)
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True,
                         env=environ, check=True)
    return int(out.stdout)


@glibc
def test_temporaries_reuse_mapped_memory_after_import():
    """glibc's defaults fault part of the arrays in again at every iteration (about 960 of
    their 5080 pages on the development machine); after ``import rfl`` the 50 iterations
    together fault in fewer pages than one iteration did."""
    plain, tuned = _faults("plain"), _faults("rfl")
    assert plain > 50 * 500, plain
    assert tuned < 500, tuned


@glibc
def test_user_malloc_settings_are_left_alone(monkeypatch):
    """A MALLOC_*_ variable in the environment: ``tune`` does nothing, and a process importing
    rfl keeps the user's (here: glibc's default) behaviour."""
    for name in _allocator.USER_SETTINGS:
        monkeypatch.setenv(name, "131072")
        assert _allocator.tune() is False
        monkeypatch.delenv(name)
    assert _faults("rfl", MALLOC_TRIM_THRESHOLD_="131072") > 50 * 500

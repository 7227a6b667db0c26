"""glibc's heap, set once per process so that numpy's temporaries reuse memory already mapped.

numpy takes every array above 1 kB from ``malloc``. With glibc's defaults, a free that leaves
more than 128 kB at the top of the heap returns it to the kernel (``M_TRIM_THRESHOLD``), and a
block of at least 128 kB may be mapped on its own (``M_MMAP_THRESHOLD``; glibc raises this bound
to the largest block freed so far, but the trim bound follows only to twice that). A local step
of S = 1000 agents makes and frees temporaries of 0.2-10 MB, so each of them is faulted in page
by page again: P_x(u) = u - (x^T u) x on (1000, 26) takes 170 us with these defaults and 20 us
after ``tune()``, 4.6 ms and 1.6 ms on (50000, 26).

``tune()`` fixes the two bounds where glibc's own adjustment stops (mmap above 32 MiB; trim
above twice that), so freed heap stays mapped for the next temporary; at most 64 MiB of free
heap is kept per process. It changes no result, only where memory comes from; a user's own
``MALLOC_*_`` environment settings are left alone, and so is every other C library.
"""

from __future__ import annotations

import ctypes
import os

#: mallopt's parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

#: glibc's largest dynamic mmap threshold on 64-bit systems (DEFAULT_MMAP_THRESHOLD_MAX)
MMAP_THRESHOLD = 32 << 20
#: the trim threshold glibc pairs with it (twice the mmap threshold)
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD

#: environment variables through which a user sets glibc's heap; any of them disables ``tune``
USER_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_",
                 "MALLOC_MMAP_MAX_")


def tune() -> bool:
    """Set glibc's trim and mmap thresholds (module docstring); True when they were set. False
    (nothing done) on another C library, or when the environment sets glibc's heap already."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
            return False
    except (AttributeError, ValueError, OSError):          # not a glibc system
        return False
    if any(name in os.environ for name in USER_SETTINGS):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt               # the process's own C library
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))

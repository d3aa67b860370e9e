"""Keep numpy's temporaries on the heap instead of fresh memory maps.

A batched forward/backward pass of a small network creates temporaries of a few hundred kB.
glibc serves blocks above its mmap threshold with a new memory map and returns them to the
kernel on free, so every temporary costs page faults: on the robot-arm chain (18 links,
200 points, H = 24) half the wall time was system time. Raising the mmap and trim thresholds
lets freed blocks be reused, which halved the time per leapfrog step
(benchmarks/bench_chain.py). The memory cost is what the largest temporaries need anyway.

``tune()`` is called by the command line and the benchmarks; library users may call it too.
It does nothing where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1  # glibc <malloc.h>
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024  # glibc's largest dynamic threshold on 64-bit
TRIM_THRESHOLD_BYTES = 128 * 1024 * 1024


def tune() -> bool:
    """Raise glibc's mmap and trim thresholds; True when the C library accepted both."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    ok_mmap = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
    ok_trim = mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1
    return ok_mmap and ok_trim

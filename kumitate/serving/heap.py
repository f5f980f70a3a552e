"""Freed heap memory kept for the next large call instead of being handed back to the system.

glibc's malloc maps a large block (a request body, its parse buffer, an encoded answer) on its own
and unmaps it when it is freed, and it returns free memory at the top of its heap past a small
threshold. A server that receives the same 13 MB body again then touches every page afresh: for
summarize_stays' 100k records, about 7,000 page faults a call (~14 ms of its ~280) in reading the body
and parsing it, which the same work in a warm process does not pay (issue 32).

So a serving process asks glibc to take blocks up to `keep` bytes from its heap and to keep up to
`keep` bytes of free heap: after the first large call, the next reuses the same pages. Memory above
that goes back to the system as before, and the most a process holds is still its peak. Other C
libraries (musl, macOS) keep their own behaviour. A process that will idle after a large piece of work
hands its freed heap back instead (`give_back_freed_memory`).
"""

from __future__ import annotations

import ctypes
import os

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_MAX = 32 << 20
"""glibc refuses a larger mmap threshold on 64-bit systems (half its largest heap)."""


def keep_freed_memory(keep: int) -> bool:
    """Keep up to `keep` bytes of freed heap for reuse (glibc only; 0 leaves the defaults). True when set."""
    if keep <= 0 or not on_glibc():
        return False
    libc = ctypes.CDLL(None)
    largest_from_heap = min(keep, MMAP_THRESHOLD_MAX)
    return bool(libc.mallopt(M_MMAP_THRESHOLD, largest_from_heap) and libc.mallopt(M_TRIM_THRESHOLD, keep))


def give_back_freed_memory() -> bool:
    """Return the freed heap to the system now (glibc's `malloc_trim`), for a process that has just done its
    largest work and will idle (the schema-check worker of kumitate.offloop: ~240 MiB after 15.6 MB of JSON,
    ~45 MiB after this). True when trimmed; elsewhere than on glibc, nothing."""
    if not on_glibc():
        return False
    ctypes.CDLL(None).malloc_trim(0)
    return True


def on_glibc() -> bool:
    """Whether this process's C library is glibc (whose malloc this module tunes)."""
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError):  # not a name this system knows
        return False

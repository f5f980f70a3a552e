"""Page faults of a large block allocated right after one of the same size was freed: what a
server pays for the next large request body when freed memory is not kept (kumitate/serving/heap.py)."""

from __future__ import annotations

import os
import resource

import pytest

from kumitate.serving.heap import on_glibc

BLOCK = 16 << 20
PAGES = BLOCK // os.sysconf("SC_PAGE_SIZE")

glibc_only = pytest.mark.skipif(not on_glibc(), reason="the tuning is glibc's")


def second_block_faults(block: int = BLOCK) -> int:
    """In this process: free a `block`-byte buffer, allocate another, and count the page faults."""
    first = bytearray(block)
    del first
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    second = bytearray(block)
    del second
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

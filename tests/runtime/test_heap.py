"""A serving process keeps freed heap for its next large call (kumitate.heap): the second large
buffer reuses the first one's pages instead of faulting in fresh ones."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kumitate.heap import keep_freed_memory

BLOCK = 16 << 20
PAGES = BLOCK // os.sysconf("SC_PAGE_SIZE")
SECOND_BLOCK_FAULTS = f"""
import resource, sys
from kumitate.heap import keep_freed_memory
kept = keep_freed_memory(int(sys.argv[1]))
block = bytearray({BLOCK}); del block  # a request body, read and freed
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
block = bytearray({BLOCK}); del block  # the next call's
print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""

glibc_only = pytest.mark.skipif(
    not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"), reason="the tuning is glibc's"
)


def second_block_faults(keep: int) -> tuple[bool, int]:
    """In a fresh process: whether the tuning took, and the page faults of a second 16 MiB block."""
    out = subprocess.run(
        [sys.executable, "-c", SECOND_BLOCK_FAULTS, str(keep)], capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0] == "True", int(out[1])


@glibc_only
def test_the_next_large_block_reuses_the_pages_of_the_last() -> None:
    kept, faults = second_block_faults(64 << 20)
    assert kept
    assert faults < PAGES // 10, f"{faults} page faults for a {PAGES}-page block the process had just freed"


@glibc_only
def test_without_it_the_same_block_is_faulted_in_again() -> None:
    """The premise: glibc's defaults hand a freed 16 MiB block back, so the next one costs a fault a page."""
    kept, faults = second_block_faults(0)
    assert not kept
    assert faults > PAGES // 2


@glibc_only
def test_a_block_larger_than_what_is_kept_is_still_returned() -> None:
    kept, faults = second_block_faults(8 << 20)
    assert kept
    assert faults > PAGES // 2


def test_nothing_is_kept_when_asked_for_nothing() -> None:
    assert keep_freed_memory(0) is False

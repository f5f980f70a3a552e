"""A serving process keeps freed heap for its next large call (kumitate.serving.heap): the second large
buffer reuses the first one's pages instead of faulting in fresh ones."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kumitate.serving.heap import keep_freed_memory
from tests.heap_faults import PAGES, glibc_only

REPO = Path(__file__).resolve().parents[2]
IN_A_FRESH_PROCESS = """
import sys
from kumitate.serving.heap import keep_freed_memory
from tests.heap_faults import second_block_faults
print(keep_freed_memory(int(sys.argv[1])), second_block_faults())
"""


def fresh_process(keep: int) -> tuple[bool, int]:
    """Whether the tuning took, and the page faults of a second 16 MiB block, in a process of its own."""
    out = subprocess.run(
        [sys.executable, "-c", IN_A_FRESH_PROCESS, str(keep)], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0] == "True", int(out[1])


@glibc_only
def test_the_next_large_block_reuses_the_pages_of_the_last() -> None:
    kept, faults = fresh_process(64 << 20)
    assert kept
    assert faults < PAGES // 10, f"{faults} page faults for a {PAGES}-page block the process had just freed"


@glibc_only
def test_without_it_the_same_block_is_faulted_in_again() -> None:
    """The premise: glibc's defaults hand a freed 16 MiB block back, so the next one costs a fault a page."""
    kept, faults = fresh_process(0)
    assert not kept
    assert faults > PAGES // 2


@glibc_only
def test_a_block_larger_than_what_is_kept_is_still_returned() -> None:
    kept, faults = fresh_process(8 << 20)
    assert kept
    assert faults > PAGES // 2


def test_nothing_is_kept_when_asked_for_nothing() -> None:
    assert keep_freed_memory(0) is False

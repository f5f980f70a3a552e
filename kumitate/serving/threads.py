"""Thread pools whose threads all exist before the first call.

ThreadPoolExecutor starts a thread inside `submit` when none is idle, and `Thread.start()` waits
until the new thread runs: on a busy host that is tens to hundreds of milliseconds during which the
event loop (which submits) serves nobody. A burst of calls into a service whose threads are held
(a hung database) would stall every other service that way. So the pools the event loop submits to
start every thread up front, at start-up.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor


def started_pool(size: int, name: str) -> ThreadPoolExecutor:
    """A thread pool of `size` threads, all started and idle before it is returned."""
    pool = ThreadPoolExecutor(size, thread_name_prefix=name)
    everyone = threading.Barrier(size + 1)
    for _ in range(size):  # each waits at the barrier, so none is idle and every submit starts a thread
        pool.submit(everyone.wait)
    everyone.wait()
    return pool

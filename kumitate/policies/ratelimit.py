"""Token-bucket rate limiting, keyed by tool and principal (or client address when anonymous)."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

from kumitate.errors import ToolError

MAX_BUCKETS = 100_000


@dataclass(slots=True)
class Bucket:
    tokens: float
    updated: float
    full_at: float = 0.0
    """When this bucket will have refilled to its burst: from then on it equals a new bucket."""


class RateLimiter:
    """`take` refills at `rps` up to `burst` and spends one token, or raises RATE_LIMITED.

    Thread-safe (handlers may run in threads; the pipeline calls it on the loop).
    When the table grows past MAX_BUCKETS, buckets that have refilled completely are
    dropped: each by its own rate and burst, so forgetting one never grants extra calls.
    """

    def __init__(self, clock: object = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[tuple[str, str], Bucket] = {}
        self._lock = threading.Lock()

    def take(self, key: tuple[str, str], rps: float, burst: int) -> None:
        now = self._clock()  # type: ignore[operator]
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                if len(self._buckets) >= MAX_BUCKETS:
                    self._evict(now)
                bucket = self._buckets[key] = Bucket(float(burst), now)
            bucket.tokens = min(float(burst), bucket.tokens + (now - bucket.updated) * rps)
            bucket.updated = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                bucket.full_at = now + (burst - bucket.tokens) / rps
                return
            wait_ms = math.ceil((1.0 - bucket.tokens) / rps * 1000)
        raise ToolError(
            f"rate limit of {rps:g} requests/s (burst {burst}) exceeded; retry in {wait_ms} ms",
            code="RATE_LIMITED",
            details={"retry_after_ms": wait_ms},
        )

    def _evict(self, now: float) -> None:
        for key in [k for k, b in self._buckets.items() if b.full_at <= now]:
            del self._buckets[key]

    def __len__(self) -> int:
        return len(self._buckets)

"""Token-bucket rate limiting, keyed by tool and principal (or client address when anonymous).

`RateLimiter` keeps buckets in process memory (one instance: the embedded default);
`RedisRateLimiter` keeps them in Redis, so one limit holds across every instance.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kumitate.errors import ToolError
from kumitate.storage.redis import Backoff

if TYPE_CHECKING:
    import redis

MAX_BUCKETS = 100_000


@dataclass(slots=True)
class Bucket:
    """One principal's token bucket for one tool: the tokens left and when they were counted."""

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
        """Take one token from the bucket of `key` (principal, tool); raises RATE_LIMITED with the wait when empty."""
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
        raise _limited(rps, burst, wait_ms)

    def _evict(self, now: float) -> None:
        for key in [k for k, b in self._buckets.items() if b.full_at <= now]:
            del self._buckets[key]

    def __len__(self) -> int:
        return len(self._buckets)


def _limited(rps: float, burst: int, wait_ms: int) -> ToolError:
    return ToolError(
        f"rate limit of {rps:g} requests/s (burst {burst}) exceeded; retry in {wait_ms} ms",
        code="RATE_LIMITED",
        details={"retry_after_ms": wait_ms},
    )


# One atomic step per call: refill by Redis's own clock (instances' clocks never disagree), spend
# one token or say how long to wait, and let a bucket expire once it would be full again (then it
# equals a new one, so forgetting it never grants extra calls).
TOKEN_BUCKET_LUA = """
local rps = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now
end
tokens = math.min(burst, tokens + math.max(0, now - ts) * rps)
local allowed = 0
local wait_ms = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait_ms = math.ceil((1 - tokens) / rps * 1000)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', string.format('%.17g', now))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rps * 1000) + 1000)
return {allowed, wait_ms}
"""


class RedisRateLimiter(RateLimiter):
    """The same buckets in Redis (a Lua script, atomic per call): one global limit across instances.

    If Redis cannot be reached, the limit falls back to this process's own buckets (a per-instance
    limit, logged once per outage; Redis is tried again after a pause) rather than failing every
    call or letting every call through.
    """

    def __init__(self, client: redis.Redis, prefix: str = "kumitate:rl:", clock: object = time.monotonic) -> None:
        super().__init__(clock)
        self._redis = client
        self._prefix = prefix
        self._script = client.register_script(TOKEN_BUCKET_LUA)
        self.backoff = Backoff("rate_limit_redis")

    def take(self, key: tuple[str, str], rps: float, burst: int) -> None:
        """Take one token in Redis (shared by every instance, atomically); while Redis is away, from this
        process's own buckets."""
        if not self.backoff.available():
            super().take(key, rps, burst)
            return
        try:
            allowed, wait_ms = self._script(keys=[f"{self._prefix}{key[0]}:{key[1]}"], args=[rps, burst])
        except Exception as exc:  # redis.RedisError, OSError: Redis is away
            self.backoff.failed(exc)
            super().take(key, rps, burst)
            return
        self.backoff.succeeded()
        if not allowed:
            raise _limited(rps, burst, int(wait_ms))

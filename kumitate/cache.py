"""A small shared cache of bytes with a TTL: process memory by default, Redis when configured.

For state that is expensive to rebuild and that another instance should find too (household
chart images, for one). Entries may vanish early (memory bound, Redis eviction, a lost
connection): callers treat a miss as "rebuild", never as an error.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Concatenate, ParamSpec, Protocol, TypeVar

from kumitate.storage.redis import Backoff

if TYPE_CHECKING:
    import redis

__all__ = ["MemoryCache", "RedisCache", "SharedCache", "make_cache"]

P = ParamSpec("P")
T = TypeVar("T")


class SharedCache(Protocol):
    """Short-lived bytes shared by a service's calls (charts, rendered results): process memory or Redis."""

    def get(self, key: str) -> bytes | None:
        """The value under `key`, or None when it is absent or has expired."""

    def set(self, key: str, value: bytes, ttl_s: float) -> None:
        """Keep `value` under `key` for `ttl_s` seconds (a value may be dropped earlier to stay within the bounds)."""

    def delete(self, key: str) -> None:
        """Forget `key` (nothing happens when it is absent)."""


class MemoryCache:
    """LRU by total size, thread-safe; expired entries are dropped when read or pushed out."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024, clock: Callable[[], float] = time.monotonic) -> None:
        self._entries: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self._bytes = 0
        self._max_bytes = max_bytes
        self._clock = clock
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        """The value under `key` and mark it recently used, or None when it is absent or has expired."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] <= self._clock():
                self._drop(key)
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def set(self, key: str, value: bytes, ttl_s: float) -> None:
        """Keep `value` for `ttl_s` seconds, evicting the least recently used entries past `max_bytes`;
        a value larger than the whole cache is not kept."""
        if len(value) > self._max_bytes:
            return
        with self._lock:
            if key in self._entries:
                self._drop(key)
            self._entries[key] = (self._clock() + ttl_s, value)
            self._bytes += len(value)
            while self._bytes > self._max_bytes:
                self._drop(next(iter(self._entries)))

    def delete(self, key: str) -> None:
        """Forget `key`."""
        with self._lock:
            if key in self._entries:
                self._drop(key)

    def _drop(self, key: str) -> None:
        self._bytes -= len(self._entries.pop(key)[1])


class RedisCache:
    """The same interface on Redis (SET … PX): every instance sees every entry."""

    def __init__(self, client: redis.Redis, namespace: str = "kumitate:cache:") -> None:
        self._redis = client
        self._namespace = namespace
        self.backoff = Backoff("shared_cache")

    def _call(self, command: Callable[Concatenate[str, P], T], key: str, *args: P.args, **kw: P.kwargs) -> T | None:
        """One Redis command, or None while Redis is away (a lost cache is a miss, not a failed call)."""
        if not self.backoff.available():
            return None
        try:
            result = command(self._namespace + key, *args, **kw)
        except Exception as exc:
            self.backoff.failed(exc)
            return None
        self.backoff.succeeded()
        return result

    def get(self, key: str) -> bytes | None:
        """The value under `key` in Redis, or None when it is absent, expired or Redis is down."""
        value = self._call(self._redis.get, key)
        return value.encode() if isinstance(value, str) else value  # str only from a decode_responses client

    def set(self, key: str, value: bytes, ttl_s: float) -> None:
        """Keep `value` in Redis with a millisecond expiry (at least 1 ms)."""
        self._call(self._redis.set, key, value, px=max(1, int(ttl_s * 1000)))

    def delete(self, key: str) -> None:
        """Forget `key` in Redis."""
        self._call(self._redis.delete, key)


def make_cache(redis_client: redis.Redis | None) -> SharedCache:
    """Redis when the process has a Redis client (state shared by every instance), else process memory."""
    return RedisCache(redis_client) if redis_client is not None else MemoryCache()

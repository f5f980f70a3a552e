"""The Redis connection (KUMITATE_REDIS_URL): short timeouts, one pool per process, shared by its users."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kumitate.observability.calllog import log_event

if TYPE_CHECKING:
    import redis

SOCKET_TIMEOUT_S = 0.5
"""Callers fall back or fail fast: a slow Redis must not hold a request (or the event loop) for long."""


def connect(url: str) -> redis.Redis:
    """A Redis client for `url` with short socket timeouts, so a hung Redis degrades calls instead of holding them."""
    import redis  # only a process configured with KUMITATE_REDIS_URL loads the client

    return redis.Redis.from_url(
        url,
        socket_timeout=SOCKET_TIMEOUT_S,
        socket_connect_timeout=SOCKET_TIMEOUT_S,
        health_check_interval=30,
        max_connections=64,
    )


class Backoff:
    """After a failed Redis call, skip Redis for `pause_s`: a Redis that hangs must not cost every
    request a socket timeout on the event loop. Reports each outage once (start and end)."""

    def __init__(self, event: str, pause_s: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._event = event
        self._pause_s = pause_s
        self._clock = clock
        self._retry_at = 0.0
        self._down = False

    def available(self) -> bool:
        """Whether to try Redis now (not within the pause after a failure)."""
        return self._clock() >= self._retry_at

    def failed(self, exc: BaseException) -> None:
        """Redis failed: pause before the next try, and log the outage once."""
        self._retry_at = self._clock() + self._pause_s
        if not self._down:
            self._down = True
            log_event(f"{self._event}_unavailable", error=type(exc).__name__)

    def succeeded(self) -> None:
        """Redis answered: log the recovery once if it was down."""
        if self._down:
            self._down = False
            log_event(f"{self._event}_restored")

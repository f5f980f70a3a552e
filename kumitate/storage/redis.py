"""The Redis connection (KUMITATE_REDIS_URL): short timeouts, one pool per process, shared by its users."""

from __future__ import annotations

import redis

SOCKET_TIMEOUT_S = 0.5
"""Callers fall back or fail fast: a slow Redis must not hold a request (or the event loop) for long."""


def connect(url: str) -> redis.Redis:
    return redis.Redis.from_url(
        url,
        socket_timeout=SOCKET_TIMEOUT_S,
        socket_connect_timeout=SOCKET_TIMEOUT_S,
        health_check_interval=30,
        max_connections=64,
    )

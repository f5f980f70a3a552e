"""Shared fast state: token buckets and the bytes cache, in process memory and on a real Redis."""

from __future__ import annotations

import pytest

from kumitate.cache import MemoryCache, RedisCache, make_cache
from kumitate.errors import ToolError
from kumitate.policies.ratelimit import RateLimiter, RedisRateLimiter
from kumitate.serving.deploy import mcp_stateless
from kumitate.storage import redis as shared_redis
from kumitate.storage.redis import Backoff


def accepted(limiter: RateLimiter, key: tuple[str, str], calls: int, rps: float, burst: int) -> int:
    ok = 0
    for _ in range(calls):
        try:
            limiter.take(key, rps, burst)
            ok += 1
        except ToolError as exc:
            assert exc.code == "RATE_LIMITED" and exc.details["retry_after_ms"] > 0  # type: ignore[index]
    return ok


def test_two_instances_on_one_redis_share_one_limit(redis_url: str) -> None:
    a = RedisRateLimiter(shared_redis.connect(redis_url))
    b = RedisRateLimiter(shared_redis.connect(redis_url))
    key = ("svc.tool", "10.0.0.1")
    total = accepted(a, key, 15, 0.001, 20) + accepted(b, key, 15, 0.001, 20)
    assert total == 20  # in process memory each would have accepted 15
    assert accepted(RateLimiter(), key, 15, 0.001, 20) == 15


def test_without_redis_the_limit_falls_back_to_this_process(caplog: pytest.LogCaptureFixture) -> None:
    limiter = RedisRateLimiter(shared_redis.connect("redis://127.0.0.1:1/0"))
    assert accepted(limiter, ("svc.tool", "p"), 5, 0.001, 3) == 3
    assert [r.getMessage() for r in caplog.records].count("rate_limit_redis_unavailable") == 1
    assert not limiter.backoff.available()  # Redis is not asked again on every call while it is away


def test_redis_is_tried_again_after_the_pause_and_its_return_is_logged(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    now = [0.0]
    limiter = RedisRateLimiter(shared_redis.connect("redis://127.0.0.1:1/0"))
    limiter.backoff = Backoff("rate_limit_redis", pause_s=5, clock=lambda: now[0])
    accepted(limiter, ("svc.tool", "q"), 1, 1, 5)
    limiter._script = RedisRateLimiter(shared_redis.connect(redis_url))._script  # Redis is back
    now[0] = 6
    assert accepted(limiter, ("svc.tool", "q"), 1, 1, 5) == 1
    messages = [r.getMessage() for r in caplog.records]
    assert messages.count("rate_limit_redis_unavailable") == 1 and messages.count("rate_limit_redis_restored") == 1


def test_memory_cache_expires_and_stays_within_its_size() -> None:
    now = [0.0]
    cache = MemoryCache(max_bytes=10, clock=lambda: now[0])
    cache.set("a", b"12345", ttl_s=5)
    cache.set("b", b"67890", ttl_s=50)
    assert cache.get("a") == b"12345"
    cache.set("c", b"xyz", ttl_s=50)  # over 10 bytes: the least recently used ("b") goes
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (b"12345", None, b"xyz")
    now[0] = 6
    assert cache.get("a") is None
    cache.delete("c")
    assert cache.get("c") is None


def test_redis_cache_is_seen_by_every_instance(redis_url: str) -> None:
    one, two = RedisCache(shared_redis.connect(redis_url)), RedisCache(shared_redis.connect(redis_url))
    one.set("chart:1", b"\x89PNG", ttl_s=30)
    assert two.get("chart:1") == b"\x89PNG"
    two.delete("chart:1")
    assert one.get("chart:1") is None
    assert isinstance(make_cache(None), MemoryCache)


def test_a_lost_redis_is_a_cache_miss() -> None:
    cache = RedisCache(shared_redis.connect("redis://127.0.0.1:1/0"))
    cache.set("k", b"v", ttl_s=5)
    assert cache.get("k") is None


@pytest.mark.parametrize(
    ("env", "stateless"),
    [
        ({}, False),
        ({"KUMITATE_DATABASE_URL": "postgresql://db/k"}, True),
        ({"KUMITATE_REDIS_URL": "redis://r"}, True),
        ({"KUMITATE_REDIS_URL": "redis://r", "KUMITATE_MCP_STATELESS": "0"}, False),
        ({"KUMITATE_MCP_STATELESS": "1"}, True),
    ],
)
def test_mcp_is_stateless_by_default_only_when_state_is_shared(env: dict[str, str], stateless: bool) -> None:
    assert mcp_stateless(env) is stateless

"""The rate-limit step: a bucket per tool and caller (principal, or address when anonymous)."""

from __future__ import annotations

import pytest

from kumitate.context import Principal
from kumitate.errors import ToolError
from kumitate.policies.ratelimit import RateLimiter
from kumitate.policies.spec import RateLimit
from kumitate.steps import CallRequest
from kumitate.steps.ratelimit import RateLimited
from tests.runtime.steps.helpers import make_call, ok

pytestmark = pytest.mark.anyio


async def test_burst_then_rate_limited_with_retry_after() -> None:
    step = RateLimited(RateLimiter(clock=lambda: 0.0), "demo.echo", RateLimit(1.0, 2))
    call = make_call()
    call.ctx.principal = Principal("alice")
    assert (await step(call, ok())).ok and (await step(call, ok())).ok
    with pytest.raises(ToolError) as limited:
        await step(call, ok())
    assert limited.value.code == "RATE_LIMITED" and limited.value.details["retry_after_ms"] == 1000


async def test_anonymous_callers_are_counted_per_address() -> None:
    step = RateLimited(RateLimiter(clock=lambda: 0.0), "demo.echo", RateLimit(1.0, 1))
    first = make_call(request=CallRequest("http", client="10.0.0.1"))
    await step(first, ok())
    await step(make_call(request=CallRequest("http", client="10.0.0.2")), ok())  # its own bucket
    with pytest.raises(ToolError):
        await step(first, ok())

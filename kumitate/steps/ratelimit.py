"""Per-caller token buckets: a tool's `rate_limit` (rps, burst) per principal, or per address."""

from __future__ import annotations

from kumitate.policies.ratelimit import RateLimiter
from kumitate.policies.spec import RateLimit
from kumitate.steps import Call, CallNext, Outcome


class RateLimited:
    """Only in the chain of a tool that declares `rate_limit`; after auth, so the bucket is the caller's."""

    def __init__(self, limiter: RateLimiter, key: str, limit: RateLimit) -> None:
        self.limiter = limiter
        self.key = key
        self.limit = limit

    async def __call__(self, call: Call, call_next: CallNext) -> Outcome:
        """Take a token for the caller (the principal, or the client address when anonymous) before the rest
        of the chain runs; past the limit, RATE_LIMITED."""
        principal = call.ctx.principal.id
        who = principal if principal != "anonymous" else f"addr:{call.request.client or 'unknown'}"
        self.limiter.take((self.key, who), self.limit.rps, self.limit.burst)
        return await call_next(call)

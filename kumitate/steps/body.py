"""Reading the arguments once the caller is admitted."""

from __future__ import annotations

from kumitate.steps import Call, CallNext, Outcome


async def read_body(call: Call, call_next: CallNext) -> Outcome:
    """An HTTP body is read and parsed only after auth and the rate limit: a caller without a
    valid token (or over its limit) gets 401/403/429, never 400/413/415."""
    if call.read is not None:
        call.arguments = await call.read()
    return await call_next(call)

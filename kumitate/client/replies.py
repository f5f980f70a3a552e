"""A failed `Reply` as the generated exception class of its code, and a Reply for no answer at all.

A catalogue error body raises its code's generated class with the server's message, details and ids;
a body that is not the envelope (a proxy's 502 page) gets a code from its status; a request that got no
answer says whether it was sent, which decides whether repeating it is safe.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from kumitate.client.wire import Call, Reply
from kumitate.errors import STATUS_CODES, ErrorCode, ToolError

__all__ = ["error_from", "no_answer", "was_sent"]


def error_from(reply: Reply, classes: Mapping[str, type[ToolError]]) -> ToolError:
    """The generated class of the body's code, carrying the server's message, details and ids.
    A body that is not the catalogue's envelope (a proxy's 502 page) gets a code from the status."""
    body = reply.body if isinstance(reply.body, dict) else {}
    err = body.get("error") if isinstance(body.get("error"), dict) else None
    if err is not None and isinstance(err.get("code"), str):
        code, message = err["code"], str(err.get("message", ""))
        details = {k: v for k, v in err.items() if k not in ("code", "message", "retryable")}
        retryable = bool(err.get("retryable"))
    else:
        status = reply.status or 0
        code = STATUS_CODES.get(status) or ("SERVICE_UNAVAILABLE" if status >= 500 else "BAD_REQUEST")
        message, details = f"HTTP {status} without a catalogue error body", {}
        retryable = code in ("SERVICE_UNAVAILABLE", "RATE_LIMITED", "REQUEST_TIMEOUT")
    cls = classes.get(code)
    exc = cls(message, details=details) if cls is not None else ToolError(message, code=code, details=details)
    exc.retryable, exc.status = retryable, reply.status
    exc.run_id, exc.trace_id = body.get("run_id"), body.get("trace_id")
    exc.retry_after_s = reply.retry_after_s
    if exc.retry_after_s is None and isinstance(details.get("retry_after_ms"), int | float):
        exc.retry_after_s = details["retry_after_ms"] / 1000
    return exc


def no_answer(exc: Exception, call: Call, *, sent: bool) -> Reply:
    """No answer from the server. A request that was never sent (no connection) ran nothing, so it
    is retryable; a lost answer (read time-out, reset) may have run the tool, so it is retried
    only where the idempotency key makes a repeat safe."""
    code: ErrorCode = "REQUEST_TIMEOUT" if sent else "SERVICE_UNAVAILABLE"
    message = f"no answer from the server: {type(exc).__name__}: {exc}"
    retryable = not sent or call.op.idempotent
    return Reply(ok=False, body={"error": {"code": code, "message": message, "retryable": retryable}})


def was_sent(exc: httpx.TransportError) -> bool:
    """Whether the request may have reached the server: anything but a failed connect."""
    return not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)

"""What one outbound attempt came to, decided in one place.

An attempt ends in an answer or an httpx error; `answered` and `failed` turn either into an
`Outcome`: the response to return, or the `OutboundError` to report or retry, with its verdict on the
upstream's health for the circuit breaker and the wait the upstream asked for. Retryable are
timeouts, connection errors, unreadable bodies, 408, 429 and 5xx; another 4xx is the caller's mistake
(a retry would fail the same way).
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from kumitate.outbound.breaker import Health
from kumitate.outbound.retry import retry_after_s

__all__ = ["RETRYABLE_STATUS", "OutboundError", "Outcome", "answered", "failed"]

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class OutboundError(Exception):
    """A failed outbound call, after retries. `kind` says why; `status` is the last HTTP status, if any."""

    def __init__(self, kind: str, message: str, *, status: int | None = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.attempts = attempts

    @property
    def retryable(self) -> bool:
        """Whether the same call may succeed later (everything but a 4xx rejection)."""
        return self.kind != "client_error"


@dataclass(frozen=True, slots=True)
class Outcome:
    """One attempt: a `response` to return, or an `error`; neither when there was no time left to send it."""

    health: Health
    """The attempt's verdict on the upstream, for the circuit breaker."""
    response: httpx.Response | None = None
    error: OutboundError | None = None
    asked_wait_s: float | None = None
    """The upstream's Retry-After, in seconds, if it sent one."""

    @property
    def retryable(self) -> bool:
        """Whether another attempt may succeed: a failure other than a 4xx rejection."""
        return self.error is not None and self.error.retryable


NOT_SENT = Outcome(Health.UNKNOWN)
"""The deadline was spent before the attempt could be sent."""


def answered(response: httpx.Response, attempt: int) -> Outcome:
    """The outcome of attempt number `attempt` that got an HTTP answer."""
    status = response.status_code
    if status not in RETRYABLE_STATUS:  # 2xx/3xx/4xx: the upstream is up and answered
        if 400 <= status < 500:
            message = f"upstream rejected the request: HTTP {status}"
            return Outcome(Health.UP, error=OutboundError("client_error", message, status=status, attempts=attempt))
        return Outcome(Health.UP, response=response)
    asked = retry_after_s(response.headers)
    if status == 429:  # the upstream is alive, only busy: no verdict
        error = OutboundError("rate_limited", "upstream rate limit: HTTP 429", status=429, attempts=attempt)
        return Outcome(Health.UNKNOWN, error=error, asked_wait_s=asked)
    if status == 408:
        error = OutboundError("timeout", "upstream timed out: HTTP 408", status=408, attempts=attempt)
    else:
        error = OutboundError("upstream_error", f"upstream failed: HTTP {status}", status=status, attempts=attempt)
    return Outcome(Health.DOWN, error=error, asked_wait_s=asked)


def failed(exc: httpx.HTTPError, attempt: int) -> Outcome:
    """The outcome of attempt number `attempt` that ended in an httpx error: the upstream failed."""
    name = type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        error = OutboundError("timeout", f"no answer within the deadline: {name}", attempts=attempt)
    elif isinstance(exc, httpx.TransportError):
        error = OutboundError("connection", f"transport error: {name}", attempts=attempt)
    else:  # e.g. DecodingError: the upstream sent an unreadable body
        error = OutboundError("upstream_error", f"unreadable upstream response: {name}", attempts=attempt)
    return Outcome(Health.DOWN, error=error)

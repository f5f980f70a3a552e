"""Outbound HTTP for handlers: one deadline per call, bounded retries, a circuit breaker.

Handlers that call another service (an LLM, a remote API) should not each
re-invent timeouts and retries. `OutboundClient.request()` gives a call

* a **deadline** for the whole call, retries included: every attempt gets only the
  time that is left, and a backoff that would overrun the deadline is not slept. The
  deadline bounds each socket operation (connect, TLS, every write and every read of the
  headers and the body: `deadline_client`), so an upstream that sends one byte just
  before each read time-out cannot hold a call past it, as httpx's per-read time-outs
  alone would let it. Inside a tool call the deadline never extends past the call's own
  (`CallContext.deadline`): once the pipeline has answered REQUEST_TIMEOUT, a worker
  thread stops calling out;
* **retries** with exponential backoff and jitter on retryable failures only:
  timeouts, connection errors, 408, 429 and 5xx. Other 4xx answers are the
  caller's mistake and are returned at once (a retry would fail the same way).
  A `Retry-After` header (seconds) is honoured when it fits in the deadline (and in the
  policy's `max_wait_s`);
* a **circuit breaker** shared by every call through the client: after N
  consecutive upstream failures (5xx, timeouts, connection errors) it opens and
  calls fail fast with `kind="circuit_open"`; after a cool-down one trial call is
  let through (half-open); its success closes the breaker, its failure re-opens it.
  429 is neither a success nor a failure for the breaker: the upstream is alive.

Failures surface as `OutboundError` with a `kind` the caller maps to its own error
code or fallback (`timeout`, `rate_limited`, `upstream_error`, `connection`,
`circuit_open`, `client_error`, `too_large`). The package is synchronous (handlers run in worker
threads) and has no dependency on any service.

One module per job: `deadline` (the total deadline and the transport that holds every socket
operation to it), `retry` (the `RetryPolicy` shared with the typed clients), `breaker` (the
`CircuitBreaker`), `outcome` (what one attempt came to: the one place that decides what is retryable)
and `client` (`OutboundClient`, which composes them). Import from `kumitate.outbound` (or `kumitate`).
"""

from __future__ import annotations

from kumitate.outbound.breaker import CircuitBreaker
from kumitate.outbound.client import OutboundClient
from kumitate.outbound.deadline import deadline_client, total_deadline
from kumitate.outbound.outcome import RETRYABLE_STATUS, OutboundError
from kumitate.outbound.retry import RetryPolicy, retry_after_s

__all__ = [
    "RETRYABLE_STATUS",
    "CircuitBreaker",
    "OutboundClient",
    "OutboundError",
    "RetryPolicy",
    "deadline_client",
    "retry_after_s",
    "total_deadline",
]

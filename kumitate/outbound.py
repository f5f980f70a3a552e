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
  A `Retry-After` header (seconds) is honoured when it fits in the deadline;
* a **circuit breaker** shared by every call through the client: after N
  consecutive upstream failures (5xx, timeouts, connection errors) it opens and
  calls fail fast with `kind="circuit_open"`; after a cool-down one trial call is
  let through (half-open); its success closes the breaker, its failure re-opens it.
  429 is neither a success nor a failure for the breaker: the upstream is alive.

Failures surface as `OutboundError` with a `kind` the caller maps to its own error
code or fallback (`timeout`, `rate_limited`, `upstream_error`, `connection`,
`circuit_open`, `client_error`, `too_large`). The module is synchronous (handlers run in worker
threads) and has no dependency on any service.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, cast

import httpcore
import httpx

from kumitate import tracing
from kumitate.context import current_call
from kumitate.metrics import track_breaker

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
class RetryPolicy:
    """`attempts` counts the first try: attempts=2 means one retry."""

    attempts: int = 2
    base_delay_s: float = 0.2
    max_delay_s: float = 2.0
    jitter: float = 0.2  # +- fraction of the delay, so clients that failed together do not retry together

    def delay(self, retry_index: int, rng: random.Random) -> float:
        """Backoff before retry number `retry_index` (0-based): base * 2^i, capped, jittered."""
        raw = min(self.max_delay_s, self.base_delay_s * (2**retry_index))
        return max(0.0, raw * (1 + rng.uniform(-self.jitter, self.jitter)))


class CircuitBreaker:
    """Closed → open after `failure_threshold` consecutive failures → half-open after `reset_timeout_s`.

    Thread-safe. In half-open state exactly one trial call is allowed at a time.
    `clock` is injectable so a test can step time instead of sleeping.
    """

    def __init__(
        self,
        failure_threshold: int = 5,
        reset_timeout_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.failure_threshold = failure_threshold
        self.reset_timeout_s = reset_timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_in_flight = False

    @property
    def state(self) -> str:
        """ "closed", "open" or "half_open"."""
        with self._lock:
            return self._state_locked()

    def _state_locked(self) -> str:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at >= self.reset_timeout_s:
            return "half_open"
        return "open"

    def allow(self) -> bool:
        """May a call go out now? In half-open state, reserves the single trial slot."""
        with self._lock:
            state = self._state_locked()
            if state == "closed":
                return True
            if state == "half_open" and not self._trial_in_flight:
                self._trial_in_flight = True
                return True
            return False

    def record_success(self) -> None:
        """A call succeeded: close the circuit and forget the failures."""
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._trial_in_flight = False

    def record_failure(self) -> None:
        """A call failed: open the circuit at the threshold, or again at once when the trial call failed."""
        with self._lock:
            self._failures += 1
            if self._trial_in_flight or self._failures >= self.failure_threshold:
                self._opened_at = self._clock()
            self._trial_in_flight = False

    def release(self) -> None:
        """A call ended with no verdict on upstream health (e.g. 429): free the trial slot."""
        with self._lock:
            self._trial_in_flight = False


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """A Retry-After header in seconds; None when absent or in the HTTP-date form (the caller
    then backs off on its own). Pass httpx's headers (any case) or an Outcome's."""
    value = headers.get("Retry-After") or headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # HTTP-date form: fall back to our own backoff


_DEADLINE: ContextVar[float | None] = ContextVar("kumitate_outbound_deadline", default=None)


@contextlib.contextmanager
def total_deadline(seconds: float) -> Iterator[float]:
    """Every fetch through a `deadline_client` inside this block ends by `seconds` from now (or by
    the tool call's own deadline, or an enclosing block's, whichever comes first): its monotonic value."""
    deadline = time.monotonic() + seconds
    for other in (_DEADLINE.get(), _call_deadline()):
        if other is not None:
            deadline = min(deadline, other)
    token = _DEADLINE.set(deadline)
    try:
        yield deadline
    finally:
        _DEADLINE.reset(token)


def _call_deadline() -> float | None:
    call = current_call()
    return call.deadline if call is not None else None


def _left(timeout: float | None, exc: type[Exception]) -> float | None:
    """The socket time-out for one operation: httpx's, cut to what is left of the deadline."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise exc("the deadline of the whole request has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write ends by the current fetch's deadline. Pooled
    connections outlive a fetch: the deadline is read per operation, so it is always the
    fetch that uses the connection now."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        return _DeadlineStream(
            self._inner.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout))
        )

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        timeout = _left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


HTTPCORE_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)
"""httpcore's errors as the httpx ones callers catch, the most specific first (httpx's own transport
maps them the same way)."""


@contextlib.contextmanager
def _httpx_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        mapped = next((to for source, to in HTTPCORE_ERRORS if isinstance(exc, source)), None)
        if mapped is None:
            raise
        raise mapped(str(exc)) from exc


class _ResponseBody(httpx.SyncByteStream):
    """httpcore's response body, its errors raised as httpx's."""

    def __init__(self, inner: Iterable[bytes]) -> None:
        self._inner = inner

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors():
            yield from self._inner

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()


class _DeadlineTransport(httpx.BaseTransport):
    """An httpx transport over an httpcore connection pool built on `_DeadlineBackend`, through the
    public API of both: httpx's `HTTPTransport` takes no network backend (it would have to be
    swapped into its private `_pool`), so this is the transport httpx documents for custom needs,
    sending each request through httpcore as `HTTPTransport.handle_request` does."""

    def __init__(self) -> None:
        self.pool = httpcore.ConnectionPool(ssl_context=httpx.create_ssl_context(), network_backend=_DeadlineBackend())

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        sent = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors():
            answer = self.pool.handle_request(sent)
        return httpx.Response(
            status_code=answer.status,
            headers=answer.headers,
            stream=_ResponseBody(cast(Iterable[bytes], answer.stream)),  # a sync pool's body is sync
            extensions=answer.extensions,
        )

    def close(self) -> None:
        with _httpx_errors():
            self.pool.close()


def deadline_client(**options: Any) -> httpx.Client:
    """An httpx.Client whose fetches end by the `total_deadline` they run in (headers and body
    included), besides httpx's own per-operation `timeout`. Proxies from the environment are not
    used (a proxy's connections would not carry the deadline)."""
    return httpx.Client(transport=_DeadlineTransport(), trust_env=False, **options)


class _SizeLimitedStream(httpx.SyncByteStream):
    """A response body abandoned as soon as it is larger than `max_bytes` (kind `too_large`), never read whole."""

    def __init__(self, inner: httpx.SyncByteStream, max_bytes: int) -> None:
        self._inner = inner
        self._max_bytes = max_bytes

    def __iter__(self) -> Iterator[bytes]:
        received = 0
        for chunk in self._inner:
            received += len(chunk)
            if received > self._max_bytes:
                raise OutboundError("too_large", f"the response body is larger than {self._max_bytes} bytes")
            yield chunk

    def close(self) -> None:
        self._inner.close()


class OutboundClient:
    """An httpx.Client with deadline, retry and breaker; one instance per upstream, shared across calls."""

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
        breaker: CircuitBreaker | None = None,
        default_deadline_s: float = 10.0,
        rng: random.Random | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self.breaker = breaker or CircuitBreaker()
        self.default_deadline_s = default_deadline_s
        self._rng = rng or random.Random()
        self._sleep = sleep
        self._http = deadline_client(base_url=base_url, headers=dict(headers or {}), follow_redirects=False)
        track_breaker(self._http.base_url.netloc.decode("ascii", "replace") or base_url, self.breaker)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._http.close()

    def __enter__(self) -> OutboundClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        deadline_s: float | None = None,
        max_bytes: int | None = None,
    ) -> httpx.Response:
        """Send with retries inside one deadline; return the first non-retryable response (2xx or 4xx).

        `max_bytes` bounds the response body: a larger one raises OutboundError("too_large")
        without being read whole, and is not retried.

        Raises OutboundError when the breaker is open, when the deadline is spent,
        when retryable failures outlast the retry budget, or (kind `client_error`)
        on a 4xx other than 408/429.
        """
        with total_deadline(self.default_deadline_s if deadline_s is None else deadline_s) as deadline:
            return self._request(method, path, json, headers, deadline, max_bytes)

    def _request(
        self,
        method: str,
        path: str,
        json: Any,
        headers: Mapping[str, str] | None,
        deadline: float,
        max_bytes: int | None,
    ) -> httpx.Response:
        attempt = 0
        last: OutboundError | None = None
        while attempt < self.retry.attempts:
            if not self.breaker.allow():
                if last is not None:  # this call's own failures opened it: report what happened
                    raise last
                raise OutboundError("circuit_open", "circuit breaker is open", attempts=attempt)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.breaker.release()
                break
            attempt += 1
            wait_hint: float | None = None
            try:
                response = self._send(method, path, json, headers, remaining, max_bytes)
            except httpx.TimeoutException as exc:
                self.breaker.record_failure()
                last = OutboundError(
                    "timeout", f"no answer within the deadline: {type(exc).__name__}", attempts=attempt
                )
            except httpx.TransportError as exc:
                self.breaker.record_failure()
                last = OutboundError("connection", f"transport error: {type(exc).__name__}", attempts=attempt)
            except httpx.HTTPError as exc:  # e.g. DecodingError: the upstream sent an unreadable body
                self.breaker.record_failure()
                last = OutboundError(
                    "upstream_error", f"unreadable upstream response: {type(exc).__name__}", attempts=attempt
                )
            except BaseException:
                self.breaker.release()  # no verdict on the upstream, but never keep the half-open slot
                raise
            else:
                status = response.status_code
                if status not in RETRYABLE_STATUS:
                    self.breaker.record_success()  # 2xx/3xx/4xx: the upstream is up and answered
                    if 400 <= status < 500:
                        raise OutboundError(
                            "client_error",
                            f"upstream rejected the request: HTTP {status}",
                            status=status,
                            attempts=attempt,
                        )
                    return response
                if status == 429:
                    self.breaker.release()
                    last = OutboundError("rate_limited", "upstream rate limit: HTTP 429", status=429, attempts=attempt)
                elif status == 408:
                    self.breaker.record_failure()
                    last = OutboundError("timeout", "upstream timed out: HTTP 408", status=408, attempts=attempt)
                else:
                    self.breaker.record_failure()
                    last = OutboundError(
                        "upstream_error", f"upstream failed: HTTP {status}", status=status, attempts=attempt
                    )
                wait_hint = retry_after_s(response.headers)
            if attempt >= self.retry.attempts:
                break
            delay = self.retry.delay(attempt - 1, self._rng)
            if wait_hint is not None:
                delay = max(delay, wait_hint)
            if time.monotonic() + delay >= deadline:
                break  # sleeping would spend the deadline: report the failure now
            self._sleep(delay)
        if last is None:
            last = OutboundError("timeout", "deadline spent before the call could be sent", attempts=attempt)
        raise last

    def _send(
        self,
        method: str,
        path: str,
        json: Any,
        headers: Mapping[str, str] | None,
        remaining: float,
        max_bytes: int | None = None,
    ) -> httpx.Response:
        """One attempt: send, then read the whole body (under the size limit); the deadline bounds every socket operation."""
        with tracing.outbound(method, self._http.base_url.host) as span:
            request = self._http.build_request(
                method, path, json=json, headers=tracing.inject(dict(headers or {})), timeout=httpx.Timeout(remaining)
            )
            response = self._http.send(request, stream=True)
            if span is not None:
                span.set_attribute("http.response.status_code", response.status_code)
            try:
                if max_bytes is not None:
                    assert isinstance(response.stream, httpx.SyncByteStream)  # a sync client's response
                    response.stream = _SizeLimitedStream(response.stream, max_bytes)
                response.read()
            finally:
                response.close()
        return response

    def post_json(
        self, path: str, body: Any, *, headers: Mapping[str, str] | None = None, deadline_s: float | None = None
    ) -> Any:
        """POST JSON, return the decoded JSON body; an undecodable 2xx body is an `upstream_error`."""
        response = self.request("POST", path, json=body, headers=headers, deadline_s=deadline_s)
        try:
            return response.json()
        except ValueError as exc:
            raise OutboundError(
                "upstream_error", "upstream answered with invalid JSON", status=response.status_code
            ) from exc

"""`OutboundClient`: an httpx.Client for one upstream, with a deadline, retries and a circuit breaker.

It composes the other modules of this package: the `total_deadline` the whole call runs in
(`kumitate.outbound.deadline`), the `CircuitBreaker` that guards each attempt and hears its verdict
once (`breaker`), the `Outcome` each attempt comes to (`outcome`) and the `RetryPolicy` that says
whether to try again and after how long (`retry`).
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import httpx

from kumitate.observability import tracing
from kumitate.observability.metrics import track_breaker
from kumitate.outbound.breaker import CircuitBreaker
from kumitate.outbound.deadline import deadline_client, total_deadline
from kumitate.outbound.outcome import NOT_SENT, OutboundError, Outcome, answered, failed
from kumitate.outbound.retry import RetryPolicy

__all__ = ["OutboundClient"]


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
        json: object = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        deadline_s: float | None = None,
        max_bytes: int | None = None,
    ) -> httpx.Response:
        """Send with retries inside one deadline; return the first non-retryable response (2xx or 4xx).

        The body is `json` encoded, or `content` as given (a form, with its Content-Type in `headers`).
        `max_bytes` bounds the response body: a larger one raises OutboundError("too_large")
        without being read whole, and is not retried.

        Raises OutboundError when the breaker is open, when the deadline is spent,
        when retryable failures outlast the retry budget, or (kind `client_error`)
        on a 4xx other than 408/429.
        """
        with total_deadline(self.default_deadline_s if deadline_s is None else deadline_s) as deadline:
            send = functools.partial(self._send, method, path, json, headers, max_bytes=max_bytes, content=content)
            return self._request(send, deadline)

    def _request(self, send: Callable[[float], httpx.Response], deadline: float) -> httpx.Response:
        """The retry loop: each attempt under the breaker, then the policy's wait, while the deadline lasts."""
        failure: OutboundError | None = None
        sent = 0
        while sent < self.retry.attempts:
            if not self.breaker.allow():
                if failure is not None:  # this call's own failures opened it: report what happened
                    raise failure
                raise OutboundError("circuit_open", "circuit breaker is open", attempts=sent)
            outcome = self.breaker.guard(functools.partial(self._attempt, send, deadline, sent + 1))
            if outcome.response is not None:
                return outcome.response
            if outcome.error is None:  # no time was left to send it
                break
            sent += 1
            failure = outcome.error
            if not outcome.retryable:
                raise failure
            wait = self.retry.wait(sent, asked_s=outcome.asked_wait_s, rng=self._rng)
            if wait is None or time.monotonic() + wait >= deadline:
                break  # no attempt left, or sleeping would spend the deadline: report the failure now
            self._sleep(wait)
        if failure is None:
            failure = OutboundError("timeout", "deadline spent before the call could be sent", attempts=sent)
        raise failure

    def _attempt(self, send: Callable[[float], httpx.Response], deadline: float, attempt: int) -> Outcome:
        """Attempt number `attempt`, given what is left of the deadline, as an Outcome (an error that
        is not httpx's, such as a body over `max_bytes`, propagates)."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return NOT_SENT
        try:
            response = send(remaining)
        except httpx.HTTPError as exc:
            return failed(exc, attempt)
        return answered(response, attempt)

    def _send(
        self,
        method: str,
        path: str,
        json: object,
        headers: Mapping[str, str] | None,
        remaining: float,
        max_bytes: int | None = None,
        content: bytes | None = None,
    ) -> httpx.Response:
        """One attempt: send, then read the whole body (under the size limit); the deadline bounds every socket operation."""
        with tracing.outbound(method, self._http.base_url.host) as span:
            request = self._http.build_request(
                method,
                path,
                json=json if content is None else None,
                content=content,
                headers=tracing.inject(dict(headers or {})),
                timeout=httpx.Timeout(remaining),
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
        self, path: str, body: object, *, headers: Mapping[str, str] | None = None, deadline_s: float | None = None
    ) -> Any:  # noqa: ANN401  (JSON of the upstream's shape, as httpx's Response.json: the caller reads it)
        """POST JSON, return the decoded JSON body; an undecodable 2xx body is an `upstream_error`."""
        response = self.request("POST", path, json=body, headers=headers, deadline_s=deadline_s)
        try:
            return response.json()
        except ValueError as exc:
            raise OutboundError(
                "upstream_error", "upstream answered with invalid JSON", status=response.status_code
            ) from exc

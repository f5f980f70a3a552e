"""The outbound package's pieces on their own: what an attempt came to (kumitate.outbound.outcome), the
breaker's guard around one attempt, and the one RetryPolicy; then, through a real server, that each
attempt gives the breaker exactly one verdict."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from kumitate.outbound import CircuitBreaker, OutboundClient, OutboundError, RetryPolicy
from kumitate.outbound.breaker import Health
from kumitate.outbound.outcome import Outcome, answered, failed


def test_an_answer_is_judged_once_for_the_breaker_and_the_retry() -> None:
    ok = answered(httpx.Response(200), 1)
    assert ok.health is Health.UP and ok.response is not None and ok.error is None
    rejected = answered(httpx.Response(404), 1)
    assert rejected.health is Health.UP and not rejected.retryable
    assert rejected.error is not None and (rejected.error.kind, rejected.error.status) == ("client_error", 404)
    busy = answered(httpx.Response(429, headers={"Retry-After": "2"}), 2)
    assert busy.health is Health.UNKNOWN and busy.retryable and busy.asked_wait_s == 2.0
    assert busy.error is not None and (busy.error.kind, busy.error.attempts) == ("rate_limited", 2)
    for status, kind in ((408, "timeout"), (503, "upstream_error")):
        down = answered(httpx.Response(status), 3)
        assert down.health is Health.DOWN and down.retryable and down.asked_wait_s is None
        assert down.error is not None and (down.error.kind, down.error.status) == (kind, status)


def test_an_httpx_error_is_the_upstream_down() -> None:
    request = httpx.Request("GET", "http://upstream.test/x")
    for exc, kind in (
        (httpx.ReadTimeout("slow", request=request), "timeout"),
        (httpx.ConnectError("refused", request=request), "connection"),
        (httpx.DecodingError("garbled", request=request), "upstream_error"),
    ):
        outcome = failed(exc, 1)
        assert outcome.health is Health.DOWN and outcome.retryable
        assert outcome.error is not None and outcome.error.kind == kind


def test_the_guard_records_one_verdict_and_frees_the_trial_slot_on_an_exception() -> None:
    now = [0.0]
    breaker = CircuitBreaker(failure_threshold=2, reset_timeout_s=5, clock=lambda: now[0])
    down = Outcome(Health.DOWN)
    assert breaker.guard(lambda: down) is down and breaker.state == "closed"
    breaker.guard(lambda: down)
    assert breaker.state == "open"
    now[0] += 5
    assert breaker.allow() and not breaker.allow()  # the one half-open trial is taken
    breaker.guard(lambda: Outcome(Health.UNKNOWN))  # no verdict: the slot is free again, still half-open
    assert breaker.state == "half_open" and breaker.allow()

    def boom() -> Outcome:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        breaker.guard(boom)
    assert breaker.state == "half_open" and breaker.allow()
    breaker.guard(lambda: Outcome(Health.UP))
    assert breaker.state == "closed"


def test_the_policy_waits_the_longer_of_backoff_and_asked_within_its_bounds() -> None:
    policy = RetryPolicy(attempts=3, base_delay_s=0.5, max_delay_s=0.75, jitter=0.0, max_wait_s=2.0)
    assert [policy.wait(n) for n in (1, 2, 3)] == [0.5, 0.75, None]  # capped, then no attempt left
    assert policy.wait(1, asked_s=1.5) == 1.5 and policy.wait(2, asked_s=0.1) == 0.75
    assert policy.wait(1, asked_s=2.5) is None  # longer than max_wait_s: give up at once


class CountingBreaker(CircuitBreaker):
    """A real breaker that also lists every verdict it hears."""

    def __init__(self) -> None:
        super().__init__(failure_threshold=10)
        self.heard: list[str] = []

    def record_success(self) -> None:
        self.heard.append("success")
        super().record_success()

    def record_failure(self) -> None:
        self.heard.append("failure")
        super().record_failure()

    def release(self) -> None:
        self.heard.append("release")
        super().release()


@pytest.fixture()
def upstream() -> Iterator[tuple[str, list[int]]]:
    """A server answering each request with the next status of a list (then 200)."""
    statuses: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            status = statuses.pop(0) if statuses else 200
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", statuses
    server.shutdown()
    server.server_close()


def test_each_attempt_gives_the_breaker_exactly_one_verdict(upstream: tuple[str, list[int]]) -> None:
    url, statuses = upstream
    breaker = CountingBreaker()
    retry = RetryPolicy(attempts=4, base_delay_s=0.01, jitter=0.0)
    with OutboundClient(url, breaker=breaker, retry=retry, sleep=lambda s: None) as client:
        statuses[:] = [503, 429, 500]
        assert client.request("GET", "/x").status_code == 200
        assert breaker.heard == ["failure", "release", "failure", "success"]
        breaker.heard.clear()
        statuses[:] = [502, 404]
        with pytest.raises(OutboundError) as err:
            client.request("GET", "/x")
        assert err.value.kind == "client_error" and breaker.heard == ["failure", "success"]


def test_the_typed_clients_former_backoff_name_still_works() -> None:
    import warnings

    from kumitate.client import RetryPolicy as ClientRetryPolicy

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        policy = ClientRetryPolicy(attempts=4, backoff_s=1.5)
    assert (policy.attempts, policy.base_delay_s) == (4, 1.5)
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)

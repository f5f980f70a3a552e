"""kumitate.outbound against a real loopback HTTP server: deadline, retry/backoff, circuit breaker."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from kumitate.outbound import CircuitBreaker, OutboundClient, OutboundError, RetryPolicy


class Scripted:
    """Answers each request with the next (status, delay_s, headers, body) of `script`, then `default`."""

    def __init__(self) -> None:
        self.script: list[tuple[int, float, dict[str, str], bytes]] = []
        self.default: tuple[int, float, dict[str, str], bytes] = (200, 0.0, {}, b'{"ok": true}')
        self.count = 0
        self.lock = threading.Lock()
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                self.rfile.read(length)
                with scripted.lock:
                    scripted.count += 1
                    status, delay, headers, body = scripted.script.pop(0) if scripted.script else scripted.default
                time.sleep(delay)
                try:
                    self.send_response(status)
                    for key, value in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def push(
        self, status: int, delay: float = 0.0, headers: dict[str, str] | None = None, body: bytes = b'{"ok": true}'
    ) -> None:
        self.script.append((status, delay, headers or {}, body))


@pytest.fixture()
def server() -> Iterator[Scripted]:
    s = Scripted()
    thread = threading.Thread(target=s.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield s
    s.server.shutdown()
    s.server.server_close()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def client(url: str, **kw: Any) -> OutboundClient:
    kw.setdefault("retry", RetryPolicy(attempts=2, base_delay_s=0.01, max_delay_s=0.05, jitter=0.0))
    return OutboundClient(url, rng=random.Random(7), **kw)


def test_success_first_time(server: Scripted) -> None:
    with client(server.url) as c:
        assert c.post_json("/x", {"a": 1}) == {"ok": True}
    assert server.count == 1


def test_5xx_then_success_is_retried(server: Scripted) -> None:
    server.push(503)
    with client(server.url) as c:
        assert c.request("POST", "/x", json={}).status_code == 200
    assert server.count == 2


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_4xx_is_never_retried(server: Scripted, status: int) -> None:
    server.default = (status, 0.0, {}, b"{}")
    with client(server.url) as c, pytest.raises(OutboundError) as err:
        c.request("POST", "/x")
    assert (err.value.kind, err.value.status, err.value.retryable, server.count) == ("client_error", status, False, 1)


def test_retries_are_bounded(server: Scripted) -> None:
    server.default = (500, 0.0, {}, b"{}")
    with (
        client(server.url, retry=RetryPolicy(attempts=3, base_delay_s=0.01, jitter=0.0)) as c,
        pytest.raises(OutboundError) as err,
    ):
        c.request("GET", "/x")
    assert (err.value.kind, err.value.status, err.value.attempts, server.count) == ("upstream_error", 500, 3, 3)


def test_429_honours_retry_after(server: Scripted) -> None:
    server.push(429, headers={"Retry-After": "0.3"})
    with client(server.url) as c:
        started = time.monotonic()
        assert c.request("GET", "/x").status_code == 200
        assert time.monotonic() - started >= 0.3
    assert server.count == 2


def test_persistent_429_does_not_trip_the_breaker(server: Scripted) -> None:
    server.default = (429, 0.0, {"Retry-After": "0"}, b"{}")
    breaker = CircuitBreaker(failure_threshold=1)
    with client(server.url, breaker=breaker) as c:
        for _ in range(3):
            with pytest.raises(OutboundError) as err:
                c.request("GET", "/x")
            assert err.value.kind == "rate_limited"
    assert breaker.state == "closed" and server.count == 6


def test_deadline_covers_the_whole_call(server: Scripted) -> None:
    server.default = (200, 1.0, {}, b"{}")
    with client(server.url) as c:
        started = time.monotonic()
        with pytest.raises(OutboundError) as err:
            c.request("GET", "/x", deadline_s=0.3)
        elapsed = time.monotonic() - started
    assert err.value.kind == "timeout" and err.value.retryable
    assert 0.25 <= elapsed < 0.8
    assert server.count == 1  # no time left for a retry


def test_backoff_that_would_overrun_the_deadline_is_not_slept(server: Scripted) -> None:
    server.default = (503, 0.0, {}, b"{}")
    with client(server.url, retry=RetryPolicy(attempts=3, base_delay_s=5.0, jitter=0.0)) as c:
        started = time.monotonic()
        with pytest.raises(OutboundError) as err:
            c.request("GET", "/x", deadline_s=1.0)
    assert time.monotonic() - started < 0.5 and err.value.attempts == 1 and server.count == 1


def test_connection_errors_are_retried_and_reported() -> None:
    sleeps: list[float] = []
    with (
        OutboundClient(
            "http://127.0.0.1:9", retry=RetryPolicy(attempts=2, base_delay_s=0.05, jitter=0.0), sleep=sleeps.append
        ) as c,
        pytest.raises(OutboundError) as err,
    ):
        c.request("GET", "/x", deadline_s=2.0)
    assert (err.value.kind, err.value.attempts, sleeps) == ("connection", 2, [0.05])


def test_breaker_opens_fails_fast_half_opens_and_closes(server: Scripted) -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=2, reset_timeout_s=30, clock=clock)
    server.default = (500, 0.0, {}, b"{}")
    with client(server.url, breaker=breaker) as c:
        with pytest.raises(OutboundError):
            c.request("GET", "/x")
        assert breaker.state == "open" and server.count == 2
        with pytest.raises(OutboundError) as err:
            c.request("GET", "/x")
        assert err.value.kind == "circuit_open" and server.count == 2  # failed fast, nothing sent
        clock.now += 30
        assert breaker.state == "half_open"
        server.default = (200, 0.0, {}, b'{"ok": true}')
        assert c.post_json("/x", {}) == {"ok": True}
        assert breaker.state == "closed" and server.count == 3


def test_failed_trial_reopens_the_breaker(server: Scripted) -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=1, reset_timeout_s=10, clock=clock)
    server.default = (502, 0.0, {}, b"{}")
    with client(server.url, breaker=breaker, retry=RetryPolicy(attempts=1)) as c:
        with pytest.raises(OutboundError):
            c.request("GET", "/x")
        clock.now += 10
        with pytest.raises(OutboundError) as err:
            c.request("GET", "/x")  # the half-open trial
        assert err.value.kind == "upstream_error" and breaker.state == "open"
        with pytest.raises(OutboundError) as err2:
            c.request("GET", "/x")
        assert err2.value.kind == "circuit_open" and server.count == 2


def test_half_open_admits_one_trial_at_a_time() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=1, reset_timeout_s=5, clock=clock)
    breaker.record_failure()
    assert breaker.allow() is False
    clock.now += 5
    assert breaker.allow() is True and breaker.allow() is False
    breaker.release()
    assert breaker.allow() is True


def test_backoff_is_exponential_capped_and_jittered() -> None:
    policy = RetryPolicy(attempts=5, base_delay_s=0.1, max_delay_s=0.5, jitter=0.2)
    rng = random.Random(1)
    delays = [policy.delay(i, rng) for i in range(4)]
    for delay, raw in zip(delays, [0.1, 0.2, 0.4, 0.5], strict=True):
        assert raw * 0.8 <= delay <= raw * 1.2
    assert RetryPolicy(jitter=0.0, base_delay_s=0.2).delay(1, rng) == 0.4


def test_invalid_json_body_is_an_upstream_error(server: Scripted) -> None:
    server.default = (200, 0.0, {}, b"not json")
    with client(server.url) as c, pytest.raises(OutboundError) as err:
        c.post_json("/x", {})
    assert err.value.kind == "upstream_error" and err.value.status == 200


def test_request_body_and_headers_are_sent(server: Scripted) -> None:
    seen: dict[str, Any] = {}

    class Echo(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            seen["path"] = self.path
            seen["auth"] = self.headers["Authorization"]
            seen["body"] = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    echo = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=echo.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        with OutboundClient(
            f"http://127.0.0.1:{echo.server_address[1]}/v1", headers={"Authorization": "Bearer t"}
        ) as c:
            assert c.post_json("/chat/completions", {"q": "獺祭"}) == {}
    finally:
        echo.shutdown()
        echo.server_close()
    assert seen == {"path": "/v1/chat/completions", "auth": "Bearer t", "body": {"q": "獺祭"}}


def test_unreadable_body_is_an_upstream_failure_and_frees_the_half_open_trial(server: Scripted) -> None:
    """A 2xx whose body cannot be decoded (bad gzip) is an upstream failure like a 5xx: it must not
    escape as a raw httpx error, nor keep the breaker's single half-open slot reserved for ever."""
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=1, reset_timeout_s=10, clock=clock)
    server.default = (200, 0.0, {"Content-Encoding": "gzip"}, b"this is not gzip")
    with client(server.url, breaker=breaker, retry=RetryPolicy(attempts=1)) as c:
        with pytest.raises(OutboundError) as err:
            c.request("GET", "/x")
        assert (err.value.kind, err.value.retryable, breaker.state) == ("upstream_error", True, "open")
        clock.now += 10
        with pytest.raises(OutboundError) as trial:
            c.request("GET", "/x")  # the half-open trial fails the same way
        assert trial.value.kind == "upstream_error" and breaker.state == "open"
        clock.now += 10
        server.default = (200, 0.0, {}, b'{"ok": true}')
        assert c.post_json("/x", {}) == {"ok": True}  # the next trial was let through
    assert breaker.state == "closed" and server.count == 3


class Trickle(BaseHTTPRequestHandler):
    """Headers at once, then one body byte every 50 ms: each read is quick, the whole body takes 10 s."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "200")
        self.end_headers()
        try:
            for _ in range(200):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture()
def trickle() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_a_trickling_body_is_abandoned_at_the_deadline(trickle: str) -> None:
    with client(trickle, retry=RetryPolicy(attempts=1)) as c, pytest.raises(OutboundError) as err:
        c.request("GET", "/x", deadline_s=0.5)
    assert err.value.kind == "timeout"


def test_the_tool_call_deadline_caps_the_outbound_deadline(server: Scripted) -> None:
    """Inside a tool call, an outbound call never outlives the call's own deadline."""
    from kumitate.context import CallContext, bound

    server.default = (200, 5.0, {}, b"{}")
    started = time.monotonic()
    call = CallContext("svc", "tool", "http", "run", "trace", deadline=started + 0.3)
    with client(server.url) as c, bound(call), pytest.raises(OutboundError) as err:
        c.request("GET", "/x", deadline_s=10.0)
    # not retried, and given up long before the server's 5 s answer (on a loaded machine the one request
    # may not even have reached the server by the deadline)
    assert err.value.kind == "timeout" and server.count <= 1
    assert time.monotonic() - started < 4.0

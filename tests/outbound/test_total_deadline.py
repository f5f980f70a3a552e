"""A total deadline on every outbound fetch, against a real server that trickles its answer
(issue 27 item 4: a JWKS endpoint sending one byte every 2 s held new-key token calls for over
150 s, because httpx's time-out bounds each read, not the fetch)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from kumitate.outbound import OutboundClient, OutboundError, RetryPolicy, deadline_client, total_deadline
from kumitate.policies.oauth import KeySet

INTERVAL_S = 0.4
"""Between two bytes: well inside every per-read time-out below, so only a total deadline can end the fetch."""
ANSWER = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"keys":[]}'


class Trickler:
    """A socket server that answers every request one byte per INTERVAL_S, from the status line
    (`headers`) or from the body on (`body`), for as long as the client listens."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.closed = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            head, _, body = ANSWER.partition(b"\r\n\r\n")
            at_once, slow = (b"", ANSWER) if self.mode == "headers" else (head + b"\r\n\r\n", body * 50)
            try:
                conn.sendall(at_once)
                for byte in slow:
                    conn.sendall(bytes([byte]))
                    time.sleep(INTERVAL_S)
            except OSError:
                pass

    def close(self) -> None:
        self.closed.set()
        self.sock.close()


@pytest.fixture(params=["headers", "body"])
def trickler(request: pytest.FixtureRequest) -> Iterator[Trickler]:
    server = Trickler(request.param)
    yield server
    server.close()


def test_an_outbound_call_ends_at_its_deadline_however_slowly_the_answer_trickles(trickler: Trickler) -> None:
    with OutboundClient(trickler.url, retry=RetryPolicy(attempts=1)) as client:
        started = time.monotonic()
        with pytest.raises(OutboundError) as err:
            client.request("GET", "/", deadline_s=1.5)
        took = time.monotonic() - started
    assert err.value.kind == "timeout"
    assert took < 1.5 + 1.0, f"took {took:.1f} s"


def test_a_trickling_key_set_fetch_ends_within_the_oauth_timeout(trickler: Trickler) -> None:
    """The seen case: a new-key token waited on the JWK-set fetch for as long as the provider trickled."""
    keys = KeySet("https://issuer.example", f"{trickler.url}/jwks.json", timeout_s=1.5, min_refresh_s=0)
    started = time.monotonic()
    keys.refresh("new-kid")
    took = time.monotonic() - started
    assert took < 1.5 + 1.0, f"took {took:.1f} s"
    assert keys.get("new-kid") is None  # the failed fetch left the (empty) key set as it was


def test_metadata_discovery_and_key_set_share_one_deadline(trickler: Trickler) -> None:
    """Without a JWKS URL the issuer's metadata is fetched first: both within the one time-out."""
    keys = KeySet(trickler.url, None, timeout_s=1.5, min_refresh_s=0)
    started = time.monotonic()
    keys.refresh(None)
    assert time.monotonic() - started < 1.5 + 1.0


def test_the_deadline_transport_raises_httpx_errors_in_the_headers_and_in_the_body(trickler: Trickler) -> None:
    """The transport sends through httpcore itself (httpx's public transport API, no private `_pool`):
    httpcore's errors reach callers as httpx's, whether the deadline ends the headers or the body."""
    with total_deadline(1.0), deadline_client(timeout=30) as http, pytest.raises(httpx.ReadTimeout):
        http.get(trickler.url).read()


def test_a_refused_connection_is_an_httpx_connect_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with deadline_client(timeout=5) as http, pytest.raises(httpx.ConnectError):
        http.get(url)

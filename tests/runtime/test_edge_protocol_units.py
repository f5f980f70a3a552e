"""The HTTP connection protocol's edge limits (transports/protocol.py), served from this process.

tests/e2e/test_edges_wire.py proves the limits on `kumitate serve` in a subprocess (where coverage
does not see the protocol). Here the same EdgeProtocol runs on this test's event loop, on a loopback
socket, in front of a small ASGI app, with tight limits: the 431/408/400 envelopes, the idle close,
the header timer re-armed for a kept-alive connection's next request, and the arrival time in the scope.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from kumitate.transports.edge.asgi import ARRIVED_KEY
from kumitate.transports.protocol import EdgeLimits, protocol_for

pytestmark = pytest.mark.anyio

LIMITS = EdgeLimits(max_header_bytes=2048, header_timeout_s=0.3)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers whether the protocol put the arrival time in the scope."""
    body = json.dumps({"arrived": isinstance(scope.get(ARRIVED_KEY), float)}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
async def port() -> AsyncIterator[int]:
    config = Config(app, http=protocol_for(LIMITS), lifespan="off", log_level="critical")
    config.load()
    state = ServerState()
    factory = config.http_protocol_class

    def protocol() -> asyncio.Protocol:
        made: asyncio.Protocol = factory(config=config, server_state=state, app_state={})  # type: ignore[call-arg]
        return made

    server = await asyncio.get_running_loop().create_server(protocol, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()
    for connection in list(state.connections):
        connection.shutdown()
    await server.wait_closed()


async def exchange(port: int, *parts: bytes, pause_s: float = 0.0) -> bytes:
    """Send the parts (pausing between them), then read until the server closes (at most 5 s)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for part in parts:
            writer.write(part)
            await writer.drain()
            await asyncio.sleep(pause_s)
        return await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()


def envelope(answer: bytes) -> tuple[int, dict[str, Any]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    assert b"connection: close" in head.lower()
    error: dict[str, Any] = json.loads(body)["error"]
    return status, error


async def test_a_request_is_served_with_its_arrival_time(port: int) -> None:
    answer = await exchange(port, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200")
    assert answer.endswith(b'{"arrived": true}')


async def test_headers_past_the_limit_are_answered_431_and_closed(port: int) -> None:
    head = b"GET / HTTP/1.1\r\nHost: x\r\n"
    filler = b"X-Fill: " + b"a" * 1000 + b"\r\n"
    status, error = envelope(await exchange(port, head, filler, filler, filler, pause_s=0.02))
    assert (status, error["code"]) == (431, "HEADERS_TOO_LARGE")
    assert "2048 bytes" in error["message"]


async def test_headers_that_do_not_finish_in_time_are_answered_408(port: int) -> None:
    status, error = envelope(await exchange(port, b"GET / HTTP/1.1\r\nHost: x\r\n"))
    assert (status, error["code"]) == (408, "REQUEST_TIMEOUT")
    assert "0.3 s" in error["message"]


async def test_a_connection_that_sends_nothing_is_closed_without_an_answer(port: int) -> None:
    assert await exchange(port) == b""


async def test_a_malformed_request_is_answered_400_in_the_envelope(port: int) -> None:
    status, error = envelope(await exchange(port, b"NOT HTTP AT ALL\r\n\r\n"))
    assert (status, error["code"]) == (400, "BAD_REQUEST")


async def test_a_kept_alive_connection_gets_a_new_header_deadline_per_request(port: int) -> None:
    """The first request is answered; the second's headers stall, so its own timer answers 408 even
    though the connection has been open longer than one deadline by then."""
    first = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    answer = await exchange(port, first, b"GET / HTTP/1.1\r\nHost: x\r\n", pause_s=0.2)
    assert answer.startswith(b"HTTP/1.1 200")
    second = answer[answer.index(b"HTTP/1.1", 10) :]
    status, error = envelope(second)
    assert (status, error["code"]) == (408, "REQUEST_TIMEOUT")

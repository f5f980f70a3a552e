"""The HTTP read path: hostile bodies get a catalogued 4xx, never a 500 (in process), and an
oversized body is refused while it streams in, not after it was buffered (on a real socket: the
client keeps sending while the server has already answered)."""

from __future__ import annotations

import asyncio
import json
import select
import socket
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from tests.conftest import InProcessApp, LiveServer

pytestmark = pytest.mark.anyio

PATH = "/v1/attendance/parse_attendance_intent"  # no policy of its own: the server's default cap (16 MiB)
MiB = 1024 * 1024


async def _post(app: InProcessApp, body: bytes, path: str = PATH) -> httpx.Response:
    return await app.http.post(path, content=body, headers={"content-type": "application/json"})


def _catalogued(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text[:300]
    error = response.json()["error"]
    assert error["code"] == code
    assert set(error) >= {"code", "message", "retryable"}


async def test_json_nested_10000_deep_is_a_400(
    in_process_app: InProcessApp, capsys: pytest.CaptureFixture[str]
) -> None:
    for depth in (201, 10_000, 100_000):
        body = b'{"text": ' + b"[" * depth + b"]" * depth + b"}"
        _catalogued(await _post(in_process_app, body), 400, "BAD_REQUEST")
    assert "Traceback" not in capsys.readouterr().err


async def test_deep_but_parseable_json_is_judged_by_the_schema(in_process_app: InProcessApp) -> None:
    body = b'{"text": ' + b"[" * 190 + b"]" * 190 + b"}"
    _catalogued(await _post(in_process_app, body), 400, "BAD_REQUEST")
    body = b'{"stays": [{"code": "1", "name": "a", "extra": ' + b"[" * 190 + b"]" * 190 + b"}]}"
    response = await _post(in_process_app, body, "/v1/stays/summarize_stays")
    assert response.status_code == 200, response.text[:300]
    assert response.json()["stats"]["input_records"] == body.count(b"{") - 1
    assert response.json()["errors"][0]["reason"] == "INVALID_INPUT"


async def test_invalid_utf8_is_a_400(in_process_app: InProcessApp) -> None:
    for body in (b'{"text": "\xff\xfe"}', b'{"text": "ok", "\xc3\x28": 1}', b'{"text": "\xed\xa0\x80"}'):
        _catalogued(await _post(in_process_app, body), 400, "BAD_REQUEST")
    response = await _post(
        in_process_app, b'{"stays": [{"code": "1", "name": "\xe6\x9d\xb1\xff"}]}', "/v1/stays/summarize_stays"
    )
    _catalogued(response, 400, "BAD_REQUEST")


async def test_a_tool_with_its_own_cap_takes_a_body_over_the_default(in_process_app: InProcessApp) -> None:
    stay = b'{"code": "13101", "name": "x", "note": "' + b"n" * 300 + b'"},'
    body = b'{"stays": [' + stay * (17 * MiB // len(stay)) + b'{"code": "1", "name": "y"}]}'
    assert len(body) > 16 * MiB
    response = await _post(in_process_app, body, "/v1/stays/summarize_stays")
    assert response.status_code == 200, response.text[:300]
    assert response.json()["stats"]["input_records"] == body.count(b"{") - 1


def _open(server: LiveServer) -> socket.socket:
    parts = urlsplit(server.url)
    return socket.create_connection((parts.hostname, parts.port), timeout=30)


def _read_status(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    sock.settimeout(30)
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ", 2)[1]), data


def _send_until_answered(sock: socket.socket, chunks: int, chunk: bytes, framed: bool) -> int:
    """Send up to `chunks` chunks; stop as soon as the server has answered. Returns bytes sent."""
    sent = 0
    for _ in range(chunks):
        readable, _, _ = select.select([sock], [], [], 0)
        if readable:
            break
        try:
            if framed:
                sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            else:
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            break
        sent += len(chunk)
    time.sleep(0.2)
    return sent


@pytest.mark.slow
def test_an_announced_oversized_body_is_refused_before_it_is_sent(live_server: LiveServer) -> None:
    total = 60 * MiB
    with _open(live_server) as sock:
        head = (
            f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {total}\r\n\r\n"
        )
        sock.sendall(head.encode())
        sent = _send_until_answered(sock, 60, b" " * MiB, framed=False)
        status, response = _read_status(sock)
    assert status == 413, response[:300]
    assert b"PAYLOAD_TOO_LARGE" in response
    assert sent < total / 2, f"the server read {sent} bytes of an announced {total} before answering"


@pytest.mark.slow
def test_a_chunked_oversized_body_is_refused_while_streaming(live_server: LiveServer) -> None:
    with _open(live_server) as sock:
        head = f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        sock.sendall(head.encode())
        sent = _send_until_answered(sock, 60, b" " * MiB, framed=True)
        status, response = _read_status(sock)
    assert status == 413, response[:300]
    assert b"PAYLOAD_TOO_LARGE" in response
    # answered once the 16 MiB cap was passed, long before the 60 MiB were sent
    assert sent < 40 * MiB, f"the server consumed {sent} bytes before answering"


async def _mcp_call(url: str, arguments: dict[str, Any]) -> Any:
    async with Client(StreamableHttpTransport(f"{url}/mcp")) as client:
        return await client.call_tool("summarize_stays", arguments, raise_on_error=False)


@pytest.mark.slow
def test_mcp_takes_the_large_inputs_http_takes(live_server: LiveServer) -> None:
    """The MCP SDK's own cap is 4 MiB; the server raises it to the largest a tool declares."""
    stays = [{"code": "13101", "name": "千代田区", "ref": f"r{i}", "note": "n" * 900} for i in range(6_000)]
    assert len(json.dumps({"stays": stays})) > 5 * MiB
    result = asyncio.run(_mcp_call(live_server.url, {"stays": stays}))
    assert not result.is_error
    assert result.structured_content["stats"]["input_records"] == 6_000

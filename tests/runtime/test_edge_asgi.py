"""The outer ASGI layer's own answers, without a server: an escaped exception and a stalled body."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from kumitate.transports.asgi import KumitateASGI, RequestLimits

pytestmark = pytest.mark.anyio

SCOPE: dict[str, Any] = {
    "type": "http",
    "method": "POST",
    "path": "/v1/x",
    "raw_path": b"/v1/x",
    "query_string": b"",
    "headers": [(b"host", b"127.0.0.1:8000")],
    "server": ("127.0.0.1", 8000),
    "scheme": "http",
}


async def run(app: Any, receive: Any) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await KumitateASGI(app, None, {}, limits=RequestLimits(body_timeout_s=0.3))(dict(SCOPE), receive, send)
    return sent


def envelope(sent: list[dict[str, Any]]) -> tuple[int, dict[bytes, bytes], dict[str, Any]]:
    start, body = sent[0], sent[1]
    body_json = json.loads(body["body"])
    assert set(body_json) == {"error", "run_id", "trace_id"}
    return start["status"], dict(start["headers"]), body_json["error"]


async def test_an_exception_that_escapes_the_app_is_a_500_envelope_not_plain_text() -> None:
    async def crash(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    status, _, error = envelope(await run(crash, receive))
    assert status == 500
    assert error["code"] == "INTERNAL"
    assert "boom" not in error["message"]


async def test_an_app_that_answers_nothing_gets_a_500_envelope_not_uvicorns_text() -> None:
    async def silent(scope: Any, receive: Any, send: Any) -> None:
        return None

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    status, _, error = envelope(await run(silent, receive))
    assert (status, error["code"]) == (500, "INTERNAL")


async def test_a_stalled_body_is_a_408_and_the_app_reads_a_disconnect() -> None:
    seen: list[str] = []

    async def reader(scope: Any, receive: Any, send: Any) -> None:
        seen.append((await receive())["type"])
        seen.append((await receive())["type"])
        await send({"type": "http.response.start", "status": 200, "headers": []})  # dropped: already answered
        await send({"type": "http.response.body", "body": b"late"})

    first = True

    async def receive() -> dict[str, Any]:
        nonlocal first
        if first:
            first = False
            return {"type": "http.request", "body": b"{", "more_body": True}
        await asyncio.sleep(60)
        raise AssertionError("not reached")

    sent = await run(reader, receive)
    assert seen == ["http.request", "http.disconnect"]
    assert len(sent) == 2
    status, headers, error = envelope(sent)
    assert status == 408
    assert error["code"] == "REQUEST_TIMEOUT"
    assert headers[b"connection"] == b"close"

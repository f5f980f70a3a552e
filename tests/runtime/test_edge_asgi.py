"""The outer ASGI layer's own answers, without a server: an escaped exception and a stalled body."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from typing import Any

import pytest

from kumitate.project import load_generated
from kumitate.steps.errors import ErrorMap
from kumitate.transports.edge.hosts import OriginPolicy
from kumitate.transports.edge.limits import RequestLimits
from kumitate.transports.edge.stack import KumitateASGI

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


def layer_names(edge: KumitateASGI) -> list[str]:
    """The edge's layers, outermost first, by the middleware each one builds."""
    return [getattr(layer, "func", layer).__name__ for layer in edge.layers()]


async def noop(scope: Any, receive: Any, send: Any) -> None:
    return None


def test_the_edge_runs_its_layers_in_the_one_listed_order_and_leaves_out_what_is_off() -> None:
    bare = KumitateASGI(noop, None, {})
    assert layer_names(bare) == [
        "Correlation",
        "HeaderLimits",
        "Hosts",
        "CrashFallback",
        "BodyDeadline",
        "EncodedSlashes",
    ]
    origins = OriginPolicy.from_env({"KUMITATE_ALLOWED_ORIGINS": "https://ui.example"})

    async def lean(scope: Any, receive: Any, send: Any) -> bool:
        return False

    full = KumitateASGI(noop, noop, {"svc": noop}, origins=origins, lean=lean, draining=threading.Event())
    assert layer_names(full) == [
        "Correlation",
        "HeaderLimits",
        "Hosts",
        "DrainHeader",
        "CrashFallback",
        "BodyDeadline",
        "cors",
        "McpRouting",
        "EncodedSlashes",
        "LeanPaths",
    ]


async def test_the_edge_answers_from_the_catalogue_it_is_given_not_one_it_loads() -> None:
    """The app passes the pipeline's ErrorMap in; a catalogue that differs shows in the edge's own 500."""
    catalogue = dict(load_generated()[0])
    catalogue["INTERNAL"] = dataclasses.replace(catalogue["INTERNAL"], retryable=True)
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    await KumitateASGI(noop, None, {}, errors=ErrorMap(catalogue))(dict(SCOPE), receive, send)
    status, headers, error = envelope(sent)
    assert (status, error["code"], error["retryable"]) == (500, "INTERNAL", True)
    assert b"x-run-id" in headers and b"x-request-duration-ms" in headers
    sent.clear()
    await KumitateASGI(noop, None, {})(dict(SCOPE), receive, send)
    assert envelope(sent)[2]["retryable"] is False

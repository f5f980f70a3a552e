"""The lean MCP path (kumitate/transports/mcp/lean.py) answers byte for byte what fastmcp answers.

Each request is sent twice to the same in-process app, once with the lean path on and once with
it off (the endpoint's fastmcp app then answers, as with KUMITATE_MCP_LEAN=0), with fixed
correlation ids: status, content type and body must be equal. The requests cover what the lean
path takes (a call, an input error, an idempotency key, an id that is a string, every read-only
spec example) and what it must hand on unchanged (an unknown tool, a bad envelope, a mismatched
header, a progress token, an elicitation-capable client, malformed JSON, a notification), so a
protocol answer changed on one path only fails here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from codegen.examples import all_examples
from codegen.specs import SpecTree
from kumitate.transports.mcp.lean import LeanMCP
from tests.conftest import InProcessApp

pytestmark = pytest.mark.anyio

VERSION = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}
STAYS = {
    "granularity": "admin",
    "stays": [{"ref": "a", "code": "13101", "name": "千代田区", "start_ts": "2024-05-01T09:00:00+09:00"}],
}


def _call(name: Any, arguments: Any = None, *, meta: Any = META, request_id: Any = 1, **params: Any) -> dict[str, Any]:
    body_params = {"name": name, "_meta": meta, **params}
    if arguments is not None:
        body_params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": body_params}


CASES: dict[str, tuple[str, Any, dict[str, str]]] = {
    # (endpoint, body (bytes as sent, or a JSON value), headers over the defaults)
    "call": ("/mcp/stays", _call("summarize_stays", STAYS), {}),
    "call on /mcp": ("/mcp", _call("summarize_stays", STAYS), {}),
    "string id": ("/mcp/stays", _call("summarize_stays", STAYS, request_id="req-7"), {}),
    "no arguments": ("/mcp/stays", _call("summarize_stays"), {}),
    "input error": ("/mcp/stays", _call("summarize_stays", {"stays": 5}), {}),
    "extra argument": ("/mcp/stays", _call("summarize_stays", {**STAYS, "nope": 1}), {}),
    "client info": (
        "/mcp/stays",
        _call(
            "summarize_stays", STAYS, meta={**META, "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}
        ),
        {},
    ),
    "bad client info": (
        "/mcp/stays",
        _call("summarize_stays", STAYS, meta={**META, "io.modelcontextprotocol/clientInfo": 5}),
        {},
    ),
    "run id in _meta": ("/mcp/stays", _call("summarize_stays", STAYS, meta={**META, "kumitate/run_id": "r-meta"}), {}),
    "idempotency key": (
        "/mcp/household",
        _call("get_duplicate_stats", {"idempotency_key": "k1"}),
        {"Mcp-Name": "get_duplicate_stats"},
    ),
    "bad idempotency key": (
        "/mcp/household",
        _call("get_duplicate_stats", {"idempotency_key": ""}),
        {"Mcp-Name": "get_duplicate_stats"},
    ),
    "unknown tool": ("/mcp/stays", _call("nope", {}), {"Mcp-Name": "nope"}),
    "tool of another service": ("/mcp/stays", _call("get_duplicate_stats", {}), {"Mcp-Name": "get_duplicate_stats"}),
    "mcp-name mismatch": ("/mcp/stays", _call("summarize_stays", STAYS), {"Mcp-Name": "other"}),
    "padded mcp-name": ("/mcp/stays", _call("summarize_stays", STAYS), {"Mcp-Name": "  summarize_stays  "}),
    "no mcp-name": ("/mcp/stays", _call("summarize_stays", STAYS), {"Mcp-Name": ""}),
    "version header mismatch": ("/mcp/stays", _call("summarize_stays", STAYS), {"MCP-Protocol-Version": "2099-01-01"}),
    "no _meta": ("/mcp/stays", _call("summarize_stays", STAYS, meta=None), {}),
    "unsupported version": (
        "/mcp/stays",
        _call("summarize_stays", STAYS, meta={**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}),
        {"MCP-Protocol-Version": "2099-01-01"},
    ),
    "progress token": ("/mcp/stays", _call("summarize_stays", STAYS, meta={**META, "progressToken": "p"}), {}),
    "elicitation client": (
        "/mcp/stays",
        _call(
            "summarize_stays", STAYS, meta={**META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
        ),
        {},
    ),
    "sampling and roots client": (
        "/mcp/stays",
        _call(
            "summarize_stays",
            STAYS,
            meta={**META, "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "roots": {}}},
        ),
        {},
    ),
    "arguments not an object": ("/mcp/stays", _call("summarize_stays", [1]), {}),
    "bool id": ("/mcp/stays", _call("summarize_stays", STAYS, request_id=True), {}),
    "malformed json": ("/mcp/stays", b'{"jsonrpc": "2.0", "id": 1, ', {}),
    "notification": ("/mcp/stays", {"jsonrpc": "2.0", "method": "tools/call", "params": {"_meta": META}}, {}),
    "json accept only": ("/mcp/stays", _call("summarize_stays", STAYS), {"Accept": "application/json"}),
}


def _headers(extra: dict[str, str]) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "summarize_stays",
        "X-Run-Id": "run-lean-1",
        "X-Trace-Id": "0af7651916cd43dd8448eb211c80319c",
    }
    return {k: v for k, v in (headers | extra).items() if v}


@contextmanager
def _lean(app: InProcessApp, on: bool) -> Iterator[None]:
    endpoints = [app.app.mcp_all, *app.app.mcp_services.values()]
    lean = [e for e in endpoints if isinstance(e, LeanMCP)]
    assert len(lean) == len(endpoints), "every MCP endpoint has the lean path in front (KUMITATE_MCP_LEAN on)"
    for endpoint in lean:
        endpoint.enabled = on
    try:
        yield
    finally:
        for endpoint in lean:
            endpoint.enabled = True


async def _both(app: InProcessApp, path: str, body: Any, extra: dict[str, str]) -> list[tuple[int, str, bytes]]:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    answers = []
    for on in (True, False):
        with _lean(app, on):
            reply = await app.http.post(path, content=content, headers=_headers(extra))
        answers.append((reply.status_code, reply.headers.get("content-type", ""), reply.content))
    return answers


@pytest.mark.parametrize("case", list(CASES))
async def test_lean_answers_as_fastmcp(in_process_app: InProcessApp, case: str) -> None:
    lean, fastmcp = await _both(in_process_app, *CASES[case])
    assert lean == fastmcp


async def test_lean_path_serves_a_call(in_process_app: InProcessApp) -> None:
    """The lean path really answers (not fastmcp behind it): its endpoint's fastmcp app is never entered."""
    endpoint = in_process_app.app.mcp_services["stays"]
    assert isinstance(endpoint, LeanMCP)
    entered = []
    fallback = endpoint.fallback

    async def spy(scope: Any, receive: Any, send: Any) -> None:
        entered.append(scope["path"])
        await fallback(scope, receive, send)

    endpoint.fallback = spy
    try:
        path, body, extra = CASES["call"]
        reply = await in_process_app.http.post(path, content=json.dumps(body).encode(), headers=_headers(extra))
        assert reply.status_code == 200 and reply.json()["result"]["isError"] is False
        assert entered == []
        path, body, extra = CASES["unknown tool"]
        await in_process_app.http.post(path, content=json.dumps(body).encode(), headers=_headers(extra))
        assert entered == ["/"]  # handed on, body replayed
    finally:
        endpoint.fallback = fallback


TIMINGS = re.compile(rb'(\\?"(?:elapsed_ms|uptime_s)\\?":)[0-9.]+')
"""A duration a result reports (yana's `elapsed_ms`), in the text content and in structuredContent."""


@pytest.mark.slow  # ~8 s; the cases above cover each kind of request
async def test_read_only_examples_answer_as_fastmcp(in_process_app: InProcessApp, spec_tree: SpecTree) -> None:
    """Every example of a read-only tool, through /mcp, on both paths (read-only: the second run sees
    the same state), byte for byte but for the durations a result reports."""
    differ = []
    for tool, example in all_examples(spec_tree):
        if not tool.annotations.read_only_hint or not isinstance(example.input, dict):
            continue
        body = _call(tool.name, example.input)
        answers = await _both(in_process_app, "/mcp", body, {"Mcp-Name": tool.name})
        lean, fastmcp = [(status, media, TIMINGS.sub(rb"\g<1>0", raw)) for status, media, raw in answers]
        if lean != fastmcp:
            differ.append(f"{tool.name}:{example.name}")
    assert differ == []

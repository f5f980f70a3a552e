"""The lean MCP path: a stateless 2026-07-28 `tools/call` answered without the SDK's machinery.

A 2026-07-28 request stands alone (no session, its protocol version and client capabilities in
the params' `_meta`, `Mcp-Method`/`Mcp-Name` headers), so it needs no session manager, no task group,
no SSE deferral window and no per-request server runner: one JSON parse, the envelope and header
checks, the same kumitate pipeline `SpecTool.run` calls (so authentication, rate limits,
idempotency, deadlines and bulkheads all apply as before), and one JSON reply. Those layers cost
several times the call itself (issue 32: ~0.8x a bare FastMCP server before this path).

The lean path only answers what it can answer exactly as fastmcp would, and hands everything
else to the fastmcp app unchanged (the body it read is replayed): any other method, a tool this
endpoint does not serve, a request fastmcp would refuse or treat specially (a bad envelope or
header, a malformed id or params, a progress token, a requested log level, a client that can be
asked (elicitation, sampling or roots: `kumitate.transports.mcp.elicit`), a tool that requires a
client capability (`mcp.requires_client`), a task-capable tool called by a client that declares
extensions (it may ask for a task) or one that runs only as a task, a multi-round-trip retry,
`Mcp-Param-*` headers, an invalid idempotency key, a body over the cap).
So every protocol decision (error codes, the unknown-tool answer, the error-result shape) stays
where it is made today; tests/e2e/test_mcp_lean.py compares both paths' answers byte for byte.

The checks that decide the envelope are the SDK's own (`classify_inbound_request`,
`validate_client_request`); the result is `kumitate.transports.mcp`'s `tool_result` turned into
the wire form the SDK's runner would produce.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import msgspec
from fastmcp import FastMCP
from fastmcp.tools import ToolResult
from mcp.shared.inbound import InboundModernRoute, classify_inbound_request, x_mcp_header_map
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    LOG_LEVEL_META_KEY,
    SERVER_INFO_META_KEY,
    CallToolResult,
)
from mcp_types import methods as mcp_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.applications import Starlette

from kumitate.intake import JsonBody
from kumitate.observability import correlation
from kumitate.pipeline import CallRequest
from kumitate.policies.idempotency import MAX_KEY_LENGTH
from kumitate.runtime import Runtime
from kumitate.transports.disconnect import ClientGone, unless_disconnected
from kumitate.transports.edge.asgi import IDS_KEY, ASGIApp, Receive, Scope, Send
from kumitate.transports.edge.hosts import base_url_of
from kumitate.transports.http import CLIENT_CLOSED_REQUEST
from kumitate.transports.mcp.elicit import CAPABILITIES as ASKABLE
from kumitate.transports.mcp.results import tool_result
from kumitate.transports.mcp.scopes import read_body
from kumitate.transports.mcp.tools import IDEMPOTENCY_ARGUMENT, SpecTool
from kumitate.transports.mcp.versions import KnownVersions

LEAN_METHODS = frozenset({"tools/call"})
"""The methods answered here; any other goes to fastmcp as it came."""
PARAMS_KEYS = frozenset({"name", "arguments", "_meta"})
"""A `tools/call` with any other parameter (a multi-round-trip retry, a task request) goes to fastmcp."""
ROUTING_HEADERS = frozenset({"mcp-protocol-version", "mcp-method", "mcp-name"})
_DECODER = msgspec.json.Decoder()
BODY_READ = asyncio.Event()
BODY_READ.set()  # the lean path reads the whole body before the call: a disconnect is all receive() can bring


def _accepts(accept: str) -> bool:
    """Whether the SDK would accept the request's Accept header in SSE mode (JSON and SSE both acceptable)."""
    types = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return "*/*" in types or (
        bool(types & {"application/json", "application/*"}) and bool(types & {"text/event-stream", "text/*"})
    )


class LeanMCP:
    """The ASGI app of one MCP endpoint: the lean path in front of the endpoint's fastmcp app."""

    def __init__(self, server: FastMCP, fallback: ASGIApp, runtime: Runtime, body_cap: int) -> None:
        self.server = server
        self.fallback = fallback
        self.runtime = runtime
        self.body_cap = body_cap
        self.off_loop_bytes: int = runtime.policies.off_loop_bytes
        self.enabled = True
        self._tools: dict[str, SpecTool] | None = None
        self._stamp = {"name": server.name, "version": server.version}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a call the lean path can (a modern POST of a lean method with a JSON body); fall back to
        the full MCP app for anything else."""
        if not (self.enabled and scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == "/"):
            await self.fallback(scope, receive, send)
            return
        raw = scope["headers"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}
        if (
            headers.get("mcp-method") not in LEAN_METHODS
            or headers.get("mcp-protocol-version") not in MODERN_PROTOCOL_VERSIONS
            or not headers.get("content-type", "").startswith("application/json")
            or not _accepts(headers.get("accept", ""))
            or sum(1 for k, _ in raw if k.decode("latin-1").lower() in ROUTING_HEADERS) != len(ROUTING_HEADERS)
            or any(k.startswith("mcp-param-") for k in headers)
        ):
            await self.fallback(scope, receive, send)
            return
        body, receive = await read_body(receive, self.body_cap)
        try:
            reply = await self._answer(scope, receive, headers, body) if body is not None else None
        except ClientGone:
            status, reply = CLIENT_CLOSED_REQUEST, b""  # nobody reads it
        else:
            status = 200
        if reply is None:
            await self.fallback(scope, receive, send)
            return
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-length", str(len(reply)).encode()), (b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": reply})

    async def _answer(self, scope: Scope, receive: Receive, headers: dict[str, str], body: bytes) -> bytes | None:
        """The reply to a `tools/call` the lean path takes, or None for fastmcp to answer; ClientGone
        when the client disconnects first (the call is cancelled, as fastmcp cancels it)."""
        try:
            message = _envelope(body) if len(body) > self.off_loop_bytes else _DECODER.decode(body)
        except msgspec.DecodeError:
            return None
        if not (
            isinstance(message, dict)
            and message.keys() == {"jsonrpc", "id", "method", "params"}
            and message["jsonrpc"] == "2.0"
            and message["method"] == "tools/call"
            and type(message["id"]) in (int, str)
        ):
            return None
        params = message["params"]
        if not (isinstance(params, dict) and params.keys() <= PARAMS_KEYS):
            return None
        name = params.get("name")
        tool = (await self._served()).get(name) if isinstance(name, str) else None
        split = _without_key(params.get("arguments", {}))
        meta = params.get("_meta")
        if tool is None or split is None or not isinstance(meta, dict):
            return None
        verdict = classify_inbound_request(message, headers=headers)
        if not isinstance(verdict, InboundModernRoute):
            return None
        capabilities = meta.get(CLIENT_CAPABILITIES_META_KEY)
        if (
            "progressToken" in meta
            or LOG_LEVEL_META_KEY in meta  # log messages go on a stream: fastmcp's
            or not isinstance(capabilities, dict)
            or not capabilities.keys().isdisjoint(ASKABLE)  # a handler may ask it: fastmcp's context
            or tool.binding.requires_client  # its capability check (-32021) is fastmcp's
            or (tool.binding.task_timeout_s and "extensions" in capabilities)  # may be a task (kumitate.tasks)
            or tool.binding.task_required  # -32021 without the tasks extension (kumitate.tasks.mcp)
        ):
            return None
        try:  # the SDK's own check of the envelope (clientInfo, capabilities), without the arguments
            mcp_methods.validate_client_request(
                "tools/call", verdict.protocol_version, {"name": tool.name, "_meta": meta}
            )
        except (ValidationError, KeyError, ValueError):
            return None
        arguments, key = split
        if key is not None and not (isinstance(key, str) and 1 <= len(key) <= MAX_KEY_LENGTH):
            return None
        request = _call_request(scope, headers, meta, key)
        call = self.runtime.pipeline.call_tool(tool.binding, arguments, request)
        outcome = await unless_disconnected(receive, BODY_READ, call)
        result = self._wire_result(verdict.protocol_version, tool_result(outcome, tool.binding.text_content))
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        return json.dumps(reply, separators=(",", ":")).encode()

    def _wire_result(self, version: str, result: ToolResult) -> dict[str, object]:
        """What the SDK runner sends for fastmcp's CallToolResult: the version's result surface,
        `resultType` and the serverInfo stamp (as the SDK's ServerRunner serializes it)."""
        wire = result.to_mcp_result()
        assert isinstance(wire, CallToolResult)  # tool_result always sets meta, which makes it a CallToolResult
        dumped = wire.model_dump(by_alias=True, mode="json", exclude_none=True)
        dumped = mcp_methods.serialize_server_result("tools/call", version, dumped)
        dumped.setdefault("resultType", "complete")
        meta = dumped.get("_meta")
        if meta is None:
            dumped["_meta"] = {SERVER_INFO_META_KEY: dict(self._stamp)}
        elif isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None:
            dumped["_meta"] = {**meta, SERVER_INFO_META_KEY: dict(self._stamp)}
        return dumped

    async def _served(self) -> Mapping[str, SpecTool]:
        """The spec tools this endpoint's server holds (those a toolset removed are not among them),
        except one whose advertised input schema declares `x-mcp-header` (its headers are the SDK's to check)."""
        if self._tools is None:
            tools = await self.server.local_provider.list_tools()
            self._tools = {t.name: t for t in tools if isinstance(t, SpecTool) and not x_mcp_header_map(t.parameters)}
        return self._tools


_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])


def _envelope(body: bytes) -> dict[str, Any]:
    """A large request decoded except its arguments, which stay raw JSON (`msgspec.Raw`, a slice of the body):
    the scanner only finds where they end, so the loop holds no parse of a whole upload."""
    members = _MEMBERS.decode(body)
    message: dict[str, Any] = {k: _DECODER.decode(v) for k, v in members.items() if k != "params"}
    if "params" in members:
        params = _MEMBERS.decode(members["params"])
        message["params"] = {k: v if k == "arguments" else _DECODER.decode(v) for k, v in params.items()}
    return message


def _without_key(arguments: object) -> tuple[dict[str, object] | JsonBody, object] | None:
    """The arguments without the idempotency argument, and its value (None when absent); None when they are
    not a JSON object. A large body's arguments come raw (`msgspec.Raw`, see `_envelope`) and go on as a
    `JsonBody`, parsed off the loop (kumitate.offloop): here their members are only scanned."""
    if isinstance(arguments, dict):
        if IDEMPOTENCY_ARGUMENT not in arguments:
            return arguments, None
        rest = dict(arguments)
        return rest, rest.pop(IDEMPOTENCY_ARGUMENT)
    if not isinstance(arguments, msgspec.Raw):
        return None
    try:
        members = _MEMBERS.decode(arguments)
    except msgspec.DecodeError:
        return None
    if IDEMPOTENCY_ARGUMENT not in members:
        return JsonBody(bytes(memoryview(arguments))), None
    key = _DECODER.decode(members.pop(IDEMPOTENCY_ARGUMENT))
    joined = b",".join(msgspec.json.encode(name) + b":" + bytes(memoryview(value)) for name, value in members.items())
    return JsonBody(b"{" + joined + b"}"), key


def _call_request(scope: Scope, headers: dict[str, str], meta: Mapping[str, object], key: str | None) -> CallRequest:
    """What `kumitate.transports.mcp.current_request` builds for the same request served by fastmcp."""
    state = scope.get("state") or {}
    client = scope.get("client")
    return CallRequest(
        transport="mcp",
        headers=headers,
        meta=meta,
        ids=correlation.from_meta(meta, state.get(IDS_KEY) or correlation.from_headers(headers)),
        client=client[0] if client else None,
        authorization=headers.get("authorization"),
        local=False,
        idempotency_key=key,
        base_url=base_url_of(scope),
    )


def lean_endpoint(runtime: Runtime, body_cap: int, enabled: bool, app: Starlette) -> ASGIApp:
    """The MCP endpoint to mount for fastmcp's `http_app` (its FastMCP server in `app.state`):
    the lean path in front of it, or the app itself when KUMITATE_MCP_LEAN is off."""
    if not enabled:
        return KnownVersions(app)
    return LeanMCP(app.state.fastmcp_server, KnownVersions(app), runtime, body_cap)

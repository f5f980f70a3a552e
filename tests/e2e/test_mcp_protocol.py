"""Issue 29: the MCP protocol as strict clients read it, in process (raw JSON-RPC through the app's
ASGI stack, and fastmcp's in-memory client over the MCP SDK's ClientSession).

The shapes asserted here are the ones docs/clients.md ("MCP wire shapes") writes down for every
MCP path, the lean stateless one included: an `isError` result has no `structuredContent` (the
code is in the text JSON and `_meta["io.kumitate/error"]`); an unknown tool or resource is
JSON-RPC −32602 with the catalogue body as `data` plus `name` or `uri`; capabilities say only
what is served, the same in `initialize` and `server/discover`; lists are paged and a foreign
cursor is −32602; a padded `Mcp-Name` is accepted.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema_rs
import pytest
from fastmcp import Client

from kumitate.client import mcp_result_body
from kumitate.transports.mcp import ERROR_META, build_server
from tests.conftest import InProcessApp, serve_in_process
from tests.e2e.mcp_raw import MCP_HEADERS

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
PAGE = 10
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
BAD_STAYS = {"stays": "not a list"}


@pytest.fixture(scope="module")
async def app(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> AsyncIterator[InProcessApp]:
    """Stateless (every request stands alone, as behind a balancer) and small pages."""
    data_dir = tmp_path_factory.mktemp("proto") / "var"
    async with serve_in_process(
        data_dir, seeded_data_dir, KUMITATE_MCP_STATELESS="1", KUMITATE_MCP_PAGE_SIZE=str(PAGE)
    ) as served:
        yield served


async def rpc(app: InProcessApp, method: str, params: dict[str, Any], *, era: str = LEGACY, name: str = "") -> Any:
    """One JSON-RPC request to /mcp; the response message (SSE or JSON)."""
    headers = {**MCP_HEADERS, "MCP-Protocol-Version": era}
    if era == MODERN:
        params = {**params, "_meta": ENVELOPE}
        headers |= {"Mcp-Method": method} | ({"Mcp-Name": name} if name else {})
    response = await app.http.post(
        "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, headers=headers
    )
    return message(response)


def message(response: httpx.Response) -> Any:
    """The JSON-RPC message of a response, sent as SSE or as JSON."""
    if response.headers["content-type"].startswith("text/event-stream"):
        return next(json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:"))
    return response.json()


def strict_check(result: Any, output_schema: dict[str, Any]) -> None:
    """What a strict client does with a result (typescript-sdk, #1943): structuredContent, when
    present (on an error too), must validate against the tool's outputSchema; a success must have it."""
    if result.structured_content is not None:
        errors = [e.message for e in jsonschema_rs.validator_for(output_schema).iter_errors(result.structured_content)]
        assert not errors, errors
    else:
        assert result.is_error, "a success without structuredContent"


async def test_an_error_result_passes_a_validating_client(app: InProcessApp) -> None:
    async with Client(build_server(app.runtime, ["stays"])) as client:
        tool = next(t for t in await client.list_tools() if t.name == "summarize_stays")
        assert tool.output_schema  # an outputSchema the client validates results against
        # the MCP SDK's ClientSession validates structured output as results arrive: this call passing
        # proves the error shape raises nothing there; then the stricter rule of the TypeScript SDK
        failed = await client.call_tool_mcp("summarize_stays", BAD_STAYS)
        ok = await client.call_tool_mcp("summarize_stays", {"stays": []})
    assert failed.is_error and failed.structured_content is None
    strict_check(failed, tool.output_schema)
    strict_check(ok, tool.output_schema)
    body = mcp_result_body(failed)
    assert body["error"]["code"] == "BAD_REQUEST" and body["run_id"] and body["trace_id"]
    assert failed.meta is not None and failed.meta[ERROR_META] == body["error"]
    assert failed.meta["kumitate"]["run_id"] == body["run_id"]
    http = await app.http.post("/v1/stays/summarize_stays", json=BAD_STAYS)
    assert http.status_code == 400 and http.json()["error"]["code"] == body["error"]["code"]


@pytest.mark.parametrize("era", [LEGACY, MODERN])
async def test_an_unknown_tool_is_invalid_params(app: InProcessApp, era: str) -> None:
    answer = await rpc(app, "tools/call", {"name": "no_such_tool", "arguments": {}}, era=era, name="no_such_tool")
    assert "result" not in answer
    assert answer["error"]["code"] == -32602
    data = answer["error"]["data"]
    assert data["name"] == "no_such_tool" and data["error"]["code"] == "NOT_FOUND" and data["run_id"]


async def test_an_unknown_resource_names_its_uri(app: InProcessApp) -> None:
    for uri in ("chart://no-such-chart", "nothing://here"):
        answer = await rpc(app, "resources/read", {"uri": uri}, era=MODERN, name=uri)
        assert answer["error"]["code"] == -32602, answer
        assert answer["error"]["data"]["uri"] == uri and answer["error"]["data"]["error"]["code"]


async def test_capabilities_say_what_is_served_in_both_eras(app: InProcessApp) -> None:
    init = await rpc(
        app, "initialize", {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    )
    discover = await rpc(app, "server/discover", {}, era=MODERN)
    handshake, modern = init["result"]["capabilities"], discover["result"]["capabilities"]
    assert handshake == {k: v for k, v in modern.items() if k != "extensions"}
    for capabilities in (handshake, modern):
        assert capabilities["logging"] == {}  # a handler's ctx.log sends notifications/message
        assert "prompts" not in capabilities  # no prompt on this server
        assert capabilities["tools"] == {"listChanged": False}
        assert capabilities["resources"]["listChanged"] is False
        assert "io.modelcontextprotocol/ui" not in capabilities.get("extensions", {})
    assert {LEGACY, "2025-06-18", MODERN} <= set(discover["result"]["supportedVersions"])


@pytest.mark.parametrize("era", [LEGACY, MODERN])
@pytest.mark.parametrize("method", ["prompts/list", "prompts/get"])
async def test_prompt_methods_without_prompts_are_method_not_found(app: InProcessApp, era: str, method: str) -> None:
    params = {"name": "summarize"} if method == "prompts/get" else {}
    answer = await rpc(app, method, params, era=era, name="summarize" if method == "prompts/get" else "")
    assert "result" not in answer, answer
    assert answer["error"]["code"] == -32601
    assert "declares no prompts capability" in answer["error"]["message"]


async def test_prompts_are_declared_when_a_server_has_one(app: InProcessApp) -> None:
    server = build_server(app.runtime, ["stays"])
    server.prompt(lambda: "Summarize my stays.", name="summarize")
    for mode in ("legacy", "auto"):  # the handshake, and server/discover
        async with Client(server, mode=mode) as client:
            assert client.server_capabilities is not None
            assert client.server_capabilities.prompts is not None, mode
            assert [p.name for p in await client.list_prompts()] == ["summarize"]


async def test_lists_come_in_pages_and_a_foreign_cursor_is_invalid_params(app: InProcessApp) -> None:
    names: list[str] = []
    params: dict[str, Any] = {}
    for _ in range(10):
        result = (await rpc(app, "tools/list", params))["result"]
        assert len(result["tools"]) <= PAGE
        names += [t["name"] for t in result["tools"]]
        if "nextCursor" not in result:
            break
        params = {"cursor": result["nextCursor"]}
    assert len(names) == len(set(names)) == sum(len(s.tools) for s in app.runtime.services.values()) > PAGE
    for method in ("tools/list", "resources/list"):
        answer = await rpc(app, method, {"cursor": "bogus"})
        assert answer["error"]["code"] == -32602, answer


async def test_a_padded_mcp_name_is_accepted(app: InProcessApp) -> None:
    params = {"name": "summarize_stays", "arguments": {"stays": []}}
    answer = await rpc(app, "tools/call", params, era=MODERN, name="  summarize_stays\t")
    assert "error" not in answer, answer
    assert answer["result"]["isError"] is False


def test_every_x_mcp_header_is_valid(app: InProcessApp) -> None:
    """A spec marks a parameter with `x-mcp-header` in its JSON Schema; MCP's rules for it hold."""
    from mcp.shared.inbound import find_invalid_x_mcp_header, x_mcp_header_map

    marked = {}
    for service in app.runtime.services.values():
        for tool in service.tools:
            assert find_invalid_x_mcp_header(tool.input_schema) is None, tool.name
            marked |= {tool.name: x_mcp_header_map(tool.input_schema)} if x_mcp_header_map(tool.input_schema) else {}
    assert marked["get_attendance_rule"] == {("thread_id",): "Thread-Id"}


@pytest.mark.parametrize(("header", "accepted"), [("demo-k-of-n", True), ("other-thread", False), (None, False)])
async def test_a_marked_parameter_travels_as_an_mcp_param_header(
    app: InProcessApp, header: str | None, accepted: bool
) -> None:
    params = {"name": "get_attendance_rule", "arguments": {"thread_id": "demo-k-of-n"}, "_meta": ENVELOPE}
    headers = {**MCP_HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": params["name"]}
    if header is not None:
        headers["Mcp-Param-Thread-Id"] = header
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    answer = message(await app.http.post("/mcp", json=body, headers=headers))
    if accepted:
        assert answer["result"]["isError"] is False, answer
    else:
        assert answer["error"]["code"] == -32020, answer  # header mismatch: the body and the header disagree


async def test_a_resource_read_carries_its_declared_cache_hint(app: InProcessApp) -> None:
    declared = (await rpc(app, "resources/read", {"uri": "yana://version"}, era=MODERN, name="yana://version"))[
        "result"
    ]
    assert (declared["ttlMs"], declared["cacheScope"]) == (60000, "public")  # specs/yana/resources/version.yaml
    assert json.loads(declared["contents"][0]["text"])["server_version"]
    other = await rpc(app, "resources/read", {"uri": "kumitate://versions"}, era=MODERN, name="kumitate://versions")
    assert (other["result"]["ttlMs"], other["result"]["cacheScope"]) == (0, "private")  # undeclared: the default


def test_an_endpoints_lists_are_as_fresh_as_its_least_cacheable_declaration() -> None:
    from types import SimpleNamespace

    from kumitate.bindings import CacheHint
    from kumitate.transports.mcp.cache import list_hint

    def bindings(*caches: Any) -> list[Any]:
        return [SimpleNamespace(cache=CacheHint.parse(c)) for c in caches]

    assert list_hint(bindings({"ttl_ms": 60000, "scope": "public"}, {"ttl_ms": 5000, "scope": "public"})) == (
        5,
        "public",
    )
    assert list_hint(bindings({"ttl_ms": 60000, "scope": "public"}, {"ttl_ms": 60000})) == (60, "private")
    assert list_hint(bindings({"ttl_ms": 60000, "scope": "public"}, None)) == (None, None)
    assert list_hint(bindings({"ttl_ms": 500, "scope": "public"})) == (None, None)  # fastmcp's hint is whole seconds


@pytest.mark.parametrize("era", ["1999-01-01", "2099-01-01"])
async def test_an_unknown_protocol_version_is_named(app: InProcessApp, era: str) -> None:
    headers = {**MCP_HEADERS, "MCP-Protocol-Version": era}
    response = await app.http.post(
        "/mcp/stays", json={"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}}, headers=headers
    )
    assert response.status_code == 400
    answer = response.json()
    assert answer["id"] == 9 and answer["error"]["code"] == -32022
    assert f"unsupported MCP-Protocol-Version '{era}'" in answer["error"]["message"]
    assert answer["error"]["data"]["requested"] == era and MODERN in answer["error"]["data"]["supported"]

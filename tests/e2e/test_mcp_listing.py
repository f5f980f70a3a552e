"""The context bill (issue 29 item 7, kumitate/transports/mcp/listing.py).

Over streamable HTTP with tokens: a `stays`-only token's `tools/list` at `/mcp` lists only the
stays tool, a token with every scope and a caller without a token see all of them, and the
scoped caller's stateless calls (the lean path) still run its own tool and are refused another's.
In memory: the search mode's first `tools/list` is under 1.5k tokens and its search finds the
household import for "import my MoneyForward CSV"; the call proxy runs what search found.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from codegen.docs import estimate_tokens
from kumitate.runtime import Runtime
from kumitate.transports.mcp import build_server
from tests.conftest import LiveServer, app_settings, start_server, stop_server

pytestmark = pytest.mark.anyio

TOKENS = {
    "tok-stays": {"principal": "traveller", "scopes": ["stays"]},
    "tok-all": {"principal": "admin", "scopes": ["*"]},
}
SEARCH_BUDGET = 1500
VERSION = "2026-07-28"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("listing")
    live = start_server(root / "var", root / "server.log", seeded=seeded_data_dir, KUMITATE_TOKENS=json.dumps(TOKENS))
    yield live
    stop_server(live)


async def _names(server: LiveServer, token: str | None) -> set[str]:
    async with Client(StreamableHttpTransport(f"{server.url}/mcp", auth=token)) as client:
        return {t.name for t in await client.list_tools()}


@pytest.mark.slow  # a real server with tokens (start-up)
async def test_a_stays_token_lists_only_stays(server: LiveServer) -> None:
    everything = await _names(server, "tok-all")
    assert len(everything) > 20 and "import_household_data" in everything
    assert await _names(server, "tok-stays") == {"summarize_stays"}
    assert await _names(server, None) == everything  # no token: listed as before; a call answers 401


def _stateless_call(name: str, arguments: dict[str, object]) -> tuple[dict[str, str], bytes]:
    meta = {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
        "Authorization": "Bearer tok-stays",
    }
    return headers, json.dumps(body).encode()


@pytest.mark.slow  # a real server with tokens (start-up)
async def test_the_scoped_token_calls_its_tool_and_not_another(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        headers, body = _stateless_call("summarize_stays", {"stays": [{"code": "13101", "name": "千代田区"}]})
        ok = (await http.post("/mcp", content=body, headers=headers)).json()["result"]
        headers, body = _stateless_call("get_duplicate_stats", {})
        refused = (await http.post("/mcp", content=body, headers=headers)).json()["result"]
    assert ok["isError"] is False and ok["structuredContent"]["stats"]["valid_records"] == 1
    assert refused["isError"] is True and refused["_meta"]["io.kumitate/error"]["code"] == "FORBIDDEN"


@pytest.fixture(scope="module")
async def search_client(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> AsyncIterator[Client]:
    data_dir = tmp_path_factory.mktemp("search") / "var"
    shutil.copytree(seeded_data_dir, data_dir)
    runtime = Runtime(app_settings(data_dir, KUMITATE_MCP_TOOL_SEARCH="1"))
    try:
        async with Client(build_server(runtime)) as client:
            yield client
    finally:
        runtime.close()


async def test_search_mode_lists_little_and_finds_the_tool(search_client: Client) -> None:
    tools = await search_client.list_tools()
    entries = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    listed = json.dumps(entries, ensure_ascii=False, separators=(",", ":"))
    assert [t.name for t in tools] == ["search_tools", "call_tool"]
    assert estimate_tokens(listed) <= SEARCH_BUDGET
    found = await search_client.call_tool("search_tools", {"query": "import my MoneyForward CSV"})
    hits = found.structured_content["result"]
    assert hits[0]["name"] == "import_household_data" and "inputSchema" in hits[0] and "outputSchema" not in hits[0]
    stays = await search_client.call_tool("search_tools", {"query": "summarize GPS stays for a travel diary"})
    assert stays.structured_content["result"][0]["name"] == "summarize_stays"
    called = await search_client.call_tool(
        "call_tool", {"name": "summarize_stays", "arguments": {"stays": [{"code": "13101", "name": "千代田区"}]}}
    )
    assert called.structured_content["stats"]["valid_records"] == 1

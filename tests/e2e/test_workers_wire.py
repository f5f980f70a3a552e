"""A real server with KUMITATE_WORKERS=2: MCP works statelessly, state is shared through the files."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from PIL import Image

from kumitate.serving.workers import mcp_stateless, worker_count
from tests.conftest import LiveServer, start_server, stop_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

STAYS = {"stays": [{"code": "13101", "name": "千代田区", "ref": "a"}]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("workers")
    live = start_server(root / "var", root / "server.log", seeded=seeded_data_dir, KUMITATE_WORKERS="2")
    yield live
    stop_server(live)


def _workers(server: LiveServer) -> list[int]:
    """The worker processes uvicorn's supervisor runs (children that serve, not its resource tracker)."""
    children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children").read_text().split()
    return [int(pid) for pid in children if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]


def test_settings() -> None:
    assert worker_count({}) == 1 and worker_count({"KUMITATE_WORKERS": "4"}) == 4
    assert not mcp_stateless({}) and mcp_stateless({"KUMITATE_MCP_STATELESS": "1"})
    assert mcp_stateless({"KUMITATE_WORKERS": "2"})
    with pytest.raises(SystemExit):
        worker_count({"KUMITATE_WORKERS": "0"})


def test_two_worker_processes_serve(server: LiveServer) -> None:
    assert len(_workers(server)) == 2
    for _ in range(10):  # a fresh connection each time: the workers take turns accepting
        with httpx.Client(base_url=server.url) as http:
            assert http.post("/v1/stays/summarize_stays", json=STAYS).status_code == 200


def _no_keepalive(**kwargs: Any) -> httpx2.AsyncClient:
    """A new connection per request, so one session's requests reach both workers."""
    return httpx2.AsyncClient(**kwargs, limits=httpx2.Limits(max_keepalive_connections=0))


async def _mcp_session(url: str, n: int) -> list[str]:
    async with Client(StreamableHttpTransport(f"{url}/mcp", httpx_client_factory=_no_keepalive)) as client:
        names = [t.name for t in await client.list_tools()]
        assert "summarize_stays" in names
        summaries = []
        for i in range(n):
            result = await client.call_tool("summarize_stays", {"stays": [{"code": "1", "name": f"区{i}"}]})
            assert not result.is_error
            summaries.append(result.structured_content["summary"])
        resources = await client.list_resources()
        assert any(str(r.uri) == "kumitate://versions" for r in resources)
        return summaries


async def test_mcp_sessions_survive_requests_landing_on_either_worker(server: LiveServer) -> None:
    results = await asyncio.gather(*(_mcp_session(server.url, 6) for _ in range(4)))
    for summaries in results:
        assert summaries == [f"区{i}に滞在（時間不明）" for i in range(6)]


MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _rpc(url: str, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
    with httpx.Client(timeout=30) as http:  # a fresh connection per request
        return http.post(f"{url}/mcp", json=body, headers={**MCP_HEADERS, **headers})


def _result(response: httpx.Response) -> dict[str, Any]:
    text = response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return dict(json.loads(text)["result"])


def test_a_session_protocol_client_is_served_by_either_worker(server: LiveServer) -> None:
    """A 2025-06-18 client (initialize, then a session id on every request): with sessions in
    process memory, requests reaching the other worker would get 404 "session not found"."""
    init = _rpc(
        server.url,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {},
    )
    assert init.status_code == 200
    headers = {"mcp-protocol-version": "2025-06-18"}
    if "mcp-session-id" in init.headers:
        headers["mcp-session-id"] = init.headers["mcp-session-id"]
    assert _rpc(server.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers).status_code == 202
    for i in range(20):
        call = {"name": "summarize_stays", "arguments": {"stays": [{"code": "1", "name": f"区{i}"}]}}
        response = _rpc(server.url, {"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": call}, headers)
        assert response.status_code == 200, (i, response.status_code, response.text[:200])
        assert _result(response)["structuredContent"]["summary"] == f"区{i}に滞在（時間不明）"
    listed = _rpc(server.url, {"jsonrpc": "2.0", "id": 99, "method": "tools/list"}, headers)
    assert "summarize_stays" in {t["name"] for t in _result(listed)["tools"]}


def _png() -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), (20, 120, 220)).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def test_an_idempotency_key_replays_on_whichever_worker_the_retry_reaches(server: LiveServer) -> None:
    body = {"brand_name": "ワーカー銘柄", "image": _png()}
    responses = []
    for _ in range(12):  # one connection per retry, so retries reach both workers
        with httpx.Client(base_url=server.url, timeout=60) as http:
            responses.append(http.post("/v1/ingest", json=body, headers={"Idempotency-Key": "workers-1"}))
    assert all(r.status_code == 200 for r in responses), [r.text[:200] for r in responses]
    assert "idempotent-replayed" not in responses[0].headers
    assert all(r.headers.get("idempotent-replayed") == "true" for r in responses[1:])
    stored = [{k: v for k, v in r.json().items() if k not in ("run_id", "trace_id")} for r in responses]
    assert all(body == stored[0] for body in stored)  # each replay carries its own ids, the rest is stored

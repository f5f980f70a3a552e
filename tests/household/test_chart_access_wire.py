"""Charts on a real server with tokens: only the creator (or an admin) downloads a chart (issue 21)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import McpError

from tests.conftest import LiveServer, start_server, stop_server

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

TOKENS = {
    "alice-token": {"principal": "alice", "scopes": ["household"]},
    "bob-token": {"principal": "bob", "scopes": ["household"]},
    "boss-token": {"principal": "boss", "scopes": ["household", "admin"]},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> Iterator[LiveServer]:
    root: Path = tmp_path_factory.mktemp("charts")
    live = start_server(root / "var", root / "server.log", KUMITATE_TOKENS=json.dumps(TOKENS), seeded=seeded_data_dir)
    yield live
    stop_server(live)


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_only_the_creator_and_admin_read_a_chart(server: LiveServer) -> None:
    args = {"year": 2025, "month": 6, "output_format": "image", "image_size": "640x480"}
    with httpx.Client(base_url=server.url, timeout=60) as http:
        made = http.post("/v1/household/get_monthly_household", json=args, headers=_auth("alice-token"))
        assert made.status_code == 200, made.text
        path = f"/api/charts/{made.json()['chart']['chart_id']}"
        assert http.get(path, headers=_auth("alice-token")).status_code == 200
        assert http.get(path, headers=_auth("boss-token")).status_code == 200
        other = http.get(path, headers=_auth("bob-token"))
        assert other.status_code == 404 and other.json()["error"]["code"] == "CHART_NOT_FOUND"
        assert http.get(path).status_code == 401


def _mcp(server: LiveServer, token: str) -> Client:
    return Client(StreamableHttpTransport(f"{server.url}/mcp", headers=_auth(token)))


async def test_only_the_creator_and_admin_read_a_chart_over_mcp(server: LiveServer) -> None:
    args = {"year": 2025, "month": 6, "output_format": "image", "graph_type": "bar"}
    async with _mcp(server, "bob-token") as bob:
        made = await bob.call_tool("get_monthly_household", args)
        uri = f"chart://{made.structured_content['chart']['chart_id']}"
        assert (await bob.read_resource(uri))[0].mime_type == "image/png"
    async with _mcp(server, "boss-token") as boss:
        assert (await boss.read_resource(uri))[0].mime_type == "image/png"
    async with _mcp(server, "alice-token") as alice:
        with pytest.raises(McpError, match=r"CHART_NOT_FOUND|not found|見つかりません"):
            await alice.read_resource(uri)

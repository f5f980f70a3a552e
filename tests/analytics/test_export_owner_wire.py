"""On the wire, with tokens: an export handle is readable by its creator and by admin/"*", nobody else (issue 21)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from tests.conftest import LiveServer, start_server, stop_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOKENS = {
    "t-alice": {"principal": "alice", "scopes": ["analytics"]},
    "t-bob": {"principal": "bob", "scopes": ["analytics"]},
    "t-admin": {"principal": "ops", "scopes": ["analytics", "admin"]},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    root: Path = tmp_path_factory.mktemp("owner_wire")
    live = start_server(
        root / "var",
        root / "server.log",
        KUMITATE_TOKENS=json.dumps(TOKENS),
        KUMITATE_ANALYTICS_SCALE="0.05",
        KUMITATE_SERVICES="analytics",
    )
    yield live
    stop_server(live)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_http_and_mcp_reads_follow_the_owner(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as http:
        made = await http.post(
            "/v1/analytics/export",
            json={"query": "SELECT activity_id FROM activities", "format": "csv"},
            headers=bearer("t-alice"),
        )
        assert made.status_code == 200, made.text
        handle = made.json()["handle"]
        path = f"/v1/analytics/exports/{handle}"
        mine = await http.get(path, headers=bearer("t-alice"))
        admin = await http.get(path, headers=bearer("t-admin"))
        other = await http.get(path, headers=bearer("t-bob"))
    assert mine.status_code == 200 and mine.content.startswith(b"activity_id")
    assert admin.status_code == 200 and admin.content == mine.content
    assert other.status_code == 404 and other.json()["error"]["code"] == "EXPORT_NOT_FOUND"

    transport = StreamableHttpTransport(f"{server.url}/mcp", headers=bearer("t-bob"))
    async with Client(transport) as bob:
        with pytest.raises(Exception) as info:
            await bob.read_resource(f"export://{handle}")
    data = getattr(getattr(info.value, "error", None), "data", None) or getattr(info.value, "data", None)
    assert isinstance(data, dict) and data["error"]["code"] == "EXPORT_NOT_FOUND", repr(info.value)
    transport = StreamableHttpTransport(f"{server.url}/mcp", headers=bearer("t-alice"))
    async with Client(transport) as alice:
        contents = await alice.read_resource(f"export://{handle}")
    assert len(contents) == 1

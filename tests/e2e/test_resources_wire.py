"""Binary resources and attachments on the wire: charts (household; over a real socket, with MCP
streamable HTTP) and export files (analytics; HTTP only, in process)."""

from __future__ import annotations

import io

import httpx
import pytest
from fastmcp import Client
from PIL import Image

from tests.conftest import InProcessApp, LiveServer

pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_chart_is_served_over_http_and_as_mcp_image_content(live_server: LiveServer) -> None:
    arguments = {"year": 2025, "month": 6, "output_format": "image", "graph_type": "bar", "image_size": "640x480"}
    async with httpx.AsyncClient(base_url=live_server.url, timeout=60) as http:
        body = (await http.post("/v1/household/get_monthly_household", json=arguments)).json()
        chart = body["chart"]
        png = await http.get(f"/api/charts/{chart['chart_id']}")
        missing = await http.get("/api/charts/" + "0" * 32)
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    assert Image.open(io.BytesIO(png.content)).size == (640, 480)
    assert chart["url"].endswith(f"/api/charts/{chart['chart_id']}")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "CHART_NOT_FOUND"

    async with Client(f"{live_server.url}/mcp") as client:
        result = await client.call_tool("get_monthly_household", arguments)
        images = [c for c in result.content if c.type == "image"]
        contents = await client.read_resource(f"chart://{chart['chart_id']}")
    assert len(images) == 1 and images[0].mime_type == "image/png"
    assert contents[0].mime_type == "image/png"


@pytest.mark.parametrize(
    ("fmt", "media_type", "magic"),
    [("csv", "text/csv", b"activity_id"), ("parquet", "application/vnd.apache.parquet", b"PAR1")],
)
async def test_export_is_downloaded_with_its_own_media_type(
    in_process_app: InProcessApp, fmt: str, media_type: str, magic: bytes
) -> None:
    http = in_process_app.http
    export = (
        await http.post("/v1/analytics/export", json={"query": "SELECT activity_id FROM activities", "format": fmt})
    ).json()
    assert "/" not in export["handle"]
    download = await http.get(f"/v1/analytics/exports/{export['handle']}")
    unknown = await http.get("/v1/analytics/exports/" + "f" * 32)
    assert download.status_code == 200
    assert download.headers["content-type"].startswith(media_type)
    assert download.content.startswith(magic)
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "EXPORT_NOT_FOUND"

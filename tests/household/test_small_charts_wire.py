"""Issue 35, item 2: `image_size: "200x150"` (the peer's chat-bubble thumbnail) renders, on HTTP and MCP."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from fastmcp import Client
from mcp.types import ImageContent

from kumitate.transports.mcp import build_server
from tests.conftest import InProcessApp

from .test_charts import check_png

pytestmark = pytest.mark.anyio

CALLS = [
    ("get_monthly_household", {"year": 2025, "month": 6, "graph_type": "pie"}),
    ("get_monthly_household", {"year": 2025, "month": 6, "graph_type": "bar"}),
    ("get_category_trend", {"graph_type": "line"}),
]


def _args(arguments: dict[str, Any]) -> dict[str, Any]:
    return {**arguments, "output_format": "image", "image_size": "200x150"}


@pytest.mark.parametrize(("tool", "arguments"), CALLS)
async def test_a_thumbnail_over_http(in_process_app: InProcessApp, tool: str, arguments: dict[str, Any]) -> None:
    response = await in_process_app.http.post(f"/v1/household/{tool}", json=_args(arguments))
    assert response.status_code == 200, response.text
    chart = response.json()["chart"]
    assert (chart["width"], chart["height"]) == (200, 150)
    png = await in_process_app.http.get(f"/api/charts/{chart['chart_id']}")
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    check_png(png.content, (200, 150))


@pytest.mark.parametrize(("tool", "arguments"), CALLS)
async def test_a_thumbnail_over_mcp(in_process_app: InProcessApp, tool: str, arguments: dict[str, Any]) -> None:
    async with Client(build_server(in_process_app.runtime, ["household"])) as client:
        result = await client.call_tool(tool, _args(arguments))
    assert result.structured_content is not None
    chart = result.structured_content["chart"]
    assert (chart["width"], chart["height"]) == (200, 150)
    images = [c for c in result.content if isinstance(c, ImageContent)]
    assert len(images) == 1 and images[0].mimeType == "image/png"
    check_png(base64.b64decode(images[0].data), (200, 150))


@pytest.mark.parametrize("size", ["199x150", "200x149"])
async def test_below_the_thumbnail_is_still_refused(in_process_app: InProcessApp, size: str) -> None:
    arguments = {"year": 2025, "month": 6, "output_format": "image", "image_size": size}
    response = await in_process_app.http.post("/v1/household/get_monthly_household", json=arguments)
    assert response.status_code == 400 and response.json()["error"]["code"] == "BAD_REQUEST"
    assert "image_size" in response.json()["error"]["message"]

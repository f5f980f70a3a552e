"""Subscribers of a brand's or a brewery's labels hear when an ingest adds one (issue 29), over a real
MCP session; an image that is not one, or one already known (dedup), says nothing (updates arrive in
order: see tests/subscribed.py)."""

from __future__ import annotations

import base64
import io
import json
import random
from pathlib import Path
from urllib.parse import quote

import pytest
from PIL import Image

from kumitate.runtime import Runtime
from tests.conftest import app_settings
from tests.subscribed import subscribed

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")]

BRAND, BREWERY = "yana://brands/試験銘柄", "yana://breweries/試験酒造"


def label_image(seed: int) -> str:
    """A PNG no knowledge base holds yet (random pixels), base64."""
    pixels = random.Random(seed).randbytes(64 * 64 * 3)
    out = io.BytesIO()
    Image.frombytes("RGB", (64, 64), pixels).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


async def test_a_new_label_tells_its_brand_and_brewery_subscribers(tmp_path: Path) -> None:
    runtime = Runtime(app_settings(tmp_path / "var"), services=["yana"])
    try:
        async with subscribed(runtime, [BRAND, BREWERY]) as (client, heard):
            label = {"brand_name": " 試験銘柄 ", "brewery": "試験酒造", "image": label_image(1)}
            broken = await client.call_tool_mcp("ingest", {**label, "image": base64.b64encode(b"no image").decode()})
            assert broken.isError
            await client.call_tool("ingest", label)
            assert await heard.until(BREWERY) == [BRAND, BREWERY]  # the brand as stored: stripped
            again = await client.call_tool("ingest", label)
            assert again.structured_content["dedup"] is True
            await client.call_tool("ingest", {"brand_name": "試験銘柄", "image": label_image(2)})
            assert await heard.until(BRAND) == [BRAND]  # the dedup said nothing; no brewery given, none said
            assert len(json.loads((await client.read_resource(BRAND))[0].text)["labels"]) == 2
    finally:
        runtime.close()


async def test_a_subscriber_that_percent_encodes_the_uri_hears_it_under_its_own_spelling(tmp_path: Path) -> None:
    """A client expanding `yana://breweries/{brewery}` as RFC 6570 does sends the name percent-encoded."""
    encoded = "yana://breweries/" + quote("試験酒造")
    runtime = Runtime(app_settings(tmp_path / "var"), services=["yana"])
    try:
        async with subscribed(runtime, [encoded]) as (client, heard):
            await client.call_tool("ingest", {"brand_name": "試験銘柄", "brewery": "試験酒造", "image": label_image(3)})
            assert await heard.until(encoded) == [encoded]
    finally:
        runtime.close()

"""/metrics, in process: off by default, token-protected when configured, counting what users do."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fastmcp import Client
from prometheus_client.parser import text_string_to_metric_families

from kumitate.transports.mcp import build_server
from tests.conftest import InProcessApp, serve_in_process

pytestmark = pytest.mark.anyio

SECRET = "scrape-secret"
STAYS = {"stays": [{"code": "13101", "name": "千代田区秘密"}]}
INGEST = {"uri": "file:data/yana/images/label_0001.png", "brand_name": "獺祭"}


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> AsyncIterator[InProcessApp]:
    root = tmp_path_factory.mktemp("metrics")
    async with serve_in_process(root / "var", seeded_data_dir, KUMITATE_METRICS_TOKEN=SECRET) as served:
        yield served


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


async def test_metrics_are_off_unless_configured(in_process_app: InProcessApp) -> None:
    response = await in_process_app.http.get("/metrics")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"


async def test_metrics_count_calls_on_both_transports(server: InProcessApp) -> None:
    """MCP through the app's own runtime in memory: one pipeline counts both transports."""
    http = server.http
    assert (await http.get("/metrics")).status_code == 401
    assert (await http.post("/v1/stays/summarize_stays", json=STAYS)).status_code == 200
    assert (await http.post("/v1/stays/summarize_stays", json={"stays": 1})).status_code == 400
    for _ in range(2):
        replay = await http.post("/v1/ingest", json=INGEST, headers={"Idempotency-Key": "metrics-1"})
        assert replay.status_code == 200
    async with Client(build_server(server.runtime)) as client:
        await client.call_tool("summarize_stays", STAYS)
    scraped = await http.get("/metrics", headers={"Authorization": f"Bearer {SECRET}"})
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain")
    found = samples(scraped.text)
    stays = {"service": "stays", "tool": "summarize_stays"}
    assert value(found, "kumitate_calls_total", **stays, transport="http", outcome="OK") == 1
    assert value(found, "kumitate_calls_total", **stays, transport="http", outcome="BAD_REQUEST") == 1
    assert value(found, "kumitate_calls_total", **stays, transport="mcp", outcome="OK") == 1
    assert value(found, "kumitate_call_duration_seconds_count", **stays, transport="http") == 2
    assert value(found, "kumitate_idempotent_replays_total", service="yana", tool="ingest") == 1
    assert value(found, "kumitate_calls_in_flight", **stays) == 0
    assert ("kumitate_worker_queue_depth", frozenset()) in found
    assert "千代田区秘密" not in scraped.text and "label_0001" not in scraped.text
    assert json.dumps(STAYS, ensure_ascii=False) not in scraped.text

"""DNS rebinding and cross-site requests, in process, on both transports: refused with the
catalogue's 403 before any body is read, and nothing is stored. (The gate is the app's outermost
ASGI layer; tests/e2e/test_toolsets_wire.py keeps one refusal on a real socket.)"""

from __future__ import annotations

import base64
import io
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from PIL import Image

from tests.conftest import InProcessApp, serve_in_process
from tests.e2e.mcp_raw import INITIALIZE, MCP_HEADERS

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> AsyncIterator[InProcessApp]:
    async with serve_in_process(
        tmp_path_factory.mktemp("origin") / "var",
        seeded_data_dir,
        KUMITATE_ALLOWED_HOSTS="kumitate.test",
        KUMITATE_ALLOWED_ORIGINS="https://app.example",
    ) as served:
        yield served


def assert_refused(response: httpx.Response) -> None:
    assert response.status_code == 403, response.text
    body = response.json()
    assert body["error"]["code"] == "ORIGIN_NOT_ALLOWED"
    assert body["error"]["retryable"] is False
    assert body["run_id"] == response.headers["x-run-id"]


def png() -> bytes:
    buffer = io.BytesIO()
    Image.frombytes("RGB", (32, 32), os.urandom(32 * 32 * 3)).save(buffer, format="PNG")
    return buffer.getvalue()


async def brand_hits(server: InProcessApp, brand: str) -> int:
    found = (await server.http.post("/v1/search", json={"query_text": brand})).json()
    return sum(1 for hit in found["hits"] if hit.get("brand_name") == brand)


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/v1/household/available_months", None),
        ("POST", "/v1/search", {"query_text": "獺祭"}),
        ("GET", "/schema/openapi.json", None),
    ],
)
async def test_a_rebound_host_is_refused_on_http(server: InProcessApp, method: str, path: str, body: object) -> None:
    response = await server.http.request(method, path, json=body, headers={"Host": "evil.example:8000"})
    assert_refused(response)


async def test_a_rebound_host_gets_no_mcp_session(server: InProcessApp) -> None:
    response = await server.http.post("/mcp/", json=INITIALIZE, headers={**MCP_HEADERS, "Host": "evil.example"})
    assert_refused(response)
    assert "mcp-session-id" not in response.headers


async def test_a_foreign_origin_gets_no_mcp_session(server: InProcessApp) -> None:
    response = await server.http.post(
        "/mcp/household",
        json=INITIALIZE,
        headers={**MCP_HEADERS, "Origin": "https://evil.example"},
        timeout=30,
    )
    assert_refused(response)
    assert "mcp-session-id" not in response.headers


async def test_mcp_without_origin_still_works(server: InProcessApp) -> None:
    response = await server.http.post("/mcp/", json=INITIALIZE, headers=MCP_HEADERS)
    assert response.status_code == 200, response.text


async def test_a_cross_site_multipart_ingest_stores_nothing(server: InProcessApp) -> None:
    brand = "越境書込試験"
    response = await server.http.post(
        "/v1/ingest",
        data={"brand_name": brand},
        files={"image": ("label.png", png(), "image/png")},
        headers={"Origin": "https://evil.example"},
        timeout=30,
    )
    assert_refused(response)
    assert await brand_hits(server, brand) == 0


async def test_a_cross_site_write_without_origin_is_refused(server: InProcessApp) -> None:
    """A browser that sent no Origin still says where the request came from."""
    image = base64.b64encode(png()).decode("ascii")
    response = await server.http.post(
        "/v1/ingest",
        json={"brand_name": "無起点書込試験", "image": image},
        headers={"Sec-Fetch-Site": "cross-site"},
        timeout=30,
    )
    assert_refused(response)
    assert await brand_hits(server, "無起点書込試験") == 0


@pytest.mark.parametrize("origin", ["null", "https://127.0.0.1.evil.example", "http://localhost:1"])
async def test_other_origins_are_refused(server: InProcessApp, origin: str) -> None:
    response = await server.http.post("/v1/search", json={"query_text": "獺祭"}, headers={"Origin": origin})
    assert_refused(response)


async def test_same_origin_and_configured_hosts_are_served(server: InProcessApp) -> None:
    same = await server.http.post("/v1/search", json={"query_text": "獺祭"}, headers={"Origin": server.url})
    assert same.status_code == 200, same.text
    assert "access-control-allow-origin" not in same.headers
    port = server.url.rsplit(":", 1)[1]
    for host in (f"localhost:{port}", f"kumitate.test:{port}", "[::1]"):
        response = await server.http.post("/v1/search", json={"query_text": "獺祭"}, headers={"Host": host})
        assert response.status_code == 200, (host, response.text)


async def test_a_configured_origin_gets_cors(server: InProcessApp) -> None:
    preflight = await server.http.options(
        "/v1/search",
        headers={
            "Origin": "https://app.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,idempotency-key",
        },
    )
    assert preflight.status_code == 200, preflight.text
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    response = await server.http.post(
        "/v1/search", json={"query_text": "獺祭"}, headers={"Origin": "https://app.example"}
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "https://app.example"
    assert "x-run-id" in response.headers["access-control-expose-headers"].lower()


async def test_no_cors_unless_configured(in_process_app: InProcessApp) -> None:
    preflight = await in_process_app.http.options(
        "/v1/search",
        headers={"Origin": "https://app.example", "Access-Control-Request-Method": "POST"},
    )
    assert preflight.status_code == 403
    assert "access-control-allow-origin" not in preflight.headers


async def test_refusals_are_logged_without_the_request(
    server: InProcessApp, capsys: pytest.CaptureFixture[str]
) -> None:
    await server.http.post("/v1/search", json={"query_text": "秘密の検索語"}, headers={"Host": "evil.example"})
    log = capsys.readouterr().err
    refused = [json.loads(line) for line in log.splitlines() if '"request_refused"' in line]
    assert refused and refused[-1]["code"] == "ORIGIN_NOT_ALLOWED"
    assert "秘密の検索語" not in log

"""Policies over real sockets, on HTTP and MCP streamable HTTP: auth, rate limit, idempotency, restart."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from PIL import Image

from kumitate.client import mcp_result_body
from tests.conftest import LiveServer, serve_in_process, start_server, stop_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOKENS = {
    "t-all": {"principal": "ops", "scopes": ["stays", "yana", "household", "attendance", "analytics"]},
    "t-stays": {"principal": "stays-only", "scopes": ["stays"]},
    "t-rate-http": {"principal": "rate-http", "scopes": ["yana"]},
    "t-rate-mcp": {"principal": "rate-mcp", "scopes": ["yana"]},
    "t-load": {"principal": "load", "scopes": ["yana"]},
    "t-idem": {"principal": "idem", "scopes": ["yana"]},
}
STAYS = {"stays": [{"code": "13101", "name": "千代田区"}]}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("policies")


@pytest.fixture(scope="module")
def server(data_dir: Path, seeded_data_dir: Path) -> Iterator[LiveServer]:
    live = start_server(
        data_dir / "var", data_dir / "server.log", seeded=seeded_data_dir, KUMITATE_TOKENS=json.dumps(TOKENS)
    )
    yield live
    stop_server(live)


def mcp(server: LiveServer, token: str | None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(StreamableHttpTransport(f"{server.url}/mcp", headers=headers))


def without_ids(body: Any) -> Any:
    """A replay is answered with this call's run_id/trace_id; the rest is the stored response."""
    return {k: v for k, v in body.items() if k not in ("run_id", "trace_id")}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({}, 401, "UNAUTHORIZED"),
        (bearer("nope"), 401, "UNAUTHORIZED"),
        (bearer("t-stays"), 403, "FORBIDDEN"),
        (bearer("t-all"), 200, None),
    ],
)
async def test_http_auth(server: LiveServer, headers: dict[str, str], status: int, code: str | None) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post("/v1/search", json={"query_text": "獺祭"}, headers=headers)
    assert response.status_code == status
    if code:
        assert response.json()["error"]["code"] == code
        assert response.json()["run_id"] == response.headers["x-run-id"]


@pytest.mark.parametrize(
    ("content_type", "body"),
    [("text/plain", b"hello"), ("application/json", b"{not json"), ("application/json", b"")],
)
async def test_http_auth_comes_before_the_body(server: LiveServer, content_type: str, body: bytes) -> None:
    """A caller without a token learns nothing about the body format: 401 (with the Bearer scheme),
    not the 400/415 an admitted caller gets for the same bytes."""
    async with httpx.AsyncClient(base_url=server.url) as http:
        anonymous = await http.post("/v1/search", content=body, headers={"Content-Type": content_type})
        admitted = await http.post(
            "/v1/search", content=body, headers={"Content-Type": content_type, **bearer("t-all")}
        )
    assert anonymous.status_code == 401 and anonymous.json()["error"]["code"] == "UNAUTHORIZED"
    assert anonymous.headers["www-authenticate"].startswith("Bearer")
    assert admitted.status_code in (400, 415) and "www-authenticate" not in admitted.headers


async def test_public_routes_need_no_token(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        assert (await http.get("/v1/healthz")).status_code == 200
        assert (await http.get("/v1/version")).json()["policy_version"] == "say-2025-09-23"
        assert (await http.get("/v1/versions")).status_code == 200


@pytest.mark.parametrize(
    ("token", "code"), [(None, "UNAUTHORIZED"), ("nope", "UNAUTHORIZED"), ("t-stays", "FORBIDDEN"), ("t-all", None)]
)
async def test_mcp_auth_uses_the_connection_bearer_token(
    server: LiveServer, token: str | None, code: str | None
) -> None:
    async with mcp(server, token) as client:
        result = await client.call_tool("search", {"query_text": "獺祭"}, raise_on_error=False)
        stays = await client.call_tool("summarize_stays", STAYS, raise_on_error=False)
    if code is None:
        assert not result.is_error and not stays.is_error
    else:
        assert result.is_error and mcp_result_body(result)["error"]["code"] == code
    if token == "t-stays":
        assert not stays.is_error


async def test_http_rate_limit_gives_429_with_retry_after(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url, headers=bearer("t-rate-http")) as http:
        responses = await asyncio.gather(*(http.post("/v1/search", json={"query_text": "酒"}) for _ in range(60)))
    statuses = [r.status_code for r in responses]
    assert statuses.count(200) in range(50, 53)  # the burst, plus what refills during the run
    limited = [r for r in responses if r.status_code == 429]
    assert limited
    assert all(r.json()["error"]["code"] == "RATE_LIMITED" and r.json()["error"]["retryable"] for r in limited)
    assert all(int(r.headers["retry-after"]) >= 1 for r in limited)


async def test_mcp_rate_limit_gives_retry_after_ms(server: LiveServer) -> None:
    # past the burst of 50 however slow the calls are (a loaded machine refills the bucket meanwhile)
    results = []
    async with mcp(server, "t-rate-mcp") as client:
        while len(results) < 400 and not (results and results[-1].is_error):
            results.append(await client.call_tool("search", {"query_text": "酒"}, raise_on_error=False))
    limited = [mcp_result_body(r) for r in results if r.is_error]
    assert limited and all(body["error"]["code"] == "RATE_LIMITED" for body in limited)
    assert all(0 < body["error"]["retry_after_ms"] <= 1000 for body in limited)


async def test_accepted_rate_stays_within_10_percent_of_the_declared_rate(server: LiveServer) -> None:
    """Bounded loopback load: drain the burst, then offer ~4x the rate for 8 s and count what is accepted."""
    declared, seconds = 5.0, 8.0
    async with httpx.AsyncClient(base_url=server.url, headers=bearer("t-load"), timeout=10) as http:
        while (await http.post("/v1/search", json={"query_text": "酒"})).status_code != 429:
            pass
        accepted = 0
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < seconds:
            response = await http.post("/v1/search", json={"query_text": "酒"})
            accepted += response.status_code == 200
            await asyncio.sleep(max(0.0, 0.05 - (time.monotonic() - started - elapsed)))
    rate = accepted / seconds
    assert abs(rate - declared) <= 0.1 * declared, f"accepted {rate:.2f}/s for a declared {declared}/s"


def png(color: tuple[int, int, int]) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), color).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


async def test_idempotency_over_http_and_mcp_survives_a_restart(server: LiveServer, data_dir: Path) -> None:
    body = {"brand_name": "テスト銘柄", "image": png((200, 10, 10))}
    async with httpx.AsyncClient(base_url=server.url, headers=bearer("t-idem")) as http:
        first = await http.post("/v1/ingest", json=body, headers={"Idempotency-Key": "ingest-1"})
        again = await http.post("/v1/ingest", json=body, headers={"Idempotency-Key": "ingest-1"})
        other = await http.post(
            "/v1/ingest", json={**body, "brand_name": "別"}, headers={"Idempotency-Key": "ingest-1"}
        )
    assert first.status_code == 200 and "idempotent-replayed" not in first.headers
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert without_ids(again.json()) == without_ids(first.json())
    assert again.json()["run_id"] == again.headers["x-run-id"] != first.json()["run_id"]
    assert other.status_code == 409 and other.json()["error"]["code"] == "CONFLICT"

    async with mcp(server, "t-idem") as client:
        arguments: dict[str, Any] = {"brand_name": "MCP銘柄", "image": png((10, 200, 10)), "idempotency_key": "mcp-1"}
        one = await client.call_tool("ingest", arguments)
        two = await client.call_tool("ingest", arguments)
    assert without_ids(two.structured_content) == without_ids(one.structured_content)
    assert (two.meta or {}).get("kumitate", {}).get("replayed") is True

    # a new app on the same data directory (in process: what a restarted server reads is the disk)
    async with serve_in_process(data_dir / "var", KUMITATE_TOKENS=json.dumps(TOKENS)) as restarted:
        replay = await restarted.http.post(
            "/v1/ingest", json=body, headers={**bearer("t-idem"), "Idempotency-Key": "ingest-1"}
        )
    assert replay.headers["idempotent-replayed"] == "true"
    assert without_ids(replay.json()) == without_ids(first.json())

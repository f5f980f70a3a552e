"""Hardening over real sockets (issue 21, issue 20 runtime): idempotent writes, catalogue bodies on MCP,
integers past 64 bits, failed-authentication limits, public URLs, one-line logs."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from kumitate.client import mcp_result_body
from tests.conftest import K_OF_N_RULE, LiveServer, start_server, stop_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOKENS = {
    "t-all": {"principal": "ops", "scopes": ["stays", "yana", "household", "attendance", "analytics"]},
    "t-other": {"principal": "other", "scopes": ["attendance"]},
}
ALL = {"Authorization": "Bearer t-all"}
RULE = K_OF_N_RULE


def launch(data_dir: Path, log: Path, seeded: Path, **env: str) -> LiveServer:
    """`kumitate serve` on a free port with the info log (start_server's default is warning)."""
    return start_server(data_dir, log, log_level="info", seeded=seeded, **env)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("hardening")
    # a proxy that passes its public Host on must be listed (the origin guard refuses unknown hosts)
    live = launch(
        root / "var",
        root / "server.log",
        seeded_data_dir,
        KUMITATE_TOKENS=json.dumps(TOKENS),
        KUMITATE_ALLOWED_HOSTS="tools.example.org",
    )
    yield live
    stop_server(live)


def mcp(server: LiveServer, token: str | None = "t-all") -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(StreamableHttpTransport(f"{server.url}/mcp", headers=headers))


def log_since(server: LiveServer, offset: int) -> str:
    return server.log.read_bytes()[offset:].decode("utf-8", errors="replace")


async def test_twenty_concurrent_saves_with_one_key_create_one_version(server: LiveServer) -> None:
    body = {"thread_id": "hardening-idem", "rule": RULE}
    headers = {**ALL, "Idempotency-Key": "save-once"}
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        responses = await asyncio.gather(
            *(client.post("/v1/attendance/save_attendance_rule", json=body, headers=headers) for _ in range(20))
        )
        assert {r.status_code for r in responses} == {200}
        assert {r.json()["version"] for r in responses} == {1}
        assert sum(r.headers.get("Idempotent-Replayed") == "true" for r in responses) == 19
        got = await client.post(
            "/v1/attendance/get_attendance_rule",
            json={"thread_id": "hardening-idem", "include_history": True},
            headers=ALL,
        )
        assert got.json()["version"] == 1
        # the same key is another principal's own key: it runs (and makes version 2), not a replay
        other = await client.post(
            "/v1/attendance/save_attendance_rule",
            json=body,
            headers={"Authorization": "Bearer t-other", "Idempotency-Key": "save-once"},
        )
        assert other.status_code == 200 and other.json()["version"] == 2 and "Idempotent-Replayed" not in other.headers


async def test_confirm_duplicate_replays_instead_of_409(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        detected = await client.post("/v1/household/detect_duplicates", json={}, headers=ALL)
        assert detected.status_code == 200, detected.text
        listed = await client.post("/v1/household/list_duplicate_candidates", json={"limit": 5}, headers=ALL)
        check_ids = re.findall(r'"check_id":\s*(\d+)', listed.text)
        assert check_ids, listed.text
        args = {"check_id": int(check_ids[0]), "decision": "duplicate"}
        headers = {**ALL, "Idempotency-Key": "confirm-1"}
        first = await client.post("/v1/household/confirm_duplicate", json=args, headers=headers)
        again = await client.post("/v1/household/confirm_duplicate", json=args, headers=headers)
        assert first.status_code == 200, first.text
        assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
        assert again.json() == first.json()
        unkeyed = await client.post("/v1/household/confirm_duplicate", json=args, headers=ALL)
        assert unkeyed.status_code == 409  # without a key a second confirmation is still a conflict


async def test_a_key_on_a_read_only_tool_is_accepted_and_harmless(server: LiveServer) -> None:
    args = {"thread_id": "demo-k-of-n"}
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        for _ in range(2):
            r = await client.post(
                "/v1/attendance/get_attendance_rule", json=args, headers={**ALL, "Idempotency-Key": "ro"}
            )
            assert r.status_code == 200 and "Idempotent-Replayed" not in r.headers
    async with mcp(server) as client:
        await client.list_tools()  # as a client does: the listing says which arguments go in Mcp-Param-* headers
        result = await client.call_tool("get_attendance_rule", {**args, "idempotency_key": "ro"}, raise_on_error=False)
        assert not result.is_error and result.structured_content["thread_id"] == "demo-k-of-n"


async def test_every_write_tool_takes_an_idempotency_key_over_mcp(server: LiveServer) -> None:
    async with mcp(server) as client:
        tools = await client.list_tools()
    writers = [t for t in tools if t.annotations is not None and not t.annotations.read_only_hint]
    assert len(writers) >= 8
    assert [t.name for t in writers if "idempotency_key" not in t.input_schema["properties"]] == []


async def test_an_unknown_mcp_tool_is_invalid_params_with_the_catalogue_body(server: LiveServer) -> None:
    async with mcp(server) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("no_such_tool", {}, raise_on_error=False)
    assert raised.value.code == INVALID_PARAMS
    error = raised.value.data["error"]
    assert (error["code"], error["retryable"]) == ("NOT_FOUND", False)
    assert raised.value.data["name"] == "no_such_tool"
    assert raised.value.data["run_id"] and raised.value.data["trace_id"]


async def test_mcp_resource_errors_carry_the_catalogue_body_and_log_one_line(server: LiveServer) -> None:
    offset = server.log.stat().st_size
    async with mcp(server) as client:
        with pytest.raises(Exception) as missing_chart:
            await client.read_resource("chart://0123456789abcdef0123456789abcdef")
        with pytest.raises(Exception) as unknown:
            await client.read_resource("nosuch://thing")
    for exc, code in ((missing_chart.value, "CHART_NOT_FOUND"), (unknown.value, "NOT_FOUND")):
        data = getattr(exc, "data", None) or getattr(getattr(exc, "error", None), "data", None)
        assert isinstance(data, dict), repr(exc)
        assert data["error"]["code"] == code and data["run_id"]
        assert not str(exc).lstrip().startswith("{")  # the message is text, the body is structured data
    time.sleep(0.3)
    text = log_since(server, offset)
    assert "Traceback" not in text and "0123456789abcdef" not in text
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert [line["outcome"] for line in lines if line.get("event") == "call"] == ["CHART_NOT_FOUND", "NOT_FOUND"]


@pytest.mark.parametrize("value", [2**63, 2**64 + 5, -(2**63) - 1])
async def test_integers_past_64_bits_are_bad_request_on_both_transports(server: LiveServer, value: int) -> None:
    raw = f'{{"check_id": {value}}}'
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        r = await client.post(
            "/v1/household/get_duplicate_candidate_detail",
            content=raw,
            headers={**ALL, "Content-Type": "application/json"},
        )
    assert r.status_code == 400 and r.json()["error"]["code"] == "BAD_REQUEST", r.text
    async with mcp(server) as client:
        result = await client.call_tool("restore_duplicate", {"transaction_id": value}, raise_on_error=False)
    assert result.is_error and mcp_result_body(result)["error"]["code"] == "BAD_REQUEST"


async def test_result_urls_follow_the_address_served(server: LiveServer) -> None:
    query = {"query": "SELECT 1 AS x", "format": "csv"}
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        plain = await client.post("/v1/analytics/export", json=query, headers=ALL)
        proxied = await client.post(
            "/v1/analytics/export",
            json=query,
            headers={**ALL, "Host": "tools.example.org", "X-Forwarded-Proto": "https"},
        )
    assert plain.status_code == 200, plain.text
    assert plain.json()["url"].startswith(f"{server.url}/v1/analytics/exports/")
    # uvicorn trusts the loopback proxy by default (FORWARDED_ALLOW_IPS): its scheme and the Host it passed
    assert proxied.json()["url"].startswith("https://tools.example.org/v1/analytics/exports/")


async def test_the_log_never_prints_an_export_handle(server: LiveServer) -> None:
    offset = server.log.stat().st_size
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        made = await client.post("/v1/analytics/export", json={"query": "SELECT 2 AS y", "format": "csv"}, headers=ALL)
        handle = made.json()["handle"]
        fetched = await client.get(f"/v1/analytics/exports/{handle}", headers=ALL)
        assert fetched.status_code == 200
        await client.get(f"/v1/analytics/exports/{handle}x", headers=ALL)
    time.sleep(0.3)
    text = log_since(server, offset)
    assert '"event": "call"' in text
    assert "GET /v1/analytics/exports/" not in text  # no access-log line with the raw path
    assert f"/exports/{handle}" not in text


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("guarded")
    live = launch(
        root / "var",
        root / "server.log",
        seeded_data_dir,
        KUMITATE_TOKENS=json.dumps(TOKENS),
        KUMITATE_AUTH_FAILURES="0.05/10",
    )
    yield live
    stop_server(live)


async def test_wrong_token_guesses_are_rate_limited_per_address(guarded: LiveServer) -> None:
    args = {"thread_id": "demo-k-of-n"}
    path = "/v1/attendance/get_attendance_rule"
    async with httpx.AsyncClient(base_url=guarded.url, timeout=30) as client:
        statuses = [
            (await client.post(path, json=args, headers={"Authorization": f"Bearer guess-{i}"})).status_code
            for i in range(200)
        ]
        assert statuses[:10] == [401] * 10 and set(statuses[10:]) == {429}
        blocked = await client.post(path, json=args, headers={"Authorization": f"Bearer {'guess-final'}"})
        assert blocked.status_code == 429 and int(blocked.headers["Retry-After"]) >= 1
        assert blocked.json()["error"]["code"] == "RATE_LIMITED"
        # while blocked, even the right token is refused: a hit cannot be told from a miss
        right = await client.post(path, json=args, headers=ALL)
        assert right.status_code == 429
        no_token = await client.post(path, json=args)
        assert no_token.status_code == 401  # no token, no guess: a plain 401
    async with mcp(guarded) as client:
        await client.list_tools()  # the listing says which arguments go in Mcp-Param-* headers (x-mcp-header)
        result = await client.call_tool("get_attendance_rule", args, raise_on_error=False)
    assert result.is_error and mcp_result_body(result)["error"]["code"] == "RATE_LIMITED"


def test_a_bad_public_url_setting_cannot_hide_behind_a_port_flag(tmp_path: Path) -> None:
    from kumitate.settings import Settings

    served = Settings.from_env({"PORT": "8000"}, host="127.0.0.1", port=18820)
    assert served.public_base_url == "http://127.0.0.1:18820"
    fixed = Settings.from_env({"KUMITATE_PUBLIC_URL": "https://tools.example.org/"}, host="0.0.0.0", port=18820)
    assert fixed.public_base_url == "https://tools.example.org"

"""OAuth over real sockets: a local identity provider, a real server, HTTP /v1 and MCP, real tokens.

Every kind of bad token is refused the same way on both transports (401, `invalid_token`, a
`resource_metadata` pointer a client can follow), a token without the tool's scope gets 403
`insufficient_scope` on both (MCP: before the MCP app, as its authorization spec asks), the static token table still works beside
OAuth, a key rotation is picked up without a restart, and a real fastmcp client completes a session.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp.shared.exceptions import MCPError

from tests.conftest import LiveServer, start_server, stop_server
from tests.e2e.mcp_raw import INITIALIZE, MCP_HEADERS
from tests.idp import AUDIENCE, IdentityProvider, SigningKey, running_idp

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

STAYS = {"stays": [{"code": "13101", "name": "千代田区"}]}
STATIC = {"static-laptop": {"principal": "laptop", "scopes": ["stays"]}}
REFRESH_S = 1.0


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    with running_idp() as provider:
        yield provider


@pytest.fixture(scope="module")
def server(
    idp: IdentityProvider, tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path
) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("oauth")
    live = start_server(
        root / "var",
        root / "server.log",
        seeded=seeded_data_dir,
        KUMITATE_OAUTH_ISSUER=idp.url,  # keys found through the issuer's metadata
        KUMITATE_OAUTH_AUDIENCE=AUDIENCE,
        KUMITATE_OAUTH_JWKS_MIN_REFRESH_S=str(REFRESH_S),
        KUMITATE_TOKENS=json.dumps(STATIC),
        KUMITATE_AUTH_FAILURES="1000/1000",  # this test sends many bad tokens from one address on purpose
    )
    yield live
    stop_server(live)


def bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def challenge(response: httpx.Response) -> dict[str, str]:
    scheme, _, params = response.headers["www-authenticate"].partition(" ")
    assert scheme == "Bearer"
    return dict(
        (key.strip(), value.strip().strip('"')) for key, _, value in (p.partition("=") for p in params.split('", '))
    )


def mcp_client(server: LiveServer, token: str) -> Client:
    return Client(StreamableHttpTransport(f"{server.url}/mcp", auth=token))


BAD = [
    "expired",
    "not_yet_valid",
    "wrong_audience",
    "wrong_issuer",
    "unknown_kid",
    "tampered_signature",
    "tampered_claims",
    "alg_none",
    "hs256_with_public_key",
]


@pytest.mark.parametrize("name", BAD)
async def test_bad_tokens_are_refused_with_invalid_token_on_http_and_mcp(
    server: LiveServer, idp: IdentityProvider, name: str
) -> None:
    token = idp.bad_tokens()[name]
    async with httpx.AsyncClient(base_url=server.url) as http:
        on_http = await http.post("/v1/stays/summarize_stays", json=STAYS, headers=bearer(token))
        on_mcp = await http.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **bearer(token)})
        on_service = await http.post("/mcp/stays", json=INITIALIZE, headers={**MCP_HEADERS, **bearer(token)})
    for response, path in [(on_http, ""), (on_mcp, "/mcp"), (on_service, "/mcp")]:
        assert response.status_code == 401, name
        assert response.json()["error"]["code"] == "UNAUTHORIZED"
        params = challenge(response)
        assert params["error"] == "invalid_token"
        assert params["resource_metadata"] == f"{server.url}/.well-known/oauth-protected-resource{path}"
        assert response.headers["x-run-id"] == response.json()["run_id"]


async def test_no_token_gets_the_challenge_without_an_error_code(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        on_http = await http.post("/v1/stays/summarize_stays", json=STAYS)
        on_mcp = await http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
    for response in (on_http, on_mcp):
        assert response.status_code == 401
        params = challenge(response)
        assert "error" not in params and params["resource_metadata"].startswith(server.url)


async def test_the_challenge_leads_to_the_metadata(server: LiveServer, idp: IdentityProvider) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        refused = await http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        mcp_meta = (await http.get(challenge(refused)["resource_metadata"])).json()
        api_meta = (await http.get("/.well-known/oauth-protected-resource")).json()
        per_service = (await http.get("/.well-known/oauth-protected-resource/mcp/stays")).json()
        missing = await http.get("/.well-known/oauth-protected-resource/mcp/nope")
    assert mcp_meta["resource"] == f"{server.url}/mcp"
    assert api_meta["resource"] == server.url
    assert per_service["resource"] == f"{server.url}/mcp/stays"
    for meta in (mcp_meta, api_meta):
        assert meta["authorization_servers"] == [idp.url]
        assert {"stays", "yana", "household", "attendance", "analytics"} <= set(meta["scopes_supported"])
        assert meta["bearer_methods_supported"] == ["header"]
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"


async def test_a_valid_token_works_on_http_and_a_real_mcp_session(server: LiveServer, idp: IdentityProvider) -> None:
    token = idp.token()
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post("/v1/stays/summarize_stays", json=STAYS, headers=bearer(token))
    assert response.status_code == 200 and response.json()["summary"]
    async with mcp_client(server, token) as client:
        tools = {t.name for t in await client.list_tools()}
        result = await client.call_tool("summarize_stays", STAYS)
        versions = await client.read_resource("kumitate://versions")
    assert "summarize_stays" in tools and not result.is_error
    assert result.structured_content["summary"] == response.json()["summary"]
    assert "stays" in json.loads(versions[0].text)  # type: ignore[union-attr]


async def open_session(http: httpx.AsyncClient, path: str, token: str) -> dict[str, str]:
    """initialize + notifications/initialized over raw HTTP: the headers a later request needs."""
    response = await http.post(path, json=INITIALIZE, headers={**MCP_HEADERS, **bearer(token)})
    assert response.status_code == 200
    headers = {**MCP_HEADERS, **bearer(token), "Mcp-Protocol-Version": "2025-06-18"}
    if "mcp-session-id" in response.headers:
        headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
    notified = await http.post(path, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    assert notified.status_code == 202
    return headers


def call(name: str, arguments: dict[str, object]) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def assert_insufficient_scope(response: httpx.Response, server: LiveServer, path: str, scope: str) -> None:
    assert response.status_code == 403 and response.json()["error"]["code"] == "FORBIDDEN"
    params = challenge(response)
    assert params["error"] == "insufficient_scope" and params["scope"] == scope
    assert params["resource_metadata"] == f"{server.url}/.well-known/oauth-protected-resource{path}"
    assert response.headers["x-run-id"] == response.json()["run_id"]


async def test_a_missing_scope_is_403_insufficient_scope_on_http_and_mcp(
    server: LiveServer, idp: IdentityProvider
) -> None:
    token = idp.token(scope="yana")
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post("/v1/stays/summarize_stays", json=STAYS, headers=bearer(token))
        assert_insufficient_scope(response, server, "", "stays")
        for path in ("/mcp", "/mcp/stays"):
            headers = await open_session(http, path, token)  # listing is allowed: no tool named yet
            listed = await http.post(path, json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, headers=headers)
            assert listed.status_code == 200 and "summarize_stays" in listed.text
            refused = await http.post(path, json=call("summarize_stays", STAYS), headers=headers)
            assert_insufficient_scope(refused, server, "/mcp", "stays")
        read = {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "chart://c1"}}
        headers = await open_session(http, "/mcp", token)
        assert_insufficient_scope(await http.post("/mcp", json=read, headers=headers), server, "/mcp", "household")
    async with mcp_client(server, token) as client:  # a real client sees the refusal, and the session lives on
        with pytest.raises(MCPError):
            await client.call_tool("summarize_stays", STAYS)
        assert "yana" in json.loads((await client.read_resource("kumitate://versions"))[0].text)  # type: ignore[union-attr]


async def test_a_token_with_the_scope_is_not_refused_for_another_tools_scope(
    server: LiveServer, idp: IdentityProvider
) -> None:
    token = idp.token(scope="stays")
    async with mcp_client(server, token) as client:
        assert not (await client.call_tool("summarize_stays", STAYS)).is_error


async def test_the_static_token_table_works_beside_oauth(server: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post("/v1/stays/summarize_stays", json=STAYS, headers=bearer("static-laptop"))
    assert response.status_code == 200
    async with mcp_client(server, "static-laptop") as client:
        assert not (await client.call_tool("summarize_stays", STAYS)).is_error


async def test_a_key_rotation_is_picked_up_without_a_restart(server: LiveServer, idp: IdentityProvider) -> None:
    async with httpx.AsyncClient(base_url=server.url) as http:  # the server knows the current key
        assert (await http.post("/v1/stays/summarize_stays", json=STAYS, headers=bearer(idp.token()))).is_success
    rotated = SigningKey(f"rotated-{time.monotonic_ns()}")
    idp.keys = [rotated, *idp.keys]
    time.sleep(REFRESH_S + 0.2)  # past the refresh bound
    token = idp.token(key=rotated)
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post("/v1/stays/summarize_stays", json=STAYS, headers=bearer(token))
    assert response.status_code == 200
    async with mcp_client(server, token) as client:
        assert not (await client.call_tool("summarize_stays", STAYS)).is_error

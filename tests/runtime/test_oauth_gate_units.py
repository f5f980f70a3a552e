"""The OAuth transport pieces (kumitate/transports/oauth.py) on the app in process, with a real local
identity provider: the RFC 9728 metadata routes and the token gate in front of MCP.

tests/e2e/test_oauth_wire.py proves the same contract on a server subprocess (which coverage does not
see); here the gate's own branches: no token (any method), a token whose scopes cover every tool (no
body read), a token that lacks the called tool's scope (403 before the MCP app) or holds it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.conftest import InProcessApp, serve_in_process
from tests.e2e.mcp_raw import INITIALIZE, MCP_HEADERS
from tests.idp import AUDIENCE, IdentityProvider, running_idp

pytestmark = pytest.mark.anyio

STAYS = {"stays": [{"code": "13101", "name": "千代田区"}]}
SERVED = "stays,attendance"  # two cheap services: a token may hold the called tool's scope but not every one
EVERY = "stays attendance"
CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "summarize_stays", "arguments": STAYS}}


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    with running_idp() as provider:
        yield provider


@pytest.fixture(scope="module")
async def app(idp: IdentityProvider, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[InProcessApp]:
    async with serve_in_process(
        tmp_path_factory.mktemp("oauth") / "var",
        KUMITATE_SERVICES=SERVED,
        KUMITATE_OAUTH_ISSUER=idp.url,
        KUMITATE_OAUTH_AUDIENCE=AUDIENCE,
        KUMITATE_AUTH_FAILURES="1000/1000",
    ) as served:
        yield served


def challenge(response: httpx.Response) -> dict[str, str]:
    scheme, _, params = response.headers["www-authenticate"].partition(" ")
    assert scheme == "Bearer"
    pairs = (p.partition("=") for p in params.split('", '))
    return {key.strip(): value.strip().strip('"') for key, _, value in pairs}


async def session(app: InProcessApp, token: str) -> dict[str, str]:
    """initialize + notifications/initialized: the headers a later request on /mcp needs."""
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    opened = await app.http.post("/mcp", json=INITIALIZE, headers=headers)
    assert opened.status_code == 200, opened.text
    headers["Mcp-Protocol-Version"] = "2025-06-18"
    if "mcp-session-id" in opened.headers:
        headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
    notified = await app.http.post(
        "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    assert notified.status_code == 202
    return headers


async def test_the_metadata_routes_name_the_issuer_and_every_scope(app: InProcessApp, idp: IdentityProvider) -> None:
    api = (await app.http.get("/.well-known/oauth-protected-resource")).json()
    mcp = await app.http.get("/.well-known/oauth-protected-resource/mcp")
    stays = (await app.http.get("/.well-known/oauth-protected-resource/mcp/stays")).json()
    missing = await app.http.get("/.well-known/oauth-protected-resource/mcp/nope")
    assert (api["resource"], mcp.json()["resource"], stays["resource"]) == (
        app.url,
        f"{app.url}/mcp",
        f"{app.url}/mcp/stays",
    )
    assert api["authorization_servers"] == [idp.url]
    assert set(api["scopes_supported"]) == set(EVERY.split())
    assert mcp.headers["cache-control"] == "public, max-age=3600"
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
async def test_mcp_without_a_token_is_401_with_the_challenge(app: InProcessApp, method: str) -> None:
    response = await app.http.request(method, "/mcp", json=INITIALIZE, headers=MCP_HEADERS)
    assert response.status_code == 401
    assert challenge(response)["resource_metadata"] == f"{app.url}/.well-known/oauth-protected-resource/mcp"


async def test_a_bad_token_is_401_invalid_token(app: InProcessApp) -> None:
    response = await app.http.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": "Bearer x.y.z"})
    assert response.status_code == 401 and challenge(response)["error"] == "invalid_token"


async def test_a_token_without_the_tools_scope_is_403_before_the_mcp_app(
    app: InProcessApp, idp: IdentityProvider
) -> None:
    headers = await session(app, idp.token(scope="yana"))
    listed = await app.http.post("/mcp", json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, headers=headers)
    assert listed.status_code == 200 and "summarize_stays" in listed.text  # naming no tool needs no scope
    refused = await app.http.post("/mcp", json=CALL, headers=headers)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "FORBIDDEN"
    assert (challenge(refused)["error"], challenge(refused)["scope"]) == ("insufficient_scope", "stays")


@pytest.mark.parametrize("scope", ["stays", EVERY])
async def test_a_token_with_the_scope_reaches_the_tool(app: InProcessApp, idp: IdentityProvider, scope: str) -> None:
    headers = await session(app, idp.token(scope=scope))
    answered = await app.http.post("/mcp", json=CALL, headers=headers)
    assert answered.status_code == 200
    assert '"isError":false' in answered.text.replace(" ", "") and "summary" in answered.text

"""JWT access tokens against a real local identity provider (HTTP on a free port, RSA keys made here)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from kumitate.errors import ToolError
from kumitate.pipeline import CallRequest, Pipeline, Policies
from kumitate.policies.auth import Authenticator
from kumitate.policies.authguard import AuthGuard
from kumitate.policies.oauth import InvalidToken, KeySet, OAuthSettings, OAuthVerifier, _metadata_urls
from kumitate.policies.ratelimit import RateLimiter
from tests.idp import AUDIENCE, IdentityProvider, SigningKey, running_idp
from tests.runtime.test_pipeline import binding, make_pipeline

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def idp() -> Iterator[IdentityProvider]:
    with running_idp() as provider:
        yield provider


def verifier(idp: IdentityProvider, clock: Clock | None = None, **env: str) -> OAuthVerifier:
    settings = OAuthSettings.from_env({"KUMITATE_OAUTH_ISSUER": idp.url, "KUMITATE_OAUTH_AUDIENCE": AUDIENCE, **env})
    assert settings is not None
    keys = KeySet(settings.issuer, settings.jwks_url, min_refresh_s=settings.min_refresh_s, clock=clock or Clock())
    return OAuthVerifier(settings, keys)


async def check(oauth: OAuthVerifier, token: str) -> str:
    await oauth.prepare(token)
    try:
        principal = oauth.verify(token)
    except InvalidToken as exc:
        return f"refused: {exc}"
    return f"{principal.id} {' '.join(sorted(principal.scopes))}"


async def test_a_valid_token_gives_its_subject_and_scopes(idp: IdentityProvider) -> None:
    oauth = verifier(idp)  # no JWKS URL: found through the issuer's OpenID Connect metadata
    assert await check(oauth, idp.token()) == "alice stays yana"
    assert await check(oauth, idp.token(scope=None, scp=["analytics", "stays"])) == "alice analytics stays"
    assert await check(oauth, idp.token(scope=None, scp="household")) == "alice household"
    assert await check(oauth, idp.token(scope=None)) == "alice "
    assert await check(oauth, idp.token(scope="* stays")) == "alice stays"  # no wildcard from outside


async def test_clock_skew_is_tolerated_within_the_leeway(idp: IdentityProvider) -> None:
    oauth = verifier(idp, KUMITATE_OAUTH_LEEWAY_S="30")
    import time

    now = int(time.time())
    assert (await check(oauth, idp.token(exp=now - 10))).startswith("alice")
    assert (await check(oauth, idp.token(nbf=now + 10))).startswith("alice")
    assert await check(oauth, idp.token(exp=now - 60)) == "refused: the token has expired"


async def test_every_bad_token_is_refused(idp: IdentityProvider) -> None:
    oauth = verifier(idp, KUMITATE_OAUTH_JWKS_URL="")
    outcomes = {name: await check(oauth, token) for name, token in idp.bad_tokens().items()}
    assert outcomes == {
        "expired": "refused: the token has expired",
        "not_yet_valid": "refused: the token is not valid yet",
        "wrong_audience": "refused: the token is for another audience",
        "wrong_issuer": "refused: the token is from another issuer",
        "unknown_kid": "refused: signed with an unknown key",
        "tampered_signature": "refused: the token's signature or claims are not valid",
        "tampered_claims": "refused: the token's signature or claims are not valid",
        "alg_none": "refused: the signing algorithm 'none' is not accepted",
        "hs256_with_public_key": "refused: the signing algorithm 'HS256' is not accepted",
    }
    assert await check(oauth, idp.token(sub=None)) == "refused: the token's signature or claims are not valid"


async def test_unknown_kids_refresh_the_keys_at_a_bounded_rate(idp: IdentityProvider) -> None:
    clock = Clock()
    oauth = verifier(idp, clock, KUMITATE_OAUTH_JWKS_URL=f"{idp.url}/jwks.json", KUMITATE_OAUTH_JWKS_MIN_REFRESH_S="60")
    assert (await check(oauth, idp.token())).startswith("alice") and idp.jwks_fetches == 1
    for n in range(20):  # forged kids: one fetch at most per minute, not one per token
        await check(oauth, idp.token(key=SigningKey(f"forged-{n}")) if n < 2 else idp.token(kid=f"forged-{n}"))
    assert idp.jwks_fetches == 1
    retired, rotated = idp.keys[0], SigningKey("k2")
    idp.keys = [rotated]  # the provider rotates: k1 retired, k2 signs
    clock.now += 61
    assert await check(oauth, idp.token(key=rotated)) == "alice stays yana"
    assert idp.jwks_fetches == 2
    assert await check(oauth, idp.token(key=retired)) == "refused: signed with an unknown key"


async def test_an_unreachable_provider_refuses_tokens_and_keeps_serving() -> None:
    settings = OAuthSettings("http://127.0.0.1:9", (AUDIENCE,), "http://127.0.0.1:9/jwks.json", timeout_s=1)
    oauth = OAuthVerifier(settings)
    with running_idp() as idp:
        assert await check(oauth, idp.token()) == "refused: signed with an unknown key"


def test_settings_need_an_audience_with_an_issuer() -> None:
    assert OAuthSettings.from_env({}) is None
    with pytest.raises(ValueError, match="KUMITATE_OAUTH_AUDIENCE"):
        OAuthSettings.from_env({"KUMITATE_OAUTH_ISSUER": "https://idp.test"})
    with pytest.raises(ValueError, match="KUMITATE_OAUTH_LEEWAY_S"):
        OAuthSettings.from_env(
            {"KUMITATE_OAUTH_ISSUER": "https://i", "KUMITATE_OAUTH_AUDIENCE": "a", "KUMITATE_OAUTH_LEEWAY_S": "x"}
        )
    both = OAuthSettings.from_env({"KUMITATE_OAUTH_ISSUER": "https://i", "KUMITATE_OAUTH_AUDIENCE": "a, b"})
    assert both is not None and both.audiences == ("a", "b")


def test_metadata_is_looked_up_as_oidc_then_rfc8414() -> None:
    assert _metadata_urls("https://idp.test/realms/x") == [
        "https://idp.test/realms/x/.well-known/openid-configuration",
        "https://idp.test/.well-known/oauth-authorization-server/realms/x",
    ]


async def test_static_tokens_and_jwts_together_and_failed_jwts_spend_the_failure_budget(
    idp: IdentityProvider,
) -> None:
    auth = Authenticator.from_env(
        {
            "KUMITATE_TOKENS": '{"static-1": {"principal": "laptop", "scopes": ["stays"]}}',
            "KUMITATE_OAUTH_ISSUER": idp.url,
            "KUMITATE_OAUTH_AUDIENCE": AUDIENCE,
        }
    )
    assert auth.oauth is not None
    guard = AuthGuard(RateLimiter(), rate=0.0001, burst=3)
    good = idp.token()
    await auth.prepare(f"Bearer {good}")

    def attempt(token: str) -> str:
        try:
            return guard.authenticate(auth, f"Bearer {token}", "10.0.0.9", local=False, public=False).id
        except ToolError as exc:
            return exc.code

    assert attempt("static-1") == "laptop" and attempt(good) == "alice"
    bad = list(idp.bad_tokens().values())
    assert [attempt(t) for t in bad[:4]] == ["UNAUTHORIZED"] * 3 + ["RATE_LIMITED"]
    assert attempt(good) == "RATE_LIMITED"  # blocked: a guesser cannot tell a hit from a miss


async def test_a_slow_key_fetch_does_not_hold_other_calls(idp: IdentityProvider) -> None:
    """The JWK set is fetched in a thread: while the provider takes its time, other calls run."""
    idp.delay_s = 1.0
    auth = Authenticator.from_env(
        {
            "KUMITATE_TOKENS": '{"static-1": {"principal": "laptop", "scopes": []}}',
            "KUMITATE_OAUTH_ISSUER": idp.url,
            "KUMITATE_OAUTH_AUDIENCE": AUDIENCE,
        }
    )
    pipeline, _ = make_pipeline(policies=Policies(auth=auth))
    tool = binding("echo")
    waiting = asyncio.create_task(
        pipeline.call_tool(tool, {"n": 1}, CallRequest("http", authorization=f"Bearer {idp.token()}"))
    )
    await asyncio.sleep(0.1)  # the fetch is under way
    other = await pipeline.call_tool(tool, {"n": 2}, CallRequest("http", authorization="Bearer static-1"))
    assert other.code == "OK" and not waiting.done()
    assert (await waiting).code == "OK" and idp.jwks_fetches == 1


def oauth_pipeline(idp: IdentityProvider, **policies: object) -> Pipeline:
    auth = Authenticator.from_env({"KUMITATE_OAUTH_ISSUER": idp.url, "KUMITATE_OAUTH_AUDIENCE": AUDIENCE})
    pipeline, _ = make_pipeline(policies=Policies(auth=auth, **policies))  # type: ignore[arg-type]
    return pipeline


async def test_connection_admission_challenges_and_spends_the_failure_budget(idp: IdentityProvider) -> None:
    limiter = RateLimiter()
    pipeline = oauth_pipeline(idp, limiter=limiter, auth_guard=AuthGuard(limiter, rate=0.0001, burst=2))

    def connect(token: str | None) -> CallRequest:
        authorization = f"Bearer {token}" if token else None
        return CallRequest("mcp", authorization=authorization, client="10.0.0.7", base_url="https://tools.test")

    good = idp.token()
    assert await pipeline.admit_connection(connect(good)) is None
    anonymous = await pipeline.admit_connection(connect(None))
    assert anonymous is not None and anonymous.status == 401
    assert anonymous.headers["WWW-Authenticate"] == (
        'Bearer realm="kumitate", resource_metadata="https://tools.test/.well-known/oauth-protected-resource/mcp"'
    )
    expired = idp.bad_tokens()["expired"]
    refusals = [await pipeline.admit_connection(connect(expired)) for _ in range(3)]
    assert [r.code for r in refusals if r is not None] == ["UNAUTHORIZED", "UNAUTHORIZED", "RATE_LIMITED"]
    assert 'error="invalid_token", error_description="the token has expired"' in refusals[0].headers["WWW-Authenticate"]  # type: ignore[union-attr]
    blocked = await pipeline.admit_connection(connect(good))
    assert blocked is not None and blocked.code == "RATE_LIMITED"


async def test_public_url_names_the_metadata_and_http_points_to_the_api_resource(idp: IdentityProvider) -> None:
    pipeline = oauth_pipeline(idp, public_url="https://public.example")
    outcome = await pipeline.call_tool(
        binding("echo", scopes=["demo:write"]), {"n": 1}, CallRequest("http", authorization=f"Bearer {idp.token()}")
    )
    assert outcome.status == 403
    assert outcome.headers["WWW-Authenticate"] == (
        'Bearer realm="kumitate", error="insufficient_scope", scope="demo:write", '
        'resource_metadata="https://public.example/.well-known/oauth-protected-resource"'
    )


async def test_tokens_arriving_during_a_fetch_wait_for_it(idp: IdentityProvider) -> None:
    idp.delay_s = 0.5
    oauth = verifier(idp)
    first = asyncio.create_task(check(oauth, idp.token(sub="user-0")))
    await asyncio.sleep(0.2)  # its fetch is under way
    later = await asyncio.gather(*(check(oauth, idp.token(sub=f"user-{n}")) for n in range(1, 5)))
    assert await first == "user-0 stays yana"
    assert later == [f"user-{n} stays yana" for n in range(1, 5)] and idp.jwks_fetches == 1

"""JWT access tokens from an identity provider (an OAuth 2.1 resource server, as MCP specifies).

Configured by KUMITATE_OAUTH_ISSUER (on when set) and KUMITATE_OAUTH_AUDIENCE (required then;
comma-separated for several); the signing keys come from KUMITATE_OAUTH_JWKS_URL or, when that
is unset, from the `jwks_uri` of the issuer's metadata (OpenID Connect discovery, then RFC 8414):
every mainstream identity provider publishes it, while a fixed `/.well-known/jwks.json` is one
vendor's habit. Signatures are checked by PyJWT; only asymmetric algorithms are accepted, so
`alg: none` and an HMAC "signed" with the public key are refused before any key is looked at.

Keys are cached. A token whose `kid` is not in the cache refreshes it, at most once per
KUMITATE_OAUTH_JWKS_MIN_REFRESH_S (default 10 s), so a stream of forged kids cannot turn the
server into a load generator against the identity provider; a rotation is picked up on the
first token signed with the new key. One refresh (metadata discovery and the key set, headers
and bodies) ends within KUMITATE_OAUTH_HTTP_TIMEOUT_S in total, however slowly the provider
trickles its answer (kumitate.outbound.deadline_client). Fetching runs in a worker thread (`prepare`, awaited
before admission), never on the event loop; `verify` itself only reads the cache.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import jwt

from kumitate.context import Principal
from kumitate.observability import calllog
from kumitate.outbound import deadline_client, total_deadline
from kumitate.settings import Settings

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""Asymmetric only: with a public JWKS, HS* would let anyone who reads the keys sign tokens."""
KEY_TYPES = ("RSA", "EC", "OKP")
DEFAULT_LEEWAY_S = 30.0
DEFAULT_MIN_REFRESH_S = 10.0
DEFAULT_FETCH_TIMEOUT_S = 5.0
METADATA_PATHS = (".well-known/openid-configuration", ".well-known/oauth-authorization-server")


class InvalidToken(Exception):
    """A bearer token that is not a valid access token for this server; the message says why
    in words safe to send back (never the token or its claims)."""


def _metadata_urls(issuer: str) -> list[str]:
    """OpenID Connect appends to the issuer; RFC 8414 inserts the well-known part before its path."""
    base = issuer.rstrip("/")
    scheme, _, rest = base.partition("://")
    host, slash, path = rest.partition("/")
    urls = [f"{base}/{METADATA_PATHS[0]}"]
    urls.append(f"{scheme}://{host}/{METADATA_PATHS[1]}" + (f"/{path}" if slash else ""))
    return urls


class KeySet:
    """The identity provider's signing keys by `kid`, fetched on demand and refreshed at a bounded rate."""

    def __init__(
        self,
        issuer: str,
        jwks_url: str | None,
        *,
        min_refresh_s: float = DEFAULT_MIN_REFRESH_S,
        timeout_s: float = DEFAULT_FETCH_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer = issuer
        self.jwks_url = jwks_url
        self.min_refresh_s = min_refresh_s
        self.timeout_s = timeout_s
        self._clock = clock
        self._keys: dict[str | None, dict[str, object]] = {}
        self._fetched_at: float | None = None
        self._fetching = False
        self._lock = threading.Lock()

    def get(self, kid: str | None) -> dict[str, object] | None:
        """The JWK for `kid`; a token without a kid is accepted only when the set has a single key."""
        keys = self._keys
        if kid is None and len(keys) == 1:
            return next(iter(keys.values()))
        return keys.get(kid)

    def stale_for(self, kid: str | None) -> bool:
        """Whether a refresh could help this kid and is allowed now (or is under way: then wait for it)."""
        if self.get(kid) is not None:
            return False
        if self._fetching:
            return True
        return self._fetched_at is None or self._clock() - self._fetched_at >= self.min_refresh_s

    def refresh(self, kid: str | None = None) -> None:
        """Fetch the key set (blocking: call it from a thread). Callers that arrive during a fetch
        wait for it rather than start another or refuse a token the fetch is about to make known;
        a failed fetch keeps the old keys and still counts against the refresh rate."""
        with self._lock:
            if not self.stale_for(kid):
                return
            self._fetched_at = self._clock()
            self._fetching = True
            try:
                with total_deadline(self.timeout_s), deadline_client(timeout=self.timeout_s) as http:
                    url = self.jwks_url or self._discover(http)
                    response = http.get(url)
                    response.raise_for_status()
                    document = response.json()
                self._keys = self._parse(document)
                calllog.log_event("jwks_refreshed", keys=len(self._keys))
            except (httpx.HTTPError, ValueError) as exc:
                calllog.log_event("jwks_refresh_failed", error_type=type(exc).__name__)
            finally:
                self._fetching = False

    def _discover(self, http: httpx.Client) -> str:
        for url in _metadata_urls(self.issuer):
            response = http.get(url)
            if response.status_code != 200:
                continue
            metadata = response.json()
            if metadata.get("issuer") != self.issuer or not isinstance(metadata.get("jwks_uri"), str):
                raise ValueError("the issuer's metadata names another issuer or no jwks_uri")
            self.jwks_url = metadata["jwks_uri"]
            return self.jwks_url
        raise ValueError("the issuer publishes no metadata; set KUMITATE_OAUTH_JWKS_URL")

    @staticmethod
    def _parse(document: object) -> dict[str | None, dict[str, object]]:
        keys = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(keys, list):
            raise ValueError("not a JWK set")
        usable = [
            k
            for k in keys
            if isinstance(k, dict) and k.get("kty") in KEY_TYPES and k.get("use", "sig") == "sig" and "d" not in k
        ]
        return {k.get("kid"): k for k in usable}


@dataclass(frozen=True, slots=True)
class OAuthSettings:
    """Where tokens come from and whom they are for: the issuer, the accepted audiences, the JWKS URL and
    how tolerant and how often the keys are fetched."""

    issuer: str
    audiences: tuple[str, ...]
    jwks_url: str | None
    leeway_s: float = DEFAULT_LEEWAY_S
    min_refresh_s: float = DEFAULT_MIN_REFRESH_S
    timeout_s: float = DEFAULT_FETCH_TIMEOUT_S

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> OAuthSettings | None:
        """From a mapping of variables, read as the runtime's settings are."""
        return cls.from_settings(Settings.from_env(env))

    @classmethod
    def from_settings(cls, settings: Settings) -> OAuthSettings | None:
        """The OAuth settings from KUMITATE_OAUTH_*, or None when no issuer is configured."""
        issuer = (settings.oauth_issuer or "").strip()
        if not issuer:
            return None
        if not settings.oauth_audience:
            raise ValueError(
                "KUMITATE_OAUTH_ISSUER is set but KUMITATE_OAUTH_AUDIENCE is not: name the audience "
                "(`aud`) your identity provider puts into tokens for this server"
            )
        return cls(
            issuer=issuer,
            audiences=settings.oauth_audience,
            jwks_url=(settings.oauth_jwks_url or "").strip() or None,
            leeway_s=settings.oauth_leeway_s,
            min_refresh_s=settings.oauth_jwks_min_refresh_s,
            timeout_s=settings.oauth_http_timeout_s,
        )


def scopes_of(claims: Mapping[str, object]) -> frozenset[str]:
    """`scope` (RFC 9068: space-separated) or `scp` (a list, or a string, by provider). `*` means
    every scope in the static token table; from an identity provider it is just a name, dropped."""
    raw = claims.get("scope", claims.get("scp"))
    if isinstance(raw, str):
        raw = raw.split()
    if not isinstance(raw, list):
        return frozenset()
    return frozenset(s for s in raw if isinstance(s, str) and s != "*")


def _header(token: str) -> dict[str, Any] | None:
    """The token's JOSE header if it looks like a JWS, else None (e.g. a static table token)."""
    if token.count(".") != 2:
        return None
    try:
        return jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        return None


class OAuthVerifier:
    """Verifies an identity provider's JWT (signature by the issuer's keys, issuer, audience, expiry)
    and turns it into a principal with its scopes."""

    def __init__(self, settings: OAuthSettings, keys: KeySet | None = None) -> None:
        self.settings = settings
        self.keys = keys or KeySet(
            settings.issuer, settings.jwks_url, min_refresh_s=settings.min_refresh_s, timeout_s=settings.timeout_s
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> OAuthVerifier | None:
        """From a mapping of variables, read as the runtime's settings are."""
        return cls.from_settings(Settings.from_env(env))

    @classmethod
    def from_settings(cls, settings: Settings) -> OAuthVerifier | None:
        """The verifier of the configured issuer, or None when OAuth is off."""
        oauth = OAuthSettings.from_settings(settings)
        return cls(oauth) if oauth is not None else None

    @staticmethod
    def looks_like_jwt(token: str) -> bool:
        """Whether the token has a JWT header (so it is verified here, not looked up in the token table)."""
        return _header(token) is not None

    async def prepare(self, token: str) -> None:
        """Refresh the keys in a worker thread when this token names a kid not yet known."""
        header = _header(token)
        if header is None or header.get("alg") not in ALGORITHMS:
            return
        kid = header.get("kid")
        if self.keys.stale_for(kid):
            await asyncio.to_thread(self.keys.refresh, kid)

    def verify(self, token: str) -> Principal:
        """The principal of a valid access token (`sub`, scopes); InvalidToken otherwise. Reads only the cache."""
        header = _header(token)
        if header is None:
            raise InvalidToken("not a JWT")
        alg = header.get("alg")
        if alg not in ALGORITHMS:
            raise InvalidToken(f"the signing algorithm {str(alg)[:16]!r} is not accepted")
        jwk = self.keys.get(header.get("kid"))
        if jwk is None:
            raise InvalidToken("signed with an unknown key")
        s = self.settings
        try:
            key = jwt.PyJWK(jwk, algorithm=None if "alg" in jwk else alg)
            claims = jwt.decode(
                token,
                key,
                algorithms=list(ALGORITHMS),
                audience=list(s.audiences),
                issuer=s.issuer,
                leeway=s.leeway_s,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise InvalidToken("the token has expired") from None
        except jwt.ImmatureSignatureError:
            raise InvalidToken("the token is not valid yet") from None
        except jwt.InvalidAudienceError:
            raise InvalidToken("the token is for another audience") from None
        except jwt.InvalidIssuerError:
            raise InvalidToken("the token is from another issuer") from None
        except jwt.PyJWTError:
            raise InvalidToken("the token's signature or claims are not valid") from None
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise InvalidToken("the token has no subject")
        return Principal(claims["sub"], scopes_of(claims))

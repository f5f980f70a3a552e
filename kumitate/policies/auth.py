"""Bearer-token authentication and scope checks.

Tokens live outside the repository: KUMITATE_TOKENS (JSON) or KUMITATE_TOKENS_FILE
(a JSON or YAML file), each mapping a token to `{"principal": ..., "scopes": [...]}`.
The fixed development token `dev-token` exists only when KUMITATE_ALLOW_DEV_TOKEN=1.
With no token configured at all, auth is off and every caller is the anonymous
principal with every scope (the embedded default of `make serve`); configure a
token and every non-public tool requires one. stdio and in-memory MCP run as the
local principal KUMITATE_LOCAL_PRINCIPAL (default `local`, every scope).
Tokens are compared in constant time and never logged. JWT access tokens from an identity
provider (kumitate.policies.oauth, KUMITATE_OAUTH_ISSUER) are accepted beside the table.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kumitate.context import Principal
from kumitate.errors import ErrorCode, ToolError
from kumitate.settings import Settings

if TYPE_CHECKING:
    from kumitate.policies.oauth import OAuthVerifier

DEV_TOKEN = "dev-token"
ALL_SCOPES = "*"


@dataclass(frozen=True, slots=True)
class TokenEntry:
    """One row of the static token table: the token's bytes (compared in constant time) and who it is."""

    token: bytes
    principal: Principal


def _load(text: str, origin: str, *, yaml_ok: bool) -> object:
    """Decode the token table. A parser's own error quotes the offending line, which holds a
    token: report only where it is, and drop the original exception (`from None`), so a bad
    file never puts a secret into a start-up traceback or a log."""
    import yaml  # only a process with a token file reads YAML

    try:
        return yaml.safe_load(text) if yaml_ok else json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{origin}: not valid JSON (line {exc.lineno}, column {exc.colno})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ValueError(f"{origin}: not valid YAML or JSON{where}") from None


def _parse(raw: object, origin: str) -> list[TokenEntry]:
    """Errors name the principal or the entry's position, never the token itself."""
    if not isinstance(raw, dict):
        raise ValueError(f"{origin}: expected an object mapping tokens to principals")
    entries = []
    for index, (token, spec) in enumerate(raw.items(), start=1):
        where = f"{origin}: entry {index}"
        if not isinstance(spec, dict) or not isinstance(spec.get("principal"), str) or not spec["principal"]:
            raise ValueError(f"{where} needs a `principal` (the token itself is not shown)")
        scopes = spec.get("scopes", [])
        if not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes):
            # a bare string would become a set of its characters
            raise ValueError(f"{where} (principal {spec['principal']!r}): `scopes` must be a list of strings")
        if not str(token).strip():
            raise ValueError(f"{where} (principal {spec['principal']!r}): the token is empty")
        entries.append(TokenEntry(str(token).encode(), Principal(spec["principal"], frozenset(scopes))))
    return entries


class AuthError(ToolError):
    """An UNAUTHORIZED or FORBIDDEN refusal with the parameters of its RFC 6750 `WWW-Authenticate`
    challenge (`error`, `scope`, ...); the pipeline adds where to find the resource's metadata."""

    def __init__(self, message: str, *, code: ErrorCode, challenge: dict[str, str]) -> None:
        super().__init__(message, code=code)
        self.challenge = challenge


class Authenticator:
    """Who is calling: the static token table, then an identity provider's JWT when one is configured;
    a local (stdio, in-process) caller is trusted as `local`."""

    def __init__(self, entries: list[TokenEntry], local: Principal, oauth: OAuthVerifier | None = None) -> None:
        self.entries = entries
        self.local = local
        self.oauth = oauth
        self.enabled = bool(entries) or oauth is not None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Authenticator:
        """From a mapping of variables, read as the runtime's settings are."""
        return cls.from_settings(Settings.from_env(env))

    @classmethod
    def from_settings(cls, settings: Settings) -> Authenticator:
        """The table from KUMITATE_TOKENS and/or KUMITATE_TOKENS_FILE, plus the OAuth verifier when configured."""
        entries: list[TokenEntry] = []
        if settings.tokens is not None:
            origin = "KUMITATE_TOKENS"
            entries += _parse(_load(settings.tokens.get_secret_value(), origin, yaml_ok=False), origin)
        if settings.tokens_file is not None:
            path = settings.tokens_file
            entries += _parse(_load(path.read_text(encoding="utf-8"), str(path), yaml_ok=True), str(path))
        if settings.allow_dev_token:
            entries.append(TokenEntry(DEV_TOKEN.encode(), Principal("dev", frozenset({ALL_SCOPES}))))
        local = Principal(settings.local_principal, frozenset({ALL_SCOPES}))
        if not (settings.oauth_issuer or "").strip():
            return cls(entries, local)  # no identity provider: neither the JWT nor the HTTP client loads
        from kumitate.policies.oauth import OAuthVerifier

        return cls(entries, local, OAuthVerifier.from_settings(settings))

    def lookup(self, token: str) -> Principal | None:
        """Constant-time over every configured token: no early exit on a match."""
        candidate = token.encode()
        found = None
        for entry in self.entries:
            if hmac.compare_digest(entry.token, candidate):
                found = entry.principal
        return found

    @staticmethod
    def bearer_token(authorization: str | None) -> str | None:
        """The token of an `Authorization: Bearer <token>` header, or None for any other header."""
        scheme, _, token = (authorization or "").partition(" ")
        return token.strip() if scheme.lower() == "bearer" and token.strip() else None

    def resolve(self, authorization: str | None) -> tuple[Principal | None, str]:
        """The principal of an `Authorization: Bearer <token>` header (the table first, then a
        JWT from the identity provider), or None and why not, in words safe to send back."""
        token = self.bearer_token(authorization)
        if token is None:
            return None, "no bearer token"
        principal = self.lookup(token)
        if principal is not None or self.oauth is None:
            return principal, "unknown token"
        from kumitate.policies.oauth import InvalidToken  # loaded with the verifier

        try:
            return self.oauth.verify(token), ""
        except InvalidToken as exc:
            return None, str(exc)

    def lookup_bearer(self, authorization: str | None) -> Principal | None:
        """The principal of an `Authorization: Bearer <token>` header, or None."""
        return self.resolve(authorization)[0]

    async def prepare(self, authorization: str | None) -> None:
        """Before admission, off the event loop: fetch the identity provider's keys if this token needs them."""
        token = self.bearer_token(authorization)
        if self.oauth is not None and token is not None:
            await self.oauth.prepare(token)

    def authenticate(self, authorization: str | None, *, local: bool, public: bool) -> Principal:
        """The caller's principal; raises UNAUTHORIZED when authentication is on and the request has no
        valid token, unless the tool is public (then an anonymous principal)."""
        if local:
            return self.local
        if not self.enabled:
            return Principal("anonymous", frozenset({ALL_SCOPES}))
        principal, reason = self.resolve(authorization)
        if principal is None:
            if public:
                return Principal("anonymous")
            if self.bearer_token(authorization) is None:
                message = "a valid bearer token is required (Authorization: Bearer <token>)"
                raise AuthError(message, code="UNAUTHORIZED", challenge={})
            raise AuthError(
                f"the bearer token was refused: {reason}",
                code="UNAUTHORIZED",
                challenge={"error": "invalid_token", "error_description": reason},
            )
        return principal

    @staticmethod
    def authorize(principal: Principal, required: list[str] | None) -> None:
        """Raise FORBIDDEN when `principal` lacks a scope in `required`."""
        if not required or ALL_SCOPES in principal.scopes:
            return
        missing = sorted(set(required) - principal.scopes)
        if missing:
            raise AuthError(
                f"the token lacks the scope(s) {', '.join(missing)}",
                code="FORBIDDEN",
                challenge={"error": "insufficient_scope", "scope": " ".join(sorted(required))},
            )


def exposure_warning(host: str, auth_enabled: bool) -> str | None:
    """What to tell the operator who serves beyond this machine with auth off.

    Auth off is the embedded default, right for a loopback address; on any other address it
    hands every tool, with every scope, to whoever can reach the port. Serving stays allowed
    (a private network may be the point), but not silently."""
    if auth_enabled:
        return None
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if loopback:
        return None
    return (
        f"WARNING: serving on {host} with authentication off: anyone who can reach this port may call "
        "every tool. Configure KUMITATE_TOKENS, KUMITATE_TOKENS_FILE or KUMITATE_OAUTH_ISSUER, or bind to 127.0.0.1."
    )

"""Bearer-token authentication and scope checks.

Tokens live outside the repository: KUMITATE_TOKENS (JSON) or KUMITATE_TOKENS_FILE
(a JSON or YAML file), each mapping a token to `{"principal": ..., "scopes": [...]}`.
The fixed development token `dev-token` exists only when KUMITATE_ALLOW_DEV_TOKEN=1.
With no token configured at all, auth is off and every caller is the anonymous
principal with every scope (the embedded default of `make serve`); configure a
token and every non-public tool requires one. stdio and in-memory MCP run as the
local principal KUMITATE_LOCAL_PRINCIPAL (default `local`, every scope).
Tokens are compared in constant time and never logged.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kumitate.context import Principal
from kumitate.errors import ToolError

DEV_TOKEN = "dev-token"
ALL_SCOPES = "*"


@dataclass(frozen=True, slots=True)
class TokenEntry:
    token: bytes
    principal: Principal


def _parse(raw: Any, origin: str) -> list[TokenEntry]:
    if not isinstance(raw, dict):
        raise ValueError(f"{origin}: expected an object mapping tokens to principals")
    entries = []
    for token, spec in raw.items():
        if not isinstance(spec, dict) or not isinstance(spec.get("principal"), str):
            raise ValueError(f"{origin}: each token needs a `principal` (the token itself is not shown)")
        scopes = frozenset(str(s) for s in spec.get("scopes", []))
        entries.append(TokenEntry(str(token).encode(), Principal(spec["principal"], scopes)))
    return entries


class Authenticator:
    def __init__(self, entries: list[TokenEntry], local: Principal) -> None:
        self.entries = entries
        self.local = local
        self.enabled = bool(entries)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Authenticator:
        entries: list[TokenEntry] = []
        if env.get("KUMITATE_TOKENS"):
            entries += _parse(json.loads(env["KUMITATE_TOKENS"]), "KUMITATE_TOKENS")
        if env.get("KUMITATE_TOKENS_FILE"):
            path = Path(env["KUMITATE_TOKENS_FILE"])
            entries += _parse(yaml.safe_load(path.read_text(encoding="utf-8")), str(path))
        if env.get("KUMITATE_ALLOW_DEV_TOKEN") == "1":
            entries.append(TokenEntry(DEV_TOKEN.encode(), Principal("dev", frozenset({ALL_SCOPES}))))
        local = Principal(env.get("KUMITATE_LOCAL_PRINCIPAL", "local"), frozenset({ALL_SCOPES}))
        return cls(entries, local)

    def lookup(self, token: str) -> Principal | None:
        """Constant-time over every configured token: no early exit on a match."""
        candidate = token.encode()
        found = None
        for entry in self.entries:
            if hmac.compare_digest(entry.token, candidate):
                found = entry.principal
        return found

    def authenticate(self, authorization: str | None, *, local: bool, public: bool) -> Principal:
        if local:
            return self.local
        if not self.enabled:
            return Principal("anonymous", frozenset({ALL_SCOPES}))
        scheme, _, token = (authorization or "").partition(" ")
        principal = self.lookup(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
        if principal is None:
            if public:
                return Principal("anonymous")
            raise ToolError("a valid bearer token is required (Authorization: Bearer <token>)", code="UNAUTHORIZED")
        return principal

    @staticmethod
    def authorize(principal: Principal, required: list[str] | None) -> None:
        if not required or ALL_SCOPES in principal.scopes:
            return
        missing = sorted(set(required) - principal.scopes)
        if missing:
            raise ToolError(f"the token lacks the scope(s) {', '.join(missing)}", code="FORBIDDEN")

"""A tool's or resource's call policy, typed: parsed once when its binding is built.

The spec declares `policy` as data (specs/_meta/policy.schema.json, already validated by
codegen); the request path reads only this frozen form, never the mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

GENERIC_CODES = frozenset({"BAD_REQUEST", "INTERNAL", "REQUEST_TIMEOUT", "STORAGE_UNAVAILABLE", "SERVICE_UNAVAILABLE"})
"""Codes any handler may raise without declaring them: schema violations and crashes (codegen's
GENERIC_ERRORS), and what the runtime's own helpers raise inside a handler (the commit gate and
`ctx.check_deadline`: REQUEST_TIMEOUT; a storage failure: STORAGE_UNAVAILABLE; a service's full
bulkhead: SERVICE_UNAVAILABLE)."""


@dataclass(frozen=True, slots=True)
class RateLimit:
    """A tool's declared rate limit per principal: steady calls per second and the burst allowed."""

    rps: float
    burst: int


@dataclass(frozen=True, slots=True)
class Policy:
    """A tool's declared policy (the spec's `policy`): scopes, public, rate limit, timeout, idempotency and output limit."""

    scopes: tuple[str, ...] = ()
    public: bool = False
    rate_limit: RateLimit | None = None
    timeout_ms: int | None = None
    idempotency: bool = False
    idempotency_ttl_s: int = 86400
    max_output_bytes: int | None = None
    on_oversize: Literal["fail", "trim"] = "fail"
    max_request_bytes: int | None = None

    @classmethod
    def parse(cls, declared: Mapping[str, Any] | None) -> Policy:
        """The policy of a spec's `policy` mapping (None: the defaults)."""
        data = declared or {}
        limit = data.get("rate_limit")
        return cls(
            scopes=tuple(data.get("scopes") or ()),
            public=bool(data.get("public")),
            rate_limit=RateLimit(float(limit["rps"]), int(limit["burst"])) if limit else None,
            timeout_ms=int(data["timeout_ms"]) if data.get("timeout_ms") else None,
            idempotency=bool(data.get("idempotency")),
            idempotency_ttl_s=int(data.get("idempotency_ttl_s", 86400)),
            max_output_bytes=int(data["max_output_bytes"]) if data.get("max_output_bytes") else None,
            on_oversize="trim" if data.get("on_oversize") == "trim" else "fail",
            max_request_bytes=int(data["max_request_bytes"]) if data.get("max_request_bytes") else None,
        )

    @property
    def required_scopes(self) -> tuple[str, ...]:
        """The scopes a caller's token must hold: none on a public route."""
        return () if self.public else self.scopes

    def codes(self) -> frozenset[str]:
        """The codes this policy itself can answer, so a handler may raise them undeclared too."""
        codes = set()
        if self.max_output_bytes:
            codes.add("OUTPUT_TOO_LARGE")
        if self.rate_limit:
            codes.add("RATE_LIMITED")
        if self.max_request_bytes:
            codes.add("PAYLOAD_TOO_LARGE")
        if self.idempotency:
            codes |= {"CONFLICT", "IN_PROGRESS"}
        return frozenset(codes)


def allowed_codes(errors: list[str], policy: Policy) -> frozenset[str]:
    """Every code a handler may raise: its declared `errors`, the generic ones, its policy's."""
    return frozenset(errors) | GENERIC_CODES | policy.codes()

"""A tool's or resource's call policy, typed: parsed once when its binding is built.

The spec declares `policy` as data (specs/_meta/policy.schema.json, already validated by
codegen); the request path reads only this frozen form, never the mapping.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kumitate.errors import ErrorCode

GENERIC_CODES: frozenset[ErrorCode] = frozenset(
    {
        "BAD_REQUEST",
        "INTERNAL",
        "RATE_LIMITED",
        "REQUEST_TIMEOUT",
        "STORAGE_UNAVAILABLE",
        "STORAGE_DAMAGED",
        "SERVICE_UNAVAILABLE",
    }
)
"""Codes any call may end with, whatever its spec declares, so a handler may raise them undeclared too:
input that breaks the schema and crashes (codegen's GENERIC_ERRORS), the deadline (the Deadline step, the
commit gate, `ctx.check_deadline`), a storage failure or a damaged database file (kumitate.faults), a full
bulkhead or a draining instance, and the failed-authentication guard (kumitate.policies.authguard), which
refuses a blocked address on any route."""

HTTP_EDGE_CODES: frozenset[ErrorCode] = frozenset(
    {
        "BAD_REQUEST",
        "HEADERS_TOO_LARGE",
        "INTERNAL",
        "METHOD_NOT_ALLOWED",
        "NOT_ACCEPTABLE",
        "ORIGIN_NOT_ALLOWED",
        "PAYLOAD_TOO_LARGE",
        "REQUEST_TIMEOUT",
        "UNSUPPORTED_MEDIA_TYPE",
    }
)
"""Codes the HTTP edge answers on any route before or around the pipeline (kumitate/transports/edge/,
protocol.py, http/): a malformed request, headers or a body too large, a refused Host/Origin, a body
that does not arrive in time, a method, media type or Accept the route does not take."""

RESOURCE_CODES: frozenset[ErrorCode] = frozenset({"NOT_FOUND"})
"""Codes every resource read may end with: a resource not enabled here, or a URI that names nothing."""


@dataclass(frozen=True, slots=True)
class RateLimit:
    """`policy.rate_limit`: a token bucket per principal and tool (`rps` refill, `burst` size)."""

    rps: float
    burst: int


@dataclass(frozen=True, slots=True)
class Policy:
    """A tool's, resource's or prompt's `policy` (service defaults merged with its own), typed.

    The Python side of specs/_meta/policy.schema.json: one field per property of the meta-schema
    (tests/runtime/steps/test_policy.py holds them together), but `idempotency_note`, which only the
    spec lint reads. The runtime's steps and codegen (ToolSpec.rules) both read this form; `codes()`
    is the one policy -> error-codes mapping."""

    scopes: tuple[str, ...] = ()
    public: bool = False
    rate_limit: RateLimit | None = None
    timeout_ms: int | None = None
    idempotency: bool = False
    idempotency_ttl_s: int = 86400
    max_output_bytes: int | None = None
    on_oversize: Literal["fail", "trim"] = "fail"
    max_request_bytes: int | None = None
    assert_formats: bool = False
    """Input strings must match their `format` (JSON Schema's format-assertion), not only their type."""

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
            assert_formats=bool(data.get("assert_formats")),
        )

    @property
    def required_scopes(self) -> tuple[str, ...]:
        """The scopes a caller's token must hold: none on a public route."""
        return () if self.public else self.scopes

    def codes(self) -> frozenset[ErrorCode]:
        """The codes this policy's own steps can answer (auth, rate limit, idempotency, request and output
        size): with the declared and generic codes, what the wire may send, so a handler may raise them too.
        The one policy -> codes mapping: the runtime (`allowed_codes`) and the OpenAPI document
        (codegen/openapi.py) both read it."""
        codes: set[ErrorCode] = set()
        if not self.public:
            codes.add("UNAUTHORIZED")
            if self.scopes:
                codes.add("FORBIDDEN")
        if self.rate_limit:
            codes.add("RATE_LIMITED")
        if self.timeout_ms:
            codes.add("REQUEST_TIMEOUT")
        if self.idempotency:
            codes |= {"CONFLICT", "IN_PROGRESS"}
        if self.max_output_bytes:  # also in trim mode: a body with nothing left to trim
            codes.add("OUTPUT_TOO_LARGE")
        if self.max_request_bytes:
            codes.add("PAYLOAD_TOO_LARGE")
        return frozenset(codes)


def allowed_codes(errors: Iterable[str], policy: Policy, *, resource: bool = False) -> frozenset[str]:
    """Every code a call may end with, so every code its handler may raise: its declared `errors`, the
    generic ones, its policy's, and a resource's own."""
    return frozenset(errors) | GENERIC_CODES | policy.codes() | (RESOURCE_CODES if resource else frozenset())


def http_codes(errors: Iterable[str], policy: Policy, *, resource: bool = False) -> frozenset[str]:
    """Every code the HTTP wire can send for an operation: what the call may end with, and the edge's."""
    return allowed_codes(errors, policy, resource=resource) | HTTP_EDGE_CODES

"""What a typed client and its backends exchange: the operation, one call of it, and the reply.

A generated client names an `Op`; the client base (`kumitate.client.base`) turns a method call into a
`Call`; a backend (HTTP or MCP) sends it and returns a `Reply`. Nothing here knows a transport.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

from pydantic import BaseModel

from kumitate.httpshape import HttpShape
from kumitate.policies.idempotency import KEY_ARGUMENT as IDEMPOTENCY_ARGUMENT

__all__ = [
    "IDEMPOTENCY_ARGUMENT",
    "IDEMPOTENCY_HEADER",
    "Arguments",
    "AsyncBackend",
    "Backend",
    "Call",
    "CallOptions",
    "Op",
    "Reply",
    "bearer",
]

IDEMPOTENCY_HEADER = "Idempotency-Key"


Arguments = BaseModel | Mapping[str, Any] | None
"""A call's arguments: the generated input model, or its fields as a mapping (None: no arguments)."""


class CallOptions(TypedDict, total=False):
    """What a generated client method passes beside its arguments: the route's parameters, the run id to
    send, and an Idempotency-Key (one is made for an idempotent operation that names none)."""

    params: Mapping[str, str] | None
    run_id: str | None
    idempotency_key: str | None


@dataclass(frozen=True, slots=True)
class Op:
    """One tool or resource as the wire sees it (from the spec, via the generated client)."""

    service: str
    name: str
    http_method: str
    http_path: str
    idempotent: bool = False
    uri: str = ""
    """Set for a resource: its MCP URI template; `http_path` is then its GET route."""
    http_shape: HttpShape = field(default_factory=HttpShape)
    """Where a tool's input and output travel over HTTP (kumitate.httpshape); the default: the JSON body."""


@dataclass(frozen=True, slots=True)
class Reply:
    """What a backend got back: a success body, or a failure with whatever the server said."""

    ok: bool
    body: Any
    status: int | None = None
    retry_after_s: float | None = None


@dataclass(frozen=True, slots=True)
class Call:
    """One request a client sends: the operation, its arguments or path parameters, and the ids it carries."""

    op: Op
    arguments: dict[str, Any] | None
    params: dict[str, str]
    run_id: str | None
    idempotency_key: str | None


class Backend(Protocol):
    """How a blocking client reaches the server (HTTP, or MCP through a portal)."""

    def send(self, call: Call) -> Reply:
        """Send one call and return the server's answer, or a Reply saying it never arrived."""

    def close(self) -> None:
        """Release the connection(s); the backend is not used afterwards."""


class AsyncBackend(Protocol):
    """How an async client reaches the server (HTTP, MCP, or a runtime in the same process)."""

    async def send(self, call: Call) -> Reply:
        """Send one call and return the server's answer, or a Reply saying it never arrived."""

    async def aclose(self) -> None:
        """Release the connection(s) or session; the backend is not used afterwards."""


def bearer(token: str | None) -> dict[str, str]:
    """The Authorization header that carries `token`, or none without one."""
    return {"Authorization": f"Bearer {token}"} if token else {}

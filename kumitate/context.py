"""The per-call context every handler receives, whatever the transport."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: an id and the scopes granted to it."""

    id: str = "anonymous"
    scopes: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Attachment:
    """Binary content a handler wants shown beside its structured result.

    MCP renders it as image (or embedded resource) content; HTTP clients get the
    URL the handler put in the result instead, so the JSON body stays small.
    """

    mime_type: str
    data: bytes


@dataclass(slots=True)
class CallContext:
    """Correlation ids and caller identity for one tool call.

    Handlers read it; they never see the wire format (HTTP headers, MCP `_meta`).
    `warnings` collects non-fatal notes a handler wants surfaced (the pipeline may
    add its own, e.g. an output trimmed by a size guard); `attachments` carries
    binary content (charts) that MCP shows as image content.
    """

    service: str
    tool: str
    transport: str
    run_id: str
    trace_id: str
    principal: Principal = field(default_factory=Principal)
    received_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    warnings: list[str] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)
    deadline: float | None = None
    """time.monotonic() after which the caller has been told REQUEST_TIMEOUT."""

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def check_deadline(self) -> None:
        """Call right before committing: a handler running in a worker thread cannot be
        interrupted, so it must not commit once the caller has been told it timed out."""
        if self.expired():
            from kumitate.errors import ToolError

            raise ToolError(
                "the deadline passed before the change was committed; nothing was saved", code="REQUEST_TIMEOUT"
            )

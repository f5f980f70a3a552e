"""What flows through the steps: the transport's request, the call's state, its outcome."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kumitate.bindings import PromptBinding, ResourceBinding, ToolBinding
from kumitate.callstate import Asker, CallState, LogSink, ProgressSink
from kumitate.context import Attachment, CallContext, state_of


@dataclass(slots=True)
class CallRequest:
    """What an adapter knows about a call, transport-neutral."""

    transport: str
    headers: Mapping[str, str] = field(default_factory=dict)
    meta: Mapping[str, Any] | None = None
    ids: tuple[str, str] | None = None
    client: str | None = None
    authorization: str | None = None
    local: bool = False
    """stdio / in-memory MCP: no network peer, runs as the configured local principal."""
    idempotency_key: str | None = None
    base_url: str | None = None
    """`scheme://host[:port]` the caller used (HTTP and MCP over HTTP); None over stdio."""
    progress: ProgressSink | None = None
    """Where the handler's `CallContext.progress` reports go, when the caller asked for them."""
    asker: Asker | None = None
    task_timeout_s: float | None = None
    """Set when the call runs as a task (kumitate.tasks): its own, longer deadline replaces the tool's."""
    on_admitted: Callable[[CallContext], None] | None = None
    """Called once the call is admitted and its input valid, just before the handler runs (a task's
    start answers 202 then); it may refuse by raising a ToolError."""
    """How `CallContext.ask` reaches the user, when the transport and the client can ask."""
    log: LogSink | None = None
    """Where the handler's `CallContext.log` messages go, when the caller asked for them."""


@dataclass(slots=True)
class Outcome:
    """A call's result: a success body or an error envelope, with its status."""

    ok: bool
    status: int
    code: str
    body: Any
    run_id: str
    trace_id: str
    retryable: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    media_type: str = "application/json"
    replayed: bool = False


@dataclass(slots=True)
class Call:
    """One call on its way through the steps."""

    binding: ToolBinding | ResourceBinding | PromptBinding
    request: CallRequest
    ctx: CallContext
    arguments: Any = None
    """A tool's arguments (a JsonBody, or data an adapter decoded); set by `read` once admitted."""
    read: Callable[[], Awaitable[Any]] | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    """A resource's URI parameters."""

    @property
    def state(self) -> CallState:
        """The pipeline's side of the call (its deadline, what it waits on, the commit gate): the steps'
        to write, while the handler gets `ctx`."""
        return state_of(self.ctx)

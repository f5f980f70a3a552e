"""The per-call context every handler receives, whatever the transport: the handler contract.

`CallContext` is what a handler may use; the pipeline's side of the same call (the transport's sinks,
the deadline it sets, what the call waits on, the commit gate that cancelling and timing out close)
is a `kumitate.callstate.CallState`, which the pipeline, its steps, the transports, the task runner
and the storage layer reach with `state_of(ctx)` or `current_state()`, and where the transports find
the types of their sinks. `Question` and `CallCancelled` live there too and are named here, since a
handler meets them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from kumitate.callstate import Asker, CallCancelled, CallState, Question
from kumitate.observability import tracing

__all__ = [
    "Attachment",
    "CallCancelled",
    "CallContext",
    "Message",
    "Principal",
    "Question",
    "bound",
    "commit_gate",
    "current_call",
    "current_state",
    "progress",
    "state_of",
    "url_for",
]


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
    uri: str | None = None
    """Set: MCP shows it as an embedded resource with this URI (text for text/* and JSON types);
    unset: image content for image/*, audio content for audio/*."""


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a rendered prompt (specs/<service>/prompts/): text, or an Attachment."""

    content: str | Attachment
    role: Literal["user", "assistant"] = "user"


class ResourceRoute(Protocol):
    """What `url_for` and `changed` read of one of the service's resources. `kumitate.bindings.ResourceBinding`
    is one; the bindings sit above the context (they build it), so the context names only what it reads."""

    @property
    def uri(self) -> str:
        """The resource's MCP URI template (`chart://{chart_id}`)."""
        ...

    @property
    def params(self) -> Sequence[str]:
        """The template's variables, which `url_for` and `changed` must be given, no more."""
        ...

    def url(self, base: str, **params: str) -> str:
        """The resource's HTTP address under `base`, `params` filled in."""
        ...


class CallContext:
    """One call as its handler sees it: correlation ids, the caller, the deadline, and the ways to talk
    back (`progress`, `log`, `ask`, `changed`, `url_for`), whatever the transport.

    Handlers read it; they never see the wire format (HTTP headers, MCP `_meta`), nor what belongs to
    the pipeline: the transport's sinks, setting the deadline and stopping the call live in the call's
    `kumitate.callstate.CallState`, which the context reads and a handler cannot change.
    `warnings` collects non-fatal notes a handler wants surfaced (the pipeline may add its own, e.g.
    an output trimmed by a size guard); `attachments` carries binary content (charts) that MCP shows
    as image content.

    The pipeline builds one per call; a test or a script builds one directly (or with a service's
    `direct_call`), giving a `deadline` (a time.monotonic() value) if the call has one.
    """

    __slots__ = (
        "_state",
        "attachments",
        "credentials",
        "principal",
        "public_url",
        "received_at",
        "routes",
        "run_id",
        "service",
        "tool",
        "trace_id",
        "transport",
        "warnings",
    )

    def __init__(
        self,
        service: str,
        tool: str,
        transport: str,
        run_id: str,
        trace_id: str,
        principal: Principal | None = None,
        received_at: datetime | None = None,
        warnings: list[str] | None = None,
        attachments: list[Attachment] | None = None,
        *,
        deadline: float | None = None,
        public_url: str | None = None,
        routes: Mapping[str, ResourceRoute] | None = None,
        state: CallState | None = None,
        credentials: str | None = None,
    ) -> None:
        """`state` is the pipeline's for this call (the transport's sinks in it); without one the call
        gets its own. `deadline`, if given, is set on it. `credentials`: the caller's `Authorization`
        header as it arrived (None over stdio), for a facade that passes it on to the API it fronts
        (kumitate.forward); never logged, and not part of the repr."""
        self.service = service
        self.tool = tool
        self.transport = transport
        self.run_id = run_id
        self.trace_id = trace_id
        self.principal = principal if principal is not None else Principal()
        self.received_at = received_at if received_at is not None else datetime.now(UTC)
        self.warnings: list[str] = warnings if warnings is not None else []
        self.attachments: list[Attachment] = attachments if attachments is not None else []
        self.public_url = public_url
        self.routes: Mapping[str, ResourceRoute] = routes if routes is not None else {}
        self._state = state if state is not None else CallState(run_id)
        self.credentials = credentials
        if deadline is not None:
            self._state.deadline = deadline

    def __repr__(self) -> str:
        return (
            f"CallContext(service={self.service!r}, tool={self.tool!r}, transport={self.transport!r}, "
            f"run_id={self.run_id!r}, trace_id={self.trace_id!r}, principal={self.principal!r})"
        )

    @property
    def deadline(self) -> float | None:
        """time.monotonic() after which the caller is told REQUEST_TIMEOUT; None when the call has none.
        The deadline step sets it; a handler reads it (to bound its own waits)."""
        return self._state.deadline

    @property
    def asker(self) -> Asker | None:
        """None when the transport cannot put a question to the caller's side (then `ask` answers None
        at once), else `ask_all`: lets a handler skip preparing a question nobody can answer."""
        return self.ask_all if self._state.asker is not None else None

    def url_for(self, resource: str, **params: str) -> str:
        """The HTTP address of one of this service's resources, as this caller reaches the server.

        `resource` is the resource's name in the spec (specs/<service>/resources/<name>.yaml) and
        `params` fill its URI template's variables, percent-encoded: the route comes from the spec,
        so a handler never spells one. The base is KUMITATE_PUBLIC_URL when the operator set it,
        else the address of this call (Host, and X-Forwarded-Proto behind a trusted proxy), else the
        address served. A resource the service does not have, or a parameter missing or extra, is a
        programming error (LookupError, TypeError), never an answer to the caller.
        """
        return self._route(resource, params).url(self.public_url or "", **params)

    def changed(self, resource: str, **params: str) -> None:
        """Say that one of this service's resources changed (named and filled as for `url_for`): the
        MCP clients subscribed to it get `notifications/resources/updated` (on transports that keep a
        session, on this instance); nowhere else. Safe from a worker thread."""
        route = self._route(resource, params)
        sink = self._state.change_sink
        if sink is not None:
            uri = route.uri
            for name, value in params.items():
                uri = uri.replace(f"{{{name}}}", value)
            sink(uri)

    def _route(self, resource: str, params: Mapping[str, str]) -> ResourceRoute:
        route = self.routes.get(resource)
        if route is None:
            known = ", ".join(sorted(self.routes)) or "none"
            raise LookupError(f"service {self.service!r} has no resource {resource!r} (it has: {known})")
        if set(params) != set(route.params):
            raise TypeError(f"resource {resource!r} takes {sorted(route.params)}, not {sorted(params)}")
        return route

    def expired(self) -> bool:
        """Whether the call has timed out (or passed its deadline): a long handler may stop here."""
        return self._state.expired()

    def check_deadline(self) -> None:
        """Raise REQUEST_TIMEOUT once the deadline has passed: for a long handler to stop early."""
        self._state.check_deadline()

    def cancelled(self) -> bool:
        """Whether the caller went away: a long handler's loops may stop here (see `progress`)."""
        return self._state.cancelled()

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Report how far a long handler got (`done` of `total` units; the message without user data).

        It is also where the handler stops: once the call is cancelled this raises CallCancelled,
        and once the deadline has passed REQUEST_TIMEOUT, so a loop that reports per file or
        batch ends at its next report instead of working on for nobody (once a commit has begun it
        only reports: that change is being saved). Safe from a worker thread.
        """
        state = self._state
        if not state.committed():
            state.check_running()
        if state.progress_sink is not None:
            state.progress_sink(done, total, message)

    def log(self, message: str, level: str = "info") -> None:
        """Tell the caller what the call is doing (MCP notifications/message, when the client asked
        for messages at this level; nowhere else). Never put user data in it: like the server's
        own logs, a message carries steps, counts and codes. Safe from a worker thread."""
        sink = self._state.log_sink
        if sink is not None:
            sink(level, message)

    def ask(self, key: str, message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        """Put a question to the user and wait for the answer (the content of a form of `schema`).

        None when the transport cannot ask (HTTP, an MCP client without elicitation) or the user
        declined: the handler then answers as it would without asking (e.g. with the question in
        its result). For sync handlers (they run in a worker thread, which waits for the answer);
        the call's deadline keeps running while the user thinks. Over MCP 2026-07-28 the answer
        arrives with a retry of the call, so a handler that asks must be safe to run again up to
        the question (it is: nothing is committed before it asks).
        """
        answer: dict[str, Any] | None = self.ask_all({key: Question("elicitation", message, schema)})[key]
        return answer

    def sample(self, key: str, prompt: str, max_tokens: int = 100) -> str | None:
        """Ask the client's model (MCP sampling) and wait for its text; None where the transport cannot
        (HTTP, a client without sampling). Like `ask`: sync handlers, the deadline runs meanwhile, and
        over MCP 2026-07-28 the call runs again with the answer."""
        answer: str | None = self.ask_all({key: Question("sampling", prompt, max_tokens=max_tokens)})[key]
        return answer

    def roots(self, key: str) -> list[str] | None:
        """The client's roots (MCP roots/list) as URIs; None where the transport cannot ask. Like `ask`."""
        answer: list[str] | None = self.ask_all({key: Question("roots")})[key]
        return answer

    def ask_all(self, questions: Mapping[str, Question]) -> dict[str, Any]:
        """Several questions at once ({key: Question}), answered by key as `ask`, `sample` and `roots`
        answer; over MCP 2026-07-28 they are one round of `input_required` instead of one each."""
        asker = self._state.asker
        if asker is None:
            return dict.fromkeys(questions)
        self._state.check_running()
        return asker(questions)

    def committing(self) -> AbstractContextManager[None]:
        """Hold while committing a change: a worker thread cannot be interrupted, so this is
        what makes "timed out" mean "nothing was saved".

        Entering refuses (REQUEST_TIMEOUT) once the deadline has passed, and (CallCancelled) once
        the caller cancelled. Once a commit has begun the call can no longer be told "nothing was
        saved": the deadline step waits for it up to the commit grace and sends its result, or
        then says the outcome is unknown (never that nothing was saved about a change that was).
        A storage layer uses `commit_gate()`, this gate of the current call.
        """
        return self._state.committing()


def state_of(call: CallContext) -> CallState:
    """The pipeline's side of `call` (its sinks, deadline, what it waits on, the commit gate): for the
    pipeline, its steps, the transports, the task runner and the storage layer, never for a handler."""
    return call._state  # noqa: SLF001 -- the one door to it, beside the class that hides it


def current_state() -> CallState | None:
    """The pipeline's side of the current call (see `current_call`), or None outside a call."""
    call = _current.get()
    return state_of(call) if call is not None else None


_current: ContextVar[CallContext | None] = ContextVar("kumitate_call", default=None)


def current_call() -> CallContext | None:
    """The call this code runs for, or None (start-up, scripts): set by the pipeline around each handler."""
    return _current.get()


def url_for(resource: str, **params: str) -> str:
    """`CallContext.url_for` of the current call, for domain code that is not handed the context."""
    call = _current.get()
    if call is None:
        raise LookupError(f"url_for({resource!r}) outside a call: there is no caller to address")
    return call.url_for(resource, **params)


@contextmanager
def commit_gate() -> Iterator[None]:
    """Wrap a storage layer's COMMIT in this: the current call's `committing()` gate, or nothing
    outside a call. Lets stores honour deadlines without every function taking a context; with
    tracing on, each commit is a `storage.commit` span under the call's `handler` span."""
    call = _current.get()
    if call is None:
        yield
        return
    with tracing.stage("storage.commit"), state_of(call).committing():
        yield


def progress(done: float, total: float | None = None, message: str | None = None) -> None:
    """`CallContext.progress` of the current call, or nothing outside a call (scripts, start-up):
    lets storage and domain loops report without every function taking a context."""
    call = _current.get()
    if call is not None:
        call.progress(done, total, message)


@contextmanager
def bound(call: CallContext) -> Iterator[None]:
    """Make `call` the current call for the code run inside (see `current_call`)."""
    token = _current.set(call)
    try:
        yield
    finally:
        _current.reset(token)

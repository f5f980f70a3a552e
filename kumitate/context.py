"""The per-call context every handler receives, whatever the transport."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from kumitate.observability import tracing

__all__ = [
    "Asker",
    "Attachment",
    "CallCancelled",
    "CallContext",
    "LogSink",
    "Message",
    "Principal",
    "ProgressSink",
    "bound",
    "commit_gate",
    "current_call",
    "progress",
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


ProgressSink = Callable[[float, "float | None", "str | None"], None]
"""Where a call's progress goes (the MCP adapter's notifications/progress); callable from any thread."""


LogSink = Callable[[str, str], None]
"""Where a call's log messages for the client go (level, message); callable from any thread."""


@dataclass(frozen=True, slots=True)
class Question:
    """What a handler asks the caller's side for mid-call: `elicitation` (the user fills a form of
    `schema`, flat primitive properties, after `message`), `sampling` (the client's model answers the
    prompt `message` in at most `max_tokens`) or `roots` (the client's roots, as URIs)."""

    kind: Literal["elicitation", "sampling", "roots"]
    message: str = ""
    schema: dict[str, Any] | None = None
    max_tokens: int = 0


Asker = Callable[[Mapping[str, Question]], dict[str, Any]]
"""How a transport asks mid-call: {key: question} -> {key: answer} (elicitation: the form's content;
sampling: the text; roots: the URIs; None where it cannot ask that kind, the client did not declare
the capability, or it was declined). A key names its question stably (the same question gets the
same key when a call is run again); questions asked together may reach the client in one round."""


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


class CallCancelled(BaseException):
    """Raised inside a handler whose caller went away (MCP notifications/cancelled, a closed connection).

    A BaseException, like asyncio.CancelledError, so a handler's "one bad file never stops the
    rest" `except Exception` does not swallow it; nobody reads the result of a cancelled call."""


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
    """time.monotonic() after which the caller is told REQUEST_TIMEOUT."""
    blocked_on: str | None = None
    """What the call waits on right now, when the runtime knows: "storage" (a working database
    connection: the pool, connecting, the ping) or "worker" (a thread of its service). At the deadline the answer names it:
    503 STORAGE_UNAVAILABLE or SERVICE_UNAVAILABLE (retry), not 408 (narrow the request)."""
    outcome_unknown: bool = False
    """Set when the call was answered while its commit was still under way (past the commit grace):
    whether the change was saved is not known, so an idempotency key stays claimed until its lease ends."""
    public_url: str | None = None
    """Where the caller reached this server (`http://host:port`), for URLs in results; see `url_for`."""
    routes: Mapping[str, ResourceRoute] = field(default_factory=dict, repr=False, compare=False)
    """This service's resources by name (from its generated bindings), for `url_for`."""
    progress_sink: ProgressSink | None = field(default=None, repr=False, compare=False)
    """Set by a transport whose caller asked for progress (an MCP progressToken)."""
    asker: Asker | None = field(default=None, repr=False, compare=False)
    """Set by a transport that can put a question to the user (MCP elicitation); see `ask`."""
    log_sink: LogSink | None = field(default=None, repr=False, compare=False)
    """Set by a transport whose caller asked for log messages (an MCP log level); see `log`."""
    change_sink: Callable[[str], None] | None = field(default=None, repr=False, compare=False)
    """Where `changed` sends the URI of a resource that changed (the pipeline's ResourceChanges)."""
    _gate: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _timed_out: bool = field(default=False, repr=False, compare=False)
    _cancelled: bool = field(default=False, repr=False, compare=False)
    _committed: bool = field(default=False, repr=False, compare=False)

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
        if self.change_sink is not None:
            uri = route.uri
            for name, value in params.items():
                uri = uri.replace(f"{{{name}}}", value)
            self.change_sink(uri)

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
        return self._timed_out or (self.deadline is not None and time.monotonic() >= self.deadline)

    def check_deadline(self) -> None:
        """Raise REQUEST_TIMEOUT once the deadline has passed: for a long handler to stop early."""
        if self.expired():
            raise _timeout_error()

    def cancelled(self) -> bool:
        """Whether the caller went away: a long handler's loops may stop here (see `progress`)."""
        return self._cancelled

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Report how far a long handler got (`done` of `total` units; the message without user data).

        It is also where the handler stops: once the call is cancelled this raises CallCancelled,
        and once the deadline has passed REQUEST_TIMEOUT, so a loop that reports per file or
        batch ends at its next report instead of working on for nobody. Safe from a worker thread.
        """
        if not self._committed:
            if self._cancelled:
                raise CallCancelled(self.run_id)
            self.check_deadline()
        if self.progress_sink is not None:
            self.progress_sink(done, total, message)

    def log(self, message: str, level: str = "info") -> None:
        """Tell the caller what the call is doing (MCP notifications/message, when the client asked
        for messages at this level; nowhere else). Never put user data in it: like the server's
        own logs, a message carries steps, counts and codes. Safe from a worker thread."""
        if self.log_sink is not None:
            self.log_sink(level, message)

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
        if self.asker is None:
            return dict.fromkeys(questions)
        if self._cancelled:
            raise CallCancelled(self.run_id)
        self.check_deadline()
        return self.asker(questions)

    @contextmanager
    def committing(self) -> Iterator[None]:
        """Hold while committing a change: a worker thread cannot be interrupted, so this is
        what makes "timed out" mean "nothing was saved".

        Entering refuses (REQUEST_TIMEOUT) once the deadline has passed, and (CallCancelled) once
        the caller cancelled. Once a commit has begun the call can no longer be told "nothing was
        saved": the deadline step waits for it up to the commit grace and sends its result, or
        then says the outcome is unknown (never that nothing was saved about a change that was).
        """
        with self._gate:
            if self._cancelled:
                raise CallCancelled(self.run_id)
            if self.expired():
                raise _timeout_error()
            self._committed = True
            yield

    def time_out(self) -> bool:
        """The pipeline's side of the gate: True if the call is now timed out, False if a
        commit has begun (the deadline step then gives it the commit grace to report)."""
        return self._stop("_timed_out")

    def cancel(self) -> bool:
        """The pipeline's side when the caller went away: from now on the commit gate refuses and
        `progress` raises. False if a commit had already begun (that change is saved)."""
        return self._stop("_cancelled")

    def _stop(self, flag: str) -> bool:
        if not self._gate.acquire(blocking=False):
            return False
        try:
            if self._committed:
                return False
            setattr(self, flag, True)
        finally:
            self._gate.release()
        return True


def _timeout_error() -> Exception:
    from kumitate.errors import ToolError

    return ToolError("the deadline passed before the change was committed; nothing was saved", code="REQUEST_TIMEOUT")


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
    with tracing.stage("storage.commit"), call.committing():
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

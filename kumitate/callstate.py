"""The pipeline's side of one call: what transports plug in, what the steps write, and the commit gate.

A handler gets a `kumitate.context.CallContext`, which reads this state (its deadline, whether the call
was cancelled) and reports through its sinks, but cannot change it: setting the deadline, stopping the
call (`cancel`, `time_out`) and noting what the call waits on belong to the pipeline, its steps, the
transports, the task runner and the storage layer, which reach the state with
`kumitate.context.state_of(ctx)`.

The commit gate is a small state machine (`CallPhase`): a call runs until it is stopped (cancelled by
its caller, timed out by the deadline step) or a commit begins; once a commit has begun the call can no
longer be stopped, since the change may be saved. Stopping a call never waits: the event loop asks,
and a commit holding the gate answers "no" at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

from kumitate.errors import ToolError

__all__ = [
    "Asker",
    "CallCancelled",
    "CallPhase",
    "CallState",
    "LogSink",
    "ProgressSink",
    "Question",
]


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


class CallCancelled(BaseException):
    """Raised inside a handler whose caller went away (MCP notifications/cancelled, a closed connection).

    A BaseException, like asyncio.CancelledError, so a handler's "one bad file never stops the
    rest" `except Exception` does not swallow it; nobody reads the result of a cancelled call."""


class CallPhase(Enum):
    """Where a call stands with its commit gate. `CallState` moves it, and only along `_NEXT`."""

    RUNNING = "running"
    """Nothing committed yet: the call may still be stopped."""
    COMMITTING = "committing"
    """A commit holds the gate: the call cannot be stopped, the deadline step gives it the commit grace."""
    COMMITTED = "committed"
    """A commit has ended: the change may be saved, so the call is never told "nothing was saved"; a
    further commit of the same call goes back to COMMITTING."""
    CANCELLED = "cancelled"
    """The caller went away before any commit: the gate refuses and `progress` raises CallCancelled."""
    TIMED_OUT = "timed_out"
    """The deadline step answered before any commit: the gate refuses and `progress` raises REQUEST_TIMEOUT."""


_NEXT: dict[CallPhase, frozenset[CallPhase]] = {
    CallPhase.RUNNING: frozenset({CallPhase.COMMITTING, CallPhase.CANCELLED, CallPhase.TIMED_OUT}),
    CallPhase.COMMITTING: frozenset({CallPhase.COMMITTED}),
    CallPhase.COMMITTED: frozenset({CallPhase.COMMITTING}),
    CallPhase.CANCELLED: frozenset(),
    CallPhase.TIMED_OUT: frozenset(),
}
"""The transitions allowed: a stopped call stays stopped (the first stop wins), a committed one is never stopped."""

_STOPPED = frozenset({CallPhase.CANCELLED, CallPhase.TIMED_OUT})
_COMMITTED = frozenset({CallPhase.COMMITTING, CallPhase.COMMITTED})


@dataclass(slots=True, eq=False)
class CallState:
    """One call as the pipeline holds it: the transport's sinks, what the steps write, the commit gate."""

    run_id: str = ""
    """The call's run id, named by CallCancelled."""
    deadline: float | None = None
    """time.monotonic() after which the caller is told REQUEST_TIMEOUT (the deadline step sets it)."""
    blocked_on: str | None = None
    """What the call waits on right now, when the runtime knows: "storage" (a working database
    connection: the pool, connecting, the ping) or "worker" (a thread of its service). At the deadline the answer names it:
    503 STORAGE_UNAVAILABLE or SERVICE_UNAVAILABLE (retry), not 408 (narrow the request)."""
    outcome_unknown: bool = False
    """Set when the call was answered while its commit was still under way (past the commit grace):
    whether the change was saved is not known, so an idempotency key stays claimed until its lease ends."""
    progress_sink: ProgressSink | None = None
    """Set by a transport whose caller asked for progress (an MCP progressToken)."""
    asker: Asker | None = None
    """Set by a transport that can put a question to the user (MCP elicitation); see `CallContext.ask`."""
    log_sink: LogSink | None = None
    """Set by a transport whose caller asked for log messages (an MCP log level); see `CallContext.log`."""
    change_sink: Callable[[str], None] | None = None
    """Where `CallContext.changed` sends the URI of a resource that changed (the pipeline's ResourceChanges)."""
    _phase: CallPhase = field(default=CallPhase.RUNNING, init=False, repr=False)
    _gate: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    """Held while a commit runs (so stopping never catches one half-begun) and for each transition."""

    @property
    def phase(self) -> CallPhase:
        """Where the call stands with its commit gate."""
        return self._phase

    def expired(self) -> bool:
        """Whether the call was timed out or its deadline has passed."""
        return self._phase is CallPhase.TIMED_OUT or (self.deadline is not None and time.monotonic() >= self.deadline)

    def cancelled(self) -> bool:
        """Whether the caller went away (before any commit)."""
        return self._phase is CallPhase.CANCELLED

    def committed(self) -> bool:
        """Whether a commit has begun: from then on the call is never stopped."""
        return self._phase in _COMMITTED

    def check_deadline(self) -> None:
        """Raise REQUEST_TIMEOUT once the call is timed out or past its deadline."""
        if self.expired():
            raise timeout_error()

    def check_running(self) -> None:
        """Raise CallCancelled once the caller went away, REQUEST_TIMEOUT once past the deadline: where
        a handler's report or question ends a call nobody waits for."""
        if self._phase is CallPhase.CANCELLED:
            raise CallCancelled(self.run_id)
        self.check_deadline()

    @contextmanager
    def committing(self) -> Iterator[None]:
        """Hold the gate while committing a change (see `CallContext.committing`): refuses a stopped call
        or one past its deadline; once entered, the call is COMMITTING, then COMMITTED for good."""
        with self._gate:
            self.check_running()
            self._move(CallPhase.COMMITTING)
            try:
                yield
            finally:
                self._move(CallPhase.COMMITTED)

    def time_out(self) -> bool:
        """The deadline step's side of the gate: True if the call is now timed out, False if a
        commit has begun (the deadline step then gives it the commit grace to report)."""
        return self._stop(CallPhase.TIMED_OUT)

    def cancel(self) -> bool:
        """The pipeline's side when the caller went away: from now on the commit gate refuses and
        `progress` raises. False if a commit had already begun (that change is saved)."""
        return self._stop(CallPhase.CANCELLED)

    def _stop(self, to: CallPhase) -> bool:
        """Stop the call unless a commit has begun; never waits (a commit holding the gate means "no").
        A call already stopped stays as its first stop left it, and is reported stopped."""
        if not self._gate.acquire(blocking=False):
            return False
        try:
            if self._phase in _COMMITTED:
                return False
            if self._phase is CallPhase.RUNNING:
                self._move(to)
            return True
        finally:
            self._gate.release()

    def _move(self, to: CallPhase) -> None:
        """The one place the phase changes; the caller holds the gate."""
        if to not in _NEXT[self._phase]:
            raise RuntimeError(f"call {self.run_id}: no transition from {self._phase.name} to {to.name}")
        self._phase = to


def timeout_error() -> ToolError:
    """The REQUEST_TIMEOUT a handler meets past its deadline: nothing of the call was committed."""
    return ToolError("the deadline passed before the change was committed; nothing was saved", code="REQUEST_TIMEOUT")

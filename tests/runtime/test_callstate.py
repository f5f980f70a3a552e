"""The split of a call (issue 44): the handler's `CallContext`, the pipeline's `CallState` and its commit gate.

The gate's phases (kumitate.callstate.CallPhase) move along a few transitions only: a call runs until it
is stopped (cancelled, timed out) or a commit begins, and once a commit has begun nothing stops it. What
the handler gets reads that state but cannot stop the call, set its deadline or reach a transport's sink.
"""

from __future__ import annotations

import threading
import time

import pytest

from kumitate.callstate import CallCancelled, CallPhase, CallState
from kumitate.context import CallContext, bound, commit_gate, current_state, state_of
from kumitate.errors import ToolError


def _ctx(deadline: float | None = None, state: CallState | None = None) -> CallContext:
    return CallContext(
        service="s", tool="t", transport="test", run_id="r", trace_id="t", deadline=deadline, state=state
    )


def test_a_handler_cannot_stop_its_call_nor_set_its_deadline() -> None:
    ctx = _ctx(deadline=time.monotonic() + 60)
    for pipeline_only in ("cancel", "time_out", "blocked_on", "outcome_unknown", "progress_sink", "log_sink"):
        assert not hasattr(ctx, pipeline_only), pipeline_only
    with pytest.raises(AttributeError):
        ctx.deadline = None  # type: ignore[misc]
    with pytest.raises(AttributeError):
        ctx.anything = 1  # type: ignore[attr-defined]
    assert ctx.deadline == state_of(ctx).deadline


def test_the_context_reads_the_state_the_pipeline_gave_it() -> None:
    asked: list[str] = []
    logged: list[tuple[str, str]] = []
    state = CallState(
        "r", asker=lambda questions: {k: asked.append(k) for k in questions}, log_sink=lambda *m: logged.append(m)
    )
    ctx = _ctx(deadline=5.0, state=state)
    assert state_of(ctx) is state and state.deadline == 5.0
    state.deadline = None  # the deadline step's to set
    assert ctx.deadline is None
    assert ctx.asker is not None  # what a handler checks before preparing a question
    assert ctx.ask("k", "which?", {"type": "object"}) is None and asked == ["k"]
    ctx.log("step 1", "debug")
    assert logged == [("debug", "step 1")]
    assert _ctx().asker is None and _ctx().ask("k", "which?", {}) is None
    with bound(ctx):
        assert current_state() is state
    assert current_state() is None


def test_a_cancelled_call_refuses_to_ask_or_commit_and_stays_cancelled() -> None:
    state = CallState("r", asker=lambda questions: pytest.fail("asked for a cancelled call"))
    ctx = _ctx(deadline=time.monotonic() + 60, state=state)
    assert state.phase is CallPhase.RUNNING
    assert state.cancel() and state.phase is CallPhase.CANCELLED and ctx.cancelled()
    with pytest.raises(CallCancelled):
        ctx.ask("k", "which?", {})
    with bound(ctx), pytest.raises(CallCancelled), commit_gate():
        pytest.fail("the gate let a cancelled call commit")
    assert state.time_out()  # a stopped call stays stopped: the first stop wins
    assert state.phase is CallPhase.CANCELLED and not state.committed()


def test_a_timed_out_call_refuses_to_commit_before_its_deadline_passes() -> None:
    state = CallState("r", deadline=time.monotonic() + 60)
    ctx = _ctx(state=state)
    assert state.time_out() and state.phase is CallPhase.TIMED_OUT
    assert ctx.expired() and not ctx.cancelled()  # the clock has not reached the deadline; the pipeline said so
    with pytest.raises(ToolError) as refused, ctx.committing():
        pytest.fail("the gate let a timed-out call commit")
    assert refused.value.code == "REQUEST_TIMEOUT"
    with pytest.raises(ToolError):
        ctx.progress(1)


def test_once_a_commit_began_the_call_is_never_stopped() -> None:
    state = CallState("r", deadline=time.monotonic() + 60)
    ctx = _ctx(state=state)
    with ctx.committing():
        assert state.phase is CallPhase.COMMITTING
        assert not state.time_out() and not state.cancel()
    assert state.phase is CallPhase.COMMITTED
    assert not state.cancel() and not state.time_out() and not ctx.cancelled()
    state.deadline = 0.0  # past its deadline a committed call only reports: that change is being saved
    seen: list[float] = []
    state.progress_sink = lambda done, total, message: seen.append(done)
    ctx.progress(2)
    assert seen == [2]
    with pytest.raises(ToolError), ctx.committing():  # a further commit past the deadline is refused
        pytest.fail("committed past the deadline")
    assert state.phase is CallPhase.COMMITTED


def test_stopping_never_waits_for_a_commit_in_another_thread() -> None:
    """The event loop stops calls: a commit holding the gate in a worker answers "no" at once."""
    state = CallState("r")
    inside, release = threading.Event(), threading.Event()

    def commit() -> None:
        with state.committing():
            inside.set()
            release.wait(10)

    worker = threading.Thread(target=commit)
    worker.start()
    try:
        assert inside.wait(10)
        assert not state.time_out() and not state.cancel()
        assert state.phase is CallPhase.COMMITTING
    finally:
        release.set()
        worker.join(10)
    assert state.phase is CallPhase.COMMITTED


def test_a_commit_that_fails_still_counts_as_begun() -> None:
    """The database may have saved it before the error reached us: the call is never told "nothing was saved"."""
    state = CallState("r")
    with pytest.raises(RuntimeError, match="disk"), state.committing():
        raise RuntimeError("disk")
    assert state.phase is CallPhase.COMMITTED and not state.cancel()

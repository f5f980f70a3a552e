"""CallContext.progress and cancellation, and the relay that carries progress from worker threads to the loop."""

from __future__ import annotations

import asyncio
import threading

import pytest

from kumitate.context import CallCancelled, CallContext, bound, commit_gate, progress, state_of
from kumitate.errors import ToolError
from kumitate.transports.progress import relaying


def _ctx() -> CallContext:
    return CallContext(service="s", tool="t", transport="test", run_id="r", trace_id="t")


def test_progress_outside_a_call_does_nothing() -> None:
    progress(1, 2, "x")  # scripts and start-up imports run the same code without a call


def test_after_cancel_progress_raises_and_the_commit_gate_refuses() -> None:
    ctx = _ctx()
    seen: list[float] = []
    state = state_of(ctx)
    state.progress_sink = lambda done, total, message: seen.append(done)
    with bound(ctx):
        progress(1, 3)
        assert state.cancel() and ctx.cancelled()
        with pytest.raises(CallCancelled):
            progress(2, 3)
        with pytest.raises(CallCancelled), commit_gate():
            pytest.fail("the gate let a cancelled call commit")
    assert seen == [1]


def test_a_commit_under_way_is_not_cancelled() -> None:
    ctx = _ctx()
    with bound(ctx), commit_gate():
        assert not state_of(ctx).cancel()  # the change is being saved: the caller hears nothing, but it is saved
    assert not ctx.cancelled()


def test_progress_past_the_deadline_stops_the_handler() -> None:
    ctx = CallContext(service="s", tool="t", transport="test", run_id="r", trace_id="t", deadline=0.0)
    with pytest.raises(ToolError) as err:
        ctx.progress(1, 2)
    assert err.value.code == "REQUEST_TIMEOUT"


@pytest.mark.anyio
async def test_reports_from_a_worker_thread_arrive_in_order_and_increasing() -> None:
    sent: list[tuple[float, float | None, str | None]] = []
    loop_thread = threading.get_ident()

    async def send(done: float, total: float | None, message: str | None) -> None:
        assert threading.get_ident() == loop_thread  # never sent from the worker thread
        sent.append((done, total, message))
        await asyncio.sleep(0)

    def work(report: object) -> None:
        for i in [*range(1, 501), 250, 500]:  # the repeats and the step back are not sent
            report(i, 500, "step")  # type: ignore[operator]

    async with relaying(send) as relay:
        await asyncio.to_thread(work, relay)
    values = [d for d, _, _ in sent]
    assert values == sorted(set(values)) and values[-1] == 500  # the last report is sent before the block ends
    assert all(t == 500 and m == "step" for _, t, m in sent)
    relay(501, 500, "late")  # a thread still running after the call: ignored
    await asyncio.sleep(0.01)
    assert values[-1] == sent[-1][0] == 500


@pytest.mark.anyio
async def test_no_sender_no_relay() -> None:
    async with relaying(None) as relay:
        assert relay is None

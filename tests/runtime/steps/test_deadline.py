"""The deadline step: REQUEST_TIMEOUT unless a commit has begun; the operator's cap wins."""

from __future__ import annotations

import asyncio

import pytest

from kumitate.errors import ToolError
from kumitate.steps import Call, Outcome
from kumitate.steps.deadline import Deadline, timeout_s
from tests.runtime.steps.helpers import make_call, ok

pytestmark = pytest.mark.anyio


def test_timeout_is_the_declared_one_capped_by_the_operator() -> None:
    assert timeout_s(None, None) is None
    assert timeout_s(2000, None) == 2.0
    assert timeout_s(None, 500) == 0.5
    assert timeout_s(2000, 500) == 0.5
    assert timeout_s(200, 500) == 0.2


async def test_fast_call_passes_and_knows_its_deadline() -> None:
    call = make_call()
    assert (await Deadline("echo", 5.0)(call, ok())).ok
    assert call.state.deadline is not None


async def test_slow_call_times_out_and_is_cancelled() -> None:
    cancelled = asyncio.Event()

    async def slow(call: Call) -> Outcome:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("not reached")

    with pytest.raises(ToolError) as timed_out:
        await Deadline("echo", 0.05)(make_call(), slow)
    assert timed_out.value.code == "REQUEST_TIMEOUT" and "50 ms" in timed_out.value.message
    await asyncio.wait_for(cancelled.wait(), 1)


async def test_a_begun_commit_finishes_and_is_sent() -> None:
    async def committing(call: Call) -> Outcome:
        with call.ctx.committing():
            await asyncio.sleep(0.2)  # past the deadline, inside the gate
        return await ok()(call)

    assert (await Deadline("echo", 0.05)(make_call(), committing)).ok


async def test_a_commit_that_outlasts_the_grace_is_answered_outcome_unknown() -> None:
    """A hung commit must not hold the caller for ever: past the grace, 408 saying it may or may not be saved."""
    released = asyncio.Event()

    async def hung(call: Call) -> Outcome:
        with call.ctx.committing():
            await released.wait()
        return await ok()(call)

    started = asyncio.get_running_loop().time()
    call = make_call()
    with pytest.raises(ToolError) as unknown:
        await Deadline("echo", 0.05, grace_s=0.2)(call, hung)
    waited = asyncio.get_running_loop().time() - started
    assert unknown.value.code == "REQUEST_TIMEOUT" and 0.2 <= waited < 2.0
    assert "may or may not have been saved" in unknown.value.message and "Idempotency-Key" in unknown.value.message
    assert call.state.outcome_unknown  # the idempotency step keeps the key claimed
    released.set()


@pytest.mark.parametrize(
    ("blocked_on", "code"),
    [("storage", "STORAGE_UNAVAILABLE"), ("worker", "SERVICE_UNAVAILABLE"), (None, "REQUEST_TIMEOUT")],
)
async def test_the_answer_at_the_deadline_names_what_held_the_call(blocked_on: str | None, code: str) -> None:
    async def held(call: Call) -> Outcome:
        call.state.blocked_on = blocked_on
        await asyncio.sleep(5)
        raise AssertionError("not reached")

    with pytest.raises(ToolError) as timed_out:
        await Deadline("echo", 0.05)(make_call(), held)
    assert timed_out.value.code == code
    assert ("retry_after_ms" in timed_out.value.details) is (blocked_on is not None)

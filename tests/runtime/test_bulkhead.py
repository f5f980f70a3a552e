"""Bulkheads: a service's threads are its own; a full one refuses with 503 in bounded time."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

from kumitate.context import CallContext, state_of
from kumitate.errors import ToolError
from kumitate.serving.bulkhead import Bulkhead

pytestmark = pytest.mark.anyio


def ctx(service: str = "demo", deadline: float | None = None) -> CallContext:
    return CallContext(service=service, tool="t", transport="http", run_id="r", trace_id="t", deadline=deadline)


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """What the stuck calls wait on, set at teardown whatever the test did: concurrent.futures joins
    every pool thread at interpreter exit, so a thread left waiting would hang pytest after a failure."""
    event = threading.Event()
    yield event
    event.set()


async def test_a_full_bulkhead_refuses_after_its_wait_and_frees_a_slot_when_the_thread_returns(
    gate: threading.Event,
) -> None:
    stuck = Bulkhead("stuck", 2, wait_s=0.2)
    held = [asyncio.ensure_future(stuck.run(ctx(), gate.wait)) for _ in range(2)]
    await asyncio.sleep(0.05)
    assert stuck.running == 2 and stuck.stuck_for() > 0
    started = time.monotonic()
    with pytest.raises(ToolError) as refused:
        await stuck.run(ctx(), lambda: "never")
    assert refused.value.code == "SERVICE_UNAVAILABLE" and refused.value.details["retry_after_ms"] > 0
    assert 0.2 <= time.monotonic() - started < 1.0
    for task in held:  # the callers stop waiting; their threads do not: the slots stay taken
        task.cancel()
    await asyncio.sleep(0.05)
    assert stuck.running == 2
    gate.set()
    await asyncio.sleep(0.1)
    assert stuck.running == 0 and stuck.stuck_for() == 0
    assert await stuck.run(ctx(), lambda: "ran") == "ran"
    stuck.close()


async def test_waiting_is_bounded_by_the_calls_deadline_and_marked(gate: threading.Event) -> None:
    full = Bulkhead("full", 1, wait_s=10.0)
    held = asyncio.ensure_future(full.run(ctx(), gate.wait))
    await asyncio.sleep(0.05)
    call = ctx(deadline=time.monotonic() + 0.1)
    waiting = asyncio.ensure_future(full.run(call, lambda: "never"))
    await asyncio.sleep(0.02)
    assert state_of(call).blocked_on == "worker"
    with pytest.raises(ToolError):
        await asyncio.wait_for(waiting, 2.0)
    assert state_of(call).blocked_on is None
    gate.set()
    await held
    full.close()


async def test_one_service_stuck_leaves_another_its_threads(gate: threading.Event) -> None:
    stuck, free = Bulkhead("stuck", 2, wait_s=0.1), Bulkhead("free", 2, wait_s=0.1)
    held = [asyncio.ensure_future(stuck.run(ctx(), gate.wait)) for _ in range(2)]
    await asyncio.sleep(0.05)
    started = time.monotonic()
    name = await free.run(ctx("free"), lambda: threading.current_thread().name)
    assert name.startswith("kumitate-free_")  # its own service's thread (which one of them is the pool's choice)
    assert time.monotonic() - started < 0.5
    gate.set()
    await asyncio.gather(*held)
    stuck.close()
    free.close()

"""The drain state machine (kumitate/serving/drain.py) on a real Runtime, without a process to signal.

tests/e2e/test_drain_wire.py sends SIGTERM to `kumitate serve` (a subprocess coverage does not see);
here: which signal starts the drain and which is uvicorn's own exit, the listener closing after the
delay and not before, and the bound given to calls in flight under the operator's timeout cap.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from kumitate.policies.idempotency import LEASE_MARGIN_S, UNBOUNDED_LEASE_S
from kumitate.runtime import Runtime
from kumitate.serving.drain import DrainingServer, longest_call_s
from kumitate.settings import Settings

DELAY_S = 0.2


def runtime_for(data_dir: Path, max_timeout_ms: int | None = None) -> Runtime:
    settings = Settings(
        data_dir=data_dir, sample_dir=data_dir / "samples", public_base_url="http://x", max_timeout_ms=max_timeout_ms
    )
    return Runtime(settings, ["stays"])


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    rt = runtime_for(tmp_path_factory.mktemp("drain") / "var")
    yield rt
    rt.close()


@pytest.fixture(autouse=True)
def leave_nothing_behind() -> Iterator[None]:
    """After each test: the drain timers it started have fired (their log line belongs to this test), and
    sse-starlette's process-wide AppStatus.should_exit is put back. uvicorn's own exit sets it
    (sse-starlette patches uvicorn.Server.handle_exit once imported): in a real process the exit follows;
    here it would end every later in-process test's SSE answers (an MCP reply would never complete)."""
    yield
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.join(5)
    sse = sys.modules.get("sse_starlette.sse")
    if sse is not None:
        sse.AppStatus.should_exit = False


async def app(scope: object, receive: object, send: object) -> None:
    raise AssertionError("no request is served here")


def server(runtime: Runtime) -> DrainingServer:
    runtime.draining.clear()
    return DrainingServer(uvicorn.Config(app, log_config=None), runtime, DELAY_S)


def test_calls_in_flight_get_the_longest_deadline_plus_the_lease_margin(runtime: Runtime, tmp_path: Path) -> None:
    longest = longest_call_s(runtime)
    declared = [t.policy.timeout_ms for t in runtime.services["stays"].tools]
    assert longest == max((ms or UNBOUNDED_LEASE_S * 1000) for ms in declared) / 1000 + LEASE_MARGIN_S
    assert server(runtime).config.timeout_graceful_shutdown == round(longest)
    capped = runtime_for(tmp_path / "var", max_timeout_ms=1500)
    try:
        assert longest_call_s(capped) == 1.5 + LEASE_MARGIN_S  # every tool, bounded or not, is capped
    finally:
        capped.close()


def test_the_first_sigterm_drains_then_closes_the_listener_after_the_delay(runtime: Runtime) -> None:
    draining = server(runtime)
    started = time.monotonic()
    draining.handle_exit(signal.SIGTERM, None)
    assert runtime.draining.is_set()
    assert not draining.should_exit  # still serving: the balancer has not seen readiness go yet
    while not draining.should_exit and time.monotonic() - started < 5:
        time.sleep(0.02)
    assert draining.should_exit
    assert time.monotonic() - started >= DELAY_S


def test_a_second_sigterm_exits_at_once(runtime: Runtime) -> None:
    draining = server(runtime)
    draining.handle_exit(signal.SIGTERM, None)
    draining.handle_exit(signal.SIGTERM, None)
    assert draining.should_exit and runtime.draining.is_set()


def test_sigint_is_uvicorns_own_exit_without_a_drain(runtime: Runtime) -> None:
    draining = server(runtime)
    draining.handle_exit(signal.SIGINT, None)
    assert draining.should_exit
    assert not runtime.draining.is_set()
    draining.handle_exit(signal.SIGTERM, None)  # a SIGTERM after uvicorn's exit began starts no drain
    assert not runtime.draining.is_set()

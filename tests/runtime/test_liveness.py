"""/healthz fails when the process cannot serve: its event loop blocked, or a service's threads all stuck."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest

from kumitate.context import CallContext
from tests.conftest import serve_in_process

pytestmark = pytest.mark.anyio


async def test_a_blocked_event_loop_fails_liveness_and_readiness_then_recovers(
    tmp_path: Path, seeded_data_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    async with serve_in_process(tmp_path / "var", seeded_data_dir, KUMITATE_LOOP_STALL_MS="300") as served:
        assert (await served.http.get("/healthz")).status_code == 200
        time.sleep(1.2)  # on purpose: this test runs on the app's own event loop
        live = await served.http.get("/healthz")
        assert live.status_code == 503, live.text
        assert "event loop" in live.json()["problems"][0]
        assert (await served.http.get("/readyz")).status_code == 503
        await asyncio.sleep(1.5)  # a stall is remembered for three times the threshold
        assert (await served.http.get("/healthz")).status_code == 200
    stalled = [json.loads(line) for line in capfd.readouterr().err.splitlines() if "event_loop_stalled" in line]
    assert stalled, "the monitor thread logs a stall while it lasts, naming what blocks the loop"
    assert "test_liveness.py" in stalled[0]["where"]


async def test_a_service_whose_threads_are_all_stuck_fails_liveness(tmp_path: Path, seeded_data_dir: Path) -> None:
    env = {"KUMITATE_SERVICE_WORKER_THREADS": "stays=2", "KUMITATE_WORKERS_STUCK_MS": "200"}
    async with serve_in_process(tmp_path / "var", seeded_data_dir, **env) as served:
        bulkhead = served.runtime.pipeline.bulkheads["stays"]
        gate = threading.Event()
        ctx = CallContext(service="stays", tool="t", transport="http", run_id="r", trace_id="t")
        held = [asyncio.ensure_future(bulkhead.run(ctx, gate.wait)) for _ in range(2)]
        try:
            await asyncio.sleep(0.4)
            live = await served.http.get("/healthz")
            assert live.status_code == 503 and "'stays'" in live.json()["problems"][0]
        finally:
            gate.set()
            await asyncio.gather(*held)
        assert (await served.http.get("/healthz")).status_code == 200

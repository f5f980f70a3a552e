"""Long tools as tasks over HTTP (kumitate.tasks): `Prefer: respond-async` answers 202 with an
AIP-151 operation, which any instance on the same database reports, through to its result.

Two apps in this process on one SQLite file stand for two instances; the slow call is a real
DuckDB query (tests/slowcall.py), not a mock."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import InProcessApp, serve_in_process, start_server
from tests.slowcall import slow_query

pytestmark = pytest.mark.anyio

ASYNC = {"Prefer": "respond-async"}


@pytest.fixture(scope="module")
async def pair(
    tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path
) -> AsyncIterator[tuple[InProcessApp, InProcessApp]]:
    """Two instances on one data directory (one SQLite database); short leases, two task workers each."""
    data_dir = tmp_path_factory.mktemp("tasks") / "var"
    env = {"KUMITATE_TASK_LEASE_MS": "600", "KUMITATE_TASK_WORKERS": "2"}
    async with serve_in_process(data_dir, seeded_data_dir, **env) as one, serve_in_process(data_dir, **env) as two:
        yield one, two


async def finished(app: InProcessApp, location: str, within_s: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        answer = await app.http.get(location)
        assert answer.status_code == 200, answer.text
        if answer.json()["done"]:
            return dict(answer.json())
        await asyncio.sleep(0.05)
    raise AssertionError(f"{location} not done within {within_s} s")


async def test_household_import_runs_as_a_task_read_on_the_other_instance(
    pair: tuple[InProcessApp, InProcessApp],
) -> None:
    one, two = pair
    started = await one.http.post("/v1/household/import_household_data", json={}, headers=ASYNC)
    assert started.status_code == 202, started.text
    operation = started.json()
    assert started.headers["Preference-Applied"] == "respond-async"
    location = started.headers["Location"]
    assert location == f"/v1/operations/{operation['name'].removeprefix('operations/')}"
    assert operation["metadata"]["tool"] == "household.import_household_data"
    assert operation["run_id"] == started.headers["X-Run-Id"]

    done = await finished(two, location)
    assert done["metadata"]["status"] == "completed"
    assert set(done["response"]) >= {"files_processed", "files_failed"}
    assert "error" not in done


async def test_without_the_preference_the_tool_answers_synchronously(pair: tuple[InProcessApp, InProcessApp]) -> None:
    answer = await pair[0].http.post("/v1/household/import_household_data", json={})
    assert answer.status_code == 200 and "files_processed" in answer.json()


async def test_a_call_refused_before_its_handler_gets_its_refusal_not_a_task(
    pair: tuple[InProcessApp, InProcessApp],
) -> None:
    answer = await pair[0].http.post("/v1/analytics/export", json={"query": 1}, headers=ASYNC)
    assert answer.status_code == 400, answer.text
    assert "Location" not in answer.headers


async def test_a_failing_task_reports_the_catalogue_error(pair: tuple[InProcessApp, InProcessApp]) -> None:
    one, two = pair
    started = await one.http.post("/v1/analytics/export", json={"query": "SELECT * FROM no_such_table"}, headers=ASYNC)
    assert started.status_code == 202, started.text
    done = await finished(two, started.headers["Location"])
    assert done["metadata"]["status"] == "failed"
    assert done["error"]["code"] == "SQL_ERROR" and "response" not in done


async def test_cancel_on_the_other_instance_stops_the_task(pair: tuple[InProcessApp, InProcessApp]) -> None:
    one, two = pair
    started = await one.http.post("/v1/analytics/export", json={"query": slow_query(300_000)}, headers=ASYNC)
    assert started.status_code == 202, started.text
    location = started.headers["Location"]
    cancelled = await two.http.post(f"{location}:cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["done"] and cancelled.json()["error"]["code"] == "CANCELLED"
    t0 = time.monotonic()
    while one.runtime.tasks._running and time.monotonic() - t0 < 10:  # stopped at its instance's next beat
        await asyncio.sleep(0.05)
    assert not one.runtime.tasks._running
    assert (await finished(one, location))["metadata"]["status"] == "cancelled"


async def test_an_operation_is_only_its_callers_and_unknown_ones_are_404(
    pair: tuple[InProcessApp, InProcessApp],
) -> None:
    missing = await pair[0].http.get("/v1/operations/0123456789abcdef")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"
    bad_verb = await pair[0].http.post("/v1/operations/0123456789abcdef:delete")
    assert bad_verb.status_code == 404


async def test_a_task_whose_instance_died_is_reported_lost(pair: tuple[InProcessApp, InProcessApp]) -> None:
    """A row left `working` by an instance that no longer renews it (killed: nothing ran its close)."""
    one, two = pair
    store = one.runtime.tasks.store
    store.create("deadbeef" * 4, "household.import_household_data", "anonymous", "run-x", "trace-x")
    await asyncio.sleep(store.lease_s + 0.1)
    done = await finished(two, "/v1/operations/" + "deadbeef" * 4)
    assert done["metadata"]["status"] == "failed"
    assert done["error"]["code"] == "TASK_LOST" and done["error"]["retryable"] is True
    assert done["run_id"] == "run-x"


async def test_busy_instance_refuses_a_task_with_503(pair: tuple[InProcessApp, InProcessApp]) -> None:
    one, _ = pair
    slow = {"query": slow_query(300_000)}
    locations = []
    for _ in range(2):
        started = await one.http.post("/v1/analytics/export", json=slow, headers=ASYNC)
        assert started.status_code == 202, started.text
        locations.append(started.headers["Location"])
    refused = await one.http.post("/v1/analytics/export", json=slow, headers=ASYNC)
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "SERVICE_UNAVAILABLE"
    assert "Retry-After" in refused.headers
    for location in locations:
        await one.http.post(f"{location}:cancel")


@pytest.mark.slow
async def test_a_task_whose_server_was_killed_is_reported_lost_by_the_next_one(
    tmp_path: Path, seeded_data_dir: Path
) -> None:
    """A real `kumitate serve` killed (SIGKILL: no shutdown code runs) mid-task; an instance started
    on the same database afterwards reports the task failed with TASK_LOST once the lease has run out."""
    data_dir = tmp_path / "var"
    lease = {"KUMITATE_TASK_LEASE_MS": "1000"}
    server = start_server(data_dir, tmp_path / "server.log", seeded=seeded_data_dir, **lease)
    try:
        started = httpx.post(
            f"{server.url}/v1/analytics/export", json={"query": slow_query(300_000)}, headers=ASYNC, timeout=30
        )
        assert started.status_code == 202, started.text
    finally:
        server.process.kill()
        server.process.wait(timeout=10)
    async with serve_in_process(data_dir, **lease) as after:
        done = await finished(after, started.headers["Location"], within_s=10)
    assert done["metadata"]["status"] == "failed" and done["error"]["code"] == "TASK_LOST"

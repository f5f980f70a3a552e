"""Bookkeeping outside a call's context is bounded too (issue 45, item 2), on a real SQLite file.

The idempotency claim and the task store's rows run in an empty context (outside the call's commit
gate), where no call's storage bound used to reach them: a database held by another writer kept them
waiting for SQLite's whole busy timeout (here 20 s; a frozen PostgreSQL, for ever: see
test_frozen_keyed_write.py). Now they end at KUMITATE_DB_TIMEOUT_MS (here 1 s) with the retryable
STORAGE_UNAVAILABLE, and run once the lock is gone.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest

from kumitate.errors import ToolError
from kumitate.policies.idempotency import Stored, lease_s
from kumitate.policies.idempotency_store import IdempotencyStore
from kumitate.serving.deploy import DeploySettings
from kumitate.storage import Database, open_database
from kumitate.storage.engine import SQLITE_FILE
from kumitate.tasks.runner import TaskRunner
from kumitate.tasks.store import TaskStore

pytestmark = pytest.mark.anyio

DB_TIMEOUT_S = 1.0
BUSY_TIMEOUT_S = 20.0
BOUND_S = DB_TIMEOUT_S + 2.0 + 1.5  # the bound, the commit grace before the watchdog, a loaded machine's slack


def database(tmp_path: Path) -> Database:
    deploy = DeploySettings.model_validate(
        {"db_timeout_ms": int(DB_TIMEOUT_S * 1000), "sqlite_busy_timeout_ms": int(BUSY_TIMEOUT_S * 1000)}
    )
    return open_database(tmp_path, deploy)


@contextmanager
def write_locked(tmp_path: Path) -> Iterator[None]:
    """Another process's writer, as SQLite sees it: a connection of its own holding the write lock."""
    other = sqlite3.connect(tmp_path / SQLITE_FILE, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def envelope(code: str, message: str, run_id: str, trace_id: str) -> tuple[int, dict[str, Any]]:
    return 500, {"error": {"code": code, "message": message}, "run_id": run_id, "trace_id": trace_id}


async def test_an_idempotency_claim_waits_no_longer_than_the_storage_bound(tmp_path: Path) -> None:
    db = database(tmp_path)
    store = IdempotencyStore(db)
    runs = 0

    async def execute() -> tuple[Stored, bool]:
        nonlocal runs
        runs += 1
        return Stored(200, {"run": runs}), True

    with write_locked(tmp_path):
        started = time.monotonic()
        with pytest.raises(ToolError) as failed:
            await store.run(("t", "p", "k"), {"n": 1}, 60, execute, lease=lease_s(None))
        waited = time.monotonic() - started
    print(f"\nthe claim answered {failed.value.code} after {waited:.2f} s ({failed.value.message})")
    assert failed.value.code == "STORAGE_UNAVAILABLE" and failed.value.details["retry_after_ms"] > 0
    assert "KUMITATE_DB_TIMEOUT_MS" in failed.value.message and waited < BOUND_S and runs == 0
    stored, replayed = await store.run(("t", "p", "k"), {"n": 1}, 60, execute, lease=lease_s(None))
    assert (stored.body, replayed, runs) == ({"run": 1}, False, 1)  # the lock gone, the key runs, once
    db.close()


async def test_a_task_store_write_waits_no_longer_than_the_storage_bound(tmp_path: Path) -> None:
    db = database(tmp_path)
    runner = TaskRunner(cast(Any, None), TaskStore(db, envelope))
    with write_locked(tmp_path):
        started = time.monotonic()
        with pytest.raises(ToolError) as failed:
            await runner._db(runner.store.create, "task-1", "demo.t", "p", "r", "t")
        waited = time.monotonic() - started
    assert failed.value.code == "STORAGE_UNAVAILABLE" and waited < BOUND_S, (failed.value, waited)
    row = await runner._db(runner.store.create, "task-1", "demo.t", "p", "r", "t")
    assert row.id == "task-1"
    db.close()

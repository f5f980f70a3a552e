"""A damaged database is visible (issue 45, item 4): its service is not ready, its calls are catalogued.

Real files, damaged as a disk or a bad copy would: the attendance table's root page in the SQLite
database overwritten with garbage, and analytics' DuckDB file cut to half its size. The server starts;
/readyz is 503 naming both services while `?service=stays` is 200 and stays answers; the damaged
services' calls answer STORAGE_DAMAGED (not retryable, naming what is damaged), never INTERNAL, over
HTTP and MCP.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from generated.attendance.client import AttendanceClient
from generated.errors import StorageDamagedError
from kumitate import faults
from kumitate.client import NO_RETRY
from kumitate.context import CallContext, bound
from kumitate.serving.health import START_CHECK_S, sqlite_damage
from tests.conftest import LiveServer, start_server, stop_server

STAYS = {
    "granularity": "admin",
    "stays": [
        {
            "ref": "a",
            "code": "13101",
            "name": "千代田区",
            "start_ts": "2024-05-01T09:00:00+09:00",
            "end_ts": "2024-05-01T11:00:00+09:00",
        }
    ],
}
SAVE = {
    "thread_id": "damaged",
    "rule": {
        "version": "1.0",
        "type": "K_OF_N",
        "invitee_scope": {"include_invitee_keys": ["u:1", "u:2", "u:3"]},
        "rule": {"k": 2, "n": 3},
        "finalize_policy": {"mode": "EARLIEST_VALID", "tie_breaker": "earliest_slot", "auto_finalize": False},
    },
}


def overwrite_root_page(database: Path, table: str) -> int:
    """Write garbage over `table`'s root page (after a checkpoint, so no WAL frame hides it); its page number."""
    conn = sqlite3.connect(database)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    finally:
        conn.close()
    with database.open("r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(b"\xab" * page_size)
    return int(root)


def truncate_to_half(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory, seeded_data_dir: Path) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("damaged")
    data = root / "var"
    shutil.copytree(seeded_data_dir, data)
    overwrite_root_page(data / "kumitate.sqlite3", "attendance_rules")
    truncate_to_half(data / "analytics" / "activities.duckdb")
    live = start_server(data, root / "server.log", KUMITATE_SERVICES="attendance,analytics,stays")
    yield live
    stop_server(live)


def readyz(url: str, service: str | None = None) -> httpx.Response:
    return httpx.get(url + "/readyz", params={"service": service} if service else None, timeout=10)


def post(url: str, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.post(url + path, json=body, headers=headers, timeout=60)


def test_a_damaged_database_makes_its_service_not_ready_and_its_calls_storage_damaged(damaged: LiveServer) -> None:
    url = damaged.url
    # analytics' file is opened by its first worker in the background as the server starts
    until = time.monotonic() + 60
    while (ready := readyz(url)).json()["by_service"]["analytics"]["ok"]:
        assert time.monotonic() < until, ready.json()
        time.sleep(0.2)
    body = ready.json()
    assert ready.status_code == 503 and ready.headers["retry-after"] and body["ok"] is False, body
    by_service = body["by_service"]
    assert "attendance_rules" in by_service["attendance"]["error"] and "malformed" in by_service["attendance"]["error"]
    assert "activities.duckdb" in by_service["analytics"]["error"], by_service
    assert by_service["stays"] == {"ok": True} and body["checks"]["database"]["ok"] is True, body
    # per service: the others stay ready, and keep answering
    assert readyz(url, "stays").status_code == 200
    assert readyz(url, "attendance").status_code == 503 and readyz(url, "analytics").status_code == 503
    assert post(url, "/v1/stays/summarize_stays", STAYS).status_code == 200
    assert post(url, "/v1/attendance/invitee_key", {"kind": "user", "value": "42"}).status_code == 200  # no table
    # the damaged services' calls: catalogued, not retryable, saying what is damaged
    calls = {
        "get": ("/v1/attendance/get_attendance_rule", {"thread_id": "demo-k-of-n"}, {}, "attendance_rules"),
        "save": ("/v1/attendance/save_attendance_rule", SAVE, {}, "attendance_rules"),
        "keyed save": ("/v1/attendance/save_attendance_rule", SAVE, {"Idempotency-Key": "k-1"}, "attendance_rules"),
        "profile": ("/v1/analytics/profile", {"table_or_query": "activities"}, {}, "activities.duckdb"),
    }
    for name, (path, body_in, headers, what) in calls.items():
        r = post(url, path, body_in, **headers)
        error = r.json()["error"]
        assert r.status_code == 500 and error["code"] == "STORAGE_DAMAGED", (name, r.status_code, r.text)
        assert error["retryable"] is False and what in error["message"] and "restore" in error["message"], error
        assert "retry-after" not in r.headers, name
    # over MCP: the generated client raises the catalogue's class (a first call without x-mcp-header
    # arguments: the SDK's client learns the tools' Mcp-Param headers from the tools/list it sends then)
    with AttendanceClient.mcp(url, retry=NO_RETRY) as client:
        assert client.invitee_key({"kind": "user", "value": "42"}).invitee_key == "u:42"
        with pytest.raises(StorageDamagedError) as raised:
            client.get_attendance_rule({"thread_id": "demo-k-of-n"})
    assert "attendance_rules" in str(raised.value) and raised.value.code == "STORAGE_DAMAGED"
    assert "handler_crashed" not in damaged.log.read_text()  # not one INTERNAL


def test_the_start_check_finds_the_damaged_table_and_only_that_one(tmp_path: Path, seeded_data_dir: Path) -> None:
    """The start-up check on the same kind of file, directly: one damaged table named, nothing else, well
    within its bound; an intact copy is clean."""
    database = tmp_path / "kumitate.sqlite3"
    database.write_bytes((seeded_data_dir / "kumitate.sqlite3").read_bytes())
    for suffix in ("-wal", "-shm"):
        if (seeded_data_dir / f"kumitate.sqlite3{suffix}").exists():
            (tmp_path / f"kumitate.sqlite3{suffix}").write_bytes(
                (seeded_data_dir / f"kumitate.sqlite3{suffix}").read_bytes()
            )
    started = time.monotonic()
    assert sqlite_damage(database, START_CHECK_S) == {}
    clean_s = time.monotonic() - started
    overwrite_root_page(database, "household_transactions")
    found = sqlite_damage(database, START_CHECK_S)
    assert found is not None and set(found) == {"household_transactions"}, found
    print(f"\nquick_check of every table: {clean_s * 1000:.1f} ms")


def test_a_damaged_file_met_by_a_call_marks_the_calls_service(tmp_path: Path) -> None:
    """Damage found after start (no start-up check saw it): classifying the call's exception marks its service."""
    database = tmp_path / "x.sqlite3"
    conn = sqlite3.connect(database)
    conn.execute("CREATE TABLE loans_loans (id INTEGER PRIMARY KEY, title TEXT)")
    conn.executemany("INSERT INTO loans_loans (title) VALUES (?)", [("x" * 200,)] * 200)
    conn.commit()
    conn.close()
    overwrite_root_page(database, "loans_loans")
    ctx = CallContext(service="loans", tool="add", transport="http", run_id="r", trace_id="t")
    try:
        with pytest.raises(sqlite3.DatabaseError) as exc:
            sqlite3.connect(database).execute("INSERT INTO loans_loans (title) VALUES ('y')")
        with bound(ctx):
            error = faults.classify(exc.value)
        assert error is not None and error.code == "STORAGE_DAMAGED" and "malformed" in error.message
        assert faults.DAMAGE.of("loans") is not None and faults.DAMAGE.of("stays") is None
        assert faults.storage_failure(exc.value) is None  # not "retry later": a full disk passes, this does not
    finally:
        faults.DAMAGE.forget(["loans"])

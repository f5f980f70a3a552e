"""Attendance rules on the storage layer, on SQLite and on PostgreSQL: round trip, history, restart,
concurrent saves, sample seeding, and the import of a file from before the storage layer."""

from __future__ import annotations

import json
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import inspect, text

import handlers.attendance as attendance
from handlers.attendance.store import canonical
from handlers.attendance.validate import check_rule
from kumitate.context import CallContext
from kumitate.errors import ToolError
from kumitate.service import ServiceSetup
from kumitate.storage import engine as engines
from kumitate.storage import migrate
from tests.attendance.conftest import call, opened, settings_in
from tests.attendance.test_store_validate import FIVE, base

CTX = CallContext(service="attendance", tool="t", transport="test", run_id="r", trace_id="t")


def test_fresh_store_has_sample_rules(handlers: attendance.AttendanceHandlers) -> None:
    got = call(handlers, "get_attendance_rule", {"thread_id": "demo-required", "include_history": True}, CTX)
    assert got["version"] == 2
    assert [h["version"] for h in got["history"]] == [1, 2]
    assert got["history"][0]["attendance_rule"]["version"] == "1.0"  # legacy integer version normalised
    assert got["attendance_rule"]["rule"] == {"required_invitee_keys": ["u:1", "u:2"], "min_additional": 1}
    assert got["saved_at"] == "2025-01-07T00:00:00.000Z"


def test_round_trip_and_history(handlers: attendance.AttendanceHandlers) -> None:
    first = call(handlers, "save_attendance_rule", {"thread_id": "t-1", "rule": base()}, CTX)
    assert first["version"] == 1
    assert first["attendance_rule"] == {
        "version": "1.0",
        "type": "K_OF_N",
        "slot_policy": {
            "conflict_policy": "first_selected",
            "timezone": "Asia/Tokyo",
            "allow_multiple_slots_per_invitee": False,
        },
        "invitee_scope": {"include_invitee_keys": FIVE, "exclude_invitee_keys": []},
        "rule": {"k": 3, "n": 5},
        "finalize_policy": {"mode": "EARLIEST_VALID", "tie_breaker": "earliest_slot", "auto_finalize": False},
    }
    second = call(handlers, "save_attendance_rule", {"thread_id": "t-1", "rule": base("ALL", {})}, CTX)
    assert second["version"] == 2
    current = call(handlers, "get_attendance_rule", {"thread_id": "t-1"}, CTX)
    assert (current["version"], current["attendance_rule"]["type"], "history" in current) == (2, "ALL", False)
    history = call(handlers, "get_attendance_rule", {"thread_id": "t-1", "include_history": True}, CTX)["history"]
    assert [(h["version"], h["attendance_rule"]["type"]) for h in history] == [(1, "K_OF_N"), (2, "ALL")]
    assert history[0]["attendance_rule"] == first["attendance_rule"]
    assert history[0]["saved_at"] == first["saved_at"]


def test_invalid_save_stores_nothing_and_unknown_thread(handlers: attendance.AttendanceHandlers) -> None:
    with pytest.raises(ToolError) as err:
        call(handlers, "save_attendance_rule", {"thread_id": "t-2", "rule": base(params={"k": 6, "n": 5})}, CTX)
    assert err.value.code == "VALIDATION_ERROR"
    with pytest.raises(ToolError) as err:
        call(handlers, "get_attendance_rule", {"thread_id": "t-2"}, CTX)
    assert (err.value.code, err.value.message) == ("NOT_FOUND", "no attendance rule is stored for thread 't-2'")


def test_store_survives_restart(engine: dict[str, str], tmp_path: Path) -> None:
    with opened(tmp_path, engine) as first:
        call(first, "save_attendance_rule", {"thread_id": "keep", "rule": base()}, CTX)
    with opened(tmp_path, engine) as again:
        assert call(again, "get_attendance_rule", {"thread_id": "keep"}, CTX)["version"] == 1
        assert call(again, "get_attendance_rule", {"thread_id": "demo-required"}, CTX)["version"] == 2  # seeded once


def test_concurrent_saves_of_one_thread_get_distinct_consecutive_versions(
    handlers: attendance.AttendanceHandlers, engine: dict[str, str], tmp_path: Path
) -> None:
    """Two handler instances (two setups, two engines, as two server instances would have) save one thread at once."""
    rules = [base(params={"k": k, "n": 5}) for k in range(1, 6)] * 4
    with opened(tmp_path, engine) as other:

        def save(i: int) -> int:
            shell = handlers if i % 2 else other
            return int(call(shell, "save_attendance_rule", {"thread_id": "busy", "rule": rules[i]}, CTX)["version"])

        with ThreadPoolExecutor(8) as pool:
            versions = sorted(pool.map(save, range(len(rules))))
    assert versions == list(range(1, len(rules) + 1))
    history = call(handlers, "get_attendance_rule", {"thread_id": "busy", "include_history": True}, CTX)["history"]
    assert [h["version"] for h in history] == versions
    assert sorted(h["attendance_rule"]["rule"]["k"] for h in history) == sorted(r["rule"]["k"] for r in rules)


def test_instances_starting_together_seed_the_samples_once(engine: dict[str, str], tmp_path: Path) -> None:
    setups = [ServiceSetup.open("attendance", settings_in(tmp_path, engine)) for _ in range(3)]
    try:
        with ThreadPoolExecutor(3) as pool:
            shells = list(pool.map(attendance.create, setups))
        got = call(shells[0], "get_attendance_rule", {"thread_id": "demo-required", "include_history": True}, CTX)
        assert [h["version"] for h in got["history"]] == [1, 2]
    finally:
        for setup in setups:
            setup.close()


def legacy_file(data_dir: Path, rows: list[tuple[str, int, str, str]]) -> Path:
    """The rules file as releases before the storage layer wrote it (WAL mode, same table)."""
    path = data_dir / "attendance" / "attendance.sqlite3"
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(
        "CREATE TABLE thread_attendance_rules (thread_id TEXT NOT NULL, version INTEGER NOT NULL,"
        " rule_json TEXT NOT NULL, saved_at TEXT NOT NULL, PRIMARY KEY (thread_id, version))"
    )
    db.executemany("INSERT INTO thread_attendance_rules VALUES (?, ?, ?, ?)", rows)
    db.close()
    return path


def test_a_file_from_before_the_storage_layer_is_imported_once(engine: dict[str, str], tmp_path: Path) -> None:
    stored = canonical(check_rule(base()))
    old = [("old-thread", 1, stored, "2024-05-01T00:00:00.000Z"), ("old-thread", 2, stored, "2024-05-02T00:00:00.000Z")]
    path = legacy_file(tmp_path, old)
    with opened(tmp_path, engine) as shell:
        got = call(shell, "get_attendance_rule", {"thread_id": "old-thread", "include_history": True}, CTX)
        assert [(h["version"], h["saved_at"]) for h in got["history"]] == [(1, old[0][3]), (2, old[1][3])]
        assert got["attendance_rule"] == json.loads(stored)
        assert call(shell, "save_attendance_rule", {"thread_id": "old-thread", "rule": base()}, CTX)["version"] == 3
        # the old database had its own data: the samples are not added beside it
        with pytest.raises(ToolError):
            call(shell, "get_attendance_rule", {"thread_id": "demo-required"}, CTX)
    assert not path.exists() and len(list(tmp_path.glob("attendance/attendance.sqlite3.imported-*"))) == 1
    with opened(tmp_path, engine) as again:  # the retired file is not read again
        assert call(again, "get_attendance_rule", {"thread_id": "old-thread"}, CTX)["version"] == 3


def test_a_downgrade_then_a_second_upgrade_keeps_every_rule_and_both_backups(
    engine: dict[str, str], tmp_path: Path
) -> None:
    """Issue 34: the old release run on the upgraded data dir writes a new file; upgrading again appends its
    rules saved meanwhile (never drops one whose version number is taken) and keeps the first backup."""
    stored = canonical(check_rule(base()))
    legacy_file(tmp_path, [("old-thread", 1, stored, "2024-05-01T00:00:00.000Z")])
    with opened(tmp_path, engine) as shell:
        call(shell, "save_attendance_rule", {"thread_id": "old-thread", "rule": base()}, CTX)  # version 2
    first = list(tmp_path.glob("attendance/attendance.sqlite3.imported-*"))
    changed = canonical(check_rule({**base(), "rule": {"k": 2, "n": 5}}))
    downgrade_era = [
        ("old-thread", 1, stored, "2024-05-01T00:00:00.000Z"),
        ("old-thread", 2, changed, "2024-06-01T00:00:00.000Z"),
    ]
    legacy_file(tmp_path, downgrade_era)
    with opened(tmp_path, engine) as shell:
        got = call(shell, "get_attendance_rule", {"thread_id": "old-thread", "include_history": True}, CTX)
    assert [h["version"] for h in got["history"]] == [1, 2, 3]
    assert (got["saved_at"], got["attendance_rule"]) == ("2024-06-01T00:00:00.000Z", json.loads(changed))
    backups = list(tmp_path.glob("attendance/attendance.sqlite3.imported-*"))
    assert len(backups) == 2 and set(first) < set(backups)


def test_a_database_of_the_previous_release_is_upgraded_and_keeps_its_rows(
    engine: dict[str, str], tmp_path: Path
) -> None:
    """A database at revision 0001 (idempotency keys only) gains attendance_rules at start-up, rows kept."""
    old = engines.create(engines.database_url(engine.get("KUMITATE_DATABASE_URL"), tmp_path))
    with old.connect() as conn:
        command.upgrade(migrate.Migrations().config(conn), "0001")
        conn.execute(text("INSERT INTO idempotency VALUES ('t', 'p', 'k', 'f', 200, '{}', 0, 9e18)"))
        conn.commit()
    assert "attendance_rules" not in inspect(old).get_table_names()
    old.dispose()

    with opened(tmp_path, engine) as shell:
        assert migrate.current(shell.store.db.engine) == migrate.head()
        assert call(shell, "get_attendance_rule", {"thread_id": "demo-k-of-n"})["version"] == 1
        with shell.store.db.read() as conn:
            assert conn.execute(text("SELECT count(*) FROM idempotency")).scalar_one() == 1


def test_the_service_uses_the_setups_database_and_leaves_it_open(tmp_path: Path) -> None:
    """The runtime shares one database among the services and closes it itself: close() ends only the LLM client."""
    setup = ServiceSetup.open("attendance", settings_in(tmp_path))
    try:
        shell = attendance.create(setup)
        assert shell.store.db is setup.database
        pool = setup.database.engine.pool
        shell.close()
        assert setup.database.engine.pool is pool  # Database.close() disposes the engine, which replaces the pool
    finally:
        setup.close()

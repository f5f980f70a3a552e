"""Attendance rules on the storage layer (table `attendance_rules`), every save kept as a new version.

Rows are append-only: (thread_id, version) is the key, the current rule is the highest version. A save
inserts max(version) + 1 with ON CONFLICT DO NOTHING and tries the next number when another writer
took it first (on SQLite the writer's IMMEDIATE transaction already serialises saves; on PostgreSQL
two instances may race), so concurrent saves never lose or duplicate a version. An empty table is
filled from the bundled sample rules (data/attendance/sample_rules.json) with fixed versions, so
instances starting together seed it once.

Releases before the storage layer kept rules in `<data dir>/attendance/attendance.sqlite3` (table
`thread_attendance_rules`, same columns). `import_legacy` copies its rows into `attendance_rules` at
start-up and renames the file to `attendance.sqlite3.imported-<UTC time>` (kumitate.storage.carry), which
is then no longer read. A row already stored unchanged is skipped (an interrupted or concurrent import is
harmless); a version number taken by a different rule (saved by an earlier release run on this data
directory after an upgrade, then upgraded again) is appended as a new version, never dropped.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import BigInteger, Column, Connection, MetaData, String, Table, Text, func, select

from generated.errors import NotFoundError, StorageUnavailableError
from handlers.attendance.validate import check_rule
from kumitate.storage import Database, carry

metadata = MetaData()
"""attendance's tables (its migrations: handlers/attendance/migrations/; `kumitate db revision --service
attendance` compares this metadata with them)."""
rules = Table(
    "attendance_rules",
    metadata,
    Column("thread_id", String(100), primary_key=True),
    Column("version", BigInteger, primary_key=True, autoincrement=False),
    Column("rule_json", Text, nullable=False, comment="the normalised AttendanceRule, canonical JSON"),
    Column("saved_at", String(40), nullable=False, comment="UTC instant, RFC 3339 with milliseconds"),
    comment="attendance: append-only rule versions per thread; the current rule is the highest version",
)

MAX_ATTEMPTS = 50
"""Concurrent saves of one thread that may overtake a save before it gives up (each costs one round trip)."""
LEGACY_FILE = "attendance.sqlite3"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def canonical(rule: dict[str, Any]) -> str:
    return json.dumps(rule, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


class RuleStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def seed_if_empty(self, sample_file: Path) -> None:
        if sample_file.exists() and self.empty():
            written = self.seed(json.loads(sample_file.read_text(encoding="utf-8")))
            if written:
                carry.announce("attendance", f"stored {written} sample rule versions from {sample_file}", rows=written)

    def empty(self) -> bool:
        with self.db.read() as conn:
            return conn.execute(select(rules.c.thread_id).limit(1)).first() is None

    def seed(self, entries: list[dict[str, Any]]) -> int:
        """Sample rules as versions 1, 2, … per thread in file order; rows that exist are kept. Returns the rows written."""
        versions: dict[str, int] = {}
        written = 0
        with self.db.transaction() as conn:
            for entry in entries:
                thread = entry["thread_id"]
                versions[thread] = versions.get(thread, 0) + 1
                rule = canonical(check_rule(entry["rule"]))
                written += self.insert(conn, thread, versions[thread], rule, entry["saved_at"])
        return written

    def insert(self, conn: Connection, thread_id: str, version: int, rule_json: str, saved_at: str) -> bool:
        """Insert one version unless it exists; True when this call wrote it."""
        row = {"thread_id": thread_id, "version": version, "rule_json": rule_json, "saved_at": saved_at}
        return conn.execute(self.db.insert_ignore(rules, row).returning(rules.c.version)).first() is not None

    def save(self, thread_id: str, rule: Any) -> dict[str, Any]:
        """Validate, normalise and append a new version; returns the stored row."""
        stored = check_rule(rule)
        when = now_iso()
        text = canonical(stored)
        with self.db.transaction() as conn:
            for _ in range(MAX_ATTEMPTS):
                latest = conn.execute(
                    select(func.coalesce(func.max(rules.c.version), 0)).where(rules.c.thread_id == thread_id)
                ).scalar_one()
                version = int(latest) + 1
                if self.insert(conn, thread_id, version, text, when):
                    break
            else:
                raise StorageUnavailableError("too many concurrent saves of this thread's rule; retry shortly")
        return {"thread_id": thread_id, "version": version, "saved_at": when, "attendance_rule": stored}

    def load(self, thread_id: str, include_history: bool = False) -> dict[str, Any]:
        """The current version (and optionally all versions, oldest first); NOT_FOUND if never saved."""
        query = select(rules.c.version, rules.c.rule_json, rules.c.saved_at).where(rules.c.thread_id == thread_id)
        query = query.order_by(rules.c.version) if include_history else query.order_by(rules.c.version.desc()).limit(1)
        with self.db.read() as conn:
            rows = conn.execute(query).all()
        if not rows:
            raise NotFoundError(f"no attendance rule is stored for thread {thread_id!r}")
        version, text, when = rows[-1]
        out: dict[str, Any] = {
            "thread_id": thread_id,
            "version": version,
            "saved_at": when,
            "attendance_rule": json.loads(text),
        }
        if include_history:
            out["history"] = [{"version": v, "saved_at": s, "attendance_rule": json.loads(t)} for v, t, s in rows]
        return out


def import_legacy(store: RuleStore, service_dir: Path) -> int:
    """Copy the pre-storage-layer file's rows into the store and retire the file; returns the rows written."""
    path = service_dir / LEGACY_FILE
    if not path.exists():
        return 0
    # Read-write, so a write-ahead log left beside it is applied (and folded in when it closes).
    with closing(sqlite3.connect(path)) as old:
        try:
            rows = old.execute(
                "SELECT thread_id, version, rule_json, saved_at FROM thread_attendance_rules ORDER BY thread_id, version"
            ).fetchall()
        except sqlite3.OperationalError:
            rows = []  # an empty file (no table yet)
    copied = appended = 0
    with store.db.transaction() as conn:
        for thread_id, version, rule_json, saved_at in rows:
            if store.insert(conn, thread_id, version, rule_json, saved_at):
                copied += 1
                continue
            stored = conn.execute(
                select(rules.c.rule_json, rules.c.saved_at).where(
                    rules.c.thread_id == thread_id, rules.c.version == version
                )
            ).one()
            if tuple(stored) == (rule_json, saved_at):
                continue
            latest = conn.execute(select(func.max(rules.c.version)).where(rules.c.thread_id == thread_id)).scalar_one()
            appended += store.insert(conn, thread_id, int(latest) + 1, rule_json, saved_at)
    kept = carry.keep_original(path)
    if kept is not None:
        carry.announce(
            "attendance",
            f"copied {copied} rule versions from {path} into the storage layer"
            + (f" and appended {appended} that differed from a stored version as new versions" if appended else "")
            + f"; the original is kept as {kept.name}",
            rows=copied + appended,
            kept=str(kept),
        )
    return copied + appended

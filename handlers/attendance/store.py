"""thread_attendance_rules in SQLite, with every save kept as a new version.

Rows are append-only: (thread_id, version) is the key, the current rule is the
highest version. `BEGIN IMMEDIATE` serialises concurrent saves so two writers
can never produce the same version. A fresh database is seeded from the bundled
sample rules (data/attendance/sample_rules.json) so a new server answers at once.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from handlers.attendance.validate import check_rule
from kumitate.context import commit_gate
from kumitate.errors import ToolError

SCHEMA = """
CREATE TABLE IF NOT EXISTS thread_attendance_rules (
    thread_id TEXT NOT NULL,
    version   INTEGER NOT NULL,
    rule_json TEXT NOT NULL,
    saved_at  TEXT NOT NULL,
    PRIMARY KEY (thread_id, version)
)
"""


class RuleStore:
    def __init__(self, path: Path, sample_file: Path | None = None) -> None:
        self.path = path
        fresh = not path.exists()
        with self._connect() as db:
            db.execute(SCHEMA)
        if fresh and sample_file is not None and sample_file.exists():
            for entry in json.loads(sample_file.read_text(encoding="utf-8")):
                self.save(entry["thread_id"], entry["rule"], saved_at=entry.get("saved_at"))

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=10, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        return db

    def save(self, thread_id: str, rule: Any, saved_at: str | None = None) -> dict[str, Any]:
        """Validate, normalise and append a new version; returns the stored row."""
        stored = check_rule(rule)
        when = saved_at or datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        text = json.dumps(stored, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute(
                "SELECT COALESCE(MAX(version), 0) FROM thread_attendance_rules WHERE thread_id = ?", (thread_id,)
            ).fetchone()
            version = row[0] + 1
            db.execute(
                "INSERT INTO thread_attendance_rules (thread_id, version, rule_json, saved_at) VALUES (?, ?, ?, ?)",
                (thread_id, version, text, when),
            )
            with commit_gate():
                db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()
        return {"thread_id": thread_id, "version": version, "saved_at": when, "attendance_rule": stored}

    def get(self, thread_id: str, include_history: bool = False) -> dict[str, Any]:
        """The current version (and optionally all versions, oldest first); NOT_FOUND if never saved."""
        db = self._connect()
        try:
            if include_history:
                rows = db.execute(
                    "SELECT version, rule_json, saved_at FROM thread_attendance_rules WHERE thread_id = ? ORDER BY version",
                    (thread_id,),
                ).fetchall()
            else:
                rows = db.execute(
                    "SELECT version, rule_json, saved_at FROM thread_attendance_rules WHERE thread_id = ? "
                    "ORDER BY version DESC LIMIT 1",
                    (thread_id,),
                ).fetchall()
        finally:
            db.close()
        if not rows:
            raise ToolError(f"no attendance rule is stored for thread {thread_id!r}", code="NOT_FOUND")
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

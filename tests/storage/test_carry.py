"""kumitate.storage.carry and .backup: originals are kept under names never reused; a backup while serving is whole."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from kumitate import cli
from kumitate.serving.deploy import DeploySettings
from kumitate.storage import backup, carry, open_database
from kumitate.storage.schema import idempotency


def test_a_second_original_never_replaces_the_first_backup(tmp_path: Path) -> None:
    path = tmp_path / "attendance.sqlite3"
    path.write_bytes(b"first release")
    first = carry.keep_original(path)
    path.write_bytes(b"written by a downgrade")
    second = carry.keep_original(path)  # within the same second: the name gets -2
    assert first is not None and second is not None and first != second
    assert first.name.startswith("attendance.sqlite3.imported-") and not path.exists()
    assert (first.read_bytes(), second.read_bytes()) == (b"first release", b"written by a downgrade")
    assert carry.keep_original(path) is None  # moved by another process meanwhile: nothing to do


def test_sqlite_files_left_beside_the_original_move_with_it(tmp_path: Path) -> None:
    path = tmp_path / "yana.db"
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("CREATE TABLE labels (id TEXT)")
    writer.execute("INSERT INTO labels VALUES ('a label')")
    writer.commit()
    writer.close()
    reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    reader.execute("SELECT * FROM labels").fetchall()
    reader.close()
    assert {p.name for p in tmp_path.iterdir()} == {"yana.db", "yana.db-wal", "yana.db-shm"}  # the stray pair
    kept = carry.keep_original(path)
    assert kept is not None
    assert {p.name for p in tmp_path.iterdir()} == {kept.name, kept.name + "-wal", kept.name + "-shm"}
    with sqlite3.connect(kept) as again:
        assert again.execute("SELECT id FROM labels").fetchall() == [("a label",)]


def test_a_backup_while_writers_commit_holds_every_row_committed_before_it(tmp_path: Path) -> None:
    """The online backup API copies what the write-ahead log holds too (a copy of the file would not)."""
    db = open_database(tmp_path / "var", DeploySettings())
    rows = [
        {"tool": "t", "principal": "p", "key": str(n), "fingerprint": "f", "created_at": 0.0, "expires_at": 9e9}
        for n in range(200)
    ]
    with db.transaction() as conn:
        conn.execute(idempotency.insert(), rows)
    stop = threading.Event()

    def write() -> None:
        n = 1000
        while not stop.is_set():
            with db.transaction() as conn:
                conn.execute(idempotency.insert().values(**{**rows[0], "key": str(n)}))
            n += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        report = backup.backup(tmp_path / "var", tmp_path / "backup", export_dir=None, postgres=False)
    finally:
        stop.set()
        writer.join()
        db.close()
    assert report.database.startswith("copied (revision ")
    with sqlite3.connect(tmp_path / "backup" / "kumitate.sqlite3") as copy:
        assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        keys = {int(k) for (k,) in copy.execute("SELECT key FROM idempotency")}
    assert set(range(200)) <= keys
    with pytest.raises(backup.BackupError, match="inside the data directory"):
        backup.backup(tmp_path / "var", tmp_path / "var" / "backup", export_dir=None, postgres=False)


def test_db_current_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUMITATE_DATA_DIR", str(tmp_path / "var"))
    assert cli.main(["db", "current"]) == 0
    assert "no database yet, nothing created" in capsys.readouterr().out
    assert not (tmp_path / "var").exists()

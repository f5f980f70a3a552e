"""Issue 45: `kumitate db restore` checks the backup before it replaces anything. Each kind of damage seen
(an empty, missing, truncated or overwritten database, a manifest that is not JSON, a missing or altered
file, a schema newer than this release, a truncated DuckDB file) is refused in one line, and the data
directory (and an export directory outside it) is left exactly as it was: absent, or empty. The backup
itself is never written to. Real files, real SQLite, real DuckDB."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from kumitate.serving.deploy import DeploySettings
from kumitate.storage import backup, migrate, open_database
from kumitate.storage.backup import MANIFEST, BackupError
from kumitate.storage.schema import idempotency

ROWS = 3000
CHART = "household/charts/spending.png"
DUCK = "analytics/activities.duckdb"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A backup of a data dir with a database of about 1 MiB (so 64 KiB in its middle hit used pages),
    a DuckDB file with a table, a chart and exports kept outside the data dir."""
    root = tmp_path_factory.mktemp("made")
    var, exports = root / "var", root / "exports"
    db = open_database(var, DeploySettings())
    rows = [
        {"tool": "t", "principal": "p", "key": str(n), "fingerprint": "f" * 200, "created_at": 0.0, "expires_at": 9e9}
        for n in range(ROWS)
    ]
    try:
        with db.transaction() as conn:
            conn.execute(idempotency.insert(), rows)
    finally:
        db.close()
    (var / "analytics").mkdir()
    with duckdb.connect(str(var / DUCK)) as duck:
        duck.execute("CREATE TABLE activities AS SELECT range AS id, 'walk' AS kind FROM range(50000)")
    (var / CHART).parent.mkdir(parents=True)
    (var / CHART).write_bytes(os.urandom(4096))
    exports.mkdir()
    (exports / "e1.csv").write_text("a,b\n1,2\n")
    report = backup.backup(var, root / "backup", export_dir=exports, postgres=False)
    assert report.database == f"copied (revision {migrate.head()})" and report.files == 3
    return root / "backup"


@pytest.fixture
def copy(made: Path, tmp_path: Path) -> Path:
    """A fresh copy of the module's backup, for one test to damage."""
    target = tmp_path / "backup"
    subprocess.run(["cp", "-a", str(made), str(target)], check=True)
    return target


def manifest(source: Path) -> dict[str, object]:
    return json.loads((source / MANIFEST).read_text())


def old_format(source: Path) -> None:
    """Rewrite the manifest as the release before checksums wrote it."""
    meta = manifest(source)
    old = {"created_at": meta["created_at"], "database": meta["database"], "files": len(meta["files"]) - 1}  # type: ignore[arg-type]
    (source / MANIFEST).write_text(json.dumps(old))


def relist(source: Path, relative: str) -> None:
    """The manifest agrees with the file as it is now (the damage happened before the backup was taken)."""
    meta = manifest(source)
    data = (source / relative).read_bytes()
    for entry in meta["files"]:  # type: ignore[attr-defined]
        if entry["path"] == relative:
            entry.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
    (source / MANIFEST).write_text(json.dumps(meta))


def snapshot(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def refused(source: Path, tmp_path: Path, match: str) -> str:
    """Restore is refused with data and export dirs absent, then again with both present and empty: each
    time both are left as they were, nothing is left beside them, and the backup is unchanged."""
    before = snapshot(source)
    tmp_path.mkdir(exist_ok=True)
    data, exports = tmp_path / "var", tmp_path / "exports"
    siblings = set(tmp_path.iterdir())
    for present in (False, True):
        if present:
            data.mkdir(mode=0o750)
            exports.mkdir()
            siblings = set(tmp_path.iterdir())
        with pytest.raises(BackupError, match=match) as refusal:
            backup.restore(source, data, export_dir=exports)
        assert "\n" not in str(refusal.value)
        assert set(tmp_path.iterdir()) == siblings, "a stage was left behind"
        if present:
            assert list(data.iterdir()) == [] and list(exports.iterdir()) == []
            assert data.stat().st_mode & 0o777 == 0o750
        else:
            assert not data.exists() and not exports.exists()
    assert snapshot(source) == before, "the restore wrote to the backup"
    return str(refusal.value)


def database(source: Path) -> Path:
    return source / "kumitate.sqlite3"


def emptied(source: Path) -> None:
    database(source).write_bytes(b"")


def removed(source: Path) -> None:
    database(source).unlink()


def truncated(source: Path) -> None:
    data = database(source).read_bytes()
    database(source).write_bytes(data[: len(data) // 2])


def random_header(source: Path) -> None:
    with database(source).open("r+b") as stream:
        stream.write(os.urandom(100))


def garbage_in_the_middle(source: Path) -> None:
    size = database(source).stat().st_size
    assert size > 4 * 65536
    with database(source).open("r+b") as stream:
        stream.seek(size // 2 - 32768)
        stream.write(os.urandom(65536))


def newer_revision(source: Path) -> None:
    with sqlite3.connect(database(source)) as conn:
        conn.execute(  # one branch (of one or several) at a revision of a later release
            "UPDATE alembic_version SET version_num = '9999_future' WHERE rowid = (SELECT min(rowid) FROM alembic_version)"
        )
    conn.close()


def duck_truncated(source: Path) -> None:
    data = (source / DUCK).read_bytes()
    (source / DUCK).write_bytes(data[: len(data) // 3])


DATABASE_DAMAGE: dict[str, tuple[Callable[[Path], None], str, str]] = {
    # damage: (what to do, refusal with checksums, refusal of a backup of the release before them)
    "database 0 bytes": (emptied, r"kumitate.sqlite3 is 0 bytes, its manifest says \d+", r"is empty \(0 bytes\)"),
    "database missing": (
        removed,
        r"has no kumitate.sqlite3, which its manifest lists",
        r"has no kumitate.sqlite3, which its manifest says was copied",
    ),
    "database truncated": (
        truncated,
        r"kumitate.sqlite3 is \d+ bytes, its manifest says",
        r"kumitate.sqlite3 (fails SQLite's integrity check|is not a readable SQLite database)",
    ),
    "random header": (
        random_header,
        r"kumitate.sqlite3 does not match its SHA-256 in the manifest",
        r"kumitate.sqlite3 is not a readable SQLite database \(file is not a database\)",
    ),
    "64 KiB of garbage in the middle": (
        garbage_in_the_middle,
        r"kumitate.sqlite3 does not match its SHA-256",
        r"kumitate.sqlite3 (fails SQLite's integrity check|is not a readable SQLite database)",
    ),
    "newer schema revision": (
        newer_revision,
        r"kumitate.sqlite3 does not match its SHA-256",
        r"kumitate.sqlite3 is at schema revision 9999_future, which this kumitate does not know",
    ),
    "DuckDB truncated": (
        duck_truncated,
        r"activities.duckdb is \d+ bytes, its manifest says",
        r"activities.duckdb is not a readable DuckDB database",
    ),
}


@pytest.mark.parametrize("kind", list(DATABASE_DAMAGE))
def test_damage_is_refused_by_the_checksums(kind: str, copy: Path, tmp_path: Path) -> None:
    damage, by_checksum, _ = DATABASE_DAMAGE[kind]
    damage(copy)
    refused(copy, tmp_path / "target", by_checksum)


@pytest.mark.parametrize("kind", list(DATABASE_DAMAGE))
def test_damage_in_a_backup_without_checksums_is_refused_by_the_database_checks(
    kind: str, copy: Path, tmp_path: Path
) -> None:
    damage, _, by_check = DATABASE_DAMAGE[kind]
    old_format(copy)
    damage(copy)
    refused(copy, tmp_path / "target", by_check)


@pytest.mark.parametrize("kind", ["64 KiB of garbage in the middle", "newer schema revision", "DuckDB truncated"])
def test_damage_before_the_backup_was_taken_is_refused_by_the_database_checks(
    kind: str, copy: Path, tmp_path: Path
) -> None:
    """The files match the manifest (they were damaged in the data dir, then backed up): the checks of the
    databases themselves refuse them."""
    damage, _, by_check = DATABASE_DAMAGE[kind]
    damage(copy)
    relist(copy, DUCK if "DuckDB" in kind else "kumitate.sqlite3")
    if kind == "newer schema revision":
        meta = manifest(copy)
        (copy / MANIFEST).write_text(json.dumps({**meta, "schema_revision": backup.revision(database(copy))}))
    refused(copy, tmp_path / "target", by_check)


def test_a_manifest_that_is_not_json_is_refused(copy: Path, tmp_path: Path) -> None:
    (copy / MANIFEST).write_text('{"format": 2, "files": [')
    refused(copy, tmp_path / "target", r"kumitate-backup.json is not valid JSON .*: the backup is damaged")


@pytest.mark.parametrize(
    "change",
    [
        {"files": 3},
        {"format": 99},
        {"files": [{"path": "../../etc/passwd", "size": 1, "sha256": "0" * 64}]},
        {"files": [{"path": "x", "size": -1, "sha256": "0" * 64}]},
        {"database_file": None},
    ],
)
def test_a_manifest_of_another_shape_is_refused(change: dict[str, object], copy: Path, tmp_path: Path) -> None:
    (copy / MANIFEST).write_text(json.dumps({**manifest(copy), **change}))
    refused(
        copy,
        tmp_path / "target",
        r"kumitate-backup.json (is not a kumitate backup manifest|has format 99|lists|gives|disagrees)",
    )


def test_a_listed_file_that_is_missing_is_refused(copy: Path, tmp_path: Path) -> None:
    (copy / CHART).unlink()
    refused(copy, tmp_path / "target", rf"has no {CHART}, which its manifest lists: the backup is damaged")


def test_a_file_whose_checksum_differs_is_refused(copy: Path, tmp_path: Path) -> None:
    data = bytearray((copy / CHART).read_bytes())
    data[100] ^= 0xFF  # same size, another byte
    (copy / CHART).write_bytes(bytes(data))
    refused(copy, tmp_path / "target", rf"{CHART} does not match its SHA-256 in the manifest")


def test_an_export_whose_checksum_differs_leaves_both_directories_as_they_were(copy: Path, tmp_path: Path) -> None:
    (copy / "export-dir" / "e1.csv").write_text("a,b\n1,3\n")
    refused(copy, tmp_path / "target", r"export-dir/e1.csv does not match its SHA-256")


def test_a_whole_backup_is_restored_with_every_row(made: Path, tmp_path: Path) -> None:
    data, exports = tmp_path / "var", tmp_path / "exports"
    report = backup.restore(made, data, export_dir=exports)
    assert report == backup.Report(f"revision {migrate.head()}", 3, ())
    with sqlite3.connect(data / "kumitate.sqlite3") as conn:
        assert conn.execute("SELECT count(*) FROM idempotency").fetchone() == (ROWS,)
    conn.close()
    with duckdb.connect(str(data / DUCK), read_only=True) as duck:
        assert duck.execute("SELECT count(*) FROM activities").fetchone() == (50000,)
    assert (data / CHART).read_bytes() == (made / CHART).read_bytes()
    assert (exports / "e1.csv").read_text() == "a,b\n1,2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exports", "var"]


def test_a_backup_without_checksums_is_restored_with_a_warning(copy: Path, tmp_path: Path) -> None:
    old_format(copy)
    report = backup.restore(copy, tmp_path / "var", export_dir=tmp_path / "exports")
    assert report.database == f"revision {migrate.head()}" and report.files == 3
    assert report.warnings == (
        "the backup's manifest has no checksums (written by an earlier kumitate): the database and DuckDB "
        "files were checked, the other 2 files were not",
    )


def test_a_file_the_manifest_does_not_list_is_left_out_with_a_warning(copy: Path, tmp_path: Path) -> None:
    (copy / "stray.txt").write_text("added after the backup")
    report = backup.restore(copy, tmp_path / "var", export_dir=tmp_path / "exports")
    assert report.warnings == ("1 files in the backup are not in its manifest and were left out (stray.txt, …)",)
    assert not (tmp_path / "var" / "stray.txt").exists()


def cli_restore(source: Path, data: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUMITATE_")}
    env |= {"KUMITATE_DATA_DIR": str(data), "KUMITATE_EXPORT_DIR": str(data.parent / "exports")}
    return subprocess.run(
        [sys.executable, "-m", "kumitate", "db", "restore", str(source)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (emptied, "kumitate.sqlite3 is 0 bytes, its manifest says"),
        (lambda source: (source / MANIFEST).write_text("{not json"), "kumitate-backup.json is not valid JSON"),
        (lambda source: (old_format(source), random_header(source)), "is not a readable SQLite database"),
    ],
    ids=["database 0 bytes", "manifest not JSON", "random header without checksums"],
)
def test_the_command_refuses_in_one_line_and_exit_1(
    damage: Callable[[Path], object], message: str, copy: Path, tmp_path: Path
) -> None:
    damage(copy)
    data = tmp_path / "target" / "var"
    result = cli_restore(copy, data)
    assert result.returncode == 1, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kumitate db restore: ") and message in lines[0], result.stderr
    assert not data.exists() and not (tmp_path / "target").exists()


def test_the_command_restores_and_prints_what_it_restored(made: Path, tmp_path: Path) -> None:
    result = cli_restore(made, tmp_path / "var")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"restored {made} into {tmp_path / 'var'}: revision {migrate.head()}, 3 files\n"
    assert result.stderr == ""


def test_a_data_dir_that_is_a_mount_point_is_filled_in_place(
    made: Path, copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A container's volume cannot be renamed over: the stage lies inside it and its entries are renamed
    into place; a refusal leaves it empty, as it was."""
    data = tmp_path / "volume"
    data.mkdir()
    asked: list[Path] = []
    monkeypatch.setattr(os.path, "ismount", lambda path: asked.append(Path(path)) or Path(path) == data)
    (copy / CHART).write_bytes(b"altered")
    with pytest.raises(BackupError, match=f"{CHART} is 7 bytes"):
        backup.restore(copy, data, export_dir=None)
    assert list(data.iterdir()) == []
    backup.restore(made, data, export_dir=None)
    assert asked == [data, data]
    assert snapshot(data) == {k: v for k, v in snapshot(made).items() if not k.startswith(("export-dir/", MANIFEST))}


def test_the_manifest_lists_every_file_with_its_size_and_checksum(made: Path) -> None:
    meta = manifest(made)
    assert meta["format"] == backup.FORMAT and meta["schema_revision"] == migrate.head()
    assert meta["database_file"] == "kumitate.sqlite3"
    listed = {e["path"]: (e["size"], e["sha256"]) for e in meta["files"]}  # type: ignore[attr-defined]
    on_disk = {
        path: ((made / path).stat().st_size, digest) for path, digest in snapshot(made).items() if path != MANIFEST
    }
    assert listed == on_disk
    assert set(listed) == {"kumitate.sqlite3", DUCK, CHART, "export-dir/e1.csv"}


def test_a_backup_without_a_database_is_restored_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "var" / "household").mkdir(parents=True)
    (tmp_path / "var" / "household" / "note.txt").write_text("kept")
    report = backup.backup(tmp_path / "var", tmp_path / "backup", export_dir=None, postgres=True)
    assert report.database.startswith("not copied: the database is PostgreSQL")
    restored = backup.restore(tmp_path / "backup", tmp_path / "fresh", export_dir=None)
    assert restored.database.startswith("no database in the backup (not copied: the database is PostgreSQL")
    assert restored.files == 1 and len(restored.warnings) == 1
    assert restored.warnings[0].startswith("the backup holds no database: the next start begins with the sample data")
    assert (tmp_path / "fresh" / "household" / "note.txt").read_text() == "kept"

"""Issue 34: a data dir of the previous storage layout (release e7d948a, recorded under tests/fixtures/upgrade)
upgraded in place by this release: every service reads back what the old release answered, each step
says what it did in one line, the originals are kept under names that are never reused."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from kumitate import cli
from kumitate.runtime import Runtime
from kumitate.storage import SchemaMismatchError, migrate
from tests.storage import readback

pytestmark = pytest.mark.slow  # one runtime started on the recorded data dir (about 20 s), shared by the module


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object], list[str]]:
    data_dir = readback.old_data_dir(tmp_path_factory.mktemp("upgrade") / "var")
    records: list[logging.LogRecord] = []
    catcher = logging.Handler()
    catcher.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("kumitate.calls")
    level = logger.level
    logger.addHandler(catcher)
    logger.setLevel(logging.INFO)  # the level `kumitate serve` logs at (calllog.configure)
    try:
        runtime = Runtime(readback.settings(data_dir))
    finally:
        logger.removeHandler(catcher)
        logger.setLevel(level)
    try:
        answers = asyncio.run(readback.answers(runtime))
    finally:
        runtime.close()
    return data_dir, answers, [r.getMessage() for r in records if "upgrade" in getattr(r, "fields", {})]


def test_every_service_reads_back_what_the_old_release_answered(upgraded: tuple) -> None:
    _, answers, _ = upgraded
    assert json.loads(json.dumps(answers, ensure_ascii=False)) == readback.RECORDED


def test_each_step_that_changed_stored_data_says_so_in_one_line(upgraded: tuple) -> None:
    data_dir, _, lines = upgraded
    steps = {line.split(":", 1)[0] for line in lines}
    assert steps >= {"database", "household", "attendance", "yana", "analytics", "idempotency"}, lines
    household = next(line for line in lines if "transactions" in line)
    assert "copied 3093 transactions and 12 duplicate checks" in household, household
    assert f"{data_dir}/household/household.db" in household and "household.db.imported-" in household


def test_originals_are_kept_under_dated_names_and_nothing_is_left_behind(upgraded: tuple) -> None:
    data_dir, _, _ = upgraded
    for name in ("household/household.db", "attendance/attendance.sqlite3", "yana/yana.db", "idempotency.sqlite3"):
        original = data_dir / name
        assert not original.exists()
        assert len(list(original.parent.glob(original.name + ".imported-2*"))) == 1, name
    assert not list(data_dir.rglob("yana.db-*")), "a stray -wal/-shm pair"


def snapshot(data_dir: Path) -> dict[str, str]:
    return {
        str(p.relative_to(data_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in data_dir.rglob("*")
        if p.is_file()
    }


@pytest.fixture
def newer(upgraded: tuple, tmp_path: Path) -> Path:
    """A copy of the upgraded data dir, plus a file of the old layout that a start would import."""
    copy = tmp_path / "var"
    shutil.copytree(upgraded[0], copy)
    shutil.copy(readback.FIXTURE / "e7d948a" / "attendance" / "attendance.sqlite3", copy / "attendance")
    return copy


def test_a_database_newer_than_this_release_is_refused_and_left_untouched(newer: Path) -> None:
    with sqlite3.connect(newer / "kumitate.sqlite3") as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999_future' WHERE version_num = ?", (migrate.HEAD,))
    conn.close()
    before = snapshot(newer)
    with pytest.raises(SchemaMismatchError) as refused:
        Runtime(readback.settings(newer))
    message = str(refused.value)
    assert "\n" not in message and "revision 9999_future is newer than this kumitate" in message
    assert snapshot(newer) == before


def test_a_service_table_newer_than_this_release_is_refused(newer: Path) -> None:
    with sqlite3.connect(newer / "kumitate.sqlite3") as conn:
        conn.execute("UPDATE yana_meta SET value = '99' WHERE key = 'index_version'")
    conn.close()
    before = snapshot(newer)
    with pytest.raises(SchemaMismatchError, match=r"yana's search index is at version 99, newer than"):
        Runtime(readback.settings(newer), ["yana"])
    assert snapshot(newer) == before


def test_backup_while_serving_and_restore_onto_a_fresh_data_dir_give_identical_answers(
    upgraded: tuple, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, answers, _ = upgraded
    serving = Runtime(readback.settings(data_dir))  # its connections stay open during the backup
    try:
        monkeypatch.setenv("KUMITATE_DATA_DIR", str(data_dir))
        assert cli.main(["db", "backup", str(tmp_path / "backup")]) == 0
    finally:
        serving.close()
    assert f"database copied (revision {migrate.head()})" in capsys.readouterr().out
    fresh = tmp_path / "fresh"
    monkeypatch.setenv("KUMITATE_DATA_DIR", str(fresh))
    assert cli.main(["db", "restore", str(tmp_path / "backup")]) == 0
    assert f"revision {migrate.head()}" in capsys.readouterr().out
    restored = Runtime(readback.settings(fresh))
    try:
        assert asyncio.run(readback.answers(restored)) == answers
    finally:
        restored.close()
    with pytest.raises(SystemExit, match="is not empty: restore onto a fresh one"):
        cli.main(["db", "restore", str(tmp_path / "backup")])


def test_the_upgrading_docs_quote_the_lines_an_upgrade_prints(upgraded: tuple) -> None:
    data_dir, _, lines = upgraded
    doc = (Path(__file__).resolve().parents[2] / "docs" / "deployment.md").read_text(encoding="utf-8")
    block = doc.split("## Upgrading", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    quoted = [line.removeprefix("info").strip() for line in block.splitlines() if line.strip()]

    def shape(line: str) -> str:
        line = line.replace(str(data_dir), "/srv/var")
        line = re.sub(r"revision \d{4}_\w+", "revision <head>", line)  # the docs need not follow each migration
        return re.sub(r"\d+", "N", line.replace(str(readback.settings(data_dir).sample_dir), "/srv/kumitate/data"))

    assert sorted(map(shape, quoted)) == sorted(map(shape, lines))

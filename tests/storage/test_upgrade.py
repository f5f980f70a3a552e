"""Issue 34: a data dir of the previous storage layout (release e7d948a, recorded under tests/fixtures/upgrade)
upgraded in place by this release: every service reads back what the old release answered, each step
says what it did in one line, the originals are kept under names that are never reused."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from kumitate.runtime import Runtime
from tests.storage import readback


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

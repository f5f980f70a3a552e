"""`kumitate call` shows a progress bar fed by the tool's progress reports (on a terminal only)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from kumitate.cliprogress import progress_bar
from kumitate.commands import _call_in_process
from tests.household.test_progress_cancel import _exports


def test_no_bar_off_a_terminal() -> None:
    with progress_bar("x", enabled=False) as bar:
        assert bar is None


def test_the_bar_follows_reports_from_a_worker_thread() -> None:
    with progress_bar("import", enabled=True) as bar:
        assert bar is not None
        worker = threading.Thread(target=bar.report, args=(3, 8, "3/7"))
        worker.start()
        worker.join()
        task = bar._progress.tasks[0]
        assert (task.completed, task.total, task.description) == (3, 8, "3/7")


def test_an_in_process_import_moves_the_bar_to_its_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUMITATE_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("HOUSEHOLD_DATA_DIR", str(tmp_path / "exports"))
    (tmp_path / "exports").mkdir()
    with progress_bar("import", enabled=True) as bar:
        _exports(tmp_path / "exports", 3, 5)
        ok, body = asyncio.run(_call_in_process("household", "import_household_data", {}, None, bar))
        task = bar._progress.tasks[0]  # type: ignore[union-attr]
    assert ok and body["total_transactions"] == 15
    assert (task.completed, task.total) == (3, 4)  # the last report: the aggregates step of 3 files + 1

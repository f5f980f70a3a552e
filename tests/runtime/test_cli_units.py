"""`kumitate serve | mcp | db` start-up refusals through `main([...])` in this process, and the data
directory checks behind them (kumitate/datadir.py).

Each case stops before a server would run: what an operator must fix is one line on stderr and an
exit status, never a traceback (the subprocess tests in test_startup_messages.py prove the same for
a real process; these cover the branches they do not take).
"""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from kumitate import datadir
from kumitate.cli import _start, main
from kumitate.settings import Settings
from kumitate.storage import migrate


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A clean KUMITATE_* environment whose data directory is `tmp_path / "var"`; the whole environment
    is restored afterwards (`serve --workers N` and `mcp --stdio` write to it for their workers and fastmcp)."""
    saved = dict(os.environ)
    for name in list(os.environ):
        if name.startswith("KUMITATE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("KUMITATE_DATA_DIR", str(tmp_path / "var"))
    yield tmp_path / "var"
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def unusable(env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data directory below a regular file: it can be neither created nor written."""
    env.parent.joinpath("a-file").write_text("")
    bad = env.parent / "a-file" / "var"
    monkeypatch.setenv("KUMITATE_DATA_DIR", str(bad))
    return bad


def exits(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    """The exit status of `kumitate ARGV` (returned or raised) and its stderr lines."""
    try:
        status = main(argv)
    except SystemExit as exc:
        status = int(exc.code or 0)
    return status, capsys.readouterr().err.splitlines()


def test_mcp_without_stdio_says_where_mcp_is_served(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, err = exits(["mcp"], capsys)
    assert status == 2
    assert err == ["only --stdio is served by this command; `kumitate serve` serves MCP over HTTP at /mcp"]


def test_an_unknown_toolset_lists_the_known_ones(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the project's activation puts its root first
    status, err = exits(["mcp", "--stdio", "--toolset", "nope"], capsys)
    assert status == 2
    assert err[0].startswith("unknown toolset 'nope'; known: ") and "diary" in err[0]


def test_an_invalid_setting_exits_2_naming_the_variable(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUMITATE_MAX_TIMEOUT_MS", "-5")
    status, err = exits(["mcp", "--stdio"], capsys)
    assert status == 2
    assert len(err) == 1 and err[0].startswith("kumitate: KUMITATE_MAX_TIMEOUT_MS")


@pytest.mark.parametrize("argv", [["serve", "--port", "0"], ["serve", "--workers", "2"], ["mcp", "--stdio"]])
def test_an_unusable_data_directory_is_one_line_and_exit_1(
    argv: list[str], unusable: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, err = exits(argv, capsys)
    assert status == 1
    assert err == [f"kumitate: cannot use the data directory {unusable}: Not a directory"]


def test_serving_on_every_interface_without_tokens_warns_first(
    unusable: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, err = exits(["serve", "--host", "0.0.0.0", "--port", "0"], capsys)
    assert status == 1
    assert len(err) >= 2 and "0.0.0.0" in " ".join(err[:-1])
    assert err[-1].startswith("kumitate: cannot use the data directory")


def test_a_storage_failure_while_building_is_one_line(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings.from_env()

    def build() -> None:
        raise sqlite3.OperationalError("database or disk is full")

    with pytest.raises(SystemExit) as exited:
        _start(settings, build)
    assert exited.value.code == 1
    assert capsys.readouterr().err.strip() == f"kumitate: cannot use the data directory {env}: database or disk is full"


def test_a_bug_while_building_keeps_its_traceback(env: Path) -> None:
    def build() -> None:
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        _start(Settings.from_env(), build)


def test_db_upgrade_then_current_on_a_database_url(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["db", "current"]) == 0
    assert "no database yet, nothing created" in capsys.readouterr().out
    assert not env.exists()  # current only looks
    monkeypatch.setenv("KUMITATE_DATABASE_URL", f"sqlite:///{env.parent / 'k.sqlite3'}")
    assert main(["db", "upgrade"]) == 0
    assert capsys.readouterr().out.strip().endswith(f"empty -> {migrate.head()}")
    assert main(["db", "upgrade"]) == 0
    assert capsys.readouterr().out.strip().endswith(f"at {migrate.head()}, nothing to do")
    assert main(["db", "current"]) == 0
    assert f"at {migrate.head()} (this kumitate needs {migrate.head()})" in capsys.readouterr().out


def test_db_on_an_unreachable_database_is_one_line_and_exit_2(
    env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUMITATE_DATABASE_URL", "postgresql+psycopg://kumitate@127.0.0.1:1/none")
    status, err = exits(["db", "current"], capsys)
    assert status == 2
    assert len(err) == 1 and err[0].startswith("kumitate: ")


def test_db_backup_without_a_path_says_what_to_give(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="give the backup directory"):
        main(["db", "backup"])


def test_check_creates_a_missing_directory_and_leaves_no_probe(tmp_path: Path) -> None:
    target = tmp_path / "new" / "var"
    datadir.check(target)
    assert target.is_dir() and list(target.iterdir()) == []


def test_check_refuses_a_directory_that_cannot_be_written() -> None:
    with pytest.raises(datadir.DataDirError, match="cannot use the data directory /proc: "):
        datadir.check(Path("/proc"))  # exists, and refuses new files even to root


def test_startup_error_names_what_failed(tmp_path: Path) -> None:
    full = OSError(28, "No space left on device", str(tmp_path / "var" / "x.db"))
    assert datadir.startup_error(tmp_path, full) == f"cannot start: {tmp_path}/var/x.db: No space left on device"
    assert datadir.startup_error(tmp_path, OSError(30, "Read-only file system")) == (
        f"cannot use the data directory {tmp_path}: Read-only file system"
    )
    engine = duckdb.IOException("IO Error: could not write file: No space left on device")
    assert datadir.startup_error(tmp_path, RuntimeError("import failed")) is None
    wrapped = RuntimeError("import failed")
    wrapped.__cause__ = engine
    assert (
        datadir.startup_error(tmp_path, wrapped) == f"cannot use the data directory {tmp_path}: No space left on device"
    )
    assert datadir.startup_error(tmp_path, datadir.DataDirError("as it was")) == "as it was"


def test_reason_is_short_for_any_exception() -> None:
    assert datadir.reason(OSError(28, "No space left on device")) == "No space left on device"
    assert datadir.reason(ValueError("first line\nsecond")) == "first line"
    assert datadir.reason(ValueError()) == "ValueError"

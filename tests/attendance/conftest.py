"""Shared invitee directories and the two storage engines for the attendance tests."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import handlers.attendance as attendance
from generated.attendance.bindings import SERVICE
from kumitate.context import CallContext
from kumitate.service import ServiceSetup
from kumitate.settings import Settings
from tests.conftest import REPO
from tests.servers import fresh_pg_database

# Six invitees in two departments and two teams; 山田 is the leader.
TEAM: list[dict[str, Any]] = [
    {
        "user_id": "1",
        "display_name": "山田 太郎",
        "reading": "やまだ たろう",
        "groups": ["営業部", "Team A", "リーダー"],
    },
    {
        "user_id": "2",
        "display_name": "田中 花子",
        "reading": "タナカ ハナコ",
        "aliases": ["ハナちゃん"],
        "groups": ["営業部", "Team A"],
    },
    {"user_id": "3", "display_name": "佐藤 次郎", "reading": "さとう じろう", "groups": ["営業部", "Team A"]},
    {"user_id": "4", "display_name": "鈴木 一郎", "reading": "すずき いちろう", "groups": ["開発部", "Team B"]},
    {"user_id": "5", "display_name": "高橋 美咲", "reading": "たかはし みさき", "groups": ["開発部", "Team B"]},
    {
        "user_id": "6",
        "display_name": "伊藤 健",
        "reading": "いとう けん",
        "aliases": ["ケンさん"],
        "groups": ["開発部", "Team B"],
    },
]


def users(n: int) -> list[dict[str, Any]]:
    """n anonymous registered users u:1..u:n."""
    return [{"user_id": str(i), "display_name": f"User{i}"} for i in range(1, n + 1)]


@pytest.fixture
def team() -> list[dict[str, Any]]:
    return [dict(i) for i in TEAM]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """The variables that put a test's storage on the embedded SQLite file or on a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return {}
    return {"KUMITATE_DATABASE_URL": fresh_pg_database(request.getfixturevalue("postgres_url"), tmp_path.name)}


def settings_in(data_dir: Path, env: Mapping[str, str] | None = None) -> Settings:
    """Settings from these variables alone (never the process environment): state in `data_dir`."""
    return Settings.from_env(
        {"KUMITATE_DATA_DIR": str(data_dir), "KUMITATE_SAMPLE_DIR": str(REPO / "data"), **(env or {})}
    )


@contextmanager
def opened(data_dir: Path, env: Mapping[str, str] | None = None) -> Iterator[attendance.AttendanceHandlers]:
    """The attendance handlers as a script builds them (their own ServiceSetup), closed with it."""
    setup = ServiceSetup.open("attendance", settings_in(data_dir, env))
    made = attendance.create(setup)
    try:
        yield made
    finally:
        made.close()
        setup.close()


@pytest.fixture
def handlers(engine: dict[str, str], tmp_path: Path) -> Iterator[attendance.AttendanceHandlers]:
    """The attendance handlers on a fresh database of each engine, closed after the test."""
    with opened(tmp_path, engine) as made:
        yield made


def typed_input(tool: str, args: dict[str, Any]) -> Any:
    """What the pipeline hands the handler: the generated input model, or the data for a declared data input."""
    binding = next(t for t in SERVICE.tools if t.name == tool)
    return args if binding.handler_input == "data" else binding.input_model.model_validate(args)


def call(shell: Any, tool: str, args: dict[str, Any], ctx: CallContext | None = None) -> Any:
    """A tool through the handler shell, given and returning what the pipeline gives and dumps."""
    ctx = ctx or CallContext(service="attendance", tool=tool, transport="test", run_id="r", trace_id="t")
    result = getattr(shell, tool)(typed_input(tool, args), ctx)
    return result.model_dump(mode="json", by_alias=True, exclude_unset=True)

"""Each attendance tool raises only the error codes its spec declares (issue 19), and each declared code
is reachable: every failure path of the handlers, driven through the handler shell, checked against
specs/attendance/tools/<tool>.yaml."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import create_engine

import handlers.attendance as attendance
from generated import errors
from kumitate.errors import ToolError
from kumitate.storage import Database
from tests.attendance.conftest import call, opened
from tests.attendance.test_store_validate import base

SPECS = Path(__file__).resolve().parents[2] / "specs" / "attendance" / "tools"
DECLARED = {p.stem: set(yaml.safe_load(p.read_text(encoding="utf-8"))["errors"]) for p in SPECS.glob("*.yaml")}
SLOT = {"slot_id": "s1", "start": "2030-01-01T10:00:00+09:00"}

CASES: list[tuple[str, dict[str, Any], str]] = [
    ("parse_attendance_intent", {"text": "全員", "invitees": [{"display_name": "名無し"}]}, "INVALID_INPUT"),
    (
        "parse_attendance_intent",
        {
            "text": "全員",
            "invitees": [{"user_id": "1", "display_name": "a"}, {"invitee_key": "u:1", "display_name": "b"}],
        },
        "INVALID_INPUT",
    ),
    (
        "parse_attendance_intent",
        {"text": "全員", "invitees": [{"user_id": "1", "display_name": "a"}], "defaults": {"timezone": "Mars/Base"}},
        "INVALID_INPUT",
    ),
    ("evaluate_attendance", {"rule": base(params={"k": 3}), "slots": [SLOT], "selections": []}, "VALIDATION_ERROR"),
    ("evaluate_attendance", {"rule": base(), "slots": [SLOT, SLOT], "selections": []}, "INVALID_INPUT"),
    (
        "evaluate_attendance",
        {"rule": base(), "slots": [{**SLOT, "end": "2030-01-01T09:00:00+09:00"}], "selections": []},
        "INVALID_INPUT",
    ),
    ("invitee_key", {"kind": "user", "value": "a@example.com"}, "INVALID_INPUT"),
    ("invitee_key", {"kind": "email", "value": "not-an-address"}, "INVALID_INPUT"),
    ("save_attendance_rule", {"thread_id": "t", "rule": base(params={"k": 6, "n": 5})}, "VALIDATION_ERROR"),
    ("get_attendance_rule", {"thread_id": "never-saved"}, "NOT_FOUND"),
]


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[attendance.AttendanceHandlers]:
    with opened(tmp_path) as made:
        yield made


@pytest.mark.parametrize(("tool", "args", "code"), CASES, ids=[f"{t}-{c}-{i}" for i, (t, _, c) in enumerate(CASES)])
def test_a_failure_raises_a_declared_generated_error(
    shell: attendance.AttendanceHandlers, tool: str, args: dict[str, Any], code: str
) -> None:
    with pytest.raises(ToolError) as raised:
        call(shell, tool, args)
    assert raised.value.code == code
    assert code in DECLARED[tool], f"{tool} raised {code}, which specs/attendance/tools/{tool}.yaml does not declare"
    assert type(raised.value) is getattr(errors, type(raised.value).__name__)  # a generated class, not a bare ToolError


@pytest.mark.parametrize("tool", ["save_attendance_rule", "get_attendance_rule"])
def test_a_lost_database_is_the_declared_storage_unavailable(
    shell: attendance.AttendanceHandlers, tmp_path: Path, tool: str
) -> None:
    shell.store.db.close()
    shell.store.db = Database(create_engine(f"sqlite:///{tmp_path / 'gone' / 'nowhere.sqlite3'}"))
    with pytest.raises(ToolError) as raised:  # the storage layer's own (the runtime imports no generated code)
        call(shell, tool, {"thread_id": "t", "rule": base()} if tool.startswith("save") else {"thread_id": "t"})
    assert raised.value.code == "STORAGE_UNAVAILABLE" and raised.value.code in DECLARED[tool]


def test_every_declared_code_is_exercised_above() -> None:
    exercised = {(tool, code) for tool, _, code in CASES}
    exercised |= {("save_attendance_rule", "STORAGE_UNAVAILABLE"), ("get_attendance_rule", "STORAGE_UNAVAILABLE")}
    assert exercised == {(tool, code) for tool, codes in DECLARED.items() for code in codes}

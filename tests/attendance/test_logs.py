"""No tool input reaches the logs: every attendance tool is called with distinctive values, and
neither stderr nor any log record (message, arguments or extra fields) carries one of them."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from kumitate.context import CallContext
from tests.attendance.conftest import call, opened

THREAD = "thread-zq7x-secret"
SLOT = "slot-zq7x-secret"
NAME = "秘密野 太郎"
EMAIL = "zq7x.secret@example.com"
TEXT = "秘密野さんは必須、あと1人"
VALUES = (THREAD, SLOT, NAME, "秘密野", EMAIL, "zq7x", TEXT)


def ctx(tool: str) -> CallContext:
    return CallContext(service="attendance", tool=tool, transport="test", run_id="run-1", trace_id="trace-1")


def test_no_input_value_in_stderr_or_log_records(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    with opened(tmp_path) as handlers:
        invitees = [
            {"user_id": "1", "display_name": NAME},
            {"email": EMAIL, "display_name": "外部 花子"},
            {"user_id": "3", "display_name": "佐藤 次郎"},
        ]
        parsed = call(handlers, "parse_attendance_intent", {"text": TEXT, "invitees": invitees}, ctx("parse"))
        rule = parsed["attendance_rule"]
        assert rule["type"] == "REQUIRED_PLUS_QUORUM"
        call(handlers, "save_attendance_rule", {"thread_id": THREAD, "rule": rule}, ctx("save"))
        call(handlers, "get_attendance_rule", {"thread_id": THREAD, "include_history": True}, ctx("get"))
        call(
            handlers,
            "evaluate_attendance",
            {
                "rule": rule,
                "slots": [{"slot_id": SLOT, "start": "2030-01-01T10:00:00+09:00"}],
                "selections": [{"invitee_key": "u:1", "slot_id": SLOT, "status": "selected"}],
            },
            ctx("evaluate"),
        )
        call(handlers, "invitee_key", {"kind": "email", "value": EMAIL}, ctx("key"))

    assert [r for r in caplog.records if r.name == "kumitate.attendance"], "the handlers log each call"
    seen: list[Any] = [capfd.readouterr().err]
    for record in caplog.records:
        seen += [record.getMessage(), record.args, record.__dict__]
    logged = repr(seen)
    for value in VALUES:
        assert value not in logged


@pytest.mark.slow
def test_a_real_server_writes_no_input_value_to_stderr(tmp_path: Path, seeded_data_dir: Path) -> None:
    """The same calls over HTTP to `kumitate serve` (stdout and stderr captured in one log file)."""
    import httpx

    from tests.conftest import start_server, stop_server

    server = start_server(tmp_path / "var", tmp_path / "server.log", seeded=seeded_data_dir)
    try:
        base = f"{server.url}/v1/attendance"
        invitees = [
            {"user_id": "1", "display_name": NAME},
            {"email": EMAIL, "display_name": "外部 花子"},
            {"user_id": "3", "display_name": "佐藤 次郎"},
        ]
        parsed = httpx.post(f"{base}/parse_attendance_intent", json={"text": TEXT, "invitees": invitees}, timeout=30)
        rule = parsed.json()["attendance_rule"]
        calls = [
            ("save_attendance_rule", {"thread_id": THREAD, "rule": rule}),
            ("get_attendance_rule", {"thread_id": THREAD, "include_history": True}),
            ("get_attendance_rule", {"thread_id": THREAD + "-unknown"}),  # a NOT_FOUND is logged too
            (
                "evaluate_attendance",
                {
                    "rule": rule,
                    "slots": [{"slot_id": SLOT, "start": "2030-01-01T10:00:00+09:00"}],
                    "selections": [{"invitee_key": "u:1", "slot_id": SLOT, "status": "selected"}],
                },
            ),
            ("invitee_key", {"kind": "email", "value": EMAIL}),
        ]
        statuses = [httpx.post(f"{base}/{tool}", json=body, timeout=30).status_code for tool, body in calls]
        assert (parsed.status_code, statuses) == (200, [200, 200, 404, 200, 200])
    finally:
        stop_server(server, graceful=True)
    logged = server.log.read_text(encoding="utf-8", errors="replace")
    assert '"tool": "save_attendance_rule"' in logged  # the call lines are there
    for value in VALUES:
        assert value not in logged

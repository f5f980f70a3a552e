"""Attendance workflow invariants (kumitate.invariants): a saved rule reads back as saved."""

from __future__ import annotations

from typing import Any

from kumitate.invariants import Caller, Invariant, Step


def _reads_back_equal(step: Step, call: Caller, _memory: dict[str, Any]) -> str | None:
    saved = step.result or {}
    read = call("get_attendance_rule", {"thread_id": saved["thread_id"]})
    if not read.ok or read.result is None:
        return f"get_attendance_rule of the thread just saved failed with {read.error}"
    for key in ("version", "attendance_rule"):
        if read.result.get(key) != saved.get(key):
            return f"the rule read back differs in {key}: saved {saved.get(key)!r:.300}, read {read.result.get(key)!r:.300}"
    return None


INVARIANTS = (
    Invariant(
        "saved_rule_reads_back_equal",
        "get_attendance_rule returns the version and rule save_attendance_rule just saved on the thread.",
        frozenset({"save_attendance_rule"}),
        _reads_back_equal,
    ),
)

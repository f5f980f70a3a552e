"""attendance service: organiser intent → AttendanceRule, evaluation and storage.

Thin shell over the pure core (parse.py, evaluate.py, keys.py, store.py). It
converts the generated input models to JSON data, calls the core and logs only
counts, types, codes and the call's own ids (run_id, trace_id) — never a value the
caller sent: no thread id, slot id, name, email or utterance.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from handlers.attendance import clarify
from handlers.attendance.evaluate import evaluate_attendance
from handlers.attendance.keys import invitee_key
from handlers.attendance.llm import llm_fallback
from handlers.attendance.names import Directory
from handlers.attendance.parse import parse_attendance_intent
from handlers.attendance.store import RuleStore
from kumitate.context import CallContext
from kumitate.settings import Settings

if TYPE_CHECKING:
    from generated.attendance.models import (
        GetAttendanceRuleInput,
        InviteeKeyInput,
        ParseAttendanceIntentInput,
        SaveAttendanceRuleInput,
    )

log = logging.getLogger("kumitate.attendance")


def _data(model: Any) -> dict[str, Any]:
    if isinstance(model, dict):
        return model
    return model.model_dump(mode="json", exclude_none=True)


class AttendanceHandlers:
    """One method per tool of specs/attendance/."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = RuleStore(
            settings.service_dir("attendance") / "attendance.sqlite3",
            settings.sample_dir / "attendance" / "sample_rules.json",
        )

    def parse_attendance_intent(self, input: ParseAttendanceIntentInput, ctx: CallContext) -> dict[str, Any]:
        """Rule-based parse; the optional LLM hook only runs when configured and unsure."""
        request = _data(input)
        result = parse_attendance_intent(request, clarify.chooser(ctx))
        if result["confidence"] < 0.7 and os.environ.get("ATTENDANCE_LLM_BASE_URL"):
            keys = set(Directory(request["invitees"]).keys)
            result = llm_fallback(request, result, keys, os.environ, ctx.deadline)
        log.info(
            "parse_attendance_intent type=%s pattern=%s invitees=%d confidence=%.2f questions=%d missing=%d",
            result["attendance_rule"]["type"],
            result.get("matched_pattern"),
            len(request["invitees"]),
            result["confidence"],
            len(result["needs_clarification"]),
            len(result["missing"]),
            extra={"run_id": ctx.run_id, "trace_id": ctx.trace_id},
        )
        return result

    def evaluate_attendance(self, input: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        request = _data(input)
        result = evaluate_attendance(request)
        log.info(
            "evaluate_attendance type=%s problems=%d slots=%d selections=%d finalize=%s reason=%s",
            result["rule_type"],
            len(result["rule_problems"]),
            len(request["slots"]),
            len(request["selections"]),
            result["decision"]["finalize"],
            result["decision"]["reason"],
            extra={"run_id": ctx.run_id, "trace_id": ctx.trace_id},
        )
        return result

    def invitee_key(self, input: InviteeKeyInput, ctx: CallContext) -> dict[str, Any]:
        request = _data(input)
        return {"invitee_key": invitee_key(request["kind"], request["value"]), "kind": request["kind"]}

    def save_attendance_rule(self, input: SaveAttendanceRuleInput, ctx: CallContext) -> dict[str, Any]:
        request = _data(input)
        result = self.store.save(request["thread_id"], request["rule"])
        log.info(
            "save_attendance_rule type=%s version=%d",
            result["attendance_rule"]["type"],
            result["version"],
            extra={"run_id": ctx.run_id, "trace_id": ctx.trace_id},
        )
        return result

    def get_attendance_rule(self, input: GetAttendanceRuleInput, ctx: CallContext) -> dict[str, Any]:
        request = _data(input)
        return self.store.get(request["thread_id"], bool(request.get("include_history", False)))


def create(settings: Settings) -> AttendanceHandlers:
    """Entry point the runtime calls once at start-up (creates and seeds the database)."""
    return AttendanceHandlers(settings)

"""attendance service: organiser intent → AttendanceRule, evaluation and storage.

Thin adapter over the core (core/: parse, evaluate, keys, …) and the rule store (store.py). It takes
the generated input models, returns the generated output models (the pipeline dumps
them once), raises generated error classes (only codes each tool declares) and logs only
counts, types, codes and the call's own ids (run_id, trace_id) — never a value the
caller sent: no thread id, slot id, name, email or utterance.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel

from generated.attendance.models import (
    EvaluateAttendanceOutput,
    GetAttendanceRuleInput,
    GetAttendanceRuleOutput,
    InviteeKeyInput,
    InviteeKeyOutput,
    ParseAttendanceIntentInput,
    ParseAttendanceIntentOutput,
    SaveAttendanceRuleInput,
    SaveAttendanceRuleOutput,
)
from handlers.attendance.core import clarify
from handlers.attendance.core.evaluate import evaluate_attendance
from handlers.attendance.core.keys import invitee_key
from handlers.attendance.core.llm import THRESHOLD, LlmConfig, OpenAIChat, llm_fallback
from handlers.attendance.core.names import Directory
from handlers.attendance.core.parse import parse_attendance_intent
from handlers.attendance.settings import AttendanceSettings
from handlers.attendance.store import RuleStore, import_legacy
from kumitate.context import CallContext
from kumitate.service import ServiceSetup

log = logging.getLogger("kumitate.attendance")


def _data(model: BaseModel) -> dict[str, Any]:
    """A validated input model as the JSON data the pure core works on (parse, save's rule)."""
    return model.model_dump(mode="json", exclude_none=True)


class AttendanceHandlers:
    """One method per tool of specs/attendance/."""

    def __init__(self, store: RuleStore, llm: LlmConfig | None) -> None:
        self.store = store
        self.llm = OpenAIChat(llm) if llm is not None else None
        """The optional fallback model (ATTENDANCE_LLM_BASE_URL), one client and breaker for every call."""

    def parse_attendance_intent(
        self, input: ParseAttendanceIntentInput, ctx: CallContext
    ) -> ParseAttendanceIntentOutput:
        """Rule-based parse; the optional LLM hook only runs when configured and unsure."""
        request = _data(input)
        result = parse_attendance_intent(request, clarify.chooser(ctx))
        if self.llm is not None and result["confidence"] < THRESHOLD:
            keys = set(Directory(request["invitees"]).keys)
            result = llm_fallback(request, result, keys, self.llm, ctx.deadline)
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
        return ParseAttendanceIntentOutput.model_validate(result)

    def evaluate_attendance(self, input: dict[str, Any], ctx: CallContext) -> EvaluateAttendanceOutput:
        """The spec declares a data input (handler_input: data): the schema-checked JSON as it came."""
        request = input
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
        return EvaluateAttendanceOutput.model_validate(result)

    def invitee_key(self, input: InviteeKeyInput, ctx: CallContext) -> InviteeKeyOutput:
        return InviteeKeyOutput.model_validate(
            {"invitee_key": invitee_key(input.kind.value, input.value), "kind": input.kind.value}
        )

    def save_attendance_rule(self, input: SaveAttendanceRuleInput, ctx: CallContext) -> SaveAttendanceRuleOutput:
        result = self.store.save(input.thread_id, _data(input.rule))
        log.info(
            "save_attendance_rule type=%s version=%d",
            result["attendance_rule"]["type"],
            result["version"],
            extra={"run_id": ctx.run_id, "trace_id": ctx.trace_id},
        )
        return SaveAttendanceRuleOutput.model_validate(result)

    def get_attendance_rule(self, input: GetAttendanceRuleInput, ctx: CallContext) -> GetAttendanceRuleOutput:
        found = self.store.load(input.thread_id, input.include_history)
        return GetAttendanceRuleOutput.model_validate(found)

    def close(self) -> None:
        """Closes the LLM client; the database is the runtime's (or the setup's owner's) to close."""
        if self.llm is not None:
            self.llm.close()


def create(setup: ServiceSetup) -> AttendanceHandlers:
    """Entry point the runtime calls once at start-up (imports a pre-storage-layer file, seeds an empty table)."""
    settings = setup.read(AttendanceSettings)
    store = RuleStore(setup.database)
    import_legacy(store, setup.data_dir)
    store.seed_if_empty(setup.sample_dir / "sample_rules.json")
    return AttendanceHandlers(store, settings.llm_config())

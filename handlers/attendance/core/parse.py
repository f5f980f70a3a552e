"""parse_attendance_intent: utterance + invitees → the seed's full output structure.

Pure and deterministic. The grammar decides the rule; this module builds the
AttendanceRule around it (scope, slot policy, finalize policy), the invitee
sets, the side channels and the confidence. Invariant: needs_clarification is
non-empty exactly when confidence < 0.7, and such a rule never auto-finalises.
"""

from __future__ import annotations

from typing import Any

from handlers.attendance.core.clarify import Chooser, settle
from handlers.attendance.core.contradiction import settle_contradiction
from handlers.attendance.core.grammar import State, read
from handlers.attendance.core.hints import apply_policy_words, share_intent, slot_hint
from handlers.attendance.core.names import Directory
from handlers.attendance.core.policy import default_policy
from handlers.attendance.core.text import Folded
from handlers.attendance.core.timeutil import zone

CLARIFY_CEILING = 0.65


def parse_attendance_intent(request: dict[str, Any], choose: Chooser | None = None) -> dict[str, Any]:
    """Parse one utterance; see docs/attendance.md for the grammar. `choose`, when given, is asked
    which invitee an ambiguous name means (clarify.py) instead of leaving a question."""
    defaults = request.get("defaults") or {}
    if "timezone" in defaults:
        zone(defaults["timezone"], "defaults.timezone")
    directory = Directory(request["invitees"])
    text = Folded.of(request["text"])
    mentions = directory.find_mentions(text)
    if choose is not None:
        settle(mentions, directory, choose)
    state = State(text, directory, mentions)
    reading = read(state, len(directory.keys))
    reading = settle_contradiction(state, reading, len(directory.keys) - len(reading.excluded))

    questions = list(state.questions)
    confidence = reading.confidence
    if questions:
        confidence = min(confidence, CLARIFY_CEILING)

    excluded = set(reading.excluded)
    target = [k for k in directory.keys if k not in excluded]
    policy = default_policy(reading.type, defaults.get("auto_finalize_delay_seconds"))
    policy.update(reading.policy)  # e.g. a concession prefers the slot most can attend (BEST_SCORE)
    if not policy["auto_finalize"]:
        policy.pop("auto_finalize_delay_seconds", None)
    policy = apply_policy_words(text.folded, policy)
    if questions:
        policy["auto_finalize"] = False
        policy.pop("auto_finalize_delay_seconds", None)

    rule = {
        "version": "1.0",
        "type": reading.type,
        "slot_policy": {
            "conflict_policy": defaults.get("conflict_policy", "first_selected"),
            "timezone": defaults.get("timezone", "Asia/Tokyo"),
            "allow_multiple_slots_per_invitee": defaults.get("allow_multiple_slots_per_invitee", False),
        },
        "invitee_scope": {
            "include_invitee_keys": list(directory.keys),
            "exclude_invitee_keys": [k for k in directory.keys if k in excluded],
        },
        "rule": reading.params,
        "finalize_policy": policy,
    }
    return {
        "attendance_rule": rule,
        "finalize_policy": dict(policy),
        "invitee_sets": {
            "target": target,
            "required": list(reading.required),
            "optional": [k for k in reading.optional if k not in reading.required],
        },
        "slot_generation_hint": slot_hint(text.folded, defaults),
        "share_intent": share_intent(text.norm, defaults),
        "confidence": round(confidence, 2),
        "needs_clarification": questions,
        "missing": list(state.unknown),
        "matched_pattern": reading.pattern,
    }

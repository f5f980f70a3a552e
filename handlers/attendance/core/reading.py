"""What the grammar (and the modules that refine it) made of an utterance."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from generated.attendance.models import RuleType
from handlers.attendance.core.policy import PolicyFields


class RuleGroup(TypedDict):
    """One group of a GROUP_ANY rule, as the wire carries it."""

    name: str
    min: int
    any_of_invitee_keys: list[str]


@dataclass(slots=True)
class Reading:
    """A rule type and its parameters, with how sure the parser is and which matcher produced it.

    `params` is the AttendanceRule's `rule` object as the wire carries it ({"k", "n"}, {"groups"}, …);
    `policy` overrides the type's default finalize policy (a concession prefers BEST_SCORE)."""

    type: RuleType
    params: dict[str, Any]
    confidence: float
    pattern: str
    questions: list[str] = field(default_factory=list)
    required: list[str] = field(default_factory=list)
    optional: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    policy: PolicyFields = field(default_factory=lambda: PolicyFields())


def unsure(pattern: str, confidence: float = 0.5) -> Reading:
    """ANY with no parameters: the reading when the grammar asks instead of deciding."""
    return Reading(RuleType.ANY, {}, confidence, pattern)

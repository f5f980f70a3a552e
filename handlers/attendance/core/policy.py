"""Default finalize policies per rule type (the seed's Finalize Policy Mapping table).

ALL uses BEST_SCORE (the seed's example; "MVP: MANUAL" is available by saying
手動で確定). A rule that still needs clarification never auto-finalises: the
organiser has to confirm it first.
"""

from __future__ import annotations

from typing import TypedDict

from generated.attendance.models import FinalizeMode, RuleType, TieBreaker


class PolicyFields(TypedDict, total=False):
    """A finalize policy as the wire carries it (the rule's finalize_policy); the core edits it in place."""

    mode: FinalizeMode
    tie_breaker: TieBreaker
    auto_finalize: bool
    auto_finalize_delay_seconds: int


DEFAULTS: dict[RuleType, PolicyFields] = {
    RuleType.ANY: {
        "mode": FinalizeMode.EARLIEST_VALID,
        "tie_breaker": TieBreaker.earliest_slot,
        "auto_finalize": True,
        "auto_finalize_delay_seconds": 3600,
    },
    RuleType.ALL: {"mode": FinalizeMode.BEST_SCORE, "tie_breaker": TieBreaker.earliest_slot, "auto_finalize": False},
    RuleType.K_OF_N: {
        "mode": FinalizeMode.EARLIEST_VALID,
        "tie_breaker": TieBreaker.highest_score,
        "auto_finalize": True,
        "auto_finalize_delay_seconds": 7200,
    },
    RuleType.REQUIRED_PLUS_QUORUM: {
        "mode": FinalizeMode.BEST_SCORE,
        "tie_breaker": TieBreaker.highest_score,
        "auto_finalize": False,
    },
    RuleType.GROUP_ANY: {
        "mode": FinalizeMode.EARLIEST_VALID,
        "tie_breaker": TieBreaker.highest_score,
        "auto_finalize": True,
        "auto_finalize_delay_seconds": 3600,
    },
}


def default_policy(rule_type: RuleType, delay_override: int | None = None) -> PolicyFields:
    """A fresh copy of the type's default policy, with the thread's delay if given."""
    policy = DEFAULTS[rule_type].copy()
    if policy["auto_finalize"] and delay_override is not None:
        policy["auto_finalize_delay_seconds"] = delay_override
    return policy

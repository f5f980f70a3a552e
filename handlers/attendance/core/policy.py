"""Default finalize policies per rule type (the seed's Finalize Policy Mapping table).

ALL uses BEST_SCORE (the seed's example; "MVP: MANUAL" is available by saying
手動で確定). A rule that still needs clarification never auto-finalises: the
organiser has to confirm it first.
"""

from __future__ import annotations

from typing import Any

from generated.attendance.models import RuleType

DEFAULTS: dict[RuleType, dict[str, Any]] = {
    RuleType.ANY: {
        "mode": "EARLIEST_VALID",
        "tie_breaker": "earliest_slot",
        "auto_finalize": True,
        "auto_finalize_delay_seconds": 3600,
    },
    RuleType.ALL: {"mode": "BEST_SCORE", "tie_breaker": "earliest_slot", "auto_finalize": False},
    RuleType.K_OF_N: {
        "mode": "EARLIEST_VALID",
        "tie_breaker": "highest_score",
        "auto_finalize": True,
        "auto_finalize_delay_seconds": 7200,
    },
    RuleType.REQUIRED_PLUS_QUORUM: {"mode": "BEST_SCORE", "tie_breaker": "highest_score", "auto_finalize": False},
    RuleType.GROUP_ANY: {
        "mode": "EARLIEST_VALID",
        "tie_breaker": "highest_score",
        "auto_finalize": True,
        "auto_finalize_delay_seconds": 3600,
    },
}


def default_policy(rule_type: RuleType, delay_override: int | None = None) -> dict[str, Any]:
    """A fresh copy of the type's default policy, with the thread's delay if given."""
    policy = dict(DEFAULTS[rule_type])
    if policy["auto_finalize"] and delay_override is not None:
        policy["auto_finalize_delay_seconds"] = delay_override
    return policy

"""Rules the seed's design can evaluate are evaluated, not refused: an impossible rule or group is reported
(satisfiable, rule_problems, reason unsatisfiable) and the other groups still decide; "expired" answers count.
Only a rule whose meaning is unclear (a field of another type, a missing field, an unknown zone) is refused."""

from __future__ import annotations

from typing import Any

import pytest

from handlers.attendance.core.evaluate import evaluate_attendance
from kumitate.errors import ToolError
from tests.attendance.test_evaluate import KEYS, SLOTS, rule, run, sel

EVERYONE_EARLY = [sel(k, "early") for k in KEYS]


def test_k_larger_than_n_is_evaluated_and_reported_unsatisfiable() -> None:
    out = run(rule("K_OF_N", {"k": 7, "n": 6}), EVERYONE_EARLY)
    assert out["satisfiable"] is False
    assert out["rule_problems"] == ["rule.k (7) is larger than rule.n (6)"]
    early = out["slots"][1]
    assert (early["satisfied"], early["score"], early["shortfall"]) == (False, 6, 1)
    decision = out["decision"]
    assert (decision["reason"], decision["finalize"], decision["candidates"]) == ("unsatisfiable", False, [])
    assert "rule_problems" in decision["message"]


def test_n_other_than_the_scope_is_noted_and_k_still_decides() -> None:
    out = run(rule("K_OF_N", {"k": 2, "n": 9}), [sel("u:1", "early"), sel("u:2", "early")])
    assert out["satisfiable"] is True
    assert out["rule_problems"] == ["rule.n (9) does not match the 6 invitees in the effective scope"]
    assert (out["decision"]["reason"], out["decision"]["slot_id"]) == ("earliest_valid", "early")


def test_an_impossible_group_leaves_the_other_groups_deciding() -> None:
    groups = [
        {"name": "A", "min": 4, "any_of_invitee_keys": ["u:1", "u:2", "u:3"]},
        {"name": "B", "min": 2, "any_of_invitee_keys": ["u:4", "u:5", "u:6"]},
    ]
    out = run(rule("GROUP_ANY", {"groups": groups}), [sel("u:1", "late"), sel("u:4", "late"), sel("u:5", "late")])
    assert out["satisfiable"] is True
    assert out["rule_problems"] == ["rule.groups[0] (A) needs min 4 but has only 3 invitees in scope"]
    late = out["slots"][0]
    assert late["groups"] == [
        {"name": "A", "min": 4, "count": 1, "satisfied": False, "satisfiable": False},
        {"name": "B", "min": 2, "count": 2, "satisfied": True, "satisfiable": True},
    ]
    assert (late["satisfied"], late["shortfall"]) == (True, 0)
    assert out["decision"]["slot_id"] == "late"
    # shortfall counts only groups that can succeed: A (3 short) is not the nearest way
    out = run(rule("GROUP_ANY", {"groups": groups}), [sel("u:1", "late")])
    assert out["slots"][0]["shortfall"] == 2


def test_every_group_impossible_is_unsatisfiable() -> None:
    groups = [{"name": "A", "min": 4, "any_of_invitee_keys": ["u:1", "u:2", "u:3"]}]
    out = run(rule("GROUP_ANY", {"groups": groups}), [sel(k, "early") for k in KEYS])
    assert (out["satisfiable"], out["decision"]["reason"]) == (False, "unsatisfiable")
    assert not any(s["satisfied"] for s in out["slots"])


def test_a_group_member_outside_the_scope_is_not_counted() -> None:
    groups = [{"name": "A", "min": 2, "any_of_invitee_keys": ["u:1", "u:9"]}]
    out = run(rule("GROUP_ANY", {"groups": groups}), [sel("u:1", "early"), sel("u:9", "early")])
    assert out["rule_problems"] == [
        "rule.groups[0] (A) has u:9, which is not in the effective scope",
        "rule.groups[0] (A) needs min 2 but has only 1 invitees in scope",
    ]
    assert out["slots"][1]["groups"][0]["count"] == 1  # u:9's answer is ignored like any out-of-scope answer
    assert out["ignored_selections"] == 1
    assert (out["satisfiable"], out["decision"]["reason"]) == (False, "unsatisfiable")
    groups[0]["min"] = 1
    out = run(rule("GROUP_ANY", {"groups": groups}), [sel("u:1", "early")])
    assert (out["satisfiable"], out["decision"]["slot_id"]) == (True, "early")


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        (
            {"required_invitee_keys": ["u:9"], "min_additional": 0},
            "rule.required_invitee_keys has u:9, which is not in the effective scope",
        ),
        (
            {"required_invitee_keys": ["u:1"], "min_additional": 6},
            "rule.min_additional (6) is larger than the 5 non-required invitees in scope",
        ),
    ],
)
def test_impossible_required_plus_quorum_is_unsatisfiable(params: dict[str, Any], problem: str) -> None:
    out = run(rule("REQUIRED_PLUS_QUORUM", params), EVERYONE_EARLY)
    assert (out["satisfiable"], out["rule_problems"], out["decision"]["reason"]) == (False, [problem], "unsatisfiable")


def test_expired_counts_as_not_attending_and_is_not_awaited() -> None:
    r = rule("K_OF_N", {"k": 2, "n": 3}, mode="BEST_SCORE", include=KEYS[:3])
    selections = [sel("u:1", "early"), sel("u:2", "early"), sel("u:3", "early", "expired")]
    out = run(r, selections)
    assert out["slots"][1]["score"] == 2
    decision = out["decision"]
    assert (decision["reason"], decision["slot_id"], decision["pending_invitee_keys"]) == ("best_score", "early", [])
    out = run(r, [*selections[:2], sel("u:3", "early", "pending")])
    assert (out["decision"]["reason"], out["decision"]["pending_invitee_keys"]) == ("awaiting_responses", ["u:3"])
    # an expired record replaces an earlier selection, like a decline
    out = run(r, [sel("u:3", "early"), sel("u:3", "early", "expired")])
    assert out["slots"][1]["score"] == 0


@pytest.mark.parametrize(
    ("r", "message"),
    [
        (rule("K_OF_N", {"k": 2}), "rule.n is required for type K_OF_N"),
        (rule("ANY", {"k": 2}), "rule.k is not used by type ANY; remove it"),
        (
            rule("ANY", slot_policy={"timezone": "Mars/Base"}),
            "slot_policy.timezone 'Mars/Base' is not an IANA time zone",
        ),
    ],
)
def test_a_rule_with_unclear_meaning_is_still_refused(r: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolError) as err:
        evaluate_attendance({"rule": r, "slots": SLOTS, "selections": [], "now": "2025-06-01T00:00:00Z"})
    assert (err.value.code, err.value.message) == ("VALIDATION_ERROR", f"invalid attendance rule: {message}")

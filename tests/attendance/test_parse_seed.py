"""Every example of the seed document, with the seed's field values."""

from __future__ import annotations

from typing import Any

import pytest

from handlers.attendance.core.parse import parse_attendance_intent
from tests.attendance.conftest import TEAM, users

FIVE = users(5)


def parse(text: str, invitees: list[dict[str, Any]] = FIVE, **defaults: Any) -> dict[str, Any]:
    return parse_attendance_intent({"text": text, "invitees": invitees, "defaults": defaults})


def test_example_1_simple_majority_full_structure() -> None:
    out = parse("5人招待して、3人以上OKなら開催")
    assert out == {
        "attendance_rule": {
            "version": "1.0",
            "type": "K_OF_N",
            "slot_policy": {
                "conflict_policy": "first_selected",
                "timezone": "Asia/Tokyo",
                "allow_multiple_slots_per_invitee": False,
            },
            "invitee_scope": {"include_invitee_keys": ["u:1", "u:2", "u:3", "u:4", "u:5"], "exclude_invitee_keys": []},
            "rule": {"k": 3, "n": 5},
            "finalize_policy": {
                "mode": "EARLIEST_VALID",
                "tie_breaker": "highest_score",
                "auto_finalize": True,
                "auto_finalize_delay_seconds": 7200,
            },
        },
        "finalize_policy": {
            "mode": "EARLIEST_VALID",
            "tie_breaker": "highest_score",
            "auto_finalize": True,
            "auto_finalize_delay_seconds": 7200,
        },
        "invitee_sets": {"target": ["u:1", "u:2", "u:3", "u:4", "u:5"], "required": [], "optional": []},
        "slot_generation_hint": {
            "count": 3,
            "preferred_days": ["weekday"],
            "preferred_hours": [10, 11, 14, 15, 16],
            "duration_minutes": 60,
        },
        "share_intent": {"room_id": None, "list_ids": [], "individual_emails": [], "individual_invitee_keys": []},
        "confidence": 0.95,
        "needs_clarification": [],
        "missing": [],
        "matched_pattern": "k_of_n.explicit_n",
    }


def test_example_2_required_members() -> None:
    invitees = [
        {"invitee_key": "u:yamada_id", "display_name": "山田"},
        {"invitee_key": "u:sato_id", "display_name": "佐藤"},
        *users(3),
    ]
    out = parse("山田さんと佐藤さんは必須、あと2人以上", invitees)
    assert out["attendance_rule"]["type"] == "REQUIRED_PLUS_QUORUM"
    assert out["attendance_rule"]["rule"] == {
        "required_invitee_keys": ["u:yamada_id", "u:sato_id"],
        "min_additional": 2,
    }
    assert out["confidence"] == 0.9
    assert out["invitee_sets"]["required"] == ["u:yamada_id", "u:sato_id"]
    assert out["attendance_rule"]["finalize_policy"] == {
        "mode": "BEST_SCORE",
        "tie_breaker": "highest_score",
        "auto_finalize": False,
    }


def test_example_3_groups() -> None:
    invitees = [{"invitee_key": f"u:sales{i}", "display_name": f"S{i}", "groups": ["営業部"]} for i in (1, 2, 3)]
    invitees += [{"invitee_key": f"u:dev{i}", "display_name": f"D{i}", "groups": ["開発部"]} for i in (1, 2, 3, 4)]
    out = parse("営業部から2人 または 開発部から3人", invitees)
    assert out["attendance_rule"]["rule"] == {
        "groups": [
            {"name": "営業部", "min": 2, "any_of_invitee_keys": ["u:sales1", "u:sales2", "u:sales3"]},
            {"name": "開発部", "min": 3, "any_of_invitee_keys": ["u:dev1", "u:dev2", "u:dev3", "u:dev4"]},
        ]
    }
    assert out["confidence"] == 0.85
    assert out["attendance_rule"]["finalize_policy"] == {
        "mode": "EARLIEST_VALID",
        "tie_breaker": "highest_score",
        "auto_finalize": True,
        "auto_finalize_delay_seconds": 3600,
    }


def test_ambiguity_example() -> None:
    out = parse("みんなで集まりたい")
    assert out["attendance_rule"]["type"] == "ANY"
    assert out["needs_clarification"] == [
        "「みんな」の具体的な対象者を教えてください",
        "全員必須ですか？それとも一部でもOKですか？",
    ]
    assert out["confidence"] == 0.6


@pytest.mark.parametrize(
    ("text", "rule_type", "params", "policy"),
    [
        ("全員参加必須", "ALL", {}, {"mode": "BEST_SCORE", "tie_breaker": "earliest_slot", "auto_finalize": False}),
        (
            "全員が同じ日時に集まれる日を探して",
            "ALL",
            {},
            {"mode": "BEST_SCORE", "tie_breaker": "earliest_slot", "auto_finalize": False},
        ),
        (
            "全員が揃わないと成立しない",
            "ALL",
            {},
            {"mode": "BEST_SCORE", "tie_breaker": "earliest_slot", "auto_finalize": False},
        ),
        (
            "誰か1人でも参加できればOK",
            "ANY",
            {},
            {
                "mode": "EARLIEST_VALID",
                "tie_breaker": "earliest_slot",
                "auto_finalize": True,
                "auto_finalize_delay_seconds": 3600,
            },
        ),
        (
            "最低1人参加すれば開催",
            "ANY",
            {},
            {
                "mode": "EARLIEST_VALID",
                "tie_breaker": "earliest_slot",
                "auto_finalize": True,
                "auto_finalize_delay_seconds": 3600,
            },
        ),
        (
            "参加者がいれば実施",
            "ANY",
            {},
            {
                "mode": "EARLIEST_VALID",
                "tie_breaker": "earliest_slot",
                "auto_finalize": True,
                "auto_finalize_delay_seconds": 3600,
            },
        ),
        (
            "5人中3人以上が参加できればOK",
            "K_OF_N",
            {"k": 3, "n": 5},
            {
                "mode": "EARLIEST_VALID",
                "tie_breaker": "highest_score",
                "auto_finalize": True,
                "auto_finalize_delay_seconds": 7200,
            },
        ),
        (
            "最低3人集まれば開催",
            "K_OF_N",
            {"k": 3, "n": 5},
            {
                "mode": "EARLIEST_VALID",
                "tie_breaker": "highest_score",
                "auto_finalize": True,
                "auto_finalize_delay_seconds": 7200,
            },
        ),
    ],
)
def test_seed_type_examples_on_five(text: str, rule_type: str, params: dict[str, Any], policy: dict[str, Any]) -> None:
    rule = parse(text)["attendance_rule"]
    assert (rule["type"], rule["rule"], rule["finalize_policy"]) == (rule_type, params, policy)


def test_ten_invited_five_needed() -> None:
    out = parse("10人招待して、5人以上参加できる日を探して", users(10))
    assert out["attendance_rule"]["rule"] == {"k": 5, "n": 10}
    assert out["confidence"] == 0.95


@pytest.mark.parametrize(
    ("text", "params"),
    [
        (
            "山田さんと田中さんは必須、あと2人以上参加できればOK",
            {"required_invitee_keys": ["u:1", "u:2"], "min_additional": 2},
        ),
        ("佐藤さんは必須、プラス1人以上", {"required_invitee_keys": ["u:3"], "min_additional": 1}),
        ("リーダー必須、メンバーは3人以上集まれば", {"required_invitee_keys": ["u:1"], "min_additional": 3}),
    ],
)
def test_seed_required_examples(text: str, params: dict[str, Any]) -> None:
    rule = parse(text, TEAM)["attendance_rule"]
    assert (rule["type"], rule["rule"]) == ("REQUIRED_PLUS_QUORUM", params)


def test_seed_shift_groups() -> None:
    invitees = [{"user_id": str(i), "display_name": f"A{i}", "groups": ["シフトA"]} for i in range(1, 5)]
    invitees += [{"user_id": str(i), "display_name": f"B{i}", "groups": ["シフトB"]} for i in range(5, 10)]
    rule = parse("シフトAから3人、またはシフトBから4人", invitees)["attendance_rule"]
    assert rule["rule"]["groups"] == [
        {"name": "シフトA", "min": 3, "any_of_invitee_keys": ["u:1", "u:2", "u:3", "u:4"]},
        {"name": "シフトB", "min": 4, "any_of_invitee_keys": ["u:5", "u:6", "u:7", "u:8", "u:9"]},
    ]


def test_share_intent_hashes_emails_in_text_and_uses_defaults() -> None:
    out = parse("全員必須。yamada@example.com にも共有して", room_id="room-1", list_ids=["L1"])
    assert out["share_intent"] == {
        "room_id": "room-1",
        "list_ids": ["L1"],
        "individual_emails": ["yamada@example.com"],
        "individual_invitee_keys": ["e:" + __import__("hashlib").sha256(b"yamada@example.com").hexdigest()[:16]],
    }


def test_slot_generation_hint_from_text() -> None:
    out = parse("全員必須、平日の午後に1時間半、候補を5つ出して")
    assert out["slot_generation_hint"] == {
        "count": 5,
        "preferred_days": ["weekday"],
        "preferred_hours": [13, 14, 15, 16, 17],
        "duration_minutes": 90,
    }
    out = parse("3人以上、土日か水曜日の10時から12時で30分")
    assert out["slot_generation_hint"] == {
        "count": 3,
        "preferred_days": ["weekend", "wed"],
        "preferred_hours": [10, 11],
        "duration_minutes": 30,
    }


def test_policy_wording_and_defaults() -> None:
    assert parse("3人以上、手動で確定する")["attendance_rule"]["finalize_policy"] == {
        "mode": "MANUAL",
        "tie_breaker": "highest_score",
        "auto_finalize": False,
    }
    assert parse("全員必須、2時間後に自動確定して")["attendance_rule"]["finalize_policy"] == {
        "mode": "BEST_SCORE",
        "tie_breaker": "earliest_slot",
        "auto_finalize": True,
        "auto_finalize_delay_seconds": 7200,
    }
    assert parse("3人以上、一番早い日で")["attendance_rule"]["finalize_policy"]["tie_breaker"] == "earliest_slot"
    out = parse(
        "誰か1人", timezone="Europe/Berlin", allow_multiple_slots_per_invitee=True, auto_finalize_delay_seconds=600
    )
    assert out["attendance_rule"]["slot_policy"] == {
        "conflict_policy": "first_selected",
        "timezone": "Europe/Berlin",
        "allow_multiple_slots_per_invitee": True,
    }
    assert out["finalize_policy"]["auto_finalize_delay_seconds"] == 600


def test_optional_invitees() -> None:
    out = parse("山田さんは必須、田中さんは任意、あと1人", TEAM)
    assert out["invitee_sets"] == {
        "target": ["u:1", "u:2", "u:3", "u:4", "u:5", "u:6"],
        "required": ["u:1"],
        "optional": ["u:2"],
    }

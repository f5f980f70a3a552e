"""Rule validation messages, invitee keys, handler shell (storage itself: test_store.py)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

import handlers.attendance as attendance
from handlers.attendance.core.keys import invitee_key
from handlers.attendance.core.parse import parse_attendance_intent
from handlers.attendance.validate import check_rule, rule_problems
from kumitate.context import CallContext
from kumitate.errors import ToolError

CTX = CallContext(service="attendance", tool="t", transport="test", run_id="r", trace_id="t")
FIVE = ["u:1", "u:2", "u:3", "u:4", "u:5"]


def base(
    kind: str = "K_OF_N",
    params: dict[str, Any] | None = None,
    include: list[str] = FIVE,
    exclude: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "version": 1,
        "type": kind,
        "invitee_scope": {
            "include_invitee_keys": include,
            **({"exclude_invitee_keys": exclude} if exclude is not None else {}),
        },
        "rule": {"k": 3, "n": 5} if params is None else params,
        "finalize_policy": {"mode": "EARLIEST_VALID"},
    }


@pytest.mark.parametrize(
    ("rule", "problems"),
    [
        (
            base(params={"k": 6, "n": 5}),
            ["rule.k (6) is larger than rule.n (5)", "rule.n (5) does not match the 5 invitees in the effective scope"][
                :1
            ],
        ),
        (base(params={"k": 2, "n": 4}), ["rule.n (4) does not match the 5 invitees in the effective scope"]),
        (base(params={"k": 2}), ["rule.n is required for type K_OF_N"]),
        (base(params={"k": 2, "n": 4}, exclude=["u:5"]), []),
        (
            base("ALL", {}, include=[]),
            ["invitee_scope.include_invitee_keys is empty: a rule needs at least one invitee in scope"],
        ),
        (
            base("ALL", {}, include=["u:1"], exclude=["u:1"]),
            ["the effective scope (include_invitee_keys minus exclude_invitee_keys) is empty"],
        ),
        (
            base("ALL", {}, exclude=["u:9"]),
            ["invitee_scope.exclude_invitee_keys has u:9, which is not in include_invitee_keys"],
        ),
        (base("ALL", {}, include=["u:1", "u:1"]), ["invitee_scope.include_invitee_keys lists u:1 twice"]),
        (base("ANY", {"k": 1}), ["rule.k is not used by type ANY; remove it"]),
        (
            base("REQUIRED_PLUS_QUORUM", {"required_invitee_keys": ["u:9"], "min_additional": 1}),
            ["rule.required_invitee_keys has u:9, which is not in the effective scope"],
        ),
        (
            base("REQUIRED_PLUS_QUORUM", {"required_invitee_keys": ["u:1", "u:2"], "min_additional": 4}),
            ["rule.min_additional (4) is larger than the 3 non-required invitees in scope"],
        ),
        (
            base("REQUIRED_PLUS_QUORUM", {"required_invitee_keys": [], "min_additional": 1}),
            ["rule.required_invitee_keys must name at least one invitee for REQUIRED_PLUS_QUORUM"],
        ),
        (
            base("REQUIRED_PLUS_QUORUM", {"required_invitee_keys": ["u:1"]}),
            ["rule.min_additional is required for type REQUIRED_PLUS_QUORUM"],
        ),
        (base("GROUP_ANY", {"groups": []}), ["rule.groups must hold at least one group for GROUP_ANY"]),
        (
            base("GROUP_ANY", {"groups": [{"name": "A", "min": 1, "any_of_invitee_keys": []}]}),
            ["rule.groups[0] (A) has no invitees"],
        ),
        (
            base("GROUP_ANY", {"groups": [{"name": "A", "min": 3, "any_of_invitee_keys": ["u:1", "u:2"]}]}),
            ["rule.groups[0] (A) needs min 3 but has only 2 invitees in scope"],
        ),
        (
            base("GROUP_ANY", {"groups": [{"name": "A", "min": 1, "any_of_invitee_keys": ["u:1", "u:7"]}]}),
            ["rule.groups[0] (A) has u:7, which is not in the effective scope"],
        ),
        (
            base(
                "GROUP_ANY",
                {
                    "groups": [
                        {"name": "A", "min": 1, "any_of_invitee_keys": ["u:1"]},
                        {"name": "A", "min": 1, "any_of_invitee_keys": ["u:2"]},
                    ]
                },
            ),
            ["rule.groups[1] (A) repeats the group name 'A'"],
        ),
        (
            {**base("ALL", {}), "slot_policy": {"timezone": "Mars/Base"}},
            ["slot_policy.timezone 'Mars/Base' is not an IANA time zone"],
        ),
    ],
)
def test_rule_problems_are_exact(rule: dict[str, Any], problems: list[str]) -> None:
    assert rule_problems(rule) == problems


def test_schema_problems_and_all_problems_in_one_message() -> None:
    assert rule_problems({**base(), "type": "SOME"})[0].startswith("type: ")
    assert rule_problems({**base(), "finalize_policy": {"mode": "EARLIEST_VALID", "tie_breaker": "EARLIEST"}})[
        0
    ].startswith("finalize_policy/tie_breaker: ")
    with pytest.raises(ToolError) as err:
        check_rule(base("REQUIRED_PLUS_QUORUM", {"required_invitee_keys": ["u:9"], "min_additional": 6}))
    assert err.value.message == (
        "invalid attendance rule: rule.required_invitee_keys has u:9, which is not in the effective scope; "
        "rule.min_additional (6) is larger than the 5 non-required invitees in scope"
    )


def test_version_spellings_normalise() -> None:
    for version in ("1.0", "1", 1):
        assert check_rule({**base(), "version": version})["version"] == "1.0"
    assert rule_problems({**base(), "version": "2.0"}) != []


def test_invitee_keys() -> None:
    digest = hashlib.sha256(b"yamada@example.com").hexdigest()[:16]
    assert invitee_key("email", "  Yamada@Example.com ") == f"e:{digest}"
    assert invitee_key("user", "123") == "u:123"
    assert invitee_key("list_member", 456) == "lm:456"
    bad = (
        ("user", "1 2"),
        ("email", "not-an-email"),
        ("list_member", "a@b"),
        ("robot", "1"),
        ("user", "taro@example.com"),
    )
    for kind, value in bad:
        with pytest.raises(ToolError) as err:
            invitee_key(kind, value)
        assert err.value.code == "INVALID_INPUT"
        assert value not in err.value.message or kind == "robot"  # the value itself is never echoed


def test_parse_rule_saves_as_is(handlers: attendance.AttendanceHandlers) -> None:
    from tests.attendance.conftest import TEAM, call

    texts = [
        "全員必須",
        "誰か1人",
        "3人以上",
        "山田さんと田中さんは必須、あと2人",
        "営業部から2人 または 開発部から3人",
        "田中さんは除いて過半数",
    ]
    for i, text in enumerate(texts):
        parsed = call(handlers, "parse_attendance_intent", {"text": text, "invitees": TEAM}, CTX)
        assert parsed["needs_clarification"] == []
        saved = call(handlers, "save_attendance_rule", {"thread_id": f"p-{i}", "rule": parsed["attendance_rule"]}, CTX)
        assert saved["attendance_rule"] == parsed["attendance_rule"]


def test_an_email_never_becomes_a_plain_key() -> None:
    with pytest.raises(ToolError) as err:
        invitee_key("user", "taro@example.com")
    assert (err.value.code, err.value.message) == (
        "INVALID_INPUT",
        "user id must not contain @; pass an email with kind email so it is hashed",
    )
    # a ready-made key with an address is refused too, without echoing it
    with pytest.raises(ToolError) as err:
        parse_attendance_intent(
            {"text": "全員必須", "invitees": [{"invitee_key": "u:taro@example.com", "display_name": "太郎"}]}
        )
    assert err.value.code == "INVALID_INPUT"
    assert "taro" not in err.value.message
    # and the schema's InviteeKey pattern rejects it in stored rules
    problems = rule_problems(base("ANY", {}, include=["u:taro@example.com"]))
    assert problems and problems[0].startswith("invitee_scope/include_invitee_keys/0: ")


def test_parse_rejects_an_unknown_default_timezone() -> None:
    with pytest.raises(ToolError) as err:
        parse_attendance_intent(
            {
                "text": "全員必須",
                "invitees": [{"user_id": "1", "display_name": "太郎"}],
                "defaults": {"timezone": "Nowhere/X"},
            }
        )
    assert (err.value.code, err.value.message) == (
        "INVALID_INPUT",
        "defaults.timezone: 'Nowhere/X' is not an IANA time zone",
    )

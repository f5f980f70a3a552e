"""Utterances with two readings: a slash fraction, contradictory statements, alternatives of named groups.

Each either has one reading (no question) or takes the stricter/first reading and asks, naming both.
TEAM: 山田 u:1, 田中 u:2, 佐藤 u:3, 鈴木 u:4, 高橋 u:5, 伊藤 u:6.
"""

from __future__ import annotations

from typing import Any

import pytest

from handlers.attendance.core.parse import parse_attendance_intent
from tests.attendance.conftest import TEAM, users


def parse(text: str, invitees: list[dict[str, Any]] = TEAM) -> dict[str, Any]:
    return parse_attendance_intent({"text": text, "invitees": invitees})


def rule_of(out: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return out["attendance_rule"]["type"], out["attendance_rule"]["rule"]


# -- 「2/3」: a fraction of the invitees, or K of a stated N ---------------------------------------


def test_slash_fraction_offers_the_share_and_the_count() -> None:
    out = parse("2/3が参加できればOK")
    assert rule_of(out) == ("K_OF_N", {"k": 4, "n": 6})  # the stricter of 4 (two thirds of 6) and 2
    assert out["needs_clarification"] == [
        "「2/3」は招待者6人の3分の2（4人以上）ですか？ それとも2人以上ですか？（いまは4人以上としています）"
    ]
    assert out["confidence"] < 0.7 and out["attendance_rule"]["finalize_policy"]["auto_finalize"] is False


@pytest.mark.parametrize(
    ("text", "invitees", "k", "n"),
    [
        ("4/6で成立", TEAM, 4, 6),  # the stated n is the scope: both readings are 4
        ("8/10以上", TEAM, 5, 6),  # 8 of 6 cannot be: only 80 % of 6 (⌈4.8⌉ = 5) fits
        ("3/5以上", users(10), 6, 10),  # 3 of 10 or 6 of 10: asked
    ],
)
def test_slash_fraction_with_one_or_two_fitting_readings(
    text: str, invitees: list[dict[str, Any]], k: int, n: int
) -> None:
    out = parse(text, invitees)
    assert rule_of(out) == ("K_OF_N", {"k": k, "n": n})
    assert bool(out["needs_clarification"]) is (text == "3/5以上")


# -- everyone and fewer in one utterance ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "question"),
    [
        (
            "全員必須、でも誰か1人でもいればOK",
            "「全員必須」と「誰か1人でもいればOK」が食い違っています。全員（6人）がそろう必要がありますか？"
            " それとも誰か1人でも参加すれば成立ですか？（いまは全員としています）",
        ),
        (
            "全員必須。3人以上でOK",
            "「全員必須」と「3人以上でOK」が食い違っています。全員（6人）がそろう必要がありますか？"
            " それとも3人以上集まれば成立ですか？（いまは全員としています）",
        ),
        (
            "全員参加必須、1人欠けてもOK",
            "「全員参加必須」と「1人欠けてもOK」が食い違っています。全員（6人）がそろう必要がありますか？"
            " それとも5人以上集まれば成立ですか？（いまは全員としています）",
        ),
        (
            "最低3人。全員が揃う日で",
            "「全員が揃う日で」と「最低3人」が食い違っています。全員（6人）がそろう必要がありますか？"
            " それとも3人以上集まれば成立ですか？（いまは全員としています）",
        ),
    ],
)
def test_contradictions_lower_confidence_and_name_both_readings(text: str, question: str) -> None:
    out = parse(text)
    assert rule_of(out) == ("ALL", {})  # the stricter reading until the organiser answers
    assert out["needs_clarification"] == [question]
    assert out["confidence"] == 0.6 and out["matched_pattern"] == "contradiction.everyone_or_fewer"
    assert out["attendance_rule"]["finalize_policy"]["auto_finalize"] is False


@pytest.mark.parametrize(
    ("text", "rule_type"),
    [
        ("1人でも欠けたら中止、全員必須", "ALL"),  # 1人でも欠けたら restates everyone
        ("1人も欠けてはいけない会議です", "ALL"),
        ("全員のうち3人以上", "K_OF_N"),  # one statement
        ("全員参加必須", "ALL"),
        ("誰か1人でも参加できればOK", "ANY"),
    ],
)
def test_one_statement_is_no_contradiction(text: str, rule_type: str) -> None:
    out = parse(text)
    assert out["attendance_rule"]["type"] == rule_type
    assert out["needs_clarification"] == []


# -- alternatives of named groups ------------------------------------------------------------------


def pair(name: str, keys: list[str]) -> dict[str, Any]:
    return {"name": name, "min": len(keys), "any_of_invitee_keys": keys}


AND_PAIRS = [pair("山田さん&田中さん", ["u:1", "u:2"]), pair("佐藤さん&鈴木さん", ["u:3", "u:4"])]
TO_PAIRS = [pair("山田さんと田中さん", ["u:1", "u:2"]), pair("佐藤さんと鈴木さん", ["u:3", "u:4"])]
LETTERS = [{"user_id": str(i), "display_name": name} for i, name in enumerate("ABCDEF", start=1)]


@pytest.mark.parametrize(
    ("text", "invitees", "groups"),
    [
        ("山田さん&田中さん か 佐藤さん&鈴木さん のどれかが揃えばOK", TEAM, AND_PAIRS),
        (
            "山田&田中 か 佐藤&鈴木 のどれかが揃えばOK",
            TEAM,
            [pair("山田&田中", ["u:1", "u:2"]), pair("佐藤&鈴木", ["u:3", "u:4"])],
        ),
        ("山田さんと田中さん、または佐藤さんと鈴木さんが揃えばOK", TEAM, TO_PAIRS),
        ("山田さんと田中さん、または佐藤さんと鈴木さんのどちらか", TEAM, TO_PAIRS),
        ("山田さんと田中さん、または佐藤さんがいればOK", TEAM, [TO_PAIRS[0], pair("佐藤さん", ["u:3"])]),
        ("A&B か C&D のどれかが揃えばOK", LETTERS, [pair("A&B", ["u:1", "u:2"]), pair("C&D", ["u:3", "u:4"])]),
        (
            "A&B か C&D か E&F のどれかが揃えばOK",  # issue 35: the groups keep the wording the user typed
            LETTERS,
            [pair("A&B", ["u:1", "u:2"]), pair("C&D", ["u:3", "u:4"]), pair("E&F", ["u:5", "u:6"])],
        ),
    ],
)
def test_alternatives_of_named_groups_are_group_any(
    text: str, invitees: list[dict[str, Any]], groups: list[dict[str, Any]]
) -> None:
    out = parse(text, invitees)
    assert rule_of(out) == ("GROUP_ANY", {"groups": groups})
    assert (out["confidence"], out["needs_clarification"], out["missing"]) == (0.85, [], [])
    assert out["attendance_rule"]["finalize_policy"]["mode"] == "EARLIEST_VALID"


def test_group_names_are_as_written_and_matching_is_folded() -> None:
    """Full-width and spaced spellings name the same people: one group, named as first written."""
    out = parse("Ａ＆Ｂ か a & b か C&D のどれかが揃えばOK", LETTERS)
    assert rule_of(out) == ("GROUP_ANY", {"groups": [pair("A&B", ["u:1", "u:2"]), pair("C&D", ["u:3", "u:4"])]})


def test_a_long_group_name_is_cut_to_the_schema_length() -> None:
    many = users(60)
    text = "と".join(f"User{i}さん" for i in range(1, 30)) + "か" + "と".join(f"User{i}さん" for i in range(30, 59))
    out = parse(text + "が揃えば", many)
    names = [g["name"] for g in out["attendance_rule"]["rule"]["groups"]]
    assert [len(n) for n in names] == [100, 100] and all(n.endswith("…") for n in names)
    assert names[0].startswith("User1さんとUser2さんと")


@pytest.mark.parametrize("text", ["山田さんと田中さんか佐藤さんが揃えばOK", "山田さんと田中さんか佐藤さんのどちらか"])
def test_really_ambiguous_alternatives_ask_naming_the_groups(text: str) -> None:
    out = parse(text)
    assert rule_of(out) == ("GROUP_ANY", {"groups": [TO_PAIRS[0], pair("佐藤さん", ["u:3"])]})
    assert out["needs_clarification"] == [
        "「山田さんと田中さん」か「佐藤さん」のどれかがそろえば成立ですか？"
        " それとも「山田さんと田中さん」か「山田さんと佐藤さん」のどれかですか？（いまは前者としています）"
    ]
    assert out["confidence"] == 0.6 and out["attendance_rule"]["finalize_policy"]["auto_finalize"] is False


def test_alternatives_with_another_condition_ask() -> None:
    out = parse("山田さんと田中さんか佐藤さんと鈴木さんが揃えば、あと1人")
    assert rule_of(out) == ("ANY", {})
    assert out["needs_clarification"] == [
        "「山田さんと田中さん」か「佐藤さんと鈴木さん」と別の条件を1つのルールにはできません。成立条件を1つに絞って教えてください。"
    ]


def test_alternatives_with_an_unknown_name_are_not_guessed() -> None:
    out = parse("山田さんと木村さんか佐藤さんと鈴木さんが揃えばOK")
    assert rule_of(out) == ("ANY", {})
    assert out["missing"] == ["木村"]


def test_many_alternatives_stay_bounded() -> None:
    """The or-first reading is a product over the and-joined parts: it is never built past 100 groups."""
    out = parse("山田か田中と佐藤か鈴木と" * 40 + "高橋が揃えば")
    assert out["attendance_rule"]["type"] == "GROUP_ANY"
    assert len(out["attendance_rule"]["rule"]["groups"]) <= 100
    assert out["needs_clarification"] and out["confidence"] < 0.7
    many = users(150)
    text = "か".join(f"User{i}とUser{i + 1}" for i in range(1, 149, 2)) + "が揃えば"
    out = parse(text, many)
    assert (out["attendance_rule"]["type"], out["matched_pattern"]) == ("GROUP_ANY", "group.named_alternatives")
    assert len(out["attendance_rule"]["rule"]["groups"]) == 74
    text = "か".join(f"User{i}とUser{i + 1}" for i in range(1, 150, 1)) + "が揃えば"
    out = parse(text, many)
    assert (out["attendance_rule"]["type"], out["matched_pattern"]) == ("ANY", "named_groups.too_many")

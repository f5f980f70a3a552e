"""Paraphrases across the five types and the ambiguous cases: exact expected rule fields.

Every row runs against the six-person TEAM directory (u:1..u:6; 営業部/Team A = u:1-3,
開発部/Team B = u:4-6, リーダー = u:1). Columns: text, type, rule params, excluded keys,
and whether clarification is expected (confidence < 0.7).
"""

from __future__ import annotations

from typing import Any

import pytest

from handlers.attendance.core.parse import parse_attendance_intent
from tests.attendance.conftest import TEAM

A = ["u:1", "u:2", "u:3"]
B = ["u:4", "u:5", "u:6"]


def grp(name: str, k: int, keys: list[str]) -> dict[str, Any]:
    return {"name": name, "min": k, "any_of_invitee_keys": keys}


CASES: list[tuple[str, str, dict[str, Any], list[str], bool]] = [
    # ALL
    ("全員参加必須", "ALL", {}, [], False),
    ("全員必須で", "ALL", {}, [], False),
    ("全員が同じ日時に集まれる日を探して", "ALL", {}, [], False),
    ("全員が揃わないと成立しない", "ALL", {}, [], False),
    ("全員揃う日でお願いします", "ALL", {}, [], False),
    ("みんな必須です", "ALL", {}, [], False),
    ("誰も欠けずに集まりたい", "ALL", {}, [], False),
    ("1人も欠けてはいけない会議です", "ALL", {}, [], False),
    ("６人中６人", "ALL", {}, [], False),
    ("全員の都合が合う日にして", "ALL", {}, [], False),
    ("メンバー全員必須", "ALL", {}, [], False),
    ("欠席者なしでやりたい", "ALL", {}, [], False),
    # ANY
    ("誰か1人でも参加できればOK", "ANY", {}, [], False),
    ("最低1人参加すれば開催", "ANY", {}, [], False),
    ("参加者がいれば実施", "ANY", {}, [], False),
    ("誰か来られればいいです", "ANY", {}, [], False),
    ("ひとりでもいれば開催します", "ANY", {}, [], False),
    ("一人以上で開催", "ANY", {}, [], False),
    ("１人いればOK", "ANY", {}, [], False),
    ("人数は問わないので空いている日に", "ANY", {}, [], False),
    ("誰でもいいので1人", "ANY", {}, [], False),
    ("少なくとも一人", "ANY", {}, [], False),
    # K_OF_N
    ("6人中3人以上が参加できればOK", "K_OF_N", {"k": 3, "n": 6}, [], False),
    ("最低3人集まれば開催", "K_OF_N", {"k": 3, "n": 6}, [], False),
    ("6人招待して、5人以上参加できる日を探して", "K_OF_N", {"k": 5, "n": 6}, [], False),
    ("３人以上", "K_OF_N", {"k": 3, "n": 6}, [], False),
    ("三人以上集まれば", "K_OF_N", {"k": 3, "n": 6}, [], False),
    ("4名以上参加なら開催", "K_OF_N", {"k": 4, "n": 6}, [], False),
    ("6人のうち4人来られればOK", "K_OF_N", {"k": 4, "n": 6}, [], False),
    ("4/6で成立", "K_OF_N", {"k": 4, "n": 6}, [], False),
    ("全員-1で", "K_OF_N", {"k": 5, "n": 6}, [], False),
    ("全員マイナス1でOK", "K_OF_N", {"k": 5, "n": 6}, [], False),
    ("1人欠けても大丈夫", "K_OF_N", {"k": 5, "n": 6}, [], False),
    ("一人くらい休んでも開催", "K_OF_N", {"k": 5, "n": 6}, [], False),
    ("2人まで欠けてもOK", "K_OF_N", {"k": 4, "n": 6}, [], False),
    ("過半数が参加できる日", "K_OF_N", {"k": 4, "n": 6}, [], False),
    ("半数以上集まれば", "K_OF_N", {"k": 3, "n": 6}, [], False),
    ("半分来ればいい", "K_OF_N", {"k": 3, "n": 6}, [], False),
    ("3分の2以上の参加で", "K_OF_N", {"k": 4, "n": 6}, [], False),
    ("5割以上", "K_OF_N", {"k": 3, "n": 6}, [], False),
    ("少なくとも2人は欲しい", "K_OF_N", {"k": 2, "n": 6}, [], False),
    ("田中さんは除いて3人以上", "K_OF_N", {"k": 3, "n": 5}, ["u:2"], False),
    ("伊藤さん抜きで過半数", "K_OF_N", {"k": 3, "n": 5}, ["u:6"], False),
    ("二人いれば開催", "K_OF_N", {"k": 2, "n": 6}, [], False),
    # REQUIRED_PLUS_QUORUM
    (
        "山田さんと田中さんは必須、あと2人",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:1", "u:2"], "min_additional": 2},
        [],
        False,
    ),
    (
        "佐藤さんは必須、プラス1人以上",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:3"], "min_additional": 1},
        [],
        False,
    ),
    (
        "リーダー必須、メンバーは3人以上集まれば",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:1"], "min_additional": 3},
        [],
        False,
    ),
    (
        "山田様と鈴木くんが必須で、ほかに1人",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:1", "u:4"], "min_additional": 1},
        [],
        False,
    ),
    (
        "ハナちゃんは絶対、他2人",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:2"], "min_additional": 2},
        [],
        False,
    ),
    (
        "ヤマダさんは必ず参加、それ以外から２人",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:1"], "min_additional": 2},
        [],
        False,
    ),
    ("山田さん含めて3人", "REQUIRED_PLUS_QUORUM", {"required_invitee_keys": ["u:1"], "min_additional": 2}, [], False),
    (
        "山田さんと田中さんを含めて4人以上",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:1", "u:2"], "min_additional": 2},
        [],
        False,
    ),
    (
        "高橋さんがいないと始まらない、あと三人",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:5"], "min_additional": 3},
        [],
        False,
    ),
    (
        "必須なのは伊藤さんと佐藤さん、残りから1人",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:6", "u:3"], "min_additional": 1},
        [],
        False,
    ),
    ("山田は必須", "REQUIRED_PLUS_QUORUM", {"required_invitee_keys": ["u:1"], "min_additional": 0}, [], False),
    (
        "ケンさんの参加は必須、残りの半数",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:6"], "min_additional": 3},
        [],
        False,
    ),
    (
        "田中さん、佐藤さんは必須です。追加で1名",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:2", "u:3"], "min_additional": 1},
        [],
        False,
    ),
    # GROUP_ANY
    (
        "Aチームから2人 または Bチームから3人",
        "GROUP_ANY",
        {"groups": [grp("Team A", 2, A), grp("Team B", 3, B)]},
        [],
        False,
    ),
    (
        "営業部から2人以上、または開発部から1人以上",
        "GROUP_ANY",
        {"groups": [grp("営業部", 2, A), grp("開発部", 1, B)]},
        [],
        False,
    ),
    ("チームAから1人かチームBから2人", "GROUP_ANY", {"groups": [grp("Team A", 1, A), grp("Team B", 2, B)]}, [], False),
    ("営業部か開発部から2人", "GROUP_ANY", {"groups": [grp("営業部", 2, A), grp("開発部", 2, B)]}, [], False),
    ("開発部の2人以上が来られればOK", "GROUP_ANY", {"groups": [grp("開発部", 2, B)]}, [], False),
    (
        "Team Aから三人、もしくはTeam Bから三人",
        "GROUP_ANY",
        {"groups": [grp("Team A", 3, A), grp("Team B", 3, B)]},
        [],
        False,
    ),
    # ambiguous → ANY with questions
    ("みんなで集まりたい", "ANY", {}, [], True),
    ("なるべく全員で", "ANY", {}, [], True),
    ("できればみんな参加で", "ANY", {}, [], True),
    ("いい感じの日でお願い", "ANY", {}, [], True),
    ("全員じゃなくてもいい", "ANY", {}, [], True),
    ("10人以上集まれば", "ANY", {}, [], True),
    ("営業部から2人と開発部から1人", "ANY", {}, [], True),
    ("営業部から5人または開発部から1人", "ANY", {}, [], True),
    ("山田さんは必須、あと9人", "ANY", {}, [], True),
    ("木村さんは必須", "ANY", {}, [], True),
    # audit 2: regressions found by review, each with its exact rule
    # - negation and concession
    ("全員参加じゃなくてもいい", "ANY", {}, [], True),
    ("全員参加は必須ではありません", "ANY", {}, [], True),
    ("山田さんは必須じゃなくていい", "ANY", {}, [], True),
    ("全員じゃなくていいので3人以上", "K_OF_N", {"k": 3, "n": 6}, [], False),
    ("全員来てほしいけど無理なら3人", "K_OF_N", {"k": 3, "n": 6}, [], True),
    ("全員来てほしいけど難しければ半数", "K_OF_N", {"k": 3, "n": 6}, [], True),
    ("全員来てほしいけど無理なら", "ANY", {}, [], True),
    ("全員揃わなければ中止", "ALL", {}, [], False),
    ("2人来られなくても大丈夫", "K_OF_N", {"k": 4, "n": 6}, [], False),
    # - a group qualifies 全員
    ("営業部は全員必須", "REQUIRED_PLUS_QUORUM", {"required_invitee_keys": A, "min_additional": 0}, [], False),
    (
        "開発部のメンバー全員が参加",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": B, "min_additional": 0},
        [],
        False,
    ),
    # - unknown group names are asked about, never dropped
    ("営業部から2人または経理部から1人", "ANY", {}, [], True),
    ("Xチームから2人", "ANY", {}, [], True),
    ("チームCの誰か", "ANY", {}, [], True),
    # - quotas joined by 、/と are an AND, which no rule type expresses
    ("営業部から2人、開発部から1人", "ANY", {}, [], True),
    ("営業部の誰か1人と開発部の誰か1人", "ANY", {}, [], True),
    ("営業部と開発部から2人", "ANY", {}, [], True),
    ("営業部の誰か", "GROUP_ANY", {"groups": [grp("営業部", 1, A)]}, [], False),
    ("営業部か開発部の誰か", "GROUP_ANY", {"groups": [grp("営業部", 1, A), grp("開発部", 1, B)]}, [], False),
    ("営業部のメンバーがいればOK", "GROUP_ANY", {"groups": [grp("営業部", 1, A)]}, [], False),
    # - one of named people; presence conditions; order of count and name
    (
        "山田さんか田中さんのどちらかがいればOK",
        "GROUP_ANY",
        {"groups": [grp("山田さんか田中さん", 1, ["u:1", "u:2"])]},
        [],
        False,
    ),
    ("山田さんか田中さんは必須", "GROUP_ANY", {"groups": [grp("山田さんか田中さん", 1, ["u:1", "u:2"])]}, [], False),
    ("山田さんか田中さんのどちらかは必須、あと2人", "ANY", {}, [], True),
    (
        "山田さんが来られるなら誰でも",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:1"], "min_additional": 0},
        [],
        False,
    ),
    ("山田さんさえいれば", "REQUIRED_PLUS_QUORUM", {"required_invitee_keys": ["u:1"], "min_additional": 0}, [], False),
    (
        "最低でも3人、山田さんは必ず",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:1"], "min_additional": 3},
        [],
        True,
    ),
    (
        "山田さんは必ず、最低でも3人",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:1"], "min_additional": 3},
        [],
        True,
    ),
    (
        "山田さんは必須、6人",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:1"], "min_additional": 5},
        [],
        False,
    ),
    (
        "山田さん、田中さん、佐藤さんの3人は必須",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": A, "min_additional": 0},
        [],
        False,
    ),
    # - totals, everyone-but, "the others"
    (
        "山田さんは必須で、全体で4人以上",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:1"], "min_additional": 3},
        [],
        False,
    ),
    ("山田さん以外全員", "ALL", {}, ["u:1"], False),
    ("山田さん抜きで全員", "ALL", {}, ["u:1"], False),
    ("営業部以外全員", "ALL", {}, A, False),
    (
        "山田さんと田中さんは必須。他はどちらでも",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:1", "u:2"], "min_additional": 0},
        [],
        False,
    ),
    (
        "佐藤さんは必須、その他の人は任意",
        "REQUIRED_PLUS_QUORUM",
        {"required_invitee_keys": ["u:3"], "min_additional": 0},
        [],
        False,
    ),
    # - ranges take the lower count; k < 1 is asked
    ("3～4人", "K_OF_N", {"k": 3, "n": 6}, [], False),
    ("3〜4名集まれば", "K_OF_N", {"k": 3, "n": 6}, [], False),
    ("2人か3人", "K_OF_N", {"k": 2, "n": 6}, [], False),
    ("3から4人", "K_OF_N", {"k": 3, "n": 6}, [], False),
    ("営業部から2～3人", "GROUP_ANY", {"groups": [grp("営業部", 2, A)]}, [], False),
    ("0%", "ANY", {}, [], True),
    ("0割", "ANY", {}, [], True),
    ("100%", "ALL", {}, [], False),
    # - the seed's own sentence
    ("3人以上集まったら成立", "K_OF_N", {"k": 3, "n": 6}, [], False),
]


@pytest.mark.parametrize(("text", "rule_type", "params", "excluded", "clarify"), CASES, ids=[c[0] for c in CASES])
def test_paraphrase(text: str, rule_type: str, params: dict[str, Any], excluded: list[str], clarify: bool) -> None:
    out = parse_attendance_intent({"text": text, "invitees": TEAM})
    rule = out["attendance_rule"]
    assert (rule["type"], rule["rule"], rule["invitee_scope"]["exclude_invitee_keys"]) == (rule_type, params, excluded)
    assert rule["invitee_scope"]["include_invitee_keys"] == ["u:1", "u:2", "u:3", "u:4", "u:5", "u:6"]
    assert bool(out["needs_clarification"]) is clarify
    assert (out["confidence"] < 0.7) is clarify
    if clarify:
        assert rule["finalize_policy"]["auto_finalize"] is False


def test_unknown_and_other_words_in_missing() -> None:
    out = parse_attendance_intent({"text": "営業部から2人または経理部から1人", "invitees": TEAM})
    assert out["missing"] == ["経理部"]
    assert out["needs_clarification"] == [
        "「経理部」に所属する招待者が見つかりません。どの招待者のことか教えてください（招待者の groups に追加することもできます）。"
    ]
    assert parse_attendance_intent({"text": "Xチームから2人", "invitees": TEAM})["missing"] == ["Xチーム"]
    assert (
        parse_attendance_intent({"text": "山田さんと田中さんは必須。他はどちらでも", "invitees": TEAM})["missing"] == []
    )


def test_concession_prefers_the_best_slot_and_asks() -> None:
    out = parse_attendance_intent({"text": "全員来てほしいけど無理なら3人", "invitees": TEAM})
    assert out["attendance_rule"]["finalize_policy"] == {
        "mode": "BEST_SCORE",
        "tie_breaker": "highest_score",
        "auto_finalize": False,
    }
    assert out["confidence"] == 0.65
    assert out["needs_clarification"] == [
        "成立条件を「3人以上」とし、全員の回答後に参加者の最も多い候補で確定する、でよいですか？（「全員来てほしい」は希望として扱います）"
    ]


def test_negation_and_ambiguous_count_questions() -> None:
    out = parse_attendance_intent({"text": "全員参加じゃなくてもいい", "invitees": TEAM})
    assert (out["confidence"], out["matched_pattern"]) == (0.6, "ambiguous.negated")
    assert out["needs_clarification"] == [
        "「全員参加じゃなくてもいい」とのことですが、何人集まれば開催しますか？（最低○人／○○さんは必須 など）"
    ]
    out = parse_attendance_intent({"text": "最低でも3人、山田さんは必ず", "invitees": TEAM})
    assert out["needs_clarification"] == [
        "3人は必須の1人を含めた合計ですか？それとも必須の1人のほかに3人ですか？（いまは「ほかに3人」としています）"
    ]
    out = parse_attendance_intent({"text": "0%", "invitees": TEAM})
    assert out["needs_clarification"] == ["成立に必要な人数が0人になります。何人以上集まれば開催しますか？"]


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 60
    assert {c[1] for c in CASES} == {"ALL", "ANY", "K_OF_N", "REQUIRED_PLUS_QUORUM", "GROUP_ANY"}

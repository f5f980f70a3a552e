"""Each matcher of the grammar's table on its own: what it reads, what it leaves to the next one, what it asks.

In-process and fast: a matcher is a function of one `Utterance` (the shared parse state, the scope
size and the required lists), so each test builds that state from a phrase and calls one matcher.
The whole pipeline is pinned by test_grammar_golden.py; these say what each unit is for.
"""

from __future__ import annotations

from typing import Any

import pytest

from generated.attendance.models import RuleType
from handlers.attendance.core.grammar import MATCHERS, State, Utterance, read
from handlers.attendance.core.grammar.concession import concession
from handlers.attendance.core.grammar.counts import count, explicit, relative, threshold
from handlers.attendance.core.grammar.groups import GroupWord, group_any, group_words, pieces, unknown_groups
from handlers.attendance.core.grammar.named import alternatives, named_any
from handlers.attendance.core.grammar.required import required
from handlers.attendance.core.grammar.state import BLANK
from handlers.attendance.core.grammar.table import _required_items
from handlers.attendance.core.grammar.words import all_words, ambiguous, any_words
from handlers.attendance.core.names import Directory
from handlers.attendance.core.text import Folded
from tests.attendance.conftest import TEAM, users

A = ["u:1", "u:2", "u:3"]
B = ["u:4", "u:5", "u:6"]


def state(text: str, invitees: list[dict[str, Any]] = TEAM) -> State:
    directory = Directory(invitees)
    folded = Folded.of(text)
    return State(folded, directory, directory.find_mentions(folded))


def utterance(text: str, invitees: list[dict[str, Any]] = TEAM) -> Utterance:
    s = state(text, invitees)
    return Utterance(s, len(s.d.keys), _required_items(s))


def test_the_table_runs_the_matchers_in_the_documented_order() -> None:
    assert [m.__name__ for m in MATCHERS] == [
        "unknown_groups",
        "concession",
        "alternatives",
        "named_any",
        "required",
        "group_any",
        "relative",
        "explicit",
        "all_words",
        "threshold",
        "any_words",
    ]


# -- the shared state ----------------------------------------------------------------------------
def test_state_lowers_a_range_to_its_smaller_count_and_keeps_positions() -> None:
    s = state("3～4人集まれば")
    assert s.s.replace(BLANK, "") == "3人集まれば" and len(s.s) == len(s.text.folded)
    assert state("1,000人").s == state("1,000人").text.folded  # a number with a separator, not a range


def test_state_blanks_a_negated_clause_but_not_an_exclusion_or_an_absence() -> None:
    s = state("全員参加じゃなくてもいい")
    assert s.negated == ["全員参加じゃなくてもいい"] and "全員" not in s.s
    assert state("田中さんは来なくていい").negated == []
    assert state("1人来られなくても大丈夫").negated == []


def test_list_before_reads_names_groups_and_everyone() -> None:
    s = state("山田さんと田中さんは必須")
    items = s.list_before(s.s.index("は必須") + 1)
    assert [(i.kind, i.keys) for i in items] == [("person", ["u:1"]), ("person", ["u:2"])]
    s = state("営業部は全員必須")
    items = _required_items(s)
    assert {(i.kind, i.name) for i in items} == {("group", "営業部")} and s.keys(items) == A


def test_an_unknown_name_is_asked_once() -> None:
    s = state("小林さんは必須、小林さんは必須")
    assert s.keys(_required_items(s)) == []
    assert s.unknown == ["小林"] and len(s.questions) == 1


# -- 0. unknown groups, concession, named alternatives ---------------------------------------------
def test_unknown_groups_asks_for_a_group_with_a_count_that_nobody_is_in() -> None:
    u = utterance("経理部から1人、または営業部から2人")
    reading = unknown_groups(u)
    assert reading is not None and reading.pattern == "group.unknown" and reading.type is RuleType.ANY
    assert u.state.unknown == ["経理部"]
    assert unknown_groups(utterance("営業部から2人")) is None
    assert unknown_groups(utterance("部長は必須")) is None  # 部長 is no group


def test_group_words_are_typed_records() -> None:
    words = group_words(state("経理部と営業部から1人ずつ"))
    assert words == [GroupWord(0, 3, "経理部", False), GroupWord(4, 7, "営業部", True)]


def test_concession_reads_the_fallback_count_and_prefers_the_best_slot() -> None:
    u = utterance("全員来てほしいけど無理なら3人")
    reading = concession(u)
    assert reading is not None
    assert (reading.type, reading.params, reading.pattern) == (RuleType.K_OF_N, {"k": 3, "n": 6}, "concession.fallback")
    assert reading.policy["mode"] == "BEST_SCORE" and reading.confidence == 0.65
    assert "全員来てほしい" in u.state.questions[0]
    assert concession(utterance("全員揃わなければ中止")) is None  # restates the condition
    assert concession(utterance("3人以上")) is None


def test_concession_without_a_count_or_with_required_names_asks() -> None:
    no_count = concession(utterance("全員来てほしいけど無理なら"))
    assert no_count is not None and no_count.pattern == "concession.no_count"
    combined = concession(utterance("全員来てほしいけど無理なら3人、山田さんは必須"))
    assert combined is not None and combined.pattern == "concession.required"


def test_alternatives_of_named_pairs_become_complete_groups() -> None:
    reading = alternatives(utterance("山田さんと田中さん、または佐藤さんと鈴木さんが揃えばOK"))
    assert reading is not None and reading.type is RuleType.GROUP_ANY
    assert [(g["min"], g["any_of_invitee_keys"]) for g in reading.params["groups"]] == [
        (2, ["u:1", "u:2"]),
        (2, ["u:3", "u:4"]),
    ]
    assert alternatives(utterance("山田さんと田中さんは必須")) is None


def test_named_any_is_one_of_the_named_people() -> None:
    reading = named_any(utterance("山田さんか田中さんのどちらかがいればOK"))
    assert reading is not None and reading.pattern == "group.named_any"
    assert reading.params["groups"] == [{"name": "山田さんか田中さん", "min": 1, "any_of_invitee_keys": ["u:1", "u:2"]}]
    impossible = named_any(utterance("山田さんか田中さんのどちらか3人"))
    assert impossible is not None and impossible.pattern == "named_any.impossible"
    combined = named_any(utterance("山田さんか田中さんのどちらか、あと2人"))
    assert combined is not None and combined.pattern == "named_any.combined"
    assert named_any(utterance("山田さんと田中さん")) is None


# -- 1. required ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "extra", "pattern"),
    [
        ("山田さんと田中さんは必須、あと2人", 2, "required.plus_additional"),
        ("山田さんは必須で、全体で4人以上", 3, "required.total"),
        ("山田さんは必須、1人欠けてもいい", 4, "required.relative"),
        ("山田さんは必須、3人", 3, "required.count_ambiguous"),
        ("山田さんは必須", 0, "required.only"),
    ],
)
def test_required_reads_the_quorum_of_the_others(text: str, extra: int, pattern: str) -> None:
    reading = required(utterance(text))
    assert reading is not None and reading.type is RuleType.REQUIRED_PLUS_QUORUM
    assert (reading.params["min_additional"], reading.pattern) == (extra, pattern)


def test_required_everyone_is_all_and_unknown_or_impossible_ones_ask() -> None:
    everyone = required(utterance("全員必須"))
    assert everyone is not None and (everyone.type, everyone.pattern) == (RuleType.ALL, "all.required_everyone")
    unknown = required(utterance("小林さんは必須"))
    assert unknown is not None and unknown.pattern == "required.unresolved"
    too_many = required(utterance("山田さんは必須、あと9人"))
    assert too_many is not None and too_many.pattern == "required.impossible"
    assert required(utterance("3人以上")) is None


# -- 2. groups -----------------------------------------------------------------------------------------
def test_group_any_reads_alternatives_of_group_counts() -> None:
    reading = group_any(utterance("営業部から2人 または 開発部から3人"))
    assert reading is not None and reading.type is RuleType.GROUP_ANY
    assert reading.params["groups"] == [
        {"name": "営業部", "min": 2, "any_of_invitee_keys": A},
        {"name": "開発部", "min": 3, "any_of_invitee_keys": B},
    ]


def test_group_pieces_share_a_count_over_groups_joined_by_or() -> None:
    found = pieces(state("営業部か開発部から2人"))
    assert [([g.label for g in p.groups], p.k, p.shared) for p in found] == [(["営業部", "開発部"], 2, False)]
    reading = group_any(utterance("営業部か開発部から2人"))
    assert reading is not None and [g["min"] for g in reading.params["groups"]] == [2, 2]


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("営業部と開発部から2人ずつ", "group.shared_and"),
        ("営業部から2人と開発部から1人", "group.conjunction"),
        ("営業部から4人または開発部から1人", "group.impossible"),
    ],
)
def test_group_any_asks_what_no_rule_type_expresses(text: str, pattern: str) -> None:
    u = utterance(text)
    reading = group_any(u)
    assert reading is not None and (reading.type, reading.pattern) == (RuleType.ANY, pattern)
    assert len(u.state.questions) == 1


def test_the_same_group_twice_in_an_or_keeps_the_smaller_count() -> None:
    reading = group_any(utterance("営業部から3人、または営業部から2人"))
    assert reading is not None and reading.params["groups"] == [{"name": "営業部", "min": 2, "any_of_invitee_keys": A}]


# -- 3-7. counts and wording -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "k", "pattern"),
    [
        ("全員-1で", 5, "k_of_n.minus"),
        ("1人欠けても大丈夫", 5, "k_of_n.minus"),
        ("過半数", 4, "k_of_n.majority"),
        ("半数以上", 3, "k_of_n.half"),
        ("3分の2以上", 4, "k_of_n.fraction"),
        ("5割以上", 3, "k_of_n.tenths"),
        ("50%以上", 3, "k_of_n.percent"),
    ],
)
def test_relative_counts_resolve_against_the_scope(text: str, k: int, pattern: str) -> None:
    reading = relative(utterance(text))
    assert reading is not None and (reading.params, reading.pattern) == ({"k": k, "n": 6}, pattern)


def test_relative_skips_what_is_no_count() -> None:
    assert relative(utterance("3分の4")) is None
    assert relative(utterance("3人以上")) is None


def test_explicit_k_of_n_and_a_stated_n_unlike_the_scope() -> None:
    reading = explicit(utterance("6人中3人以上"))
    assert reading is not None and (reading.params, reading.pattern) == ({"k": 3, "n": 6}, "k_of_n.explicit_n")
    u = utterance("10人中3人")
    other = explicit(u)
    assert other is not None and other.confidence == 0.65 and "10人とありますが" in u.state.questions[0]
    slash = explicit(utterance("2/3"))  # of six: 4 (two thirds) or 2 — the stricter, asked
    assert slash is not None and (slash.params["k"], slash.pattern) == (4, "k_of_n.slash")
    assert explicit(utterance("3人以上")) is None


def test_all_words() -> None:
    strong = all_words(utterance("全員参加必須"))
    assert strong is not None and (strong.type, strong.pattern) == (RuleType.ALL, "all.words")
    except_ = all_words(utterance("山田さん以外全員"))
    assert except_ is not None and except_.pattern == "all.except"
    soft = all_words(utterance("できれば全員"))
    assert soft is not None and soft.pattern == "ambiguous.soft_all" and soft.type is RuleType.ANY
    assert all_words(utterance("3人以上")) is None


def test_threshold_takes_the_last_count() -> None:
    reading = threshold(utterance("最低2人、できれば3人以上"))
    assert reading is not None and reading.params == {"k": 3, "n": 6}
    assert threshold(utterance("誰か")) is None


def test_any_words_and_ambiguous() -> None:
    anyone = any_words(utterance("参加者がいれば実施"))
    assert anyone is not None and (anyone.type, anyone.pattern) == (RuleType.ANY, "any.words")
    assert any_words(utterance("3人以上")) is None
    u = utterance("みんなで集まりたい")
    assert ambiguous(u).pattern == "ambiguous.minna" and len(u.state.questions) == 2
    assert ambiguous(utterance("よろしく")).pattern == "ambiguous.unknown"


@pytest.mark.parametrize(
    ("k", "n", "kind", "pattern"),
    [
        (1, 6, RuleType.ANY, "any.one"),
        (6, 6, RuleType.ALL, "all.k_equals_n"),
        (3, 6, RuleType.K_OF_N, "p"),
        (7, 6, RuleType.ANY, "count.impossible"),
        (0, 6, RuleType.ANY, "count.impossible"),
    ],
)
def test_count_normalises_a_threshold(k: int, n: int, kind: RuleType, pattern: str) -> None:
    reading = count(state("x"), k, n, 0.9, "p")
    assert (reading.type, reading.pattern) == (kind, pattern)


def test_read_fits_the_reading_to_the_scope_left_after_exclusions() -> None:
    s = state("営業部から3人、山田さんは来なくていい")
    reading = read(s, 6)
    assert (reading.pattern, reading.excluded) == ("group.impossible", ["u:1"])
    reading = read(state("田中さんは除いて3人以上"), 6)
    assert (reading.params, reading.excluded) == ({"k": 3, "n": 5}, ["u:2"])
    assert read(state("田中さんは除いて3人以上", users(5)), 5).excluded == []  # nobody called 田中

"""Group counts: 「営業部から2人 または 開発部から3人」 → GROUP_ANY; unknown groups (経理部から1人) are asked.

A piece is one count over one or more groups (営業部から2人, 営業部か開発部から2人). Pieces joined
by an OR word are alternatives (GROUP_ANY); pieces joined otherwise are an AND of quotas, which no
rule type expresses, so the organiser is asked; so is a count shared by several groups joined by
と (営業部と開発部から2人: together or each?).
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import NamedTuple

from generated.attendance.models import RuleType
from handlers.attendance.core.grammar.state import State, Utterance
from handlers.attendance.core.grammar.vocabulary import vocabulary
from handlers.attendance.core.reading import Reading, RuleGroup, unsure

_LATIN_DIGIT = re.compile(r"[a-z0-9]")


class GroupWord(NamedTuple):
    """A group-like word in the folded text (営業部, チームX): s[start:end], as written, known to the directory."""

    start: int
    end: int
    label: str
    known: bool


class GroupRef(NamedTuple):
    """A known group: its label as the invitees give it, and its members."""

    label: str
    keys: list[str]


class Piece(NamedTuple):
    """One count over groups (営業部か開発部から2人) at s[start:end]; `shared` when the count's split is unclear."""

    groups: list[GroupRef]
    k: int
    start: int
    end: int
    shared: bool


def group_words(state: State) -> list[GroupWord]:
    """Every group-like word, known or not (a bare チーム, 部長, or part of 阿部さん is none)."""
    v = vocabulary()
    s = state.s
    words: list[GroupWord] = []
    for m in v.group_word.finditer(s):
        start, end = m.start(), m.end()
        if words and start < words[-1].end:
            continue
        while start > 0 and (state.is_name_char(start - 1) or s[start - 1].isdigit()):
            start -= 1
        if m.group() in v.group_prefix_words:  # チームX, Team X, シフトC
            while end < len(s) and _LATIN_DIGIT.match(s[end]):
                end += 1
        if (start, end) == m.span() or (end < len(s) and state.is_name_char(end)):
            continue  # a bare チーム/部 names nothing; 部長 or 部員 is not a group
        word = s[start:end]
        if any(word.endswith(stop) for stop in v.not_groups):
            continue
        if any(mention.start < end and start < mention.end for mention in state.mentions):
            continue  # part of a person's name (阿部さん)
        known = state.d.group_of(word) is not None or any(g.start <= start and end <= g.end for g in state.groups)
        words.append(GroupWord(start, end, state.original(start, end), known))
    return words


def _counted(state: State, words: list[GroupWord]) -> list[bool]:
    """Which words a count applies to: the word right before it, and those joined to that one (AとB から1人)."""
    v = vocabulary()
    counted = [False] * len(words)
    for i in range(len(words) - 1, -1, -1):
        end = words[i].end
        if v.group_count.match(state.s, end):
            counted[i] = True
        elif i + 1 < len(words) and counted[i + 1]:
            gap = state.s[end : words[i + 1].start]
            counted[i] = bool(gap) and v.word_join.fullmatch(gap) is not None
    return counted


def unknown_groups(u: Utterance) -> Reading | None:
    """Matcher: group-like words used with a count that no invitee belongs to: ask, never drop them."""
    state = u.state
    words = group_words(state)
    unknown = [w.label for w, used in zip(words, _counted(state, words), strict=True) if used and not w.known]
    if not unknown:
        return None
    for label in unknown:
        if label not in state.unknown:
            state.unknown.append(label)
            state.questions.append(
                f"「{label}」に所属する招待者が見つかりません。どの招待者のことか教えてください（招待者の groups に追加することもできます）。"
            )
    return unsure("group.unknown")


def pieces(state: State) -> list[Piece]:
    """Every count over known groups, in text order. Groups written before a count and joined to it by
    と/か/、 share that count (営業部か開発部から2人); a gap of other words drops them."""
    v = vocabulary()
    s = state.s
    found: list[Piece] = []
    pending: list[GroupRef] = []
    pending_start = pending_end = last_end = 0
    shared_and = False
    for span in state.groups:
        group = state.d.group_of(span.variant)
        if group is None or span.start < last_end:
            continue
        if pending and not v.word_join.fullmatch(s, pending_end, span.start):
            pending, shared_and = [], False
        if pending:
            shared_and = shared_and or not v.gap_or.search(s, pending_end, span.start)
        ref = GroupRef(group.label, list(group.keys))
        m = v.group_count.match(s, span.end)
        if m is None:
            if not pending:
                pending_start = span.start
            pending.append(ref)
            pending_end = span.end
            continue
        groups = [*pending, ref]
        each = len(groups) > 1 and v.each.match(s, m.end()) is not None
        k = int(m.group(1) or m.group(2) or 1)
        found.append(Piece(groups, k, pending_start if pending else span.start, m.end(), shared_and or each))
        pending, shared_and = [], False
        last_end = m.end()
    return found


def _is_disjunction(state: State, found: list[Piece]) -> bool:
    """Whether the pieces are alternatives: an OR word between every two, or a disjunction word anywhere."""
    v = vocabulary()
    gaps = [state.s[a.end : b.start] for a, b in pairwise(found)]
    return all(v.gap_or.search(gap) for gap in gaps) or v.disjunction.search(state.s) is not None


def _merged(found: list[Piece]) -> list[tuple[GroupRef, int]]:
    """Each group once, with the smallest count it was given (the same group twice in an OR: the smaller suffices)."""
    merged: dict[str, tuple[GroupRef, int]] = {}
    for piece in found:
        for ref in piece.groups:
            if ref.label not in merged or piece.k < merged[ref.label][1]:
                merged[ref.label] = (ref, piece.k)
    return list(merged.values())


def group_any(u: Utterance) -> Reading | None:
    """Matcher: counts over groups joined by OR → GROUP_ANY; an AND of quotas or a shared count → ask."""
    state = u.state
    found = pieces(state)
    if not found:
        return None
    shared = next((p for p in found if p.shared), None)
    if shared is not None:
        labels = "と".join(ref.label for ref in shared.groups)
        state.questions.append(
            f"「{labels}から{shared.k}人」は、合わせて{shared.k}人ですか？ それぞれ{shared.k}人ずつですか？"
        )
        return unsure("group.shared_and")
    if not _is_disjunction(state, found):
        parts = "」と「".join(f"{'か'.join(ref.label for ref in p.groups)}から{p.k}人" for p in found)
        both = "両方" if len(found) == 2 else "すべて"
        state.questions.append(f"「{parts}」の{both}が必要ですか？ それともどれか1つで成立ですか？")
        return unsure("group.conjunction")
    groups = _merged(found)
    for ref, k in groups:
        if k < 1 or k > len(ref.keys):
            state.questions.append(
                f"「{ref.label}」から{k}人とありますが、{ref.label}の招待者は{len(ref.keys)}人です。人数を確認してください。"
            )
            return unsure("group.impossible")
    rule_groups = [RuleGroup(name=ref.label, min=k, any_of_invitee_keys=ref.keys) for ref, k in groups]
    return Reading(RuleType.GROUP_ANY, {"groups": rule_groups}, 0.85, "group.any")

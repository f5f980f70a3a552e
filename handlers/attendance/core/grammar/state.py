"""The shared state of one parse: the rewritten folded text, the mentions, the groups, what to ask.

Before matching, two rewrites of the folded text (same length, so positions stay valid): a range
of counts keeps its lower number (3～4人, 2人か3人 → 3人 / 2人), and a negated clause
(全員参加じゃなくてもいい, 山田さんは必須ではない) is blanked out so that nothing in it can assert a
condition. The list helpers read name lists around a marker word (山田さんと田中さんは必須).
Matchers (the other modules of this package) read this state and add questions and unknown names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from handlers.attendance.core.grammar.vocabulary import vocabulary
from handlers.attendance.core.names import Directory, Mention
from handlers.attendance.core.text import Folded

BLANK = "\x00"
_KANA_LIKE = re.compile(r"[\u30a0-\u30ff]")
_KANJI_LATIN = re.compile(r"[\u4e00-\u9fff\u3005a-z]")

ItemKind = Literal["person", "group", "unknown", "all"]


@dataclass(slots=True)
class Item:
    """One element of a name list: a person, a group, an unknown name or the word 全員."""

    kind: ItemKind
    name: str
    keys: list[str] = field(default_factory=list)


class Placed(NamedTuple):
    """An item of a name list and where it starts in the folded text."""

    item: Item
    start: int


class GroupSpan(NamedTuple):
    """A known group's name in the folded text: s[start:end] is `variant` (営業部, teama, aちーむ)."""

    start: int
    end: int
    variant: str


class State:
    """One folded utterance read against one directory; what every matcher shares."""

    def __init__(self, text: Folded, directory: Directory, mentions: list[Mention]) -> None:
        self.text = text
        self.s = text.folded
        self.d = directory
        self.mentions = mentions
        self.original = text.original
        self.unknown: list[str] = []
        self.questions: list[str] = []
        self.negated: list[str] = []
        self._lower_ranges()
        self._blank_negations()
        self.groups: list[GroupSpan] = []
        if directory.group_re is not None:
            self.groups = [GroupSpan(m.start(), m.end(), m.group()) for m in directory.group_re.finditer(self.s)]

    # -- rewrites ----------------------------------------------------------------------
    def _blank(self, start: int, end: int, keep: str = "") -> None:
        self.s = self.s[:start] + keep + BLANK * (end - start - len(keep)) + self.s[end:]

    def _lower_ranges(self) -> None:
        """3~4人, 3から4人, 2人か3人 → the lower count: the organiser accepts it, so it is the threshold."""
        for m in list(vocabulary().range.finditer(self.s)):
            a, sep, b = m.group(1), self.s[m.end(2) : m.start(3)], m.group(3)
            if sep in ("、", ",") and len(b) == 3:
                continue  # 1,000人 is a number, not a range
            if int(a) == int(b):
                continue
            low = str(min(int(a), int(b)))
            self._blank(m.start(), m.end(), low + m.group(4))

    def _blank_negations(self) -> None:
        """Blank each negated clause: from the clause start to the end of じゃなくて/必須ではない/….

        Negations that belong to another construction are kept: exclusions (来なくていい),
        optional wording (いてもいなくても) and relative counts (1人来られなくても大丈夫).
        """
        v = vocabulary()
        kept: list[tuple[int, int]] = []
        for pattern in (v.exclude_after, v.optional_after, *v.absences):
            kept.extend(m.span() for m in pattern.finditer(self.s))
        for m in list(v.negation.finditer(self.s)):
            if any(a < m.end() and m.start() < b for a, b in kept):
                continue
            start = 0
            for brk in v.clause_break.finditer(self.s, 0, m.start()):
                start = brk.end()
            clause = self.original(start, m.end()) if start < m.end() else ""
            if clause.strip(BLANK):
                self.negated.append(clause)
            self._blank(start, m.end())

    # -- list parsing ------------------------------------------------------------------
    def _item_ending_at(self, pos: int) -> Placed | None:
        for m in self.mentions:
            if m.end == pos or (m.end > pos - 1 and m.start < pos <= m.end):
                return Placed(self.person(m), m.start)
        for group_span in self.groups:
            if group_span.end == pos:
                group = self.d.group_of(group_span.variant)
                if group is not None:
                    return Placed(Item("group", group.label, list(group.keys)), group_span.start)
        everyone = self._everyone_ending_at(pos)
        if everyone is not None:
            return everyone
        bare = self.bare_word_start(pos)
        if bare is None:
            return None
        keys = self.d.lookup(self.s[bare:pos])
        if keys:
            return Placed(Item("person", self.original(bare, pos), list(keys)), bare)
        return Placed(Item("unknown", self.original(bare, pos)), bare)

    def _everyone_ending_at(self, pos: int) -> Placed | None:
        """全員 (or みんな, …) ending at `pos`; a group before it makes it that group's members (営業部は全員)."""
        for all_word in vocabulary().all_words:
            if self.s.endswith(all_word, 0, pos):
                qualified = self.group_before(pos - len(all_word))
                if qualified is not None:
                    return qualified
                return Placed(Item("all", all_word), pos - len(all_word))
        return None

    def group_before(self, pos: int) -> Placed | None:
        """A known group that qualifies a 全員 starting at `pos` (営業部は全員, 開発部のメンバー全員)."""
        for particle in vocabulary().group_qualifiers:
            if not self.s.endswith(particle, 0, pos):
                continue
            end = pos - len(particle)
            for group_span in self.groups:
                group = self.d.group_of(group_span.variant)
                if group_span.end == end and group is not None:
                    return Placed(Item("group", group.label, list(group.keys)), group_span.start)
        return None

    def bare_word_start(self, pos: int) -> int | None:
        """Start of a name written without honorific that ends at `pos` (kanji, Latin or katakana run).

        Digits before it, or a word that is plainly not a name (以上, 参加, 人), reject it:
        an unknown bare word is only reported when it really looks like a name.
        """
        start = pos
        while start > 0 and self.is_name_char(start - 1):
            start -= 1
        if start == pos or (start > 0 and self.s[start - 1].isdigit()):
            return None
        word = self.s[start:pos]
        v = vocabulary()
        if word in v.not_a_name or any(bad in word for bad in v.not_in_name):
            return None
        return start

    def is_name_char(self, i: int) -> bool:
        """A kanji or Latin letter, or a character the organiser wrote in katakana."""
        if self.s[i] in (BLANK, "・"):
            return False
        if _KANJI_LATIN.match(self.s[i]):
            return True
        return bool(_KANA_LIKE.match(self.text.norm[self.text.pos[i]]))

    @staticmethod
    def person(m: Mention) -> Item:
        """A mention as a list item: a person when it names exactly one invitee, else unknown."""
        if len(m.keys) == 1:
            return Item("person", m.name, list(m.keys))
        return Item("unknown", m.name, list(m.keys))

    def list_before(self, pos: int) -> list[Item]:
        """Names joined by と/、/や that end right before `pos` (particles allowed)."""
        v = vocabulary()
        items: list[Item] = []
        while True:
            tail = v.particles_before_req.search(self.s, 0, pos)
            while tail is not None and tail.end() == pos and tail.start() < pos:
                pos = tail.start()
                tail = v.particles_before_req.search(self.s, 0, pos)
            found = self._item_ending_at(pos)
            if found is None:
                break
            item, pos = found
            items.insert(0, item)
            if item.kind == "all":
                break
            joiner = None
            for m in v.joiner.finditer(self.s, max(0, pos - 3), pos):
                if m.end() == pos:
                    joiner = m
            if joiner is None:
                break
            pos = joiner.start()
        return items

    def list_after(self, pos: int) -> list[Item]:
        """Known or honorific-marked names joined by と/、/や that start at `pos`."""
        items: list[Item] = []
        while True:
            mention = next((m for m in self.mentions if m.start == pos), None)
            if mention is None:
                break
            items.append(self.person(mention))
            pos = mention.end
            joiner = vocabulary().joiner.match(self.s, pos)
            if joiner is None:
                break
            pos = joiner.end()
        return items

    def marked_lists(self, marker: re.Pattern[str], after: re.Pattern[str] | None = None) -> list[Item]:
        """The name lists before every `marker` (山田さんと田中さんは必須) and after every `after` (必須は山田さん)."""
        found: list[Item] = []
        for m in marker.finditer(self.s):
            found.extend(self.list_before(m.start()))
        if after is not None:
            for m in after.finditer(self.s):
                found.extend(self.list_after(m.end()))
        return found

    # -- resolving and asking ----------------------------------------------------------
    def keys(self, items: list[Item]) -> list[str]:
        """The invitee keys of the people and groups among `items`, once each; unknown names are reported."""
        keys: list[str] = []
        for item in items:
            if item.kind in ("person", "group"):
                keys.extend(k for k in item.keys if k not in keys)
            elif item.kind == "unknown":
                self.report(item)
        return keys

    def report(self, item: Item) -> None:
        """Ask about a name that fits no invitee, or several (once per name)."""
        if item.name in self.unknown:
            return
        self.unknown.append(item.name)
        if item.keys:
            names = "、".join(self.d.names[k] for k in item.keys)
            self.questions.append(f"「{item.name}」に当てはまる招待者が複数います（{names}）。どなたですか？")
        else:
            self.questions.append(
                f"「{item.name}」さんが招待者に見つかりません。招待者に追加するか、別の呼び方を教えてください。"
            )


@dataclass(frozen=True, slots=True)
class Utterance:
    """A matcher's input: the shared state, the scope size `n` (invitees less the excluded) and the
    items of every required-list (山田さんと田中さんは必須, 営業部は全員参加) found before matching."""

    state: State
    n: int
    required: list[Item]

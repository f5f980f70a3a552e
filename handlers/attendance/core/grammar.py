"""The rule-based grammar: folded utterance + mentions → rule type and parameters.

Before matching, two rewrites of the folded text (same length, so positions stay
valid): a range of counts keeps its lower number (3～4人, 2人か3人 → 3人 / 2人), and a
negated clause (全員参加じゃなくてもいい, 山田さんは必須ではない) is blanked out so that
nothing in it can assert a condition. Unknown group names before a count
(経理部から1人) stop the parse with a question.

Matchers run in a fixed order (docs/attendance.md lists them) and the first that
applies wins:

0. a concession (全員来てほしいけど無理なら3人) → the fallback count, BEST_SCORE, and a question;
   alternatives of named groups (山田&田中 か 佐藤&鈴木, alternatives.py) → GROUP_ANY of complete groups;
   a disjunction of names (山田さんか田中さんのどちらか) → GROUP_ANY over those names;
1. name lists before/after a required word (山田さんと田中さんは必須) → REQUIRED_PLUS_QUORUM,
   or ALL when the list is 全員/みんな (全員必須); a group before 全員 (営業部は全員必須)
   makes the group's members required;
2. group counts (営業部から2人 または 開発部から3人) → GROUP_ANY; counts joined by 、/と
   (an AND of quotas, not expressible) → ANY with a question;
3. relative counts (全員-1, 1人欠けても, 過半数, 半数, 3分の2, 8割);
4. explicit k of n (5人中3人, 3/5, 10人招待して5人以上);
5. ALL wording (全員参加必須, 全員が揃わないと, 山田さん以外全員);
6. a plain threshold (最低3人, 3人以上集まれば);
7. ANY wording (誰か, 参加者がいれば);
8. otherwise ambiguous → ANY with questions.

parse.py then checks the reading for a contradiction (contradiction.py: 全員必須 and 誰か1人でも).

Counts are then checked against the scope: k = 1 becomes ANY, k = n becomes ALL,
an impossible count becomes ANY with a question. Nothing here guesses a name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from handlers.attendance.core.alternatives import clipped, named_groups
from handlers.attendance.core.lexicon import entries, joined, words
from handlers.attendance.core.lexicon import pattern as lexicon_pattern
from handlers.attendance.core.names import Directory, Mention
from handlers.attendance.core.numbers import fraction_of, half_of, majority_of
from handlers.attendance.core.reading import Reading
from handlers.attendance.core.text import Folded, rx

# Every word and pattern below comes from lexicon.yaml (the lexicon is data; see lexicon.py).
_REQUIRED_AFTER = lexicon_pattern("required_after")
_REQUIRED_IF = lexicon_pattern("required_if")
_REQUIRED_BEFORE = lexicon_pattern("required_before")
_EXCLUDE_AFTER = lexicon_pattern("exclude_after")
_OPTIONAL_AFTER = lexicon_pattern("optional_after")
_JOINER = lexicon_pattern("joiner")
_PARTICLES_BEFORE_REQ = lexicon_pattern("particles_before_req")
_ALL_WORDS = frozenset(words("all_words"))
_ALL_WORDS_BY_LENGTH = sorted(_ALL_WORDS, key=len, reverse=True)
# What may stand between a group and 全員 for the group to qualify it (営業部は全員, 開発部のメンバー全員).
_GROUP_QUALIFIERS = sorted((rx(w).pattern for w in words("group_qualifiers")), key=len, reverse=True)
_ADDITIONAL = lexicon_pattern("additional")
_TOTAL = lexicon_pattern("total")
_ANY_COUNT = lexicon_pattern("any_count")
_FRACTIONS: list[tuple[re.Pattern[str], str]] = [(rx(joined(f["pattern"])), f["kind"]) for f in entries("fractions")]
_EXPLICIT: list[re.Pattern[str]] = [rx(joined(e["pattern"])) for e in entries("explicit_k_of_n")]
_EXPLICIT_KN_ORDER = tuple(bool(e["k_first"]) for e in entries("explicit_k_of_n"))  # k before n (3/5)?
_THRESHOLD = lexicon_pattern("threshold")
_ALL_STRONG = lexicon_pattern("all_strong")
_ALL_SOFT = lexicon_pattern("all_soft")
_ALL_EXCEPT = lexicon_pattern("all_except")
_ALL_NEGATED = lexicon_pattern("all_negated")
_ANY_WORDS = lexicon_pattern("any_words")
_MINNA = lexicon_pattern("minna")
_GROUP_COUNT = lexicon_pattern("group_count")
_GAP_OR = lexicon_pattern("gap_or")
_DISJUNCTION = lexicon_pattern("disjunction")
_EACH = lexicon_pattern("each")
_GROUP_WORD = lexicon_pattern("group_word")
_GROUP_PREFIX_WORDS = frozenset(rx(w).pattern for w in words("group_prefix_words"))
_NOT_GROUPS = tuple(words("not_groups"))
_NEGATION = lexicon_pattern("negation")
_CLAUSE_BREAK = lexicon_pattern("clause_break")
_CONCESSION_SOFT = lexicon_pattern("concession_soft")
_CONCESSION_SHORT = lexicon_pattern("concession_short")
_RANGE = lexicon_pattern("range")
_NAME_OR = lexicon_pattern("name_or")
_NAME_OR_TAIL = lexicon_pattern("name_or_tail")
_WORD_JOIN = lexicon_pattern("word_join")
_WISH_END = lexicon_pattern("wish_end")
BLANK = "\x00"


@dataclass(slots=True)
class Item:
    """One element of a name list: a person, a group, an unknown name or the word 全員."""

    kind: str  # "person" | "group" | "unknown" | "all"
    name: str
    keys: list[str] = field(default_factory=list)


class Grammar:
    """Parses one folded utterance against one directory."""

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
        self.groups: list[tuple[int, int, str]] = []
        if directory.group_re is not None:
            self.groups = [(m.start(), m.end(), m.group()) for m in directory.group_re.finditer(self.s)]

    # -- rewrites ----------------------------------------------------------------------
    def _blank(self, start: int, end: int, keep: str = "") -> None:
        self.s = self.s[:start] + keep + BLANK * (end - start - len(keep)) + self.s[end:]

    def _lower_ranges(self) -> None:
        """3~4人, 3から4人, 2人か3人 → the lower count: the organiser accepts it, so it is the threshold."""
        for m in list(_RANGE.finditer(self.s)):
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
        kept: list[tuple[int, int]] = []
        for pattern in (_EXCLUDE_AFTER, _OPTIONAL_AFTER, _FRACTIONS[1][0]):
            kept.extend(m.span() for m in pattern.finditer(self.s))
        for m in list(_NEGATION.finditer(self.s)):
            if any(a < m.end() and m.start() < b for a, b in kept):
                continue
            start = 0
            for brk in _CLAUSE_BREAK.finditer(self.s, 0, m.start()):
                start = brk.end()
            clause = self.original(start, m.end()) if start < m.end() else ""
            if clause.strip(BLANK):
                self.negated.append(clause)
            self._blank(start, m.end())

    # -- list parsing ------------------------------------------------------------------
    def _item_ending_at(self, pos: int) -> tuple[Item, int] | None:
        for m in self.mentions:
            if m.end == pos or (m.end > pos - 1 and m.start < pos <= m.end):
                return self._person(m), m.start
        for start, end, variant in self.groups:
            if end == pos:
                group = self.d.group_of(variant)
                if group is not None:
                    return Item("group", group.label, list(group.keys)), start
        for all_word in _ALL_WORDS_BY_LENGTH:
            if self.s.endswith(all_word, 0, pos):
                qualified = self.group_before(pos - len(all_word))
                if qualified is not None:  # 営業部は全員 = every member of 営業部
                    return qualified
                return Item("all", all_word), pos - len(all_word)
        bare = self.bare_word_start(pos)
        if bare is None:
            return None
        keys = self.d.lookup(self.s[bare:pos])
        if keys:
            return Item("person", self.original(bare, pos), list(keys)), bare
        return Item("unknown", self.original(bare, pos)), bare

    def group_before(self, pos: int) -> tuple[Item, int] | None:
        """A known group that qualifies a 全員 starting at `pos` (営業部は全員, 開発部のメンバー全員)."""
        for particle in _GROUP_QUALIFIERS:
            if not self.s.endswith(particle, 0, pos):
                continue
            end = pos - len(particle)
            for start, g_end, variant in self.groups:
                group = self.d.group_of(variant)
                if g_end == end and group is not None:
                    return Item("group", group.label, list(group.keys)), start
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
        if word in _NOT_A_NAME or any(bad in word for bad in _NOT_IN_NAME):
            return None
        return start

    def is_name_char(self, i: int) -> bool:
        """A kanji or Latin letter, or a character the organiser wrote in katakana."""
        if self.s[i] in (BLANK, "・"):
            return False
        if _KANJI_LATIN.match(self.s[i]):
            return True
        return bool(_KANA_LIKE.match(self.text.norm[self.text.pos[i]]))

    def _person(self, m: Mention) -> Item:
        if len(m.keys) == 1:
            return Item("person", m.name, list(m.keys))
        return Item("unknown", m.name, list(m.keys))

    def list_before(self, pos: int) -> list[Item]:
        """Names joined by と/、/や that end right before `pos` (particles allowed)."""
        items: list[Item] = []
        while True:
            tail = _PARTICLES_BEFORE_REQ.search(self.s, 0, pos)
            while tail is not None and tail.end() == pos and tail.start() < pos:
                pos = tail.start()
                tail = _PARTICLES_BEFORE_REQ.search(self.s, 0, pos)
            found = self._item_ending_at(pos)
            if found is None:
                break
            item, pos = found
            items.insert(0, item)
            if item.kind == "all":
                break
            joiner = None
            for m in _JOINER.finditer(self.s, max(0, pos - 3), pos):
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
            items.append(self._person(mention))
            pos = mention.end
            joiner = _JOINER.match(self.s, pos)
            if joiner is None:
                break
            pos = joiner.end()
        return items

    def _marked_lists(self, pattern: re.Pattern[str], after: re.Pattern[str] | None = None) -> list[Item]:
        found: list[Item] = []
        for m in pattern.finditer(self.s):
            found.extend(self.list_before(m.start()))
        if after is not None:
            for m in after.finditer(self.s):
                found.extend(self.list_after(m.end()))
        return found

    # -- helpers -----------------------------------------------------------------------
    def _keys(self, items: list[Item]) -> list[str]:
        keys: list[str] = []
        for item in items:
            if item.kind in ("person", "group"):
                keys.extend(k for k in item.keys if k not in keys)
            elif item.kind == "unknown":
                self._report(item)
        return keys

    def _report(self, item: Item) -> None:
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

    # -- the matchers ------------------------------------------------------------------
    def parse(self, scope_size: int) -> Reading:
        excluded = self._keys(self._marked_lists(_EXCLUDE_AFTER))
        if excluded and len(excluded) >= scope_size:  # a rule needs someone in scope: ask instead
            self.questions.append("除外するとほかに招待者がいなくなります。誰を対象にするか教えてください。")
            excluded = []
        optional = self._keys(self._marked_lists(_OPTIONAL_AFTER))
        n = scope_size - len(excluded)
        required_items = self._marked_lists(_REQUIRED_AFTER, _REQUIRED_BEFORE)
        required_items += [i for i in self._marked_lists(_REQUIRED_IF) if i.kind != "group"]
        for m in _ALL_STRONG.finditer(self.s):  # 営業部は全員参加: the group's members are required
            qualified = self.group_before(m.start())
            if qualified is not None:
                required_items.append(qualified[0])
        for mention in self.mentions:  # names never placed in a list are still reported when unknown
            if len(mention.keys) != 1:
                self._report(self._person(mention))
        reading = (
            self._unknown_groups()
            or self._concession(required_items, n)
            or named_groups(
                self.s,
                self.mentions,
                self.questions,
                lambda k, a, b: self.other_condition(required_items, k, a, b),
                self.original,
            )
            or self._named_any(required_items)
            or self._required(required_items, n)
            or self._group_any(n)
            or self._relative(n)
            or self._explicit(n)
            or self._all_words()
            or self._threshold(n)
            or self._any_words()
            or self._ambiguous()
        )
        reading = self._fit_scope(reading, set(excluded))
        reading.excluded = excluded
        reading.optional = [k for k in optional if k not in excluded]
        return reading

    def _fit_scope(self, reading: Reading, excluded: set[str]) -> Reading:
        """Excluded invitees leave groups; an excluded required invitee, or a group too small, is asked."""
        if not excluded:
            return reading
        clash = [k for k in reading.params.get("required_invitee_keys", []) if k in excluded]
        if clash:
            names = "、".join(self.d.names[k] for k in clash)
            self.questions.append(f"{names}は必須であり、同時に除外されています。どちらですか？")
            return Reading("ANY", {}, 0.5, "scope.required_excluded")
        for group in reading.params.get("groups", []):
            group["any_of_invitee_keys"] = [k for k in group["any_of_invitee_keys"] if k not in excluded]
            size = len(group["any_of_invitee_keys"])
            if group["min"] > size:
                self.questions.append(
                    f"「{group['name']}」から{group['min']}人とありますが、除外後の{group['name']}の招待者は{size}人です。人数を確認してください。"
                )
                return Reading("ANY", {}, 0.5, "group.impossible")
        return reading

    def _unknown_groups(self) -> Reading | None:
        """Group-like words (経理部, Xチーム) used with a count that no invitee belongs to: ask, never drop."""
        words = self._group_words()
        in_context = [False] * len(words)
        for i in range(len(words) - 1, -1, -1):
            end = words[i][1]
            if _GROUP_COUNT.match(self.s, end):
                in_context[i] = True
            elif i + 1 < len(words) and in_context[i + 1]:
                gap = self.s[end : words[i + 1][0]]
                in_context[i] = bool(gap) and _WORD_JOIN.fullmatch(gap) is not None
        unknown = [label for (_, _, label, known), used in zip(words, in_context, strict=True) if used and not known]
        if not unknown:
            return None
        for label in unknown:
            if label not in self.unknown:
                self.unknown.append(label)
                self.questions.append(
                    f"「{label}」に所属する招待者が見つかりません。どの招待者のことか教えてください（招待者の groups に追加することもできます）。"
                )
        return Reading("ANY", {}, 0.5, "group.unknown")

    def _group_words(self) -> list[tuple[int, int, str, bool]]:
        """Every group-like word: (start, end, label as written, known to the directory)."""
        words: list[tuple[int, int, str, bool]] = []
        for m in _GROUP_WORD.finditer(self.s):
            start, end = m.start(), m.end()
            if words and start < words[-1][1]:
                continue
            while start > 0 and (self.is_name_char(start - 1) or self.s[start - 1].isdigit()):
                start -= 1
            if m.group() in _GROUP_PREFIX_WORDS:  # チームX, Team X, シフトC
                while end < len(self.s) and _LATIN_DIGIT.match(self.s[end]):
                    end += 1
            if (start, end) == m.span() or (end < len(self.s) and self.is_name_char(end)):
                continue  # a bare チーム/部 names nothing; 部長 or 部員 is not a group
            word = self.s[start:end]
            if any(word.endswith(stop) for stop in _NOT_GROUPS):
                continue
            if any(mention.start < end and start < mention.end for mention in self.mentions):
                continue  # part of a person's name (阿部さん)
            known = self.d.group_of(word) is not None or any(
                g_start <= start and end <= g_end for g_start, g_end, _ in self.groups
            )
            words.append((start, end, self.original(start, end), known))
        return words

    def _concession(self, items: list[Item], n: int) -> Reading | None:
        """「全員来てほしいけど無理なら3人」: the count after the concession is the condition; prefer more."""
        m = _CONCESSION_SOFT.search(self.s)
        soft = m is not None
        if m is None:
            m = _CONCESSION_SHORT.search(self.s)
        if m is None:
            return None
        k = self._count_after(m.end(), n)
        if k is None:
            if not soft:
                return None  # 全員揃わなければ中止 restates the condition; it is no fallback
            self.questions.append("難しい場合は、何人集まれば開催しますか？（最低○人／○○さんは必須 など）")
            return Reading("ANY", {}, 0.5, "concession.no_count")
        if self._keys(items):
            self.questions.append(
                f"必須の方の指定と「難しければ{k}人」を1つのルールにはできません。成立条件を1つに絞って教えてください。"
            )
            return Reading("ANY", {}, 0.5, "concession.required")
        reading = self._count(k, n, 0.65, "concession.fallback")
        if reading.pattern == "count.impossible":
            return reading
        wish = _WISH_END.sub("", self.original(0, m.start()))
        self.questions.append(
            f"成立条件を「{k}人以上」とし、全員の回答後に参加者の最も多い候補で確定する、でよいですか？"
            + (f"（「{wish}」は希望として扱います）" if wish else "")
        )
        reading.confidence = min(reading.confidence, 0.65)
        reading.pattern = "concession.fallback"
        reading.policy = {"mode": "BEST_SCORE", "tie_breaker": "highest_score", "auto_finalize": False}
        return reading

    def _count_after(self, pos: int, n: int) -> int | None:
        """The first count (N人, 半数, 全員-1, …) at or after `pos`, resolved against n."""
        found: tuple[int, int] | None = None
        m = _THRESHOLD.search(self.s, pos)
        if m is not None:
            found = (m.start(), int(m.group(1)))
        for pattern, kind in _FRACTIONS:
            f = pattern.search(self.s, pos)
            if f is not None and (found is None or f.start() < found[0]):
                k = self.relative_k(f, kind, n)
                if k is not None:
                    found = (f.start(), k)
        return None if found is None else found[1]

    def _named_any(self, items: list[Item]) -> Reading | None:
        """「山田さんか田中さんのどちらか」: any one of the named invitees → GROUP_ANY over them."""
        chain: list[Mention] = []
        for mention in self.mentions:
            if chain and _NAME_OR.fullmatch(self.s, chain[-1].end, mention.start):
                chain.append(mention)
                continue
            if len(chain) >= 2:
                break
            chain = [mention]
        if len(chain) < 2:
            return None
        tail = _NAME_OR_TAIL.match(self.s, chain[-1].end)
        if tail is None:
            return None
        names = clipped(self.original(chain[0].start, chain[-1].end))  # as written: 山田さんか田中さん
        if any(len(m.keys) != 1 for m in chain):
            return Reading("ANY", {}, 0.5, "named_any.unresolved")  # already reported as missing
        keys = list(dict.fromkeys(m.keys[0] for m in chain))
        k = int(tail.group(1) or tail.group(2) or 1)
        if self.other_condition(items, keys, chain[0].start, tail.end()):
            self.questions.append(
                f"「{names}のどちらか」と別の条件を1つのルールにはできません。成立条件を1つに絞って教えてください。"
            )
            return Reading("ANY", {}, 0.5, "named_any.combined")
        if k < 1 or k > len(keys):
            self.questions.append(f"{names}のうち{k}人とありますが、名前は{len(keys)}人です。人数を確認してください。")
            return Reading("ANY", {}, 0.5, "named_any.impossible")
        group = {"name": names, "min": k, "any_of_invitee_keys": keys}
        return Reading("GROUP_ANY", {"groups": [group]}, 0.85, "group.named_any")

    def other_condition(self, items: list[Item], keys: list[str], start: int, end: int) -> bool:
        """Whether anything outside s[start:end] states a further condition (another required name, a count)."""
        others = [key for key in self._keys(items) if key not in keys]
        counts = [c for c in _THRESHOLD.finditer(self.s) if c.end() <= start or c.start() >= end]
        return bool(others or counts or _ADDITIONAL.search(self.s) or _TOTAL.search(self.s))

    def _required(self, items: list[Item], n: int) -> Reading | None:
        if not items:
            return None
        if any(i.kind == "all" for i in items) and not any(i.kind in ("person", "group") for i in items):
            return Reading("ALL", {}, 0.95, "all.required_everyone")
        required = self._keys(items)
        if not required:
            return Reading("ANY", {}, 0.5, "required.unresolved")
        pool = n - len(required)
        confidence, pattern = 0.9, "required.plus_additional"
        m = _ADDITIONAL.search(self.s)
        if m:
            extra = int(m.group(1))
        elif (t := _TOTAL.search(self.s)) is not None:
            extra = int(t.group(1) or t.group(2)) - len(required)
            confidence, pattern = 0.85, "required.total"
        elif (rel := self._relative(pool)) is not None and rel.params.get("k") is not None:
            extra, pattern = rel.params["k"], "required.relative"
        else:
            counts = [int(c.group(1)) for c in _ANY_COUNT.finditer(self.s) if not self._names_the_list(c)]
            extra = counts[-1] if counts else 0
            pattern = "required.count" if counts else "required.only"
            confidence = 0.9 if counts else 0.85
            total = extra - len(required)
            if counts and 0 <= total <= pool:
                if extra > pool:  # only the total reading fits (山田さんは必須、6人 with 6 invitees)
                    extra = total
                else:  # both fit: keep the stricter reading and ask
                    self.questions.append(
                        f"{extra}人は必須の{len(required)}人を含めた合計ですか？それとも必須の{len(required)}人のほかに{extra}人ですか？"
                        f"（いまは「ほかに{extra}人」としています）"
                    )
                    pattern = "required.count_ambiguous"
        if extra < 0 or extra > pool:
            self.questions.append(
                f"必須の{len(required)}人のほかに{extra}人とありますが、ほかの招待者は{pool}人です。人数を確認してください。"
            )
            return Reading("ANY", {}, 0.5, "required.impossible")
        return Reading(
            "REQUIRED_PLUS_QUORUM",
            {"required_invitee_keys": required, "min_additional": extra},
            confidence,
            pattern,
            required=required,
        )

    def _names_the_list(self, count: re.Match[str]) -> bool:
        """「山田さん、田中さんの2人は必須」: a count that only sizes the required list."""
        before = self.s[count.start() - 1 : count.start()]
        return before == "の" and _REQUIRED_AFTER.match(self.s, count.end()) is not None

    def _group_any(self, n: int) -> Reading | None:
        pieces: list[tuple[list[tuple[str, list[str]]], int, int, int]] = []  # groups, k, start, end
        pending: list[tuple[str, list[str]]] = []
        pending_start = pending_end = 0
        shared_and = False
        last_end = 0
        for start, end, variant in self.groups:
            group = self.d.group_of(variant)
            if group is None or start < last_end:
                continue
            if pending and not _WORD_JOIN.fullmatch(self.s, pending_end, start):
                pending, shared_and = [], False
            if pending:
                shared_and = shared_and or not _GAP_OR.search(self.s, pending_end, start)
            m = _GROUP_COUNT.match(self.s, end)
            if m is not None:
                k = int(m.group(1) or m.group(2) or 1)
                groups = [*pending, (group.label, list(group.keys))]
                pieces.append((groups, k, pending_start if pending else start, m.end()))
                if shared_and or (len(groups) > 1 and _EACH.match(self.s, m.end())):
                    labels = "と".join(label for label, _ in groups)
                    self.questions.append(f"「{labels}から{k}人」は、合わせて{k}人ですか？ それぞれ{k}人ずつですか？")
                    return Reading("ANY", {}, 0.5, "group.shared_and")
                pending, shared_and = [], False
                last_end = m.end()
            else:
                if not pending:
                    pending_start = start
                pending.append((group.label, list(group.keys)))
                pending_end = end
        if not pieces:
            return None
        gaps = [self.s[pieces[i - 1][3] : pieces[i][2]] for i in range(1, len(pieces))]
        if any(not _GAP_OR.search(gap) for gap in gaps) and not _DISJUNCTION.search(self.s):
            parts = "」と「".join(f"{'か'.join(label for label, _ in g)}から{k}人" for g, k, _, _ in pieces)
            both = "両方" if len(pieces) == 2 else "すべて"
            self.questions.append(f"「{parts}」の{both}が必要ですか？ それともどれか1つで成立ですか？")
            return Reading("ANY", {}, 0.5, "group.conjunction")
        found: list[tuple[str, int, list[str]]] = []
        for groups, k, _, _ in pieces:
            for label, keys in groups:
                same = next((i for i, f in enumerate(found) if f[0] == label), None)
                if same is None:
                    found.append((label, k, keys))
                elif k < found[same][1]:  # the same group twice in an OR: the smaller count suffices
                    found[same] = (label, k, keys)
        for label, k, keys in found:
            if k < 1 or k > len(keys):
                self.questions.append(
                    f"「{label}」から{k}人とありますが、{label}の招待者は{len(keys)}人です。人数を確認してください。"
                )
                return Reading("ANY", {}, 0.5, "group.impossible")
        rule_groups = [{"name": label, "min": k, "any_of_invitee_keys": keys} for label, k, keys in found]
        return Reading("GROUP_ANY", {"groups": rule_groups}, 0.85, "group.any")

    def relative_k(self, m: re.Match[str], kind: str, n: int) -> int | None:
        """k for one relative count; None when it is not a count (3分の4). 0% or 0割 gives 0 (asked later)."""
        if kind == "minus":
            return n - int(m.group(1))
        if kind == "majority":
            return majority_of(n)
        if kind == "half":
            return half_of(n)
        if kind == "fraction":
            den, num = int(m.group(1)), int(m.group(2))
            if den == 0 or num > den:
                return None
            return fraction_of(n, num, den) if num else 0
        num = int(m.group(1))
        return fraction_of(n, num, 10 if kind == "tenths" else 100) if num else 0

    def _relative(self, n: int) -> Reading | None:
        for pattern, kind in _FRACTIONS:
            m = pattern.search(self.s)
            if m is None:
                continue
            k = self.relative_k(m, kind, n)
            if k is None:
                continue
            return self._count(k, n, 0.9, f"k_of_n.{kind}")
        return None

    def _explicit(self, n: int) -> Reading | None:
        for pattern, k_first in zip(_EXPLICIT, _EXPLICIT_KN_ORDER, strict=True):
            m = pattern.search(self.s)
            if m is None or m.group(2) is None:
                continue
            a, b = int(m.group(1)), int(m.group(2))
            stated_n, k = (b, a) if k_first else (a, b)
            if k_first and stated_n != n:
                return self._slash(k, stated_n, n)
            reading = self._count(k, n, 0.95, "k_of_n.explicit_n")
            if stated_n != n and reading.confidence >= 0.7:
                self.questions.append(
                    f"{stated_n}人とありますが、対象の招待者は{n}人です。{n}人中{k}人として扱ってよいですか？"
                )
                reading.confidence = 0.65
            return reading
        return None

    def _slash(self, k: int, den: int, n: int) -> Reading:
        """「2/3」 beside 6 invitees: the fraction of the scope (⌈6·2/3⌉ = 4) or 2 of them. The stricter reading
        that fits is the rule and both are named in the question; when only one fits it stands alone."""
        share = fraction_of(n, k, den) if 0 < k <= den else None
        fits = [x for x in dict.fromkeys((share, k)) if x is not None and 1 <= x <= n]
        if not fits:
            return self._count(k, n, 0.95, "k_of_n.explicit_n")  # asks: the count cannot be met
        reading = self._count(max(fits), n, 0.9, "k_of_n.slash")
        if len(fits) == 2 and reading.confidence >= 0.7:
            self.questions.append(
                f"「{k}/{den}」は招待者{n}人の{den}分の{k}（{share}人以上）ですか？ それとも{k}人以上ですか？"
                f"（いまは{max(fits)}人以上としています）"
            )
        elif fits == [share]:
            reading.pattern = "k_of_n.fraction"
        return reading

    def _all_words(self) -> Reading | None:
        if _ALL_SOFT.search(self.s):
            self.questions.append("全員必須ですか？それとも一部でもOKですか？")
            self.questions.append("一部でもよい場合、最低何人集まれば開催しますか？")
            return Reading("ANY", {}, 0.6, "ambiguous.soft_all")
        if _ALL_EXCEPT.search(self.s):
            return Reading("ALL", {}, 0.9, "all.except")
        if _ALL_NEGATED.search(self.s):
            return None
        if _ALL_STRONG.search(self.s):
            return Reading("ALL", {}, 0.95, "all.words")
        return None

    def _threshold(self, n: int) -> Reading | None:
        counts = [int(m.group(1)) for m in _THRESHOLD.finditer(self.s)]
        if not counts:
            return None
        return self._count(counts[-1], n, 0.9, "k_of_n.threshold")

    def _any_words(self) -> Reading | None:
        if _ANY_WORDS.search(self.s):
            return Reading("ANY", {}, 0.95, "any.words")
        return None

    def _ambiguous(self) -> Reading:
        if self.negated:
            said = "、".join(self.negated)
            self.questions.append(f"「{said}」とのことですが、何人集まれば開催しますか？（最低○人／○○さんは必須 など）")
            return Reading("ANY", {}, 0.6, "ambiguous.negated")
        if _MINNA.search(self.s) or _ALL_NEGATED.search(self.s):
            self.questions.append("「みんな」の具体的な対象者を教えてください")
            self.questions.append("全員必須ですか？それとも一部でもOKですか？")
            return Reading("ANY", {}, 0.6, "ambiguous.minna")
        self.questions.append("何人集まれば開催しますか？（全員必須／最低○人／○○さんは必須 など）")
        return Reading("ANY", {}, 0.5, "ambiguous.unknown")

    def _count(self, k: int, n: int, confidence: float, pattern: str) -> Reading:
        """A threshold k over n invitees, normalised: 1 → ANY, n → ALL, impossible → ANY + question."""
        if k < 1:
            self.questions.append(f"成立に必要な人数が{k}人になります。何人以上集まれば開催しますか？")
            return Reading("ANY", {}, 0.5, "count.impossible")
        if n <= 0 or k > n:
            self.questions.append(f"{k}人以上とありますが、対象の招待者は{max(n, 0)}人です。人数を確認してください。")
            return Reading("ANY", {}, 0.5, "count.impossible")
        if k == 1:
            return Reading("ANY", {}, 0.95, "any.one")
        if k == n:
            return Reading("ALL", {}, 0.9, "all.k_equals_n")
        return Reading("K_OF_N", {"k": k, "n": n}, confidence, pattern)


_NOT_A_NAME = frozenset(words("not_a_name"))
_NOT_IN_NAME = tuple(words("not_in_name"))
_KANA_LIKE = re.compile(r"[\u30a0-\u30ff]")
_LATIN_DIGIT = re.compile(r"[a-z0-9]")
_KANJI_LATIN = re.compile(r"[\u4e00-\u9fff\u3005a-z]")

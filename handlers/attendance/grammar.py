"""The rule-based grammar: folded utterance + mentions → rule type and parameters.

Matchers run in a fixed order (docs/attendance.md lists them) and the first that
applies wins:

1. name lists before/after a required word (山田さんと田中さんは必須) → REQUIRED_PLUS_QUORUM,
   or ALL when the list is 全員/みんな (全員必須);
2. group counts (営業部から2人 または 開発部から3人) → GROUP_ANY;
3. relative counts (全員-1, 1人欠けても, 過半数, 半数, 3分の2, 8割);
4. explicit k of n (5人中3人, 3/5, 10人招待して5人以上);
5. ALL wording (全員参加必須, 全員が揃わないと);
6. a plain threshold (最低3人, 3人以上集まれば);
7. ANY wording (誰か, 参加者がいれば);
8. otherwise ambiguous → ANY with questions.

Counts are then checked against the scope: k = 1 becomes ANY, k = n becomes ALL,
an impossible count becomes ANY with a question. Nothing here guesses a name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from handlers.attendance.names import Directory, Mention
from handlers.attendance.numbers import fraction_of, half_of, majority_of
from handlers.attendance.text import Folded, rx

_REQUIRED_AFTER = rx(
    r"(?:の)?(?:参加|出席|同席)?(?:は|が|も)?(?:絶対に?|必ず)?(?:必須|マスト|不可欠|欠かせない|外せない|いないと|いなきゃ|いなければ|必要(?![\d]))"
    r"|(?:は|が|も)?(?:絶対に?|必ず)(?:参加|出席|来|い|同席|出)|(?:は|が|も)?絶対(?!に?(?:不要|いらない|来な|呼ばな))"
    r"|(?:を)?(?:含めて|含む|込みで|入れて)"
)
_REQUIRED_BEFORE = rx(
    r"(?:必須(?:なの|メンバー|の人|参加者)?(?:は|が|:)|必ず(?:来てほしいのは|参加してほしいのは|必要なのは)?)"
)
_EXCLUDE_AFTER = rx(
    r"(?:は|を|が)?(?:除いて|除く|除外|抜きで|抜き|以外|不要|なしで|無しで|来なくて|呼ばない|いらない|は不参加|不参加)"
)
_OPTIONAL_AFTER = rx(
    r"(?:は|が|も)?(?:任意|来られたら|来れたら|できれば|可能なら|オプション|どちらでも|参加できれば|いてもいなくても)"
)
_JOINER = rx(r"(?:と|や|、|,|・|/|and|&|および|及び|及|それに)")
_PARTICLES_BEFORE_REQ = rx(
    r"(?:の\d+[人名]|だけ|のみ|さえ|の2人|の両方|両名|2人とも|ふたりとも|の方|の人|は|が|も|の)$"
)
_ALL_WORDS = frozenset(
    ["全員", "みんな", "皆", "全メンバー", "メンバー全員", "参加者全員", "全員の", "皆さん", "みなさん", "みな"]
)
_ALL_WORDS_BY_LENGTH = sorted(_ALL_WORDS, key=len, reverse=True)

_ADDITIONAL = rx(
    r"(?:あと|プラス|\+|他に|ほかに|他の人?(?:から|で|が|は)?|ほか|追加で|それ以外(?:から|で|に|の人?(?:から|で|が|は)?)?|残り(?:から|の人?(?:から|で|が|は)?)?|その他(?:から|で|の人?(?:から|で|が|は)?)?"
    r"|メンバー(?:は|から|が)?|加えて|以外(?:に|から|で)|さらに|もう)\s*(?:最低|少なくとも|最低でも)?(\d+)[人名]"
)
_TOTAL = rx(r"(?:含めて|込みで|を入れて|入れて|含む)(?:合計|全部で|計)?(\d+)[人名]|(?:合計|全部で|計)(\d+)[人名]")
_ANY_COUNT = rx(r"(\d+)[人名](?!中|のうち|の中|の内)")
_FRACTIONS: list[tuple[re.Pattern[str], str]] = [
    (rx(r"全員(?:から)?(?:-|マイナス|ー|引く|ひく)(\d+)"), "minus"),
    (
        rx(
            r"(\d+)[人名](?:まで|くらい|ぐらい|程度|だけ)?(?:なら|は)?(?:欠けても|欠けて|休んでも|来られなくても|来れなくても|不参加でも|欠席でも|いなくても|抜けても|欠席しても|都合が悪くても|ダメでも|だめでも)"
        ),
        "minus",
    ),
    (rx(r"過半数"), "majority"),
    (rx(r"半数|半分"), "half"),
    (rx(r"(\d+)分の(\d+)"), "fraction"),
    (rx(r"(\d+)割"), "tenths"),
    (rx(r"(\d+)(?:%|パーセント)"), "percent"),
]
_EXPLICIT: list[re.Pattern[str]] = [
    rx(r"(\d+)[人名](?:中|のうち|の中で?|の内|いる中で?)(?:最低|少なくとも)?(\d+)[人名]?"),
    rx(r"(?<![\d/])(\d+)/(\d+)(?![\d/])"),
    rx(r"(\d+)[人名](?:を|に)?(?:招待|誘|呼|声をかけ|声かけ|招集|集め)\D*?(\d+)[人名]"),
]
_EXPLICIT_KN_ORDER = (False, True, False)  # whether the pattern gives k first (3/5) or n first (5人中3人)
_THRESHOLD = rx(
    r"(?:最低|少なくとも|最低でも|最少)?(\d+)[人名](?!中|のうち|の中|の内|を招待|に招待|招待|を誘|誘|を呼|呼)"
)
_ALL_STRONG = rx(
    r"全員(?:が|の|で|に|は|そろって|揃って)?(?:参加|出席|必須|揃|そろ|集ま|都合|来|ok|予定|出|一緒|空いて|そろい)"
    r"|(?:全員|みんな|皆)(?:が)?(?:必須|揃わないと|そろわないと|揃うまで|そろうまで|揃う日|そろう日|揃える|そろえる)"
    r"|全員.{0,12}?(?:集まれる|集まる|揃う|そろう|参加できる|出席できる|都合が(?:合|つ)|空いている)"
    r"|誰も欠け(?:ず|ない|ては|ちゃ)|1人も欠け|欠席者?(?:なし|ゼロ|0)|漏れなく|全員参加|全メンバー"
)
_ALL_SOFT = rx(r"(?:なるべく|できれば|できるだけ|なるべくなら|可能なら|理想は|理想的には)(?:は)?(?:全員|みんな|皆)")
_ALL_NEGATED = rx(
    r"(?:全員|みんな|皆)(?:じゃ|で|が)?(?:なく|揃わなく|そろわなく|集まらなく|無理|は無理|は難しい|でなくとも)"
)
_ANY_WORDS = rx(
    r"誰か|だれか|誰でも|だれでも|1人でも|参加者が(?:いれば|いたら|1人でも)|来られる人が(?:いれば|いたら)|来れる人が(?:いれば|いたら)|いれば(?:実施|開催|ok)|都合が合う人が(?:いれば|いたら)|人数は問わない|人数問わず"
)
_MINNA = rx(r"みんな|皆|みなさん|皆さん|メンバーで")
_GROUP_COUNT = rx(
    r"(?:から|より|の中から|の中で|のうち|の内|の人?(?:から|で|が|は)?|で|は|が|メンバー(?:から|が|は)?)?(?:最低|少なくとも)?(\d+)[人名]"
)
_GROUP_OR = rx(r"(?:か|または|もしくは|あるいは|or|、|,|・|/)")
_DISJUNCTION = rx(r"または|もしくは|あるいは|\bor\b|どちらか|どっちか|いずれか|か、|人か|名か")
_CONJUNCTION = rx(r"かつ|両方|それぞれ|ずつ|および|及び|と(?:、)?(?:さらに)?$|に加えて")


@dataclass(slots=True)
class Item:
    """One element of a name list: a person, a group, an unknown name or the word 全員."""

    kind: str  # "person" | "group" | "unknown" | "all"
    name: str
    keys: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Reading:
    """What the grammar made of the utterance."""

    type: str
    params: dict[str, Any]
    confidence: float
    pattern: str
    questions: list[str] = field(default_factory=list)
    required: list[str] = field(default_factory=list)
    optional: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)


class Grammar:
    """Parses one folded utterance against one directory."""

    def __init__(self, text: Folded, directory: Directory, mentions: list[Mention]) -> None:
        folded = text.folded
        self.text = text
        self.s = folded
        self.d = directory
        self.mentions = mentions
        self.original = text.original
        self.groups: list[tuple[int, int, str]] = []
        if directory.group_re is not None:
            self.groups = [(m.start(), m.end(), m.group()) for m in directory.group_re.finditer(folded)]
        self.unknown: list[str] = []
        self.questions: list[str] = []

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
                return Item("all", all_word), pos - len(all_word)
        bare = self.bare_word_start(pos)
        if bare is None:
            return None
        keys = self.d.lookup(self.s[bare:pos])
        if keys:
            return Item("person", self.original(bare, pos), list(keys)), bare
        return Item("unknown", self.original(bare, pos)), bare

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
        optional = self._keys(self._marked_lists(_OPTIONAL_AFTER))
        n = scope_size - len(excluded)
        required_items = self._marked_lists(_REQUIRED_AFTER, _REQUIRED_BEFORE)
        for m in self.mentions:  # names never placed in a list are still reported when unknown
            if len(m.keys) != 1:
                self._report(self._person(m))
        reading = (
            self._required(required_items, n)
            or self._group_any(n)
            or self._relative(n)
            or self._explicit(n)
            or self._all_words()
            or self._threshold(n)
            or self._any_words()
            or self._ambiguous()
        )
        reading.excluded = excluded
        reading.optional = [k for k in optional if k not in excluded]
        return reading

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
            counts = [int(c.group(1)) for c in _ANY_COUNT.finditer(self.s)]
            extra = counts[-1] if counts else 0
            pattern = "required.count" if counts else "required.only"
            confidence = 0.9 if counts else 0.85
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

    def _group_any(self, n: int) -> Reading | None:
        found: list[tuple[str, int, list[str]]] = []
        pending: list[tuple[str, list[str]]] = []
        last_end = 0
        gaps: list[str] = []
        for start, end, variant in self.groups:
            group = self.d.group_of(variant)
            if group is None or start < last_end:
                continue
            m = _GROUP_COUNT.match(self.s, end)
            if m is not None:
                gaps.append(self.s[last_end:start])
                for label, keys in [*pending, (group.label, group.keys)]:
                    found.append((label, int(m.group(1)), list(keys)))
                pending = []
                last_end = m.end()
            elif _GROUP_OR.match(self.s, end):
                pending.append((group.label, group.keys))
        if not found:
            return None
        if (
            len(found) > 1
            and not _DISJUNCTION.search(self.s)
            and any(_CONJUNCTION.search(g) or g.endswith("と") for g in gaps[1:])
        ):
            parts = "」と「".join(f"{label}から{k}人" for label, k, _ in found)
            self.questions.append(f"「{parts}」の両方が必要ですか？ それともどれか1つで成立ですか？")
            return Reading("ANY", {}, 0.5, "group.conjunction")
        for label, k, keys in found:
            if k > len(keys):
                self.questions.append(
                    f"「{label}」から{k}人とありますが、{label}の招待者は{len(keys)}人です。人数を確認してください。"
                )
                return Reading("ANY", {}, 0.5, "group.impossible")
        groups = [{"name": label, "min": k, "any_of_invitee_keys": keys} for label, k, keys in found]
        return Reading("GROUP_ANY", {"groups": groups}, 0.85, "group.any")

    def _relative(self, n: int) -> Reading | None:
        for pattern, kind in _FRACTIONS:
            m = pattern.search(self.s)
            if m is None:
                continue
            if kind == "minus":
                k = n - int(m.group(1))
            elif kind == "majority":
                k = majority_of(n)
            elif kind == "half":
                k = half_of(n)
            elif kind == "fraction":
                den, num = int(m.group(1)), int(m.group(2))
                if den == 0 or num > den:
                    continue
                k = fraction_of(n, num, den)
            else:
                k = fraction_of(n, int(m.group(1)), 10 if kind == "tenths" else 100)
            return self._count(k, n, 0.9, f"k_of_n.{kind}")
        return None

    def _explicit(self, n: int) -> Reading | None:
        for pattern, k_first in zip(_EXPLICIT, _EXPLICIT_KN_ORDER, strict=True):
            m = pattern.search(self.s)
            if m is None or m.group(2) is None:
                continue
            a, b = int(m.group(1)), int(m.group(2))
            stated_n, k = (b, a) if k_first else (a, b)
            reading = self._count(k, n, 0.95, "k_of_n.explicit_n")
            if stated_n != n and reading.confidence >= 0.7:
                self.questions.append(
                    f"{stated_n}人とありますが、対象の招待者は{n}人です。{n}人中{k}人として扱ってよいですか？"
                )
                reading.confidence = 0.65
            return reading
        return None

    def _all_words(self) -> Reading | None:
        if _ALL_SOFT.search(self.s):
            self.questions.append("全員必須ですか？それとも一部でもOKですか？")
            self.questions.append("一部でもよい場合、最低何人集まれば開催しますか？")
            return Reading("ANY", {}, 0.6, "ambiguous.soft_all")
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
        if _MINNA.search(self.s) or _ALL_NEGATED.search(self.s):
            self.questions.append("「みんな」の具体的な対象者を教えてください")
            self.questions.append("全員必須ですか？それとも一部でもOKですか？")
            return Reading("ANY", {}, 0.6, "ambiguous.minna")
        self.questions.append("何人集まれば開催しますか？（全員必須／最低○人／○○さんは必須 など）")
        return Reading("ANY", {}, 0.5, "ambiguous.unknown")

    def _count(self, k: int, n: int, confidence: float, pattern: str) -> Reading:
        """A threshold k over n invitees, normalised: 1 → ANY, n → ALL, impossible → ANY + question."""
        if n <= 0 or k < 1 or k > n:
            self.questions.append(f"{k}人以上とありますが、対象の招待者は{max(n, 0)}人です。人数を確認してください。")
            return Reading("ANY", {}, 0.5, "count.impossible")
        if k == 1:
            return Reading("ANY", {}, 0.95, "any.one")
        if k == n:
            return Reading("ALL", {}, 0.9, "all.k_equals_n")
        return Reading("K_OF_N", {"k": k, "n": n}, confidence, pattern)


_NOT_A_NAME = frozenset(
    [
        "参加",
        "出席",
        "同席",
        "会議",
        "打ち合わせ",
        "開催",
        "めんばー",
        "参加者",
        "出席者",
        "人数",
        "当日",
        "今回",
        "次回",
        "全体",
    ]
)
_NOT_IN_NAME = (
    "以上",
    "以外",
    "人",
    "名",
    "者",
    "欠席",
    "参加",
    "出席",
    "時間",
    "日",
    "必須",
    "絶対",
    "確定",
    "候補",
    "会議",
    "開催",
)
_KANA_LIKE = re.compile(r"[\u30a0-\u30ff]")
_KANJI_LATIN = re.compile(r"[\u4e00-\u9fff\u3005a-z]")

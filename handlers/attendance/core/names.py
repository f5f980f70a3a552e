"""Resolving the names an organiser uses to invitee keys.

A name resolves when it equals (after folding: width, case, katakana/hiragana,
spaces) an invitee's full display name, full reading or alias ("strong" forms),
or one space-separated part of the display name or reading ("weak" forms, e.g.
the surname 山田). Strong matches win over weak ones. A name that matches no
invitee, or several, is never guessed: the parser reports it in `missing`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from generated.errors import InvalidInputError
from handlers.attendance.core.keys import key_of_invitee
from handlers.attendance.core.text import Folded, fold_plain, rx

HONORIFICS = ("さん", "さま", "様", "くん", "君", "ちゃん", "氏", "殿", "先生")
HONORIFIC = "(?:" + "|".join(HONORIFICS) + ")"
# Words that take an honorific but are not a person of the thread (皆さん, たくさん, お客様).
NOT_NAMES = frozenset(
    fold_plain(w)
    for w in (
        "皆",
        "みな",
        "みんな",
        "たく",
        "お客",
        "客",
        "全員",
        "各位",
        "お父",
        "お母",
        "お兄",
        "お姉",
        "奥",
        "お子",
        "ご担当",
        "担当",
        "同",
        "模",
        "仕",
        "皆々",
    )
)
# Patterns over folded text, compiled at their first use by text.rx (importing the service compiles none).
_GROUP_WORDS = r"(ちーむ|team|班|ぐるーぷ|group)"
_SCRIPT_RUN = r"[\u4e00-\u9fff\u3005\u30a0-\u30ffa-z0-9ー]+$"
_HIRA_RUN = r"[\u3041-\u309f]{1,8}$"
_LEADING_FILLERS = r"^(?:じゃあ|では|それと|あと|まず|えーと|なお|ただし|でも)*(?:and|&|と|や|、|,)?"


@dataclass(slots=True)
class Mention:
    """A person named in the text: folded span, the name as written, resolved keys."""

    start: int
    end: int
    name: str
    keys: list[str]


@dataclass(slots=True)
class Group:
    label: str
    keys: list[str] = field(default_factory=list)


def _identity(invitee: dict[str, Any]) -> tuple[Any, ...]:
    """What makes an invitee who they are, besides the key: two entries with one key must agree on it."""
    return (
        invitee["display_name"],
        invitee.get("reading"),
        tuple(invitee.get("aliases", [])),
        tuple(invitee.get("groups", [])),
    )


def group_core(label: str) -> str:
    """Team A, Aチーム, チームA, A班 → "a": the label without its group word."""
    folded = fold_plain(label)
    core = rx(_GROUP_WORDS).sub("", folded)
    return core or folded


class Directory:
    """The thread's invitees, indexed for name and group lookup."""

    def __init__(self, invitees: list[dict[str, Any]]) -> None:
        self.keys: list[str] = []
        self.names: dict[str, str] = {}
        self._strong: dict[str, list[str]] = {}
        self._weak: dict[str, list[str]] = {}
        self.groups: dict[str, Group] = {}
        first: dict[str, tuple[int, tuple[Any, ...]]] = {}
        for index, inv in enumerate(invitees):
            key = key_of_invitee(inv, index)
            person = _identity(inv)
            if key in first:
                if first[key][1] != person:
                    raise InvalidInputError(
                        f"invitees[{first[key][0]}] and invitees[{index}] are different invitees with the same key "
                        f"{key}; give each invitee its own key"
                    )
                continue  # the same invitee listed twice
            first[key] = (index, person)
            self.keys.append(key)
            self.names[key] = inv["display_name"]
            for text in (inv.get("display_name"), inv.get("reading"), *inv.get("aliases", [])):
                if text:
                    self._add(self._strong, fold_plain(text), key)
            for text in (inv.get("display_name"), inv.get("reading")):
                parts = (text or "").split()
                if len(parts) > 1:
                    for part in parts:
                        self._add(self._weak, fold_plain(part), key)
            for label in inv.get("groups", []):
                group = self.groups.setdefault(group_core(label), Group(label))
                if key not in group.keys:
                    group.keys.append(key)
        forms = sorted({f for f in (*self._strong, *self._weak) if len(f) >= 2}, key=lambda f: (-len(f), f))
        alternatives = [re.escape(f) for f in forms]
        letters = sorted({f for f in (*self._strong, *self._weak) if len(f) == 1 and "a" <= f <= "z"})
        if letters:  # a one-letter name (A, B) only as a word of its own: 「A&B か C&D」, never inside "ok"
            alternatives.append(f"(?<![a-z0-9])[{''.join(letters)}](?![a-z0-9])")
        self._name_re = re.compile("|".join(alternatives)) if alternatives else None
        variants: dict[str, str] = {}
        for core, group in self.groups.items():
            for form in (
                fold_plain(group.label),
                core + "ちーむ",
                "ちーむ" + core,
                "team" + core,
                core + "班",
                core + "ぐるーぷ",
                "ぐるーぷ" + core,
            ):
                variants.setdefault(form, core)
            if len(core) >= 2:
                variants.setdefault(core, core)
        self._group_variants = variants
        ordered = sorted(variants, key=lambda f: (-len(f), f))
        self.group_re = re.compile("|".join(re.escape(v) for v in ordered)) if ordered else None

    @staticmethod
    def _add(index: dict[str, list[str]], form: str, key: str) -> None:
        if form:
            keys = index.setdefault(form, [])
            if key not in keys:
                keys.append(key)

    def lookup(self, folded_name: str) -> list[str]:
        """Keys for a folded name: strong matches if any, else weak ones ([] if unknown)."""
        return self._strong.get(folded_name) or self._weak.get(folded_name, [])

    def group_of(self, folded_variant: str) -> Group | None:
        core = self._group_variants.get(folded_variant)
        return self.groups.get(core) if core is not None else None

    def find_mentions(self, text: Folded) -> list[Mention]:
        """Every person named in the text, known or not, in text order."""
        folded = text.folded
        mentions: list[Mention] = []
        taken = [False] * len(folded)
        if self._name_re is not None:
            for m in self._name_re.finditer(folded):
                start, end = m.span()
                if self.group_re is not None and self._inside_group_word(folded, start, end):
                    continue
                hon = rx(HONORIFIC).match(folded, end)
                stop = hon.end() if hon else end
                mentions.append(Mention(start, stop, text.original(start, end), self.lookup(m.group())))
                for i in range(start, stop):
                    taken[i] = True
        previous_end = 0
        for hon in rx(HONORIFIC).finditer(folded):
            at = hon.start()
            if taken[at] or self._not_an_honorific(folded, hon):
                continue
            begin = max([previous_end] + [m.end for m in mentions if m.end <= at])
            chunk = rx(_LEADING_FILLERS).sub("", folded[begin:at])
            run = rx(_SCRIPT_RUN).search(chunk) or rx(_HIRA_RUN).search(chunk)
            previous_end = hon.end()
            if run is None:
                continue
            name = run.group()
            if name in NOT_NAMES or name.isdigit():
                continue
            start = at - len(name)
            keys = self.lookup(name)
            if not keys and hon.group() == "ちゃん" and folded.startswith("と", hon.end()):
                continue  # ちゃんと = "properly", not a name
            mentions.append(Mention(start, hon.end(), text.original(start, at), keys))
        mentions.sort(key=lambda m: m.start)
        return mentions

    def _inside_group_word(self, folded: str, start: int, end: int) -> bool:
        assert self.group_re is not None
        for g in self.group_re.finditer(folded, max(0, start - 8), min(len(folded), end + 8)):
            if g.start() <= start and end <= g.end() and (g.end() - g.start()) > (end - start):
                return True
        return False

    @staticmethod
    def _not_an_honorific(folded: str, hon: re.Match[str]) -> bool:
        nxt = folded[hon.end() : hon.end() + 1]
        word = hon.group()
        if word == "様" and nxt in ("々", "子", "式", "な"):
            return True
        return word == "氏" and nxt == "名"

"""Contradictory statements: 「全員必須、でも誰か1人でもいればOK」, 「全員必須。3人以上でOK」.

The grammar takes the first matcher that applies, so one of the two statements
would win silently. Here, after the grammar, an everyone-statement and a
statement that accepts fewer people (誰か / 1人でも / N人以上 with N < n / 半数 /
1人欠けても …) found in different places of the same utterance are a
contradiction: the stricter reading (everyone) is kept, confidence drops and
the question quotes both statements and names both readings.
"""

from __future__ import annotations

import re

from generated.attendance.models import RuleType
from handlers.attendance.core.grammar import BLANK, State
from handlers.attendance.core.grammar.counts import relative_k
from handlers.attendance.core.grammar.vocabulary import vocabulary
from handlers.attendance.core.reading import Reading
from handlers.attendance.core.text import rx

# Readings that come from one of the two kinds of statement; others (concessions, names, groups) are left alone.
_CHECKED_FIXED = frozenset(
    {
        "all.required_everyone",
        "all.words",
        "any.words",
        "any.one",
        "k_of_n.threshold",
        "k_of_n.explicit_n",
        "k_of_n.slash",
        "k_of_n.fraction",
    }
)
_LEADING = re.compile(r"^(?:でも|だけど|けど|ただし|ただ|それでも|とはいえ|、|,|\s)+")


_EVERYONE = r"(?:全員|みんな|皆|全メンバー)(?:の|は|が|も)?(?:参加|出席)?(?:が|は)?(?:必須|必ず|絶対|マスト)"
# 「1人でも欠けたら中止」 restates "everyone": a count followed by a word of absence is not "fewer are fine".
_ABSENCE = r"(?:でも|の人が|が|は|も)?(?:欠け|休|来られな|来れな|来な|いなけ|いなかった|不参加|欠席|ダメ|だめ|抜け)"


def _checked(pattern: str) -> bool:
    """Whether a reading comes from one of the two kinds of statement (every relative count's too)."""
    return pattern in _CHECKED_FIXED or any(pattern == f"k_of_n.{f.kind}" for f in vocabulary().fractions)


def settle_contradiction(grammar: State, reading: Reading, n: int) -> Reading:
    """The reading, or ALL with a question when everyone and fewer are both stated."""
    if not _checked(reading.pattern) or n < 2:
        return reading
    s = grammar.s
    everyone = [m.span() for p in (rx(_EVERYONE), vocabulary().all_strong) for m in p.finditer(s)]
    if not everyone:
        return reading
    fewer = _fewer(grammar, everyone, n)
    if fewer is None:
        return reading
    (start, end), k = fewer
    said_all = _clause(grammar, *everyone[0])
    said_fewer = _clause(grammar, start, end)
    if said_all == said_fewer:
        return reading  # one clause, one statement (全員のうち3人以上)
    accept = "誰か1人でも参加すれば" if k == 1 else f"{k}人以上集まれば"
    grammar.questions.append(
        f"「{said_all}」と「{said_fewer}」が食い違っています。全員（{n}人）がそろう必要がありますか？"
        f" それとも{accept}成立ですか？（いまは全員としています）"
    )
    return Reading(
        RuleType.ALL,
        {},
        0.6,
        "contradiction.everyone_or_fewer",
        required=reading.required,
        optional=reading.optional,
        excluded=reading.excluded,
    )


def _fewer(grammar: State, everyone: list[tuple[int, int]], n: int) -> tuple[tuple[int, int], int] | None:
    """The first statement accepting fewer than all n (its span and count), outside every everyone-span."""
    s = grammar.s
    v = vocabulary()
    found: list[tuple[tuple[int, int], int]] = []
    for m in v.any_words.finditer(s):
        found.append((m.span(), 1))
    for m in v.threshold.finditer(s):
        found.append((m.span(), int(m.group(1))))
    for fraction in v.fractions:
        for m in fraction.pattern.finditer(s):
            k = relative_k(m, fraction.kind, n)
            if k is not None:
                found.append((m.span(), k))
    found.sort(key=lambda f: (f[0][0], -f[0][1]))  # at one start, the longer statement (1人欠けても, not 1人)
    taken: list[tuple[int, int]] = []
    for (start, end), k in found:
        inside = any(a <= start and end <= b for a, b in taken)
        taken.append((start, end))
        absent = rx(_ABSENCE).match(s, end) and not any(p.match(s, start) for p in v.absences)
        if inside or not 1 <= k < n or absent:
            continue
        if any(a < end and start < b for a, b in everyone):
            continue
        return (start, end), k
    return None


def _clause(grammar: State, start: int, end: int) -> str:
    """The clause around s[start:end], as the organiser wrote it."""
    s = grammar.s
    begin, stop = 0, len(s)
    for brk in vocabulary().clause_break.finditer(s):
        if brk.end() <= start:
            begin = brk.end()
        elif brk.start() >= end:
            stop = brk.start()
            break
    text = grammar.original(begin, stop).replace(BLANK, "")
    return _LEADING.sub("", text).strip()

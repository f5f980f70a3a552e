"""The grammar's lexicon compiled: every pattern and word list of lexicon.yaml, built on first use.

Nothing is compiled at import (issue 32: the grammar's 40 patterns cost 0.15–0.35 s of the service's
import); `vocabulary()` builds them once, on the first parse. `Vocabulary` has one field per entry
of lexicon.yaml, so an entry the code does not know, or a field the file lacks, fails the build.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Literal, NamedTuple, cast

from handlers.attendance.core.lexicon import entries, joined, lexicon, words
from handlers.attendance.core.text import rx

FractionKind = Literal["minus", "majority", "half", "fraction", "tenths", "percent"]


class Fraction(NamedTuple):
    """A relative count (全員-1, 1人欠けても, 過半数, 半数, 3分の2, 8割, 50%) and how to resolve it."""

    pattern: re.Pattern[str]
    kind: FractionKind
    absence: bool
    """Written as who may be missing (1人欠けても): its negation belongs to the count."""


class Explicit(NamedTuple):
    """An explicit k of n (5人中3人, 3/5, 10人招待して5人); `k_first` when k is written before n (3/5)."""

    pattern: re.Pattern[str]
    k_first: bool


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """The compiled lexicon. Patterns match folded text (text.rx); word lists are as written in the file."""

    required_after: re.Pattern[str]
    required_if: re.Pattern[str]
    required_before: re.Pattern[str]
    exclude_after: re.Pattern[str]
    optional_after: re.Pattern[str]
    joiner: re.Pattern[str]
    particles_before_req: re.Pattern[str]
    additional: re.Pattern[str]
    total: re.Pattern[str]
    any_count: re.Pattern[str]
    threshold: re.Pattern[str]
    all_strong: re.Pattern[str]
    all_soft: re.Pattern[str]
    all_except: re.Pattern[str]
    all_negated: re.Pattern[str]
    any_words: re.Pattern[str]
    minna: re.Pattern[str]
    group_count: re.Pattern[str]
    gap_or: re.Pattern[str]
    disjunction: re.Pattern[str]
    each: re.Pattern[str]
    group_word: re.Pattern[str]
    negation: re.Pattern[str]
    clause_break: re.Pattern[str]
    concession_soft: re.Pattern[str]
    concession_short: re.Pattern[str]
    range: re.Pattern[str]
    name_or: re.Pattern[str]
    name_or_tail: re.Pattern[str]
    word_join: re.Pattern[str]
    wish_end: re.Pattern[str]
    fractions: tuple[Fraction, ...]
    explicit_k_of_n: tuple[Explicit, ...]
    all_words: tuple[str, ...]
    """Words for everyone (全員, みんな), longest first so 全員の wins over 全員."""
    group_qualifiers: tuple[str, ...]
    """What may stand between a group and 全員 for the group to qualify it (営業部は全員), folded, longest first."""
    group_prefix_words: frozenset[str]
    not_groups: tuple[str, ...]
    not_a_name: frozenset[str]
    not_in_name: tuple[str, ...]

    @property
    def absences(self) -> tuple[re.Pattern[str], ...]:
        """The relative counts written as who may be missing (1人欠けても, 2人来られなくても)."""
        return tuple(f.pattern for f in self.fractions if f.absence)


def _folded(word: str) -> str:
    return rx(word).pattern


@cache
def vocabulary() -> Vocabulary:
    """The lexicon, compiled once (first parse)."""
    patterns = {name: rx(joined(value)) for name, value in lexicon()["patterns"].items()}
    return Vocabulary(
        **patterns,
        fractions=tuple(
            Fraction(rx(joined(f["pattern"])), cast(FractionKind, f["kind"]), bool(f.get("absence")))
            for f in entries("fractions")
        ),
        explicit_k_of_n=tuple(
            Explicit(rx(joined(e["pattern"])), bool(e["k_first"])) for e in entries("explicit_k_of_n")
        ),
        all_words=tuple(sorted(words("all_words"), key=len, reverse=True)),
        group_qualifiers=tuple(sorted((_folded(w) for w in words("group_qualifiers")), key=len, reverse=True)),
        group_prefix_words=frozenset(_folded(w) for w in words("group_prefix_words")),
        not_groups=tuple(words("not_groups")),
        not_a_name=frozenset(words("not_a_name")),
        not_in_name=tuple(words("not_in_name")),
    )

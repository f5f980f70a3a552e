"""The folded view of a text that name and grammar matching run on.

`fold` makes matching insensitive to script and width: NFKC (via
numbers.normalize), lower case, katakana → hiragana, spaces removed. `Folded`
keeps a map back to the normalised text so that names can be reported exactly
as the organiser wrote them. Grammar patterns are folded the same way (`rx`), so
they can be written naturally (リーダー, OK, マイナス).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache

from handlers.attendance.core.numbers import normalize

_KATA_START, _KATA_END = 0x30A1, 0x30F6
_NUMBER = r"(\d+)"
_ANCHORED_NUMBER = r"(?<!\d)(\d+)"


def _fold_char(ch: str) -> str:
    code = ord(ch)
    if _KATA_START <= code <= _KATA_END:
        return chr(code - 0x60)
    low = ch.lower()
    return low if len(low) == 1 else ch


@lru_cache(maxsize=65536)
def fold_plain(text: str) -> str:
    """Fold a name or label: normalise, lower, hiragana, no spaces (cached: a thread's names recur on every parse)."""
    return "".join(_fold_char(ch) for ch in normalize(text) if not ch.isspace())


@cache
def rx(pattern: str) -> re.Pattern[str]:
    """Compile a grammar pattern written in natural script against folded text (once: patterns are
    source constants, compiled where they are first used, so importing the service compiles none).

    Katakana and upper-case letters are folded; escapes (\\d, \\s, \\S, ...) are
    left alone so their meaning does not change. Every `(\\d+)` group is anchored at
    the start of a digit run (`(?<!\\d)`): a match can only begin where a number
    begins, so a long run of digits costs linear, not quadratic, time.
    """
    out = []
    escaped = False
    for ch in pattern:
        if escaped:
            out.append(ch)
            escaped = False
        elif ch == "\\":
            out.append(ch)
            escaped = True
        else:
            out.append(_fold_char(ch))
    return re.compile("".join(out).replace(_NUMBER, _ANCHORED_NUMBER))


@dataclass(frozen=True, slots=True)
class Folded:
    """Normalised text, its folded form and the index map between them."""

    norm: str
    folded: str
    pos: tuple[int, ...]

    @classmethod
    def of(cls, text: str) -> Folded:
        norm = normalize(text)
        chars = []
        pos = []
        for i, ch in enumerate(norm):
            if ch.isspace():
                continue
            chars.append(_fold_char(ch))
            pos.append(i)
        return cls(norm, "".join(chars), tuple(pos))

    def original(self, start: int, end: int) -> str:
        """The normalised text behind folded[start:end]."""
        if start >= end:
            return ""
        return self.norm[self.pos[start] : self.pos[end - 1] + 1]

"""Text normalisation and Japanese number forms.

Everything the grammar matches runs on `normalize(text)`: NFKC (full-width
digits, letters and spaces become ASCII), hyphen-like dashes unified, and kanji
or hiragana numerals before a counter (三人, 十二名, ふたり, 両名) rewritten as
digits. Kanji numerals are only rewritten before a counter so that names such as
三木 or 一郎 stay intact.
"""

from __future__ import annotations

import math
import re
import unicodedata

_KANJI_DIGITS = {
    "〇": 0,
    "零": 0,
    "一": 1,
    "二": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "壱": 1,
    "弐": 2,
    "参": 3,
}
_KANJI_UNITS = {"十": 10, "百": 100, "千": 1000, "拾": 10}
_COUNTERS = "人|名|つ|個|件|日|時間|分|回|枠|案|割|チーム|グループ|班"
_KANJI_NUM_RE = re.compile(rf"([〇零一二三四五六七八九十百千壱弐参拾]+)(?=(?:{_COUNTERS}))")
_WORD_NUMBERS = [
    ("ひとり", "1人"),
    ("ふたり", "2人"),
    ("独り", "1人"),
    ("両名", "2名"),
    ("お一人", "1人"),
    ("お二人", "2人"),
]
_DASHES = re.compile(r"[‐‑‒–—―−ｰ－]")


def kanji_to_int(text: str) -> int:
    """Value of a kanji numeral: 三 → 3, 十二 → 12, 二十 → 20, 百五 → 105, 一〇 → 10 (digit by digit)."""
    if all(ch in _KANJI_DIGITS for ch in text):
        value = 0
        for ch in text:
            value = value * 10 + _KANJI_DIGITS[ch]
        return value
    total = 0
    current = 0
    for ch in text:
        if ch in _KANJI_DIGITS:
            current = _KANJI_DIGITS[ch]
        else:
            unit = _KANJI_UNITS[ch]
            total += (current or 1) * unit
            current = 0
    return total + current


def normalize(text: str) -> str:
    """NFKC, unified dashes, collapsed spaces and number words turned into digits."""
    out = unicodedata.normalize("NFKC", text)
    out = _DASHES.sub("-", out)
    out = re.sub(r"\s+", " ", out).strip()
    for word, digits in _WORD_NUMBERS:
        out = out.replace(word, digits)
    return _KANJI_NUM_RE.sub(lambda m: str(kanji_to_int(m.group(1))), out)


def half_of(n: int) -> int:
    """半数: at least half, rounded up (5 → 3, 4 → 2)."""
    return max(1, math.ceil(n / 2))


def majority_of(n: int) -> int:
    """過半数: more than half (5 → 3, 4 → 3)."""
    return n // 2 + 1


def fraction_of(n: int, num: int, den: int) -> int:
    """At least num/den of n, rounded up (3分の2 of 6 → 4); never below 1."""
    return max(1, -(-n * num // den))

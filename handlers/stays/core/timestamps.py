"""Strict RFC 3339 date-time parsing, fast for the common shapes.

`datetime.fromisoformat` alone accepts far more than RFC 3339 (date-only strings,
naive times, basic format without dashes, week dates, `+0900`, `,5` fractions),
so the exact RFC 3339 `date-time` shape is pinned first; the C parser then does the
digit and range checks (month 13, hour 24, Feb 30, offset +25:00 all fail there).

Two shapes cover nearly all GPS logs, `2024-05-01T09:00:00+09:00` and
`2024-05-01T00:00:00Z`; they are checked by fixed separator positions, which is
several times cheaper than a regex match. Any other length (fractions, lower-case
`z`) goes through one pre-compiled regex.
"""

from __future__ import annotations

import re
from datetime import datetime

# RFC 3339 §5.6 date-time: full-date "T" full-time, time-offset mandatory.
# "T" and "Z" may be lower case (§5.6 NOTE). Any number of fraction digits.
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})")
_fromisoformat = datetime.fromisoformat
# value[4::3] of a 25-character timestamp: the separators at positions 4, 7, 10, 13, 16, 19, 22.
OFFSET_SHAPES = frozenset({"--T::+:", "--T::-:"})


def parse_rfc3339(value: object) -> datetime | None:
    """The aware datetime `value` denotes, or None if it is not an RFC 3339 date-time string.

    Fractions beyond microseconds are truncated (fromisoformat does so). A leap
    second (`:60`) is rejected: Python datetimes cannot represent it.
    """
    if type(value) is not str:
        return None
    size = len(value)
    if (
        ((size == 25 and value[4::3] in OFFSET_SHAPES) or (size == 20 and value[4::3] == "--T::Z"))
        and value.isascii()
        and "\x00" not in value
    ):
        # Every other position must be a digit, which fromisoformat enforces, except that its C parser
        # stops reading at a NUL: it takes `09:Z\x00:00` for 09:00 UTC.
        try:
            return _fromisoformat(value)
        except ValueError:
            return None
    if _RFC3339.fullmatch(value) is None:
        return None
    if value[-1] == "z":  # fromisoformat only knows the upper-case designator
        value = value[:-1] + "Z"
    try:
        return _fromisoformat(value)
    except ValueError:
        return None

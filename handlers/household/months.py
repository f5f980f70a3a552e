"""Month arithmetic on plain integers (year * 12 + month - 1), so windows and lags are subtraction."""

from __future__ import annotations

import re

MONTH_RE = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


def index(year: int, month: int) -> int:
    return year * 12 + month - 1


def parse(text: str) -> int:
    match = MONTH_RE.match(text)
    if not match:
        raise ValueError(text)
    return index(int(match.group(1)), int(match.group(2)))


def year_month(i: int) -> tuple[int, int]:
    return i // 12, i % 12 + 1


def label(i: int) -> str:
    """ISO-like label used in structured output: 2025-06."""
    y, m = year_month(i)
    return f"{y:04d}-{m:02d}"


def jp(i: int) -> str:
    """Label used in text answers: 2025年06月."""
    y, m = year_month(i)
    return f"{y}年{m:02d}月"


def first_day(i: int) -> str:
    y, m = year_month(i)
    return f"{y:04d}-{m:02d}-01"
